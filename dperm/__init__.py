"""dperm: differentially private empirical risk minimization.

After Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical Risk
Minimization", JMLR 12 (2011).
"""
import importlib

from dperm._core._build_info import VERSION as __version__  # meson.build's version

# The public names, imported on first use (PEP 562) so that `import dperm` and the
# command line's start do not import scikit-learn, SciPy's statistics and pandas until
# something needs them (`dperm info` and `--help` start in a fraction of a second;
# `dperm predict` imports no scikit-learn: dperm.schema does not, its transformer lives in
# dperm/sklearn/transformer.py).
# name -> (module, attribute; None: the module itself)
_LAZY = {
    "get_config": ("dperm._config", "get_config"),
    "show_config": ("dperm._config", "show_config"),
    "BudgetExceededError": ("dperm.exceptions", "BudgetExceededError"),
    "ClippingWarning": ("dperm.exceptions", "ClippingWarning"),
    "ConvergenceWarning": ("dperm.exceptions", "ConvergenceWarning"),
    "DataNormWarning": ("dperm.exceptions", "DataNormWarning"),
    "NoiseDominatedWarning": ("dperm.exceptions", "NoiseDominatedWarning"),
    "PrivacyLeakWarning": ("dperm.exceptions", "PrivacyLeakWarning"),
    "NotConvergedError": ("dperm.exceptions", "NotConvergedError"),
    "datasets": ("dperm.datasets", None),
    "losses": ("dperm.losses", None),
    "erm": ("dperm.optim.erm", None),
    "calibration": ("dperm.privacy.calibration", None),
    "exact_noise": ("dperm.privacy.exact_noise", None),
    "mechanisms": ("dperm.privacy.mechanisms", None),
    "noise": ("dperm.privacy.noise", None),
    "regularization": ("dperm.privacy.regularization", None),
    "ApproxEvent": ("dperm.privacy.accountant", "ApproxEvent"),
    "BudgetAccountant": ("dperm.privacy.accountant", "BudgetAccountant"),
    "GaussianEvent": ("dperm.privacy.accountant", "GaussianEvent"),
    "ObjectiveGaussianEvent": ("dperm.privacy.accountant", "ObjectiveGaussianEvent"),
    "PureEvent": ("dperm.privacy.accountant", "PureEvent"),
    "objective_perturbation": ("dperm.privacy.mechanisms", "objective_perturbation"),
    "output_perturbation": ("dperm.privacy.mechanisms", "output_perturbation"),
    "PrivateBounds": ("dperm.privacy.quantiles", "PrivateBounds"),
    "estimate_bounds": ("dperm.privacy.quantiles", "estimate_bounds"),
    "PrivateTuningResult": ("dperm.privacy.tuning", "PrivateTuningResult"),
    "private_tuning": ("dperm.privacy.tuning", "private_tuning"),
    "PublicBoundsTransformer": ("dperm.sklearn.transformer", "PublicBoundsTransformer"),
    "PublicSchema": ("dperm.schema", "PublicSchema"),
    "PrivateLinearClassifier": ("dperm.sklearn.classifier", "PrivateLinearClassifier"),
    "RandomFourierFeatures": ("dperm.sklearn.features", "RandomFourierFeatures"),
    "PrivateLinearRegression": ("dperm.sklearn.regressor", "PrivateLinearRegression"),
    "save_model": ("dperm.model_io", "save_model"),
    "load_model": ("dperm.model_io", "load_model"),
    "private_pipeline": ("dperm.pipeline", "private_pipeline"),
}


def __getattr__(name: str) -> object:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'dperm' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value      # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "__version__", "get_config", "show_config",
    "PrivacyLeakWarning", "BudgetExceededError", "NotConvergedError", "ConvergenceWarning",
    "ClippingWarning",
    "NoiseDominatedWarning", "DataNormWarning",
    "BudgetAccountant", "PureEvent", "GaussianEvent", "ObjectiveGaussianEvent", "ApproxEvent",
    "objective_perturbation", "output_perturbation",
    "PrivateLinearClassifier", "PrivateLinearRegression", "RandomFourierFeatures",
    "PublicSchema", "PublicBoundsTransformer",
    "private_tuning", "PrivateTuningResult", "estimate_bounds", "PrivateBounds",
    "save_model", "load_model", "private_pipeline",
    "calibration", "datasets", "erm", "exact_noise", "losses", "mechanisms", "noise",
    "regularization",
]
