"""Row norms and the rounding guard that keeps every row within its public bound.

The guarantee needs ||x_i|| <= R for every row the solver sees, in exact arithmetic
and in whatever summation order a caller (a kernel, a check, a user) computes the
norm.  Each map that puts rows onto the ball of radius R therefore leaves a margin a
few roundings wide.  This module is the one home of those margins and of the norm
computation they are checked with (issue 27, item 4):

* `row_norms`: the norm of every row of a dense, memory-mapped or CSR array, without
  overflow (rows whose sum of squares overflows float64 are scaled by their largest
  entry, as LAPACK's dnrm2 does) -- dperm.data._arrays.array_row_norms;
* `strict_row_norms`: the larger of two summation orders, for the encoders that must
  agree with any caller's check (the schema, the Adult and KDD Cup 99 loaders);
* `shrink_to`, `project_rows`: the in-place guard of those encoders (a factor
  1 - 8 eps per step, `SHRINK`);
* `pull_below`: apply_norm_bound's last step, for rows already scaled in the array's
  own dtype (float32 included: a factor 1 - 4 eps of that dtype);
* `FACTOR_MARGIN` (1 - 2^-40): the room left where the kernels multiply each entry by a
  clipping factor or the intercept's scale (dperm.data.design).
* `check_row_norms`: a row whose norm is above MAX_ROW_NORM (1e300) cannot be clipped
  reliably in float64 (its factor R / ||x|| is subnormal or 0, and the intercept's
  column c / t_i overflows); it is refused, naming the row, column and value.
"""
from typing import Any

import numpy as np
import numpy.typing as npt

from dperm.data._arrays import array_row_norms, scaled_row_norms

__all__ = ["SHRINK", "FACTOR_MARGIN", "row_norms", "strict_row_norms", "shrink_to",
           "project_rows", "pull_below", "dtype_shrink", "check_row_norms", "MAX_ROW_NORM"]

#: the encoders' step: a factor 1 - 8 eps absorbs the rounding of any caller's norm
SHRINK = 1.0 - 8 * np.finfo(np.float64).eps
#: where the kernels scale each entry (a clipping factor t_i, the intercept's 1/sqrt(2)):
#: 2^-40 of room, so that rounding in the scaled rows never lifts a norm above R
FACTOR_MARGIN = 1.0 - 2.0**-40

#: rows with a larger norm are refused (check_row_norms): their clipping factor would be
#: near or below the smallest normal float64
MAX_ROW_NORM = 1e300

row_norms = array_row_norms


def dtype_shrink(dtype: npt.DTypeLike, ulps: float) -> float:
    """1 - ulps * eps of `dtype` (float32 rows need a wider margin than float64)."""
    return 1 - ulps * np.finfo(dtype).eps


def strict_row_norms(X: np.ndarray) -> np.ndarray:
    """Row norms of a dense float64 array, the larger of two summation orders (so that
    callers' checks agree), without overflow."""
    with np.errstate(over="ignore"):
        out = np.maximum(np.sqrt(np.einsum("ij,ij->i", X, X)), np.linalg.norm(X, axis=1))
    big = np.flatnonzero(np.isinf(out))
    if big.size:
        out[big] = scaled_row_norms(X[big])
    return out


def shrink_to(X: np.ndarray, bound: float) -> None:
    """In place: rows a rounding error above `bound` are shrunk by 1 - 8 eps (up to four
    times)."""
    for _ in range(4):
        over = strict_row_norms(X) > bound
        if not over.any():
            break
        X[over] *= SHRINK


def project_rows(X: np.ndarray, mode: str | None = "each", bound: float = 1.0) -> None:
    """In place, a dense float64 X: "each" puts rows with norm > bound onto the sphere of
    radius bound, "global" divides all rows by the largest norm (times bound), any other
    mode only fixes rounding; then `shrink_to(X, bound)`."""
    norms = strict_row_norms(X)
    if mode == "global":
        if norms.size and norms.max() > 0:
            X *= bound * SHRINK / norms.max()
    elif mode == "each":
        big = norms > bound
        X[big] *= (bound * SHRINK / norms[big])[:, None]
    shrink_to(X, bound)


def pull_below(norms: np.ndarray, bound: float, dtype: npt.DTypeLike) -> np.ndarray:
    """Factors (float64) that take rows of these norms (computed after scaling in
    `dtype`) to at most `bound`: bound / norm * (1 - 4 eps of dtype)."""
    return bound / norms * dtype_shrink(dtype, 4)


def check_row_norms(norms: np.ndarray, X: Any, name: str = "X") -> None:
    """Refuse a row whose norm is above MAX_ROW_NORM (no float64 factor clips it
    reliably), naming its row, its largest cell's column and value."""
    bad = np.flatnonzero(norms > MAX_ROW_NORM)
    if not bad.size:
        return
    i = int(bad[0])
    row = X[i:i + 1]
    row = row.toarray() if hasattr(row, "toarray") else np.asarray(row)
    a = np.abs(np.asarray(row, dtype=np.float64)).ravel()
    j = int(np.nanargmax(a)) if a.size and not np.isnan(a).all() else 0
    raise ValueError(
        f"{name}: row {i} has a norm above {MAX_ROW_NORM:g}, too large to clip in float64 "
        f"(its column {j} holds {float(row.ravel()[j]):.6g}; {bad.size} such row(s)); "
        f"rescale the data by a public bound before fitting")
