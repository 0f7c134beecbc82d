"""scikit-learn estimators: PrivateLinearClassifier (`classifier`),
PrivateLinearRegression (`regressor`), RandomFourierFeatures (`features`) and the public
schema's transformer PublicBoundsTransformer (`transformer`); what the two linear models
share is in `_base`."""
from dperm._lazy import lazy_exports

# The public names, imported on first use (PEP 562), as dperm's own are: importing a
# module of this package (the command line does) does not import the others.
# name -> the module of this package that defines it
_HOME = {
    "PrivateLinearClassifier": "classifier", "PrivateLinearRegression": "regressor",
    "RandomFourierFeatures": "features", "PublicBoundsTransformer": "transformer",
}
__all__ = list(_HOME)


__getattr__, __dir__ = lazy_exports(__name__, _HOME, globals())
