"""How a table's columns are held: a mapping of 1-D arrays, a pandas DataFrame, a 2-D
array or a dask DataFrame.

The public schema (dperm/schema.py) and its scikit-learn transformer
(dperm/sklearn/transformer.py) ask here what kind of container they were given, and never
themselves (tests/test_layout.py counts such checks outside dperm/data/).  Nothing here
reads a value to decide: only types, column labels and shapes.  Neither pandas nor dask is
imported by this module (dask only inside :func:`map_dask_partitions`, which needs it).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["plain_list", "column_array", "frame_info", "frame_columns", "is_dask_frame",
           "map_dask_partitions"]


def plain_list(v: Any) -> Any:
    """A numpy array given as a parameter (bounds, a category list, the classes) as a list
    of Python scalars; any other value as it is (the caller checks it)."""
    return v.tolist() if isinstance(v, np.ndarray) else v


def column_array(values: Any, c: Any, n: int | None = None) -> np.ndarray:
    """Column `c` as a 1-D numpy array (a pandas Series via its ``to_numpy``); an error
    naming the column when it is not 1-D or, with `n`, not of n values."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        arr = values.to_numpy()
    else:
        arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"column {c!r} must be 1-D (one value per row), got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"column {c!r} has {arr.shape[0]} values, the other columns have {n}")
    return arr


def frame_info(X: Any) -> tuple[list | None, int]:
    """(column labels or None, number of columns) of a DataFrame or 2-D array, without
    reading any value."""
    cols = getattr(X, "columns", None)
    if cols is not None and not isinstance(X, np.ndarray):
        labels = list(cols)
        return labels, len(labels)
    shape = getattr(X, "shape", None)
    if shape is None:
        shape = np.shape(X)
    if len(shape) != 2:
        raise ValueError(f"X: expected a 2-D array or DataFrame (n_samples, n_features), got "
                         f"shape {tuple(shape)}")
    return None, int(shape[1])


def frame_columns(X: Any, selection: list, labels: list | None) -> tuple[dict, Any]:
    """({name: column} for each (name, key) of `selection`, the row index or None).

    A key is a column label (str) of a DataFrame, or an integer position in a DataFrame
    (``iloc``) or in a 2-D array (`labels` None: X has no column labels, see
    :func:`frame_info`)."""
    if labels is not None:
        iloc: Any = getattr(X, "iloc", None)
        columns = {name: (X[k] if isinstance(k, str) else iloc[:, k]) for name, k in selection}
        return columns, getattr(X, "index", None)
    arr = np.asarray(X)
    return {name: arr[:, k] for name, k in selection}, None


def is_dask_frame(X: Any) -> bool:
    """A dask DataFrame (without importing dask)."""
    return type(X).__module__.startswith("dask.") and hasattr(X, "map_partitions") \
        and hasattr(X, "columns")


def map_dask_partitions(X: Any, transform: Callable[[Any], Any]) -> Any:
    """A dask DataFrame -> a Dask array whose row chunks are its (non-empty) partitions,
    each mapped on a worker by `transform` (which must be row-wise: reading nothing but
    the row itself, as the public encoding does).

    ``transform(X._meta)`` runs first, on the empty frame that describes the partitions (no
    row is read): it checks the columns and gives the output's width and type.
    """
    import dask.array as da
    from dask import delayed

    meta = transform(X._meta)
    # Partition lengths are counts of private rows per partition: computed only for
    # bookkeeping (the chunk sizes a Dask array needs; their sum, n, is public to the
    # fit anyway), never released.
    lengths = [int(k) for k in X.map_partitions(len).compute()]
    blocks = [da.from_delayed(delayed(transform)(part), shape=(k, meta.shape[1]),
                              dtype=meta.dtype, meta=meta)
              for part, k in zip(X.to_delayed(), lengths) if k > 0]
    if not blocks:
        return da.zeros((0, meta.shape[1]), dtype=meta.dtype, chunks=((0,), (meta.shape[1],)))
    return da.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]
