"""Plain arrays (dense, memory-mapped or CSR): the low-level passes the row description
and the validation share.  Imports nothing from dperm."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["array_row_norms", "scaled_row_norms"]


def _is_sparse(X: Any) -> bool:
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover
        return False
    return sp.issparse(X)


def _csr_row_blocks(indptr: np.ndarray, target: int = 1 << 20) -> list[tuple[int, int]]:
    """Row ranges (r0, r1) covering all rows, each holding about `target` stored entries
    (a longer row is a block of its own), so that a pass over a large CSR matrix, e.g.
    one memory-mapped from disk, needs temporaries of one block only."""
    n = indptr.shape[0] - 1
    nnz = int(indptr[-1]) if n > 0 else 0
    if nnz <= target:
        return [(0, n)]
    cuts = np.searchsorted(indptr, np.arange(target, nnz, target, dtype=np.int64), side="right")
    bounds = np.unique(np.concatenate(([0], np.clip(cuts - 1, 0, n), [n])))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def array_row_norms(X: Any) -> np.ndarray:
    """Euclidean norm of every row of a dense, mapped or CSR array (float64, (n,)), with
    no temporary larger than a block of rows.

    The sum of squares overflows float64 for a cell of about 1e154 and above; such rows
    are computed again scaled by their largest absolute entry, as LAPACK's dnrm2 does
    (`scaled_row_norms`), so their norm is right (inf only where the norm itself is
    above the largest float64).  The other rows are computed as before, bit for bit."""
    if _is_sparse(X):
        out = np.zeros(X.shape[0])
        indptr = X.indptr
        for r0, r1 in _csr_row_blocks(indptr):
            p0, p1 = int(indptr[r0]), int(indptr[r1])
            if p1 == p0:
                continue
            with np.errstate(over="ignore"):
                sq = np.square(X.data[p0:p1], dtype=np.float64)
            starts = indptr[r0:r1 + 1].astype(np.intp) - p0
            nz = starts[1:] > starts[:-1]
            block = out[r0:r1]
            with np.errstate(over="ignore", invalid="ignore"):
                block[nz] = np.add.reduceat(sq, starts[:-1][nz])
        out = np.sqrt(out)
        big = np.flatnonzero(np.isinf(out))
        if big.size:
            out[big] = scaled_row_norms(X[big])
        return out
    n = X.shape[0]
    out = np.empty(n)
    step = max(1, (1 << 20) // max(1, X.shape[1]))
    for i in range(0, n, step):
        blk = X[i:i + step]
        with np.errstate(over="ignore", invalid="ignore"):
            out[i:i + step] = np.einsum("ij,ij->i", blk, blk, dtype=np.float64)
    out = np.sqrt(out)
    big = np.flatnonzero(np.isinf(out))
    if big.size:
        out[big] = scaled_row_norms(X[big])
    return out


def scaled_row_norms(rows: Any) -> np.ndarray:
    """Row norms without overflow (dense or CSR rows, float64 (n,)): m sqrt(sum (x / m)^2),
    m the row's largest |x|, as LAPACK's dnrm2 scales (inf only where the norm itself is
    above the largest float64, or a cell is infinite)."""
    if _is_sparse(rows):
        rows = rows.toarray()
    a = np.abs(np.asarray(rows, dtype=np.float64))
    m = a.max(axis=1) if a.shape[1] else np.zeros(a.shape[0])
    safe = np.where((m > 0) & np.isfinite(m), m, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        r = a / safe[:, None]
        out = safe * np.sqrt(np.einsum("ij,ij->i", r, r))
    out[~np.isfinite(m)] = np.inf
    return out
