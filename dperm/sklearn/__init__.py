"""scikit-learn estimators: PrivateLinearClassifier (`classifier`),
PrivateLinearRegression (`regressor`), RandomFourierFeatures (`features`) and the public
schema's transformer PublicBoundsTransformer (`transformer`); what the two linear models
share is in `_base`."""
import importlib
from typing import Any

# The public names, imported on first use (PEP 562), as dperm's own are: importing a
# module of this package (the command line does) does not import the others.
# name -> the module of this package that defines it
_HOME = {
    "PrivateLinearClassifier": "classifier", "PrivateLinearRegression": "regressor",
    "RandomFourierFeatures": "features", "PublicBoundsTransformer": "transformer",
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
