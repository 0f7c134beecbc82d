"""The one oracle factory: the only Python code that asks how the rows are stored.

X arrives as a dense array, a memory map, a CSR matrix, a `DesignRows` (clipping
factors and an intercept column described, not copied) or a Dask collection.  The
functions here validate it and hand the solvers one object, "the objective over these
rows", whatever the storage:

* `check_rows(X, y, ...)`: the validated rows and labels (a Dask collection becomes a
  `DaskRows`, validated on the workers; local rows are checked here);
* `binary_oracle(rows, y, ...)`: value + gradient, Hessian-vector products, the
  solver's view (the compiled `Data` for the nogil L-BFGS, or a Python callable over
  the workers) and whether the curvature cache of Newton-CG applies;
* `softmax_oracle(rows, y, K, ...)`: the softmax (multinomial) objective's data term
  over the same rows -- local rows by the compiled softmax pass, rows on the Dask
  workers or the Spark executors by the same pass per block, the sums added there in
  the chunk tree's fixed order; `softmax_rows(X)`: local rows read block by block
  (class probabilities);
* `class_rows(X, y, classes)`: a classifier's rows on the Dask workers with the class
  indices of its labels beside them, mapped there (`rows.for_class(k)`: one class
  against the rest, its +-1 labels made there too); `label_set`, `label_shape`: what
  the estimator reads of labels that may be on the workers;
* `is_distributed`, `require_local`, `full_hessian`, `dense_rows`: the few other
  places where storage matters (refusals, O(d^2) Hessians, small materializations).

Solvers (dperm.optim), mechanisms (dperm.privacy) and the estimators (dperm.sklearn)
call these and never test a storage type themselves.
"""
import functools
from typing import Any

import numpy as np

from dperm.data import dask_rows, spark_rows
from dperm.data.design import DesignRows
from dperm.data.validation import check_class_labels, check_pm1_labels, check_real_labels, check_X
from dperm.losses import check_n_classes

__all__ = ["check_rows", "binary_oracle", "softmax_oracle", "softmax_rows", "is_distributed",
           "is_dask_array",
           "require_local", "full_hessian", "dense_rows", "dense_matrix", "SoftmaxRows",
           "sufficient_statistics"]

#: entries of one (rows x m K) float64 temporary per block: 2^21 entries = 16 MiB
BLOCK_ENTRIES = 1 << 21


def is_distributed(X):
    """Whether X is a Dask collection (or rows already on the workers), or Spark rows."""
    return dask_rows.is_distributed(X) or spark_rows.is_spark_rows(X)


def is_dask_array(X):
    """Whether X is a Dask array (not yet rows on the workers)."""
    return dask_rows.is_dask_array(X)


def require_local(X, message):
    """TypeError(message) if X is a Dask collection (or Spark rows)."""
    if is_distributed(X):
        raise TypeError(message)


def check_rows(X, y, *, min_samples=1, softmax=False, n_classes=None, regression=False):
    """(rows, labels) validated for an objective.

    A Dask collection becomes a DaskRows (rows, labels, validation and clipping stay on
    the workers; labels None here; with `regression` the labels on the workers are real
    targets, with `softmax` the class indices 0..n_classes-1); Spark rows are checked
    for the task (`SparkRows.checked`).  Local X is checked
    (dense, mapped, CSR or DesignRows); y becomes
    labels in {-1, +1}, or class indices 0..K-1 for the softmax model (K = n_classes,
    the public number of classes of a private multinomial fit).
    """
    if softmax:
        n_classes = check_n_classes(n_classes, mechanism=True)
    if spark_rows.is_spark_rows(X):   # labels on the executors (dperm.data.spark_rows)
        return X.checked(min_samples=min_samples, softmax=softmax, regression=regression,
                         n_classes=n_classes if softmax else None), None
    if dask_rows.is_distributed(X):
        return dask_rows.as_rows(X, y, min_samples=min_samples, regression=regression,
                                 n_classes=n_classes if softmax else None), None
    X = check_X(X, name="X", min_samples=min_samples, accept_sparse=True)
    if regression:
        return X, check_real_labels(y, X.shape[0], name="y")
    if softmax:
        return X, check_class_labels(y, X.shape[0], n_classes, name="y")
    return X, check_pm1_labels(y, X.shape[0], name="y")


# ------------------------------------------------------------------ binary losses
class _CompiledOracle:
    """Local rows (dense, mapped, CSR, DesignRows) read by the compiled passes."""

    caches_curvature = True
    keeps_curvature = False

    def __init__(self, data, n_threads):
        self.data = data
        self.shape = data.shape
        self.n_threads = n_threads

    def value_grad(self, W, l2, B, loss, h, curv=None):
        from dperm._core._objective import value_grad

        return value_grad(self.data, W, l2, B, loss, h, self.n_threads, curv)

    def hess_vec(self, W, V, l2, loss, h, curv=None):
        from dperm._core._objective import hess_vec

        return hess_vec(self.data, W, V, l2, loss, h, self.n_threads, curv)

    def solver_view(self, l2, B, loss, h):
        """What the compiled L-BFGS reads: the rows themselves (passes run without the GIL)."""
        return self.data


class _DistributedOracle:
    """Rows on the Dask workers: each pass is a sum over the workers (B stays here, on
    the client: the workers never see the noise)."""

    caches_curvature = False
    #: Newton's curvature cache lives on the workers, beside the rows (keep_curvature)
    keeps_curvature = True

    def __init__(self, rows, worker_threads):
        self.rows = rows
        self.shape = rows.shape
        self.n_threads = worker_threads

    def value_grad(self, W, l2, B, loss, h, curv=None, keep_curvature=False):
        return self.rows.value_grad(W, l2, B, loss, h, self.n_threads, keep_curvature)

    def hess_vec(self, W, V, l2, loss, h, curv=None, keep_curvature=False):
        return self.rows.hess_vec(W, V, l2, loss, h, self.n_threads, keep_curvature)

    def solver_view(self, l2, B, loss, h):
        """What the compiled L-BFGS reads: a value-and-gradient callable (W, idx)."""
        def vg(W, idx):
            return self.rows.value_grad(W, l2[idx], None if B is None else B[idx], loss, h,
                                        self.n_threads)
        return vg


def binary_oracle(rows, y, *, n_threads, worker_threads=None, regression=False):
    """The objective over validated rows (from `check_rows`) for a binary loss, or, with
    `regression`, a loss of the residual f.x - y (y real).

    n_threads: OpenMP threads of a local pass; worker_threads: what each Dask worker is
    asked to use (None: its own default).  The kernels read the signed row weights (the
    labels, times the row scale of a virtual intercept column) without a copy of X; a
    regression loss has row weights 1 (times the row scale) and the labels apart.
    """
    if isinstance(rows, dask_rows.DaskRows) or spark_rows.is_spark_rows(rows):
        return _DistributedOracle(rows, worker_threads)
    from dperm._core._objective import Data

    labels = None
    if regression:
        labels, y = np.ascontiguousarray(y, dtype=np.float64), np.ones(rows.shape[0])
    if isinstance(rows, DesignRows):
        return _CompiledOracle(Data(rows.X, rows.signed_weights(y), rows.constant_column(),
                                    labels), n_threads)
    return _CompiledOracle(Data(rows, np.ascontiguousarray(y), None, labels), n_threads)


def full_hessian(X, y, W, l2, lo, h, n_threads):
    """Full Hessians (k, d, d) of the binary (or regression) objective at W (k, d) over
    validated local rows: O(n d^2), for small d."""
    from dperm._core._objective import hessian as _hess

    if isinstance(X, DesignRows):
        X = X.toarray()   # the full Hessian is for small d: materializing is fine
    labels = None
    if lo.regression:
        labels, y = np.ascontiguousarray(y, dtype=np.float64), np.ones(X.shape[0])
    if not isinstance(X, np.ndarray):
        # CSR: X^T diag(phi''/n) X by scipy (the full Hessian is for small d anyway)
        import scipy.sparse as sp

        out = np.empty((W.shape[0], X.shape[1], X.shape[1]))
        for j in range(W.shape[0]):
            z = y * (X @ W[j])
            _, _, d2 = lo.per_sample(z if labels is None else z - labels, h)
            H = X.T @ (sp.diags_array(d2 / X.shape[0]) @ X)
            out[j] = H.toarray() + l2[j] * np.eye(X.shape[1])
        return out
    return _hess(X, y, W, l2, lo.kernel_id, h, n_threads, labels)


def dense_rows(X):
    """X as a numpy array if it is not one already (a small public matrix)."""
    return X if isinstance(X, np.ndarray) else np.asarray(X)


def dense_matrix(X):
    """The rows of validated local X (dense, mapped, CSR or a DesignRows, with its
    clipping factors and constant column applied) as a dense float64 array: for the
    sufficient-statistics method, which needs X^T X (d x d) anyway.  Rows on the Dask
    workers or the Spark executors are returned as they are: `sufficient_statistics` reads them there.
    (`sufficient_statistics` reads large local rows by blocks instead.)"""
    if isinstance(X, dask_rows.DaskRows) or spark_rows.is_spark_rows(X):
        return X
    if isinstance(X, DesignRows):
        return X.toarray()
    if hasattr(X, "toarray"):
        return np.asarray(X.toarray(), dtype=np.float64)
    return np.asarray(X, dtype=np.float64)


def sufficient_statistics(X, y, data_norm, label_bound, check_local):
    """(X^T X (d, d), X^T y (d,), (n, d)): sums over the rows, for the
    sufficient-statistics method (AdaSSP).

    Rows on the Dask workers or the Spark executors with their real targets (a DaskRows
    or SparkRows built for a regression loss; y is not used): one pass, per chunk on the workers, added in the
    chunk tree's fixed order; a row over data_norm or a target over label_bound raises
    ValueError there (clip them first).  Local rows (from `dense_matrix`):
    `check_local(X, y)` returns the checked dense float64 rows and targets, whose
    products are formed here."""
    if isinstance(X, dask_rows.DaskRows) or spark_rows.is_spark_rows(X):
        gram, xty = X.sufficient_statistics(data_norm, label_bound)
        return gram, xty, X.shape
    n, d = _local_shape(X)
    if n is None or d is None or n <= statistics_block_rows(d):
        # one block: the whole matrix, as always (and any other array-like, whole)
        Xa, ya = check_local(dense_matrix(X), y)
        return Xa.T @ Xa, Xa.T @ ya, Xa.shape
    # Blocks of rows, summed in order: a memory map (dperm fit's streamed binary) or a
    # CSR matrix is never materialized, and the sums do not depend on how X is stored
    if hasattr(X, "tocsr") and not isinstance(X, DesignRows):
        X = X.tocsr()                     # (slices of rows: CSR)
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (n,):
        raise ValueError(f"y: must be 1-D with one value per row of X ({n}), got shape {y.shape}")
    rows = statistics_block_rows(d)
    gram, xty = np.zeros((d, d)), np.zeros(d)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        Xb, yb = check_local(_dense_block(X, start, stop), y[start:stop])
        gram += Xb.T @ Xb
        xty += Xb.T @ yb
    return gram, xty, (n, d)


#: entries (rows x columns) per block of the local sufficient statistics: 32 MiB of
#: float64 rows at a time
STATISTICS_BLOCK_ENTRIES = 1 << 22


def statistics_block_rows(n_columns: int) -> int:
    """Rows per block of `sufficient_statistics` on local rows: a function of the number
    of columns only (public), so the sums, and the release, are the same bits whether the
    rows are an array in memory, a memory map or a CSR matrix."""
    return max(1, STATISTICS_BLOCK_ENTRIES // max(1, int(n_columns)))


def _local_shape(X: Any) -> tuple[int | None, int | None]:
    """(n, d) of local rows that can be read by blocks, or (None, None) for any other
    array-like (a list, say: converted whole by the caller's check, as before)."""
    if isinstance(X, DesignRows) or (isinstance(X, np.ndarray) and X.ndim == 2) \
            or (hasattr(X, "tocsr") and len(getattr(X, "shape", ())) == 2):
        n, d = X.shape
        return int(n), int(d)
    return None, None


def _dense_block(X: Any, start: int, stop: int) -> np.ndarray:
    """Rows start:stop of local X as dense float64 (the rows `dense_matrix` would give)."""
    if isinstance(X, DesignRows):
        return X.block(start, stop)
    part = X[start:stop]
    if hasattr(part, "toarray"):
        return np.asarray(part.toarray(), dtype=np.float64)
    return np.asarray(part, dtype=np.float64)


# ------------------------------------------------------------------ the softmax model
class SoftmaxRows:
    """Block-by-block access to validated rows for the softmax objective: a
    dense/mapped/CSR X, or a DesignRows (rows [t_i x_i, c] * scale, formed per block
    from X's raw rows)."""

    def __init__(self, X):
        if isinstance(X, DesignRows):
            self.raw = X.X
            self.factor = X.factor
            self.scale = X.scale
            self.const = None if X.constant is None else X.constant * X.scale
        else:
            self.raw, self.factor, self.scale, self.const = X, None, 1.0, None
        self.sparse = hasattr(self.raw, "indptr")
        self.n, self.d_raw = self.raw.shape
        self.d = self.d_raw + (self.const is not None)
        self._compiled = None

    def compiled(self):
        """The rows as the compiled kernels read them (dperm._core._objective.Data:
        dense or CSR X in place, row weights scale t_i, the constant column c / t_i)."""
        if self._compiled is None:
            from dperm._core._objective import Data

            X = self.raw
            if self.sparse:
                X = X if X.format == "csr" else X.tocsr()
            elif not (isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64)
                      and X.flags.c_contiguous):
                X = np.ascontiguousarray(X, dtype=np.float64)
            s = np.full(self.n, self.scale) if self.factor is None else self.scale * self.factor
            icpt = None
            if self.const is not None:   # row i's last entry s_i icpt_i = const
                icpt = np.ascontiguousarray(self.const / s)
            self._compiled = Data(X, np.ascontiguousarray(s), icpt)
        return self._compiled

    def block_rows(self, width):
        """Rows per block so that an (rows, width) float64 temporary, and the float64
        copy of a block of X, stay within BLOCK_ENTRIES entries."""
        per_row = max(1, self.raw.nnz // max(self.n, 1)) if self.sparse else self.d_raw
        return int(max(1, min(self.n, BLOCK_ENTRIES // max(1, width),
                              BLOCK_ENTRIES // max(1, per_row))))

    def blocks(self, width):
        """Yields (i0, i1, Xb, rs): Xb the float64 raw rows i0:i1 (dense or CSR) and rs
        the per-row multiplier (rows, 1) or a float, so that row i is [rs_i Xb_i, const]."""
        step = self.block_rows(width)
        for i0 in range(0, self.n, step):
            i1 = min(self.n, i0 + step)
            Xb = self.raw[i0:i1]
            if Xb.dtype != np.float64:
                Xb = Xb.astype(np.float64)
            elif not self.sparse:
                Xb = np.asarray(Xb)
            rs = self.scale if self.factor is None else (self.scale * self.factor[i0:i1])[:, None]
            yield i0, i1, Xb, rs

    def margins(self, Xb, rs, Wx, wc):
        """Z = rows @ W_all.T (rows, m K) for W_all = [Wx, wc] (wc: the constant column's
        weights, or None)."""
        Z = np.asarray(Xb @ Wx.T)
        if not (isinstance(rs, float) and rs == 1.0):
            Z *= rs
        if wc is not None:
            Z += self.const * wc
        return Z


class _LocalSoftmax:
    """The softmax data term over local rows (dense, mapped, CSR, DesignRows): one
    compiled pass over every row for all m problems."""

    def __init__(self, rows, y, K, n_threads):
        self.rows, self.y, self.K = rows, y, K
        self.n, self.d = rows.n, rows.d
        self.n_threads = n_threads

    def sums(self, W):
        """sum_i [logsumexp(W_j x_i) - (W_j x_i)_{y_i}] (m,) and its gradient (m, K, d)
        at W (m, K, d) (tests/optim/softmax_reference.py holds the numpy reference)."""
        from dperm._core._objective import softmax_sums

        m, K, d = W.shape
        F, G = softmax_sums(self.rows.compiled(), self.y,
                            np.ascontiguousarray(W.reshape(m * K, d)), K, self.n_threads)
        return F, G.reshape(m, K, d)


class _DistributedSoftmax:
    """The softmax data term over rows on the Dask workers or the Spark executors: each
    block's sums by the same compiled pass, added there in the fixed order of the chunk
    (partition) tree, every block once with its public row count (or no answer)."""

    def __init__(self, rows, K, worker_threads):
        self.rows, self.K = rows, K
        self.n, self.d = rows.shape
        self.n_threads = worker_threads

    def sums(self, W):
        return self.rows.softmax_sums(np.ascontiguousarray(W), self.n_threads)


def softmax_oracle(X, y, n_classes, *, n_threads=None, worker_threads=None):
    """The softmax (multinomial) objective's data term over X, whatever X's storage:
    an object with ``n``, ``d`` and ``sums(W)`` -> (F (m,), G (m, K, d)), the sums over
    the rows of logsumexp(W_j x_i) - (W_j x_i)_{y_i} and of their gradients, for W of
    shape (m, K, d).  The solver (dperm.optim.softmax) adds 1/n, the ridge and the
    linear term itself and never learns where the rows are.

    Local X (dense, mapped, CSR, DesignRows): y class indices 0..K-1 (checked here),
    the compiled pass with n_threads (None: all cores).  A Dask array (or rows on the
    workers built with ``n_classes=K``) or Spark rows built with task="multiclass": the
    labels are on the workers (y, if given, is sent there for a Dask array), each
    block's pass with worker_threads (None: the workers' own)."""
    from dperm.data.validation import check_n_threads

    K = check_n_classes(n_classes)
    if spark_rows.is_spark_rows(X):
        return _DistributedSoftmax(X.checked(softmax=True, n_classes=K), K, worker_threads)
    if dask_rows.is_distributed(X):
        return _DistributedSoftmax(dask_rows.as_rows(X, y, n_classes=K), K, worker_threads)
    rows = softmax_rows(X)
    labels = np.ascontiguousarray(check_class_labels(y, rows.n, K), dtype=np.int64)
    return _LocalSoftmax(rows, labels, K, check_n_threads(n_threads))


def softmax_rows(X):
    """SoftmaxRows over validated local rows (a Dask collection or Spark rows is refused:
    their objective is `softmax_oracle`'s)."""
    if getattr(X, "_dperm_distributed", False):
        raise TypeError("X: the multinomial objective runs on local rows (dense, CSR, memory "
                        "map or DesignRows); a Dask collection is not supported here")
    return SoftmaxRows(check_X(X, name="X", accept_sparse=True))


# ------------------------------------------------------------------ estimators and tuning
def _is_pandas_frame(X):
    return type(X).__module__.split(".")[0] == "pandas" and hasattr(X, "iloc") \
        and hasattr(X, "columns")


def labelled_rows(X, y, *, min_samples=1, accept_worker_rows=True, describe=False,
                  frames=False, labels_on_workers=False):
    """(X, y, distributed) for an estimator's fit or private tuning.

    With `frames` (private tuning), a pandas or dask DataFrame is returned as it is,
    for an estimator that reads its columns (a dask DataFrame's labels are brought to
    the client; its rows stay on the workers).

    A Dask collection (rows already on the workers too, when `accept_worker_rows`)
    keeps its rows on the workers: its shape and chunks are checked here and the labels
    (n values, public-sized) are brought to the client -- with `labels_on_workers` they
    are not: a Dask array of labels stays one (a dask Series becomes one, its partition
    lengths counted; with a dask DataFrame X paired with its rows by position,
    dperm.data.dask_rows.series_labels), for `class_rows`.  A dask DataFrame of numeric
    columns (without `frames`) becomes a Dask array chunked by its partitions.  Local X is validated once;
    with `describe` it comes back as a DesignRows marked checked, so that the mechanism
    and the solver below take it (and its row norms, once computed) as it is.
    """
    if frames and (dask_rows.is_dask_frame(X) or _is_pandas_frame(X)):
        # a data frame for an estimator that reads columns (a Pipeline with a
        # PublicBoundsTransformer): kept as it is; a dask DataFrame stays on the workers
        if hasattr(y, "compute"):
            y = y.compute()
        return X, y, dask_rows.is_dask_frame(X)
    from_frame = dask_rows.is_dask_frame(X)
    if from_frame:
        X = dask_rows.frame_as_array(X)
    distributed = dask_rows.is_distributed(X) if accept_worker_rows \
        else dask_rows.is_dask_array(X)
    if distributed:
        X = dask_rows._check_array(X)
        if labels_on_workers and dask_rows.is_dask_series(y):
            # a dask Series: its values stay there, chunked like X's rows when X was a frame
            y = dask_rows.series_labels(y, X.chunks[0] if from_frame else None)
        elif labels_on_workers and dask_rows.is_dask_array(y):
            pass
        elif hasattr(y, "compute"):   # a Dask array or Series
            y = y.compute()
        return X, y, True
    X = check_X(X, name="X", min_samples=min_samples, accept_sparse=True)
    return (DesignRows(X, checked=True) if describe else X), y, False


def with_worker_labels(X, labels, *, min_samples=1, regression=False, n_classes=None):
    """Rows on the workers get their labels ({-1, +1}, or with `regression` real
    targets, or with `n_classes` = K the class indices 0..K-1 of the softmax model,
    sent chunked like the rows); local rows are returned as they are (their labels
    travel with the fit's call)."""
    if dask_rows.is_distributed(X):
        return dask_rows.as_rows(X, labels, min_samples=min_samples, regression=regression,
                                 n_classes=n_classes)
    return X


def real_targets(X, y, centre=None):
    """A regression fit's targets on its scale: finite real numbers minus the public
    centre (``label_bounds``' midpoint; None: unchanged), one per row of X.  Local:
    checked here (`check_real_labels`), a float64 array.  A Dask array y beside rows on
    the Dask workers stays there: checked and centred chunk by chunk on the workers
    (lazily; the same operations, the same bits), a Dask array."""
    if dask_rows.is_distributed(X) and dask_rows.is_dask_array(y):
        return dask_rows.centred_targets(y, int(X.shape[0]), centre)
    y = check_real_labels(y, X.shape[0], name="y")
    if centre is not None:
        y = np.asarray(y, dtype=np.float64) - centre
    return y


def targets_to_workers(X, y, label_bound, *, min_samples=2):
    """(rows on the Dask workers with their targets clipped to [-label_bound,
    label_bound], how many were clipped, the clipped targets or None): y from
    `real_targets`.  A numpy y is clipped here (`bound_labels`) and sent chunked like
    the rows; a Dask y is clipped on the workers, only the count comes back (the
    targets returned are None: the rows carry them)."""
    from dperm.data.validation import bound_labels

    if dask_rows.is_dask_array(y):
        yc, clipped = dask_rows.clipped_targets(y, label_bound)
        return with_worker_labels(X, yc, min_samples=min_samples, regression=True), clipped, None
    yc, clipped = bound_labels(y, label_bound)
    return with_worker_labels(X, yc, min_samples=min_samples, regression=True), clipped, yc


def class_rows(X, y, classes, *, min_samples=1):
    """Rows of a Dask array X whose labels, on the workers, are the indices of y's labels
    in the public `classes` (mapped and checked there, chunk by chunk: y is not brought
    to the client): the softmax model's rows, and with ``rows.for_class(k)`` each
    binary model's (dperm.data.dask_rows.class_rows)."""
    return dask_rows.class_rows(X, y, classes, min_samples=min_samples)


def label_set(y):
    """The distinct labels of y, sorted: np.unique, or for a Dask array found on the
    workers (only the set comes back); NaN or infinity among them raises ValueError."""
    return dask_rows.label_set(y)


def label_shape(y):
    """The shape of labels y, without reading them (a Dask array's is known here)."""
    return tuple(y.shape) if dask_rows.is_dask_array(y) else np.asarray(y).shape


def n_rows(X):
    """The number of rows of validated X (a dask DataFrame's: counted on the workers)."""
    if dask_rows.is_dask_frame(X):
        return int(dask_rows.frame_lengths(X).sum())
    return int(X.shape[0])


def row_parts(X, y, parts):
    """part(i) -> (rows, labels) of the i-th disjoint part (sorted row indices): cut on
    the workers for a Dask array or DataFrame (the split is public randomness, drawn by
    the caller; within a part the rows keep X's order), one part at a time for local
    rows (no copy of all of X)."""
    if dask_rows.is_dask_array(X) or dask_rows.is_dask_frame(X):
        cut = (dask_rows.split_rows if dask_rows.is_dask_array(X) else dask_rows.split_frame)(
            X, parts)

        def part(i):
            return cut[i][0], y[cut[i][1]]
    elif _is_pandas_frame(X):
        def part(i):
            return X.iloc[parts[i]], y[parts[i]]
    else:
        def part(i):
            return X[parts[i]], y[parts[i]]
    return part


def count_mistakes(estimator, X, y):
    """Rows whose predicted label differs from y: counted chunk by chunk (partition by
    partition) on the workers for a Dask array (DataFrame; y numpy, or for a Dask array
    a Dask array of labels, compared there), only the counts coming back; on the
    executors for Spark rows (their labels there; y not used); locally otherwise."""
    if spark_rows.is_spark_rows(X):
        return int(round(X.block_sum(functools.partial(_mistakes, estimator.predict))))
    if dask_rows.is_dask_array(X):
        return dask_rows.count_mistakes(estimator, X, y)
    if dask_rows.is_dask_frame(X):
        return dask_rows.count_frame_mistakes(estimator, X, y)
    return int(np.count_nonzero(np.asarray(estimator.predict(X)) != y))


def _mistakes(predict, X, labels):
    """Rows of one block whose predicted label differs from labels (on a worker)."""
    return np.count_nonzero(np.asarray(predict(X)) != labels)


def clipped_abs_error(estimator, X, y, low, high):
    """sum_i |clip(f(x_i)) - clip(y_i)|, both clipped to [low, high] (a regression's
    score in private selection): predicted and summed chunk by chunk on the workers for
    a Dask array or DataFrame (y numpy, or a Dask array: compared there; the sum comes
    back), on the executors for Spark rows (their targets there; y not used); locally
    otherwise."""
    if spark_rows.is_spark_rows(X):
        return float(X.block_sum(functools.partial(_abs_error, estimator.predict, low, high)))
    pred = estimator.predict(X)
    if dask_rows.is_dask_array(pred):      # rows on the workers: the sum computed there
        return dask_rows.clipped_abs_error(pred, y, low, high)
    return _abs_error(lambda _: pred, low, high, None, y)


def _abs_error(predict, low, high, X, y):
    pred = np.clip(np.asarray(predict(X), dtype=np.float64), low, high)
    err = np.abs(pred - np.clip(np.asarray(y, dtype=np.float64), low, high))
    # two values of [low, high]: each term in [0, high - low]
    return float(np.sum(err))


def scored_rows(X, y):
    """(X, y) for fits that are scored on their own training rows (private selection,
    dperm.privacy.selection): Spark rows as they are (their labels on the executors; y
    as given, unused); a Dask array's rows on the workers, and its labels there too
    when y is a Dask array or a dask Series (made a Dask array; never brought to the
    client); a dask DataFrame of numeric columns with such labels as a Dask array (its
    partitions the row chunks, the Series' chunked like them); another
    data frame as it is (`labelled_rows` with ``frames``); local X validated and y a
    numpy array."""
    if spark_rows.is_spark_rows(X):
        return X, y
    if dask_rows.is_numeric_frame(X) and (dask_rows.is_dask_series(y)
                                          or dask_rows.is_dask_array(y)):
        # numeric columns and labels on the workers: the estimator reads the frame as
        # a Dask array anyway; so are the runs scored (their labels never come here)
        X, y, _ = labelled_rows(X, y, accept_worker_rows=False, labels_on_workers=True)
        return X, y
    X, y, _ = labelled_rows(X, y, accept_worker_rows=False, frames=True,
                            labels_on_workers=True)
    if not (dask_rows.is_dask_array(X) and dask_rows.is_dask_array(y)):
        y = np.asarray(y)
    return X, y


def rows_shape(X):
    """(n, d) of X as a fit would read it (a Dask array's from its chunks, a dask
    DataFrame's row count counted on the workers, Spark rows' from their build), without
    reading any label."""
    if spark_rows.is_spark_rows(X):
        return int(X.shape[0]), int(X.shape[1])
    rows, _, _ = labelled_rows(X, None, accept_worker_rows=False, frames=True)
    return n_rows(rows), int(rows.shape[1])


def on_workers_if_dask(out_cols=None, dtype=None):
    """Decorator of an estimator's prediction method ``f(self, X)``: a Dask array X is
    handed to ``self._on_workers(X, name, out_cols, dtype)`` (the same method run block
    by block on the workers, lazily); a dask DataFrame of numeric columns too, as a Dask
    array chunked by its partitions (its column names checked here against the fit's);
    other X run f.  out_cols and dtype may be callables of the estimator."""
    import functools
    import warnings

    def deco(method):
        @functools.wraps(method)
        def wrapper(self, X):
            if dask_rows.is_dask_frame(X):
                from sklearn.utils.validation import check_is_fitted

                check_is_fitted(self)
                self._check_feature_names_at_predict(X)
                X = dask_rows.frame_as_array(X)
                with warnings.catch_warnings():   # the names were checked above
                    warnings.filterwarnings("ignore", message="X does not have valid feature")
                    return wrapper(self, X)
            if dask_rows.is_dask_array(X):
                kw = {}
                if out_cols is not None:
                    kw["out_cols"] = out_cols(self) if callable(out_cols) else out_cols
                if dtype is not None:
                    kw["dtype"] = dtype(self) if callable(dtype) else dtype
                return self._on_workers(X, method.__name__, **kw)
            return method(self, X)
        return wrapper
    return deco


def map_rows(X, fn, n_features, out_cols=None, dtype=np.float64):
    """fn on every row block of a Dask array X, on the workers (dperm.data.dask_rows)."""
    return dask_rows.map_rows(X, fn, n_features, out_cols, dtype)


def mean_accuracy(X, y, predict, local_score, sample_weight=None):
    """Mean accuracy of `predict` on (X, y).  A Dask array X: the rows are predicted and
    compared on the workers (y numpy or Dask, chunked like X's rows there) and a float
    comes back; other X: `local_score(X, y, sample_weight=...)`."""
    if not dask_rows.is_dask_array(X):
        return local_score(X, y, sample_weight=sample_weight)
    if sample_weight is not None:
        raise TypeError("sample_weight: not supported with a Dask array X")
    import dask.array as da

    pred = predict(X)
    if dask_rows.is_dask_array(y) or hasattr(y, "to_dask_array"):
        y = (y if dask_rows.is_dask_array(y) else y.to_dask_array(lengths=True)).reshape(-1)
        if y.shape[0] != pred.shape[0]:
            raise ValueError(f"y: has {y.shape[0]} labels but X has {pred.shape[0]} rows")
        y = y.rechunk(pred.chunks)
    else:
        y = np.asarray(y).reshape(-1)
        if y.shape[0] != pred.shape[0]:
            raise ValueError(f"y: has {y.shape[0]} labels but X has {pred.shape[0]} rows")
        y = da.from_array(y, chunks=pred.chunks)
    return float((pred == y).mean().compute())


def linear_scores(X, coef, intercept):
    """X @ coef.T + intercept (n, k) over validated local rows, in row blocks (no float64
    copy of X); a DesignRows' clipping factors are applied to the scores."""
    from dperm.data.design import matmul_rows

    factor = None
    if isinstance(X, DesignRows):
        X, factor = X.X, X.factor
    score = np.column_stack([matmul_rows(X, w) for w in coef])
    if factor is not None:
        score = score * np.asarray(factor).reshape(-1, 1)
    return score + intercept
