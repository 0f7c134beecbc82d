"""dperm: differentially private empirical risk minimization.

After Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical Risk
Minimization", JMLR 12 (2011).
"""
from dperm import calibration, datasets, erm, exact_noise, losses, mechanisms, noise, regularization
from dperm._config import get_config, show_config
from dperm._core._build_info import VERSION as __version__  # meson.build's version
from dperm.accountant import ApproxEvent, BudgetAccountant, GaussianEvent, ObjectiveGaussianEvent, PureEvent
from dperm.estimators import PrivateLinearClassifier
from dperm.exceptions import (
                              BudgetExceededError,
                              ClippingWarning,
                              ConvergenceWarning,
                              DataNormWarning,
                              NoiseDominatedWarning,
                              PrivacyLeakWarning,
)
from dperm.features import RandomFourierFeatures
from dperm.mechanisms import objective_perturbation, output_perturbation
from dperm.schema import PublicBoundsTransformer, PublicSchema
from dperm.tuning import PrivateTuningResult, private_tuning

__all__ = [
    "__version__", "get_config", "show_config",
    "PrivacyLeakWarning", "BudgetExceededError", "ConvergenceWarning", "ClippingWarning",
    "NoiseDominatedWarning", "DataNormWarning",
    "BudgetAccountant", "PureEvent", "GaussianEvent", "ObjectiveGaussianEvent", "ApproxEvent",
    "objective_perturbation", "output_perturbation",
    "PrivateLinearClassifier", "RandomFourierFeatures", "PublicSchema", "PublicBoundsTransformer",
    "private_tuning", "PrivateTuningResult",
    "calibration", "datasets", "erm", "exact_noise", "losses", "mechanisms", "noise",
    "regularization",
]
