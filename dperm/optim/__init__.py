"""The solvers: the batched L-BFGS front end (`erm`), trust-region Newton-CG (`newton`)
and the softmax (multinomial) objective (`softmax`).  No privacy here."""
import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
