"""The rows a fit sees, described rather than copied.

Two public, row-by-row maps sit between the user's X and the solver: clipping a
row onto the ball of radius R (a factor t_i <= 1 per row), and the estimator's
intercept column (the constant R appended, the row scaled by about 1/sqrt(2), so
that ||[x, R]|| / sqrt(2) <= R whenever ||x|| <= R; docs/specification.md).  Materializing
either copies X -- a memory map of many gigabytes included.  `DesignRows`
describes the rows

    [t_i x_i, c] * scale        (the constant column only when c is given)

and the kernels build them as they read each row of X: the factors ride on the
signed row weights and the constant column is added in the row buffer (see
dperm._core._objective.Data).  Nothing is copied.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dperm.data import _arrays
from dperm.data.norms import FACTOR_MARGIN

__all__ = ["DesignRows", "WithInterceptColumn", "INTERCEPT_SCALE", "augment_intercept"]

#: rows [x, R] are scaled by this: 1/sqrt(2), shrunk by 2^-40 (dperm.data.norms.FACTOR_MARGIN)
#: so that rounding in the scaled rows can never lift a norm above R (the bound the
#: guarantee needs)
INTERCEPT_SCALE = (1.0 / np.sqrt(2.0)) * FACTOR_MARGIN


class DesignRows:
    """Rows [t_i x_i, c] * scale of X (n, d): shape (n, d) or (n, d + 1) with c.

    X: a validated dense array, memory map or CSR matrix; factor: None (all 1)
    or (n,) float64 in (0, 1]; constant: None or c > 0; scale > 0.  The solver,
    both mechanisms and the norm checks accept it wherever they accept X.
    """

    def __init__(self, X: Any, factor: npt.ArrayLike | None = None, constant: float | None = None,
                 scale: float = 1.0, *, checked: bool = False) -> None:
        self.X = X
        self.factor = None if factor is None else np.ascontiguousarray(factor, dtype=np.float64)
        self.constant = None if constant is None else float(constant)
        self.scale = float(scale)
        #: X has been through check_X: the entry points below the estimator skip the
        #: pass over the data that validation costs (a memory map of gigabytes, say)
        self.checked = bool(checked)
        self._x_norms: np.ndarray | None = None
        if self.constant is not None and not self.constant > 0:
            raise ValueError("DesignRows: the constant column must be > 0")
        if not self.scale > 0:
            raise ValueError("DesignRows: scale must be > 0")

    @property
    def shape(self) -> tuple[int, int]:
        n, d = self.X.shape
        return (n, d + (self.constant is not None))

    @property
    def dtype(self) -> np.dtype:
        return self.X.dtype

    def x_norms(self) -> np.ndarray:
        """||x_i|| of the rows of X (before factors), computed once per X."""
        if self._x_norms is None:
            self._x_norms = _arrays.array_row_norms(self.X)
        return self._x_norms

    def _derive(self, X: Any, factor: npt.ArrayLike | None, constant: float | None,
                scale: float) -> DesignRows:
        out = DesignRows(X, factor, constant, scale, checked=self.checked and X is self.X)
        if X is self.X:
            out._x_norms = self._x_norms
        return out

    def with_X(self, X: Any, checked: bool = False) -> DesignRows:
        """The same factors, constant and scale over the rows of another X."""
        out = self._derive(X, self.factor, self.constant, self.scale)
        out.checked = out.checked or checked
        return out

    def with_factor(self, factor: npt.ArrayLike | None) -> DesignRows:
        """The same rows with the clipping factors t_i replaced (None: all 1)."""
        return self._derive(self.X, factor, self.constant, self.scale)

    def with_constant(self, value: float, scale: float) -> DesignRows:
        """The same rows with a constant column of `value` appended, all times `scale`."""
        if self.constant is not None:
            raise ValueError("WithInterceptColumn: X already has a constant column")
        return self._derive(self.X, self.factor, value, self.scale * scale)

    def x_radius(self, data_norm: float) -> float:
        """The bound on ||t_i x_i|| that keeps a whole row within data_norm."""
        r2 = (data_norm / self.scale) ** 2 - (self.constant or 0.0) ** 2
        if r2 <= 0:
            raise ValueError(f"data_norm={data_norm}: too small for an intercept column of "
                             f"{self.constant} (the scaled constant alone exceeds it)")
        if self.scale == 1.0 and self.constant is None:
            return float(np.sqrt(r2))   # rows used as they are: no rounding to allow for
        # the kernels multiply each entry by scale * t_i (rounded): keep 2^-40 of room
        return float(np.sqrt(r2)) * FACTOR_MARGIN

    def signed_weights(self, y: npt.ArrayLike) -> np.ndarray:
        """What the kernels multiply row i by: y_i * scale * t_i."""
        s = np.asarray(y, dtype=np.float64) * self.scale
        return np.ascontiguousarray(s if self.factor is None else s * self.factor)

    def constant_column(self) -> np.ndarray | None:
        """The kernels' last column, c / t_i (times the row weight: c * scale), or None."""
        if self.constant is None:
            return None
        n = self.X.shape[0]
        if self.factor is None:
            return np.full(n, self.constant)
        return np.ascontiguousarray(self.constant / self.factor)

    def toarray(self) -> np.ndarray:
        """The materialized rows (a dense float64 copy: for small problems only)."""
        return self.block(0, self.X.shape[0])

    def block(self, start: int, stop: int) -> np.ndarray:
        """Rows start:stop materialized (a dense float64 copy); the same values as those
        rows of `toarray` (every step is row by row), without forming the others."""
        part = self.X[start:stop]
        X = part.toarray() if hasattr(part, "toarray") else np.asarray(part)
        X = X.astype(np.float64)
        if self.factor is not None:
            X = X * self.factor[start:stop, None]
        if self.constant is not None:
            X = np.hstack([X, np.full((X.shape[0], 1), self.constant)])
        return X * self.scale


def WithInterceptColumn(X: Any, value: float, scale: float = INTERCEPT_SCALE) -> Any:
    """X's rows (or a DesignRows' rows) with the intercept's constant column appended."""
    if getattr(X, "_dperm_distributed", False):
        return X.with_intercept(value, scale)   # added on the workers (dperm.data.dask_rows)
    if isinstance(X, DesignRows):
        return X.with_constant(value, scale)
    return DesignRows(X, None, value, scale)


def matmul_rows(X: Any, W: npt.ArrayLike, block_entries: int = 1 << 18) -> np.ndarray:
    """X @ W in float64 for dense, memory-mapped or CSR X (n, d) and W (d,) or (d, k),
    reading X in blocks of rows: a float32 X (say, a map of many gigabytes) is
    converted one block at a time, never as a whole."""
    W = np.asarray(W, dtype=np.float64)
    n, d = X.shape
    out = np.empty((n,) + W.shape[1:])
    if hasattr(X, "indptr"):
        step = max(1, block_entries // max(1, X.nnz // max(n, 1)))
    else:
        step = max(1, block_entries // max(1, d))
    for i in range(0, n, step):
        blk = X[i:i + step]
        blk = blk.astype(np.float64) if blk.dtype != np.float64 else blk
        out[i:i + step] = blk @ W
    return out


def augment_intercept(X: Any, data_norm: float) -> Any:
    """Rows [x, R] * INTERCEPT_SCALE (about 1/sqrt(2)): ||.|| <= R when ||x|| <= R.

    A materialized copy (float64 for float64 X): the estimator itself uses the
    virtual WithInterceptColumn, which never copies X; this is for
    code that needs the matrix (experiments, benchmarks). CSR stays CSR."""
    n = X.shape[0]
    if not isinstance(X, np.ndarray):
        import scipy.sparse as sp

        const = sp.csr_array(np.full((n, 1), data_norm, dtype=X.dtype))
        out = sp.hstack([X, const], format="csr", dtype=X.dtype)
        out.data *= X.dtype.type(INTERCEPT_SCALE)
        return out
    out = np.empty((n, X.shape[1] + 1), dtype=X.dtype)
    out[:, :-1] = X
    out[:, -1] = data_norm
    out *= X.dtype.type(INTERCEPT_SCALE)
    return out
