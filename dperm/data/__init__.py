"""The data layer: validation of inputs, the row description (clipping factors, the
intercept column), the Dask rows, and the one place that asks how rows are stored."""
from dperm.data.design import DesignRows, augment_intercept
from dperm.data.validation import check_X, row_norms

__all__ = ["DesignRows", "augment_intercept", "check_X", "row_norms"]
