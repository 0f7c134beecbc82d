"""The data layer: validation of inputs, the row description (clipping factors, the
intercept column), the Dask rows, and the one place that asks how rows are stored."""
