"""dperm: differentially private empirical risk minimization.

After Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical Risk
Minimization", JMLR 12 (2011).
"""
from dperm import _moved

_moved.install()   # the flat layout's module paths (dperm.erm, ...) stay importable

from dperm import datasets, losses
from dperm._config import get_config, show_config
from dperm._core._build_info import VERSION as __version__  # meson.build's version
from dperm.exceptions import (
    BudgetExceededError,
    ClippingWarning,
    ConvergenceWarning,
    DataNormWarning,
    NoiseDominatedWarning,
    PrivacyLeakWarning,
)
from dperm.model_io import load_model, save_model
from dperm.optim import erm
from dperm.privacy import calibration, exact_noise, mechanisms, noise, regularization
from dperm.privacy.accountant import (
    ApproxEvent,
    BudgetAccountant,
    GaussianEvent,
    ObjectiveGaussianEvent,
    PureEvent,
)
from dperm.privacy.mechanisms import objective_perturbation, output_perturbation
from dperm.privacy.quantiles import PrivateBounds, estimate_bounds
from dperm.privacy.tuning import PrivateTuningResult, private_tuning
from dperm.schema import PublicBoundsTransformer, PublicSchema
from dperm.sklearn.classifier import PrivateLinearClassifier
from dperm.sklearn.features import RandomFourierFeatures
from dperm.sklearn.regressor import PrivateLinearRegression

__all__ = [
    "__version__", "get_config", "show_config",
    "PrivacyLeakWarning", "BudgetExceededError", "ConvergenceWarning", "ClippingWarning",
    "NoiseDominatedWarning", "DataNormWarning",
    "BudgetAccountant", "PureEvent", "GaussianEvent", "ObjectiveGaussianEvent", "ApproxEvent",
    "objective_perturbation", "output_perturbation",
    "PrivateLinearClassifier", "PrivateLinearRegression", "RandomFourierFeatures",
    "PublicSchema", "PublicBoundsTransformer",
    "private_tuning", "PrivateTuningResult", "estimate_bounds", "PrivateBounds",
    "save_model", "load_model",
    "calibration", "datasets", "erm", "exact_noise", "losses", "mechanisms", "noise",
    "regularization",
]
