"""The data layer: validation of inputs, the row description (clipping factors, the
intercept column), the Dask rows, and the one place that asks how rows are stored."""
from dperm._lazy import lazy_exports

# The public names, imported on first use (PEP 562), as dperm's own are: importing a
# module of this package (the command line does) does not import the others.
# name -> the module of this package that defines it
_HOME = {
    "DesignRows": "design", "augment_intercept": "design", "check_X": "validation",
    "row_norms": "validation",
}
__all__ = list(_HOME)


__getattr__, __dir__ = lazy_exports(__name__, _HOME, globals())
