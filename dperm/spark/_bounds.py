"""Private bounds of the numeric columns of a Spark DataFrame, in one pass.

`estimate_bounds(df, epsilon, columns=...)` is dperm.estimate_bounds on a Spark
DataFrame: the same mechanism (dperm.privacy.quantiles: per column, one exponential
mechanism over pairs of public grid points), the same PrivateBounds and the same
released bounds as the local function on the same rows with the same seed.  The
mechanism reads nothing from the data but each column's histogram over the public
grid (`column_histogram`: counts at each grid point and inside each open cell), so

* ONE Spark job reads the chosen columns as Arrow batches (`mapInArrow`); each
  partition drops its missing values (null, NaN), counts the values outside the public
  range, clips them to its ends and counts its histogram, as the local function does;
* only those integer counts come back; the driver adds them (integer sums: the order
  does not matter) and releases the bounds from them with the local function's release
  step (`dperm.privacy.quantiles.bounds_from_histograms`): its warnings, randomness,
  record and accountant charge.
"""
import functools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from dperm.data.validation import check_epsilon
from dperm.exceptions import ClippingWarning
from dperm.privacy import quantiles as _q
from dperm.privacy.accountant import BudgetAccountant, PureEvent
from dperm.privacy.noise import warn_if_seeded

__all__ = ["estimate_bounds", "column_counts"]


def _warn_outside(counts, g):
    """The local function's ClippingWarning for the values the executors clipped."""
    for key, atoms, cells, outside in counts:
        if outside:
            n = int(np.sum(atoms) + np.sum(cells))
            every = " (all of them: the range misses the data)" if outside == n else ""
            warnings.warn(
                f"column {key!r}: {outside} value(s) outside the public range "
                f"[{g[0]:g}, {g[-1]:g}]{every} were clipped to its ends; widen bounds_range "
                "(a count of private rows, for the analyst only)", ClippingWarning, stacklevel=4)


def _numeric_columns(df, columns):
    """The chosen column names, all of a numeric Spark type (the schema is public)."""
    from pyspark.sql import types as T

    names = df.schema.names
    if columns is None:
        keys = list(names)
        if not keys:
            raise ValueError("df: has no columns")
    else:
        keys = _q._column_list(columns)
        lacking = [c for c in keys if c not in names]
        if lacking:
            raise ValueError(f"columns: {lacking} not in the DataFrame (its columns: {names[:12]})")
    other = [f"{c} ({df.schema[c].dataType.simpleString()})" for c in keys
             if not isinstance(df.schema[c].dataType, T.NumericType)]
    if other:
        raise ValueError(
            f"columns: {other[:12]} are not numeric (Spark types); name the numeric columns "
            "to release with columns=[...] (which columns are numeric must be public, not "
            "read from the data)")
    return keys


def _histogram_task(grid, n_cols, batches):
    """mapInArrow: this partition's histogram of each column (missing values dropped,
    values outside the grid's range counted and clipped to its ends), as one row of
    (atoms, cells, outside) per column, pickled."""
    import pickle

    import pyarrow as pa
    import pyarrow.compute as pc

    atoms = np.zeros((n_cols, grid.size), dtype=np.int64)
    cells = np.zeros((n_cols, grid.size - 1), dtype=np.int64)
    outside = np.zeros(n_cols, dtype=np.int64)
    for b in batches:
        if b.num_rows == 0:
            continue
        for j in range(n_cols):
            col = pc.fill_null(b.column(j), float("nan"))
            v = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
            v = v[~np.isnan(v)]
            over = (v < grid[0]) | (v > grid[-1])
            if over.any():
                outside[j] += int(np.count_nonzero(over))
                v = np.clip(v, grid[0], grid[-1])
            a, c = _q.column_histogram(v, grid)
            atoms[j] += a
            cells[j] += c
    payload = pickle.dumps((atoms, cells, outside), protocol=5)
    yield pa.RecordBatch.from_arrays([pa.array([payload], pa.binary())], ["payload"])


def column_counts(df, columns, grid):
    """[(column, atoms, cells, outside)]: each column's histogram over the public grid
    (dperm.privacy.quantiles.column_histogram, values clipped to its ends, missing ones
    dropped), counted per partition in one Spark job and added on the driver."""
    import pickle

    from pyspark.sql import functions as F

    frame = df.select(*[F.col(c).cast("double").alias(f"c{j}") for j, c in enumerate(columns)])
    rows = frame.mapInArrow(functools.partial(_histogram_task, np.asarray(grid), len(columns)),
                            "payload binary").collect()
    atoms = np.zeros((len(columns), grid.size), dtype=np.int64)
    cells = np.zeros((len(columns), grid.size - 1), dtype=np.int64)
    outside = np.zeros(len(columns), dtype=np.int64)
    for r in rows:
        a, c, o = pickle.loads(r.payload)
        atoms += a
        cells += c
        outside += o
    return [(key, atoms[j], cells[j], int(outside[j])) for j, key in enumerate(columns)]


def estimate_bounds(df: Any, epsilon: float, *, columns: Sequence[Any] | None = None,
                    quantiles: Sequence[float] = _q.DEFAULT_QUANTILES,
                    bounds_range: Sequence[float] | None = None, grid: Any = None,
                    accountant: BudgetAccountant | None = None,
                    random_state: Any = None) -> _q.PrivateBounds:
    """Differentially private (low, high) quantile bounds of numeric columns of a Spark
    DataFrame: dperm.estimate_bounds, with one pass over the rows on the executors.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The private rows.  Missing values (null, NaN) are left out of a column's count;
        values outside the public range are clipped to its ends (a ClippingWarning).
    epsilon : float > 0
        The total budget (pure epsilon-DP), split evenly over the columns.
    columns : list of column names, optional
        Default: every column, each of which must then have a numeric Spark type (the
        schema is public; the columns released never depend on the values).
    quantiles, bounds_range, grid, accountant, random_state
        As for dperm.estimate_bounds.

    Returns
    -------
    PrivateBounds
        What dperm.estimate_bounds returns on the same rows: with the same seed the same
        bounds and the same record.
    """
    from dperm.data.spark_rows import is_spark_frame

    if not is_spark_frame(df):
        raise TypeError(f"df: expected a pyspark.sql DataFrame, got {type(df).__name__} "
                        "(dperm.estimate_bounds takes local data)")
    epsilon = check_epsilon(epsilon, "epsilon")
    q = _q._check_quantiles(quantiles)
    g, _ = _q._resolve_grid(grid, bounds_range)
    if accountant is not None and not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant: expected a dperm.BudgetAccountant, got "
                        f"{type(accountant).__name__}")
    keys = _numeric_columns(df, columns)
    if accountant is not None:
        # before the rows are read: a seed with an accountant is refused (the local
        # function's ValueError; the seed's warning comes with the release), the budget
        warn_if_seeded(random_state, accountant=accountant)
        accountant.check(PureEvent(epsilon))
    counts = column_counts(df, keys, g)
    _warn_outside(counts, g)
    return _q.bounds_from_histograms(
        {key: (atoms, cells) for key, atoms, cells, _ in counts}, epsilon, quantiles=q,
        bounds_range=bounds_range, grid=grid, accountant=accountant, random_state=random_state)
