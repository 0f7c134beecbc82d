"""The privacy layer: neighbouring relations, noise (continuous and exact), calibration
(pure, Gaussian, AMP), the mechanisms, the regularization rule, private tuning and the
budget accountant."""
from dperm._lazy import lazy_exports

# The public names, imported on first use (PEP 562), as dperm's own are: importing a
# module of this package (the command line does) does not import the others.
# name -> the module of this package that defines it
_HOME = {
    "objective_perturbation": "mechanisms", "output_perturbation": "mechanisms",
    "PrivateFit": "mechanisms", "objective_perturbation_constants": "mechanisms",
    "output_perturbation_constants": "mechanisms", "BudgetAccountant": "accountant",
    "PureEvent": "accountant", "GaussianEvent": "accountant",
    "ObjectiveGaussianEvent": "accountant", "ApproxEvent": "accountant", "compose": "accountant",
    "analytic_gaussian_sigma": "calibration", "objective_gaussian_calibration": "calibration",
    "amp_calibration": "calibration", "sample_l2_laplace": "noise", "private_tuning": "tuning",
    "PrivateTuningResult": "tuning", "exponential_mechanism": "tuning",
    "estimate_bounds": "quantiles", "PrivateBounds": "quantiles", "auto_alpha": "regularization",
    "NEIGHBOURING": "neighbouring",
}
# (`adassp` stays a module name: its function is dperm.privacy.adassp.adassp)
__all__ = list(_HOME)


__getattr__, __dir__ = lazy_exports(__name__, _HOME, globals())
