"""The privacy layer: neighbouring relations, noise (continuous and exact), calibration
(pure, Gaussian, AMP), the mechanisms, the regularization rule, private tuning and the
budget accountant."""
from dperm.privacy.accountant import (
    ApproxEvent,
    BudgetAccountant,
    GaussianEvent,
    ObjectiveGaussianEvent,
    PureEvent,
    compose,
)
from dperm.privacy.calibration import (
    amp_calibration,
    analytic_gaussian_sigma,
    objective_gaussian_calibration,
)
from dperm.privacy.mechanisms import (
    PrivateFit,
    objective_perturbation,
    objective_perturbation_constants,
    output_perturbation,
    output_perturbation_constants,
)
from dperm.privacy.neighbouring import NEIGHBOURING
from dperm.privacy.noise import sample_l2_laplace
from dperm.privacy.quantiles import PrivateBounds, estimate_bounds
from dperm.privacy.regularization import auto_alpha
from dperm.privacy.tuning import PrivateTuningResult, exponential_mechanism, private_tuning

# (`adassp` stays a module name: its function is dperm.privacy.adassp.adassp)
__all__ = [
    "objective_perturbation", "output_perturbation", "PrivateFit",
    "objective_perturbation_constants", "output_perturbation_constants",
    "BudgetAccountant", "PureEvent", "GaussianEvent", "ObjectiveGaussianEvent", "ApproxEvent",
    "compose", "analytic_gaussian_sigma", "objective_gaussian_calibration", "amp_calibration",
    "sample_l2_laplace", "private_tuning", "PrivateTuningResult", "exponential_mechanism",
    "estimate_bounds", "PrivateBounds", "auto_alpha", "NEIGHBOURING",
]
