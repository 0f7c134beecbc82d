"""The solvers: the batched L-BFGS front end (`erm`), trust-region Newton-CG (`newton`)
and the softmax (multinomial) objective (`softmax`).  No privacy here."""
from dperm._lazy import lazy_exports

# The public names, imported on first use (PEP 562), as dperm's own are: importing a
# module of this package (the command line does) does not import the others.
# name -> the module of this package that defines it
_HOME = {
    "minimize": "erm", "MinimizeResult": "erm", "objective": "erm", "hessian": "erm",
    "hessian_vector": "erm", "DEFAULT_TOL": "erm", "DEFAULT_MAX_ITER": "erm",
    "trust_region_newton": "newton", "minimize_multinomial": "softmax",
    "MultinomialResult": "softmax", "multinomial_predict_proba": "softmax",
}
__all__ = list(_HOME)


__getattr__, __dir__ = lazy_exports(__name__, _HOME, globals())
