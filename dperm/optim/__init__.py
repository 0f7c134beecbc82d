"""The solvers: the batched L-BFGS front end (`erm`), trust-region Newton-CG (`newton`)
and the softmax (multinomial) objective (`softmax`).  No privacy here."""
from dperm.optim.erm import (
    DEFAULT_MAX_ITER,
    DEFAULT_TOL,
    MinimizeResult,
    hessian,
    hessian_vector,
    minimize,
    objective,
)
from dperm.optim.newton import trust_region_newton
from dperm.optim.softmax import MultinomialResult, minimize_multinomial, multinomial_predict_proba

__all__ = [
    "minimize", "MinimizeResult", "objective", "hessian", "hessian_vector", "DEFAULT_TOL",
    "DEFAULT_MAX_ITER", "trust_region_newton", "minimize_multinomial", "MultinomialResult",
    "multinomial_predict_proba",
]
