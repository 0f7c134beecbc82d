"""The Spark backend: the objective over the rows of a Spark DataFrame.

`SparkRows(df, featuresCol, labelCol, ...)` is one more implementation of "the objective
over these rows" (dperm.data.oracle), beside dense, CSR, memory maps and Dask: the
solvers, both mechanisms and the estimators call its `value_grad` / `hess_vec` and never
learn where the rows live.  The rows never reach the driver:

* one Spark job reads the features column (a pyspark.ml vector, or an array of numbers)
  and the label column as Arrow batches (`mapInArrow`), validates them on the executors
  (finite values, labels in the public label set, or real targets clipped to the public
  label bound), and stores each partition's rows as a float64 block (and its labels)
  in the executor host's Spark file directory (`SparkFiles.getRootDirectory()`, removed
  by Spark at the end of the application, and by `close()` in local mode), keyed by a
  random key of this `SparkRows` and the partition index.  Only per-partition row
  counts, a digest of the block and error texts come back;
* each pass of the solver (the current batch W, m x d) is ONE Spark job over the
  partition indices: a task maps its partition's block (read-only, shared by every
  Python worker of the host through the page cache), builds the compiled kernels' Data
  once per worker process (kept, least recently used first out), and returns the
  unnormalized sums of the losses and gradient terms (or Hessian-vector terms) with
  its partition index and row count -- never anything but sums (the softmax model's
  pass, `SparkRows.softmax_sums`: the compiled softmax pass of the local objective over
  the partition's rows and class indices);
* a task that finds no block (another host, a lost executor, a removed file) says so;
  the driver then runs the same pass for those partitions over the source DataFrame
  (`mapInArrow` again): the block is rebuilt from the source rows, checked against the
  digest taken when it was first built (a source whose rows changed -- an uncached,
  non-deterministic DataFrame -- stops the fit with SparkFitError rather than giving
  another answer), stored, and its sums returned.  A failed task that Spark retries
  computes the same sums from the same block;
* the driver adds the partial sums in ONE fixed order, the aligned binary tree over the
  partition indices that the Dask backend uses (dperm.data.dask_rows, "the chunk
  tree"), after checking that every non-empty partition answered exactly once with its
  public row count; only then are 1/n, the ridge term and the linear term B (the
  objective-perturbation noise, drawn on the driver, never sent to the executors)
  applied.

The answer does not depend on which executor ran which task, on retries or on rebuilt
blocks (the same bits); a different partitioning changes the order of the sums only
(objective and gradient to ~1e-15 relative, minimizers to the solver's tolerance).

The public row maps -- clipping onto the ball of radius data_norm and the estimator's
intercept column -- are replayed on the executors by the same code as on one machine
(`bound_rows`, `WithInterceptColumn`), as a list of public operations (`ops`).

Importing this module does not import pyspark; only a Spark DataFrame does.
"""
import hashlib
import os
import pickle
import shutil
import sys
import uuid
from collections import OrderedDict

import numpy as np

__all__ = ["is_spark_frame", "is_spark_rows", "SparkRows", "SparkFitError"]

#: how many times the passes of partitions whose block was missing are repeated over the
#: source (each repetition rebuilds the blocks it reads)
MAX_REBUILDS = 3
#: prepared kernels' Data kept per Python worker process (least recently used first out)
_PREPARED_MAX = 64
#: a callable run at the start of every pass task with (partition, method): fault
#: injection for tests (a nested function, shipped with the pass); None in use
_TASK_HOOK = None

_prepared: OrderedDict = OrderedDict()


class SparkFitError(RuntimeError):
    """The Spark job could not complete a pass over every row (no model is produced)."""


def is_spark_frame(X):
    """True for a pyspark.sql DataFrame (without importing pyspark)."""
    sql = sys.modules.get("pyspark.sql")
    return sql is not None and isinstance(X, sql.DataFrame)


def is_spark_rows(X):
    return isinstance(X, SparkRows)


# ------------------------------------------------------------------ the driver side
class _Source:
    """The source rows (a DataFrame of (x array<double>, y double)), their partitions'
    public layout and the blocks' digests."""

    def __init__(self, frame, task, classes, label_bound, cache_dir, n_threads, bound=None,
                 label_centre=None):
        self.frame = frame
        self.sc = frame.sparkSession.sparkContext
        self.key = uuid.uuid4().hex
        self.task = task
        self.classes = classes
        self.label_bound = label_bound
        self.label_centre = label_centre
        self.cache_dir = cache_dir
        self.n_threads = n_threads
        #: (data_norm, norm_policy) applied to the raw rows in the build job (the count of
        #: rows clipped, an "error" check): the fit's first bound_rows needs no job
        self.bound = bound
        self.rows_clipped = 0
        self._index = None
        stats = self._build_all()
        P = frame.rdd.getNumPartitions()
        self.rows = np.zeros(P, dtype=np.int64)
        self.digests = {}
        widths = set()
        self.labels_clipped = 0
        for p, st in sorted(stats.items()):
            if st["error"] is not None:
                raise ValueError(st["error"])
            self.rows[p] = st["rows"]
            if st["rows"]:
                widths.add(st["d"])
                self.digests[p] = st["digest"]
            self.labels_clipped += st["labels_clipped"]
            self.rows_clipped += st["rows_clipped"]
        if len(widths) > 1:
            raise ValueError(f"featuresCol: the vectors have different lengths in different "
                             f"partitions ({sorted(widths)}); every row needs the same number "
                             "of features")
        #: the non-empty partitions, in index order: the leaves of the sum tree
        self.parts = [int(p) for p in np.flatnonzero(self.rows)]
        self.n = int(self.rows.sum())
        self.d = widths.pop() if widths else 0

    def _spec(self):
        return (self.key, self.cache_dir, self.task, self.classes, self.label_bound,
                self.label_centre)

    def _build_all(self):
        import functools

        out = self.frame.mapInArrow(functools.partial(_build_task, self._spec(), None,
                                                      self.bound),
                                    "p long, payload binary").collect()
        return {int(r.p): pickle.loads(r.payload) for r in out}

    def reduce(self, method, ops, Wargs, loss, h, n_threads):
        """The sums of a pass over every row, added in the fixed tree order: (sums of
        losses (m,) or None, sums of gradient terms (m, d))."""
        import functools

        nt = self.n_threads if n_threads is None else int(n_threads)
        pass_spec = (method, tuple(ops), Wargs, int(loss), float(h), nt, _TASK_HOOK)
        got, missing = {}, []
        if self.parts:
            if self._index is None:   # one task per non-empty partition, made once
                self._index = self.sc.parallelize(self.parts, len(self.parts))
            res = self._index.mapPartitions(
                functools.partial(_pass_task, self._spec(), pass_spec)).collect()
            for r in res:
                if r[0] == "error":
                    raise ValueError(r[1])
                if r[0] == "miss":
                    missing.append(r[1])
                else:
                    self._take(got, r)
        for _ in range(MAX_REBUILDS):
            if not missing:
                break
            rdd = self.frame.mapInArrow(
                functools.partial(_build_task, self._spec(), pass_spec, None),
                "p long, payload binary").rdd
            res = self.sc.runJob(rdd, _rows_out, partitions=sorted(missing))
            missing = []
            for p, payload in res:
                r = pickle.loads(payload)
                if r[0] == "error":
                    raise SparkFitError(r[1])
                if r[0] == "rebuilt":
                    if r[2] != self.digests.get(p):
                        raise SparkFitError(
                            f"dperm: partition {p} of the DataFrame changed between passes (its "
                            "rows were read again and differ); a fit needs the same rows on "
                            "every pass: cache or checkpoint the DataFrame before fitting "
                            "(df = df.cache(); df.count())")
                    r = r[1]
                if r[0] == "error":
                    raise ValueError(r[1])
                if r[0] == "miss":
                    missing.append(r[1])
                else:
                    self._take(got, r)
        if missing:
            raise SparkFitError(f"dperm: partitions {sorted(missing)} could not be read in "
                                f"{MAX_REBUILDS} tries; no model is produced from a partial sum")
        return _tree_sum(got, self.parts, self.rows)

    def _take(self, got, r):
        p = int(r[0])
        if p in got:
            raise SparkFitError(f"dperm: partition {p} contributed twice; the pass is not a sum "
                                "over every row once (no model is produced)")
        if p not in self.digests:
            raise SparkFitError(f"dperm: partition {p} is not one of the DataFrame's non-empty "
                                "partitions (no model is produced)")
        got[p] = r[1:]

    def close(self):
        """Remove the blocks (the driver's host: every block in local mode; elsewhere
        Spark removes its file directory at the end of the application)."""
        try:
            from pyspark import SparkFiles

            root = self.cache_dir or SparkFiles.getRootDirectory()
        except Exception:   # no active context any more
            return
        shutil.rmtree(os.path.join(root, f"dperm-{self.key}"), ignore_errors=True)


def _rows_out(it):
    return [(int(r.p), r.payload) for r in it]


def _tree_sum(got, parts, rows):
    """The partial sums added through the aligned binary tree over the non-empty
    partitions in index order (leaves 0..C-1; node (l, j) covers leaves j 2^l ..
    (j + 1) 2^l - 1; a left child with nothing to its right is its parent unchanged),
    after checking that each answered once with its public row count."""
    level = []
    for p in parts:
        if p not in got:
            raise SparkFitError(f"dperm: partition {p} did not answer; the pass is not a sum "
                                "over every row (no model is produced)")
        nr, F, G = got[p]
        if int(nr) != int(rows[p]):
            raise SparkFitError(f"dperm: partition {p} contributed {int(nr)} rows, not "
                                f"{int(rows[p])}; the pass is not a sum over every row once (no "
                                "model is produced)")
        level.append((F, G))
    if not level:
        raise SparkFitError("dperm: the DataFrame has no rows")
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level) - 1, 2):
            (F1, G1), (F2, G2) = level[i], level[i + 1]
            nxt.append((None if F1 is None else F1 + F2, G1 + G2))
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


class SparkRows:
    """Rows of a Spark DataFrame with their labels, held as blocks by the executors.

    df: a pyspark.sql DataFrame; features_col: a pyspark.ml vector column (dense or
    sparse vectors, read as dense rows) or an array of numbers; label_col: numbers.
    task "binary": labels must be one of `classes` (two public values; classes[1] is the
    positive class, +1 for the kernels); "multiclass": one of K > 2 public `classes`,
    kept as their indices: the softmax model's rows (`softmax_sums`), or, with a class
    picked, one class k against the rest (`for_class(k)`: +1 for class k, -1 for the
    others, as one-vs-rest fits locally); "regression": real
    targets, minus the public `label_centre` when given, clipped to
    [-label_bound, label_bound] (the count, `labels_clipped`, is for the analyst only).
    n_threads: the kernels' threads per task (None: spark.task.cpus).  bound: None, or
    (data_norm, norm_policy), the fit's first `bound_rows` on these rows, done in the
    build job (its count and its "error" check), so that it needs no job of its own.

    shape is public (n, d + intercept column); `ops` are the public row maps replayed
    on the executors.  `value_grad` / `hess_vec` are the objective oracle.
    """

    _dperm_distributed = True

    def __init__(self, df=None, features_col="features", label_col="label", *, task="binary",
                 classes=(0.0, 1.0), label_bound=None, label_centre=None, n_threads=None,
                 cache_dir=None, bound=None, ops=(), _source=None):
        self.ops = tuple(ops)
        if _source is None:
            if not is_spark_frame(df):
                raise TypeError(f"df: expected a pyspark.sql DataFrame, got {type(df).__name__}")
            if task not in ("binary", "multiclass", "regression"):
                raise ValueError(f"task={task!r} is not valid; choose 'binary', 'multiclass' "
                                 "or 'regression'")
            if task in ("binary", "multiclass"):
                classes = tuple(float(c) for c in classes)
                K = 2 if task == "binary" else len(classes)
                if len(classes) != K or K < 2 or len(set(classes)) != K or not all(
                        np.isfinite(classes)):
                    raise ValueError(f"classes: {'two' if task == 'binary' else 'K > 2'} "
                                     f"distinct finite label values, got {classes!r}")
            elif not (label_bound is not None and np.isfinite(label_bound) and label_bound > 0):
                raise ValueError(f"label_bound: a public bound > 0 on |label|, got {label_bound!r}")
            frame = _frame(df, features_col, label_col)
            if n_threads is None:
                n_threads = int(df.sparkSession.sparkContext.getConf().get("spark.task.cpus", "1"))
            if bound is not None:
                from dperm.data.validation import check_choice, check_data_norm

                bound = (float(check_data_norm(bound[0], "data_norm")),
                         check_choice(bound[1], "norm_policy", {"clip", "error"}))
            if label_centre is not None and (task != "regression"
                                             or not np.isfinite(label_centre)):
                raise ValueError(f"label_centre: a finite public centre of the targets "
                                 f"(regression only), got {label_centre!r}")
            _source = _Source(frame, task, classes if task != "regression" else None,
                              None if label_bound is None else float(label_bound), cache_dir,
                              int(n_threads), bound,
                              None if label_centre is None else float(label_centre))
        self._source = _source

    # --- the public shape of the design -----------------------------------------
    @property
    def shape(self):
        return (self._source.n, self._source.d + sum(op[0] == "icpt" for op in self.ops))

    @property
    def dtype(self):
        return np.dtype(np.float64)

    @property
    def regression(self):
        return self._source.task == "regression"

    @property
    def n_partitions(self):
        """Non-empty partitions (the leaves of the sum tree)."""
        return len(self._source.parts)

    @property
    def labels_clipped(self):
        """Targets clipped to label_bound (regression): a statistic of the private data,
        for the analyst only."""
        return self._source.labels_clipped

    def close(self):
        """Remove the blocks this object stored (the fit is over)."""
        self._source.close()

    def checked(self, *, min_samples=1, softmax=False, regression=False, n_classes=None):
        """These rows for an objective (dperm.data.oracle.check_rows): with `softmax`,
        rows built with task="multiclass" over `n_classes` public classes (their labels,
        the class indices, on the executors) and no class picked by `for_class`."""
        if softmax:
            classes = self._source.classes
            if self._source.task != "multiclass" or any(op[0] == "class" for op in self.ops):
                raise TypeError("X: the multinomial (softmax) objective needs Spark rows of "
                                "all classes (SparkRows with task='multiclass', no for_class)")
            if n_classes is not None and int(n_classes) != len(classes):
                raise ValueError(f"n_classes: {n_classes} classes asked for, but the rows were "
                                 f"built with {len(classes)} (classes={list(classes)})")
        elif self._source.task == "multiclass" and not any(op[0] == "class" for op in self.ops):
            raise TypeError("X: these Spark rows carry the class indices of "
                            f"{len(self._source.classes)} classes; a binary loss needs one class "
                            "against the rest (SparkRows.for_class(k)), the softmax model "
                            "loss='multinomial'")
        if bool(regression) != self.regression:
            kind = "real targets" if self.regression else "binary labels"
            raise TypeError(f"X: these Spark rows carry {kind}; the loss needs "
                            f"{'real targets' if regression else 'binary labels'} (build "
                            f"SparkRows with task={'regression' if regression else 'binary'!r})")
        if self.shape[0] < min_samples:
            raise ValueError(f"X: needs at least {min_samples} samples; found {self.shape[0]}")
        return self

    def _with(self, op):
        return SparkRows(ops=self.ops + (op,), _source=self._source)

    def for_class(self, k):
        """Multiclass rows as the binary problem class k (+1) against the rest (-1), the
        labels of one-vs-rest's k-th fit (on the executors)."""
        if self._source.task != "multiclass":
            raise ValueError("for_class: these rows were not built with task='multiclass'")
        K = len(self._source.classes)
        if not (isinstance(k, (int, np.integer)) and 0 <= k < K):
            raise ValueError(f"for_class: k must be a class index in 0..{K - 1}, got {k!r}")
        return self._with(("class", int(k)))

    def softmax_sums(self, W, n_threads=None):
        """The softmax data term as SUMS over every row (dperm.optim.softmax): the sums
        of logsumexp(W_j x_i) - (W_j x_i)_{y_i} (m,) and of their gradients (m, K, d) at
        W (m, K, d), each partition's by the compiled softmax pass on its executor (the
        one the local objective runs), added in the fixed tree order on the driver.
        Rows built with task="multiclass" (the class indices on the executors)."""
        self.checked(softmax=True)
        W = np.ascontiguousarray(W, dtype=np.float64)
        m, K, d = W.shape
        if K != len(self._source.classes) or d != self.shape[1]:
            raise ValueError(f"W: expected shape (m, {len(self._source.classes)}, "
                             f"{self.shape[1]}), got {W.shape}")
        F, G = self._source.reduce("softmax", self.ops, (W.reshape(m * K, d), K), 0, 0.0,
                                   n_threads)
        return F, G.reshape(m, K, d)

    def sufficient_statistics(self, data_norm, label_bound):
        """(X^T X (d, d), X^T y (d,)) over the design rows (after the row maps) and the
        real targets, per partition on the executors and added in the fixed tree order:
        one pass (AdaSSP's statistics, dperm.privacy.adassp; sums, not means).  A row of
        norm over data_norm or a target over label_bound raises ValueError naming its
        partition (the estimator clips both first)."""
        if not self.regression:
            raise ValueError("y: the sufficient statistics X^T y need real targets on the "
                             "executors (SparkRows with task='regression')")
        xty, gram = self._source.reduce("gram", self.ops, (float(data_norm), float(label_bound)),
                                        0, 0.0, None)
        return gram, xty

    def block_sum(self, fn):
        """sum over the partitions of fn(X_p, labels_p), each on its executor: X_p the
        partition's rows as read (before the row maps `ops`: the rows a released model
        predicts on, as the local rows it is scored on), labels_p their labels as given
        in the label column (the values of `classes`; regression: the targets clipped to
        the public interval [label_centre - label_bound, label_centre + label_bound]).
        Only each partition's number comes back, added in the fixed tree order after the
        check that every non-empty partition answered once.  fn: a picklable function of
        public values (e.g. a released model's score on the rows: private selection,
        dperm.privacy.selection) returning a number."""
        _, S = self._source.reduce("block_sum", (), fn, 0, 0.0, None)
        return float(np.asarray(S).reshape(-1)[0])

    def with_intercept(self, value, scale):
        """WithInterceptColumn, on the executors."""
        if any(op[0] == "icpt" for op in self.ops):
            raise ValueError("WithInterceptColumn: X already has a constant column")
        return self._with(("icpt", float(value), float(scale)))

    def bound_rows(self, data_norm, norm_policy, *, name="X", return_clipped=False):
        """bound_rows, on the executors (the same code, per partition); "error" raises.
        Clipping without a count is applied by the passes themselves (no job here)."""
        from dperm.data.validation import check_choice

        check_choice(norm_policy, "norm_policy", {"clip", "error"})
        out = self._with(("clip", float(data_norm), norm_policy, name))
        if norm_policy == "clip" and not return_clipped:
            return out
        if not self.ops and name == "X" and self._source.bound == (float(data_norm), norm_policy):
            return (out, self._source.rows_clipped) if return_clipped else out
        _, S = self._source.reduce("prepare", out.ops, None, 0, 1.0, None)
        return (out, int(S)) if return_clipped else out

    # --- the oracle ---------------------------------------------------------------
    def value_grad(self, W, l2, B, loss, h, n_threads=None, keep_curvature=False):
        """Objective values (m,) and gradients (m, d) at W (m, d) over all rows."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        S, SG = self._source.reduce("value_grad", self.ops, W, loss, h, n_threads)
        n = self.shape[0]
        inv_n = 1.0 / n
        l2 = np.asarray(l2, dtype=np.float64).reshape(-1)
        F = S * inv_n + 0.5 * l2 * np.einsum("ij,ij->i", W, W)
        G = SG * inv_n + l2[:, None] * W
        if B is not None:
            B = np.asarray(B, dtype=np.float64).reshape(W.shape)
            F = F + np.einsum("ij,ij->i", B, W) * inv_n
            G = G + B * inv_n
        return F, G

    def hess_vec(self, W, V, l2, loss, h, n_threads=None, keep_curvature=False):
        """Hessian-vector products (m, d) at W along V (the executors recompute the
        margins: no curvature is kept between passes)."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        V = np.ascontiguousarray(V, dtype=np.float64)
        _, SH = self._source.reduce("hess_vec", self.ops, (W, V), loss, h, n_threads)
        l2 = np.asarray(l2, dtype=np.float64).reshape(-1)
        return SH * (1.0 / self.shape[0]) + l2[:, None] * V


def _frame(df, features_col, label_col):
    """df's features as array<double> x and labels as double y (Spark SQL, on the JVM)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    names = df.schema.names
    for col, param in ((features_col, "featuresCol"), (label_col, "labelCol")):
        if col not in names:
            raise ValueError(f"{param}: the DataFrame has no column {col!r} (columns: {names})")
    ft = df.schema[features_col].dataType
    if type(ft).__name__ == "VectorUDT":
        from pyspark.ml.functions import vector_to_array

        x = vector_to_array(F.col(features_col), "float64")
    elif isinstance(ft, T.ArrayType) and isinstance(ft.elementType, T.NumericType):
        x = F.col(features_col).cast("array<double>")
    else:
        raise TypeError(f"featuresCol: column {features_col!r} has type {ft.simpleString()}; "
                        "expected a vector (pyspark.ml.linalg, as VectorAssembler makes) or an "
                        "array of numbers")
    lt = df.schema[label_col].dataType
    if not isinstance(lt, (T.NumericType, T.BooleanType)):
        raise TypeError(f"labelCol: column {label_col!r} has type {lt.simpleString()}; expected "
                        "numbers (StringIndexer maps strings to label indices)")
    return df.select(x.alias("x"), F.col(label_col).cast("double").alias("y"))


# ------------------------------------------------------------------ the executor side
def _block_dir(spec):
    key, cache_dir = spec[0], spec[1]
    if cache_dir is None:
        from pyspark import SparkFiles

        cache_dir = SparkFiles.getRootDirectory()
    return os.path.join(cache_dir, f"dperm-{key}")


def _save(path, a):
    """np.save through a temporary file and os.replace (a reader sees all or nothing)."""
    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        np.save(f, a)
    os.replace(tmp, path)


def _digest(X, y):
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(X).view(np.uint8).reshape(-1))
    h.update(np.ascontiguousarray(y).view(np.uint8).reshape(-1))
    return h.hexdigest()


def _read_partition(spec, p, batches):
    """(X (n_p, d) float64, labels (n_p,), labels clipped, error or None) of one
    partition's Arrow batches, validated as on one machine."""
    import pyarrow.compute as pc

    _, _, task, classes, label_bound, label_centre = spec
    xs, ys, d, r0 = [], [], None, 0
    for b in batches:
        xcol, ycol = b.column(0), b.column(1)
        nb = b.num_rows
        if nb == 0:
            continue
        where = f"partition {p}, rows {r0} to {r0 + nb - 1}"
        if xcol.null_count:
            r = r0 + int(np.flatnonzero(np.asarray(xcol.is_null()))[0])
            return None, None, 0, f"featuresCol: row {r} of partition {p} is null; drop or impute it"
        if ycol.null_count:
            r = r0 + int(np.flatnonzero(np.asarray(ycol.is_null()))[0])
            return None, None, 0, f"labelCol: row {r} of partition {p} is null; drop it"
        lens = np.asarray(pc.list_value_length(xcol), dtype=np.int64)
        if d is None:
            d = int(lens[0])
        if np.any(lens != d):
            r = r0 + int(np.flatnonzero(lens != d)[0])
            return None, None, 0, (f"featuresCol: row {r} of partition {p} has {int(lens[r - r0])} "
                                   f"features, other rows {d}; every row needs the same number")
        flat = xcol.flatten()
        if flat.null_count:
            return None, None, 0, (f"featuresCol: a null entry in {where}; impute it (the "
                                   "model needs finite numbers)")
        xs.append(np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(nb, d))
        ys.append(np.asarray(ycol.to_numpy(zero_copy_only=False), dtype=np.float64))
        r0 += nb
    if not xs:
        return np.zeros((0, 0)), np.zeros(0), 0, None
    X = np.ascontiguousarray(np.concatenate(xs) if len(xs) > 1 else xs[0])
    y = np.concatenate(ys) if len(ys) > 1 else ys[0]
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        c = int(np.flatnonzero(~np.isfinite(X[r]))[0])
        return None, None, 0, (f"featuresCol: row {r} of partition {p}, feature {c} is not "
                               "finite (NaN or infinity); impute or drop it")
    clipped = 0
    if task == "binary":
        pos, neg = y == classes[1], y == classes[0]
        other = ~(pos | neg)
        if other.any():
            r = int(np.flatnonzero(other)[0])
            return None, None, 0, (f"labelCol: row {r} of partition {p} has label {float(y[r])!r}, not "
                                   f"one of classes={list(classes)}; map the labels first "
                                   "(StringIndexer) or give the public classes")
        y = np.where(pos, 1.0, -1.0)
    elif task == "multiclass":
        codes = np.full(y.shape[0], -1.0)
        for k, c in enumerate(classes):
            codes[y == c] = k
        if (codes < 0).any():
            r = int(np.flatnonzero(codes < 0)[0])
            return None, None, 0, (f"labelCol: row {r} of partition {p} has label {float(y[r])!r}, not "
                                   f"one of classes={list(classes)}; map the labels first "
                                   "(StringIndexer) or give the public classes")
        y = codes
    else:
        bad = ~np.isfinite(y)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            return None, None, 0, (f"labelCol: row {r} of partition {p} is not finite; drop it")
        if label_centre is not None:   # a public shift, as the local fit's y - centre
            y = y - label_centre
        clipped = int(np.count_nonzero(np.abs(y) > label_bound))
        y = np.clip(y, -label_bound, label_bound)
    return X, np.ascontiguousarray(y), clipped, None


def _build_task(spec, pass_spec, bound, batches):
    """mapInArrow over the source: read, validate and store this partition's block;
    without pass_spec, yield its statistics (rows, d, digest, labels clipped, rows
    clipped by `bound` = (data_norm, norm_policy) when given, error);
    with it, yield ("rebuilt", the pass's answer, digest) or ("error", text)."""
    import pyarrow as pa
    from pyspark import TaskContext

    p = TaskContext.get().partitionId()
    X, y, clipped, err = _read_partition(spec, p, batches)
    rows_clipped = 0
    if bound is not None and err is None and X.shape[0]:
        from dperm.data.validation import bound_rows

        try:   # the same code as on one machine (and as the passes' row maps)
            rows_clipped = bound_rows(X, bound[0], bound[1], return_clipped=True)[1]
        except ValueError as exc:   # norm_policy="error"
            err = f"{exc} (partition {p})"
    if err is None and X.shape[0]:
        folder = _block_dir(spec)
        os.makedirs(folder, exist_ok=True)
        _save(os.path.join(folder, f"y{p}.npy"), y)
        _save(os.path.join(folder, f"x{p}.npy"), X)
    if pass_spec is None:
        out = {"rows": 0 if err else int(X.shape[0]), "d": 0 if err else int(X.shape[1]),
               "digest": None if err or not X.shape[0] else _digest(X, y),
               "labels_clipped": clipped, "rows_clipped": rows_clipped, "error": err}
    elif err is not None:
        out = ("error", err)
    else:
        out = ("rebuilt", _run_pass(spec, pass_spec, p), _digest(X, y))
    yield pa.RecordBatch.from_arrays([pa.array([p], pa.int64()),
                                      pa.array([pickle.dumps(out, protocol=5)], pa.binary())],
                                     ["p", "payload"])


def _pass_task(spec, pass_spec, it):
    """A pass over the partitions whose indices this task receives (one, as a rule)."""
    for p in it:
        yield _run_pass(spec, pass_spec, int(p))


def _replay(X, ops):
    """The design rows of one block after the public row maps `ops`, as on one machine
    (returns the DesignRows and the rows clipped)."""
    from dperm.data.design import DesignRows, WithInterceptColumn
    from dperm.data.validation import bound_rows

    D = DesignRows(X)
    clipped = 0
    for op in ops:
        if op[0] == "clip":
            out, c = bound_rows(D, op[1], op[2], name=op[3], return_clipped=True)
            D = out if isinstance(out, DesignRows) else D
            clipped += c
        elif op[0] == "icpt":
            D = WithInterceptColumn(D, op[1], op[2])
    return D, clipped


def _load_block(folder, p):
    """(rows mapped read-only, labels) of partition p's stored block in `folder`, or None
    when the block is not on this host (lost with its executor: rebuilt by the driver)."""
    try:
        return (np.load(os.path.join(folder, f"x{p}.npy"), mmap_mode="r"),
                np.load(os.path.join(folder, f"y{p}.npy")))
    except FileNotFoundError:
        return None


def _prepare(spec, p, ops):
    """(Data, rows clipped, class indices or None) of partition p after ops, from this
    process's cache or the stored block; None when the block is not on this host.
    Multiclass rows with a class (`for_class`): the binary problem's Data; without one:
    the softmax model's (row weights and constant column as
    dperm.data.oracle.SoftmaxRows builds them) and the class indices (int64)."""
    key = (spec[0], p, ops)
    hit = _prepared.get(key)
    if hit is not None:
        _prepared.move_to_end(key)
        return hit
    folder = _block_dir(spec)
    # blocks of closed SparkRows (their folder removed) are let go: a mapped file's
    # memory and disk space are freed only when no Data refers to it any more
    gone = {k[0] for k in _prepared if k[0] != spec[0]}
    gone = {g for g in gone if not os.path.isdir(os.path.join(os.path.dirname(folder),
                                                               f"dperm-{g}"))}
    for k in [k for k in _prepared if k[0] in gone]:
        del _prepared[k]
    block = _load_block(folder, p)
    if block is None:
        return None
    X, y = block
    from dperm._core._objective import Data

    D, clipped = _replay(X, ops)
    codes = None
    if spec[2] == "regression":
        data = Data(D.X, D.signed_weights(np.ones(y.shape[0])), D.constant_column(), y)
    elif spec[2] == "multiclass":
        ks = [op[1] for op in ops if op[0] == "class"]
        if ks:
            data = Data(D.X, D.signed_weights(np.where(y == ks[-1], 1.0, -1.0)),
                        D.constant_column())
        else:   # the softmax model: class indices read apart by the softmax pass
            data = Data(D.X, D.signed_weights(np.ones(y.shape[0])), D.constant_column())
            codes = np.ascontiguousarray(y, dtype=np.int64)
    else:
        data = Data(D.X, D.signed_weights(y), D.constant_column())
    hit = _prepared[key] = (data, clipped, codes)
    while len(_prepared) > _PREPARED_MAX:
        _prepared.popitem(last=False)
    return hit


#: entries (rows x columns) of one block of design rows materialized by the gram pass
GRAM_BLOCK_ENTRIES = 1 << 20


def _gram(spec, p, ops, bounds):
    """(p, rows, X_p^T y_p, X_p^T X_p) of partition p's design rows after the row maps,
    materialized GRAM_BLOCK_ENTRIES entries at a time and added in order; ("miss", p)
    when its block is not on this host.  bounds = (data_norm, label_bound): a row or a
    target beyond them raises ValueError (a sensitivity bound would not hold)."""
    block = _load_block(_block_dir(spec), p)
    if block is None:
        return ("miss", p)
    X, y = block
    R, B = bounds
    nr = X.shape[0]
    if np.any(np.abs(y) > B):
        raise ValueError(f"y, partition {p}: {int(np.count_nonzero(np.abs(y) > B))} target(s) "
                         f"have |y| above label_bound={B}; clip them first")
    step = max(1, GRAM_BLOCK_ENTRIES // max(1, X.shape[1] + 1))
    gram = xty = None
    for i0 in range(0, nr, step):
        A = _replay(np.asarray(X[i0:i0 + step]), ops)[0].toarray()
        over = np.sqrt(np.einsum("ij,ij->i", A, A)) > R
        if np.any(over):
            raise ValueError(f"X, partition {p}: row {i0 + int(np.argmax(over))} has norm above "
                             f"data_norm={R}; clip the rows first")
        g, v = A.T @ A, A.T @ y[i0:i0 + step]
        gram, xty = (g, v) if gram is None else (gram + g, xty + v)
    return (p, nr, xty, gram)


def _block_sum(spec, p, fn):
    """(p, rows, None, [fn(X_p, labels_p)]) of partition p's rows as read and their
    labels in the label column's values (`SparkRows.block_sum`), or ("miss", p)."""
    block = _load_block(_block_dir(spec), p)
    if block is None:
        return ("miss", p)
    X, y = block
    task, classes, label_centre = spec[2], spec[3], spec[5]
    if task == "binary":                      # stored as -1 / +1
        labels = np.where(y > 0, classes[1], classes[0])
    elif task == "multiclass":                # stored as the class indices
        labels = np.asarray(classes, dtype=np.float64)[y.astype(np.int64)]
    else:                                     # stored minus the centre, clipped
        labels = y if label_centre is None else y + label_centre
    return (p, X.shape[0], None, np.array([float(fn(np.asarray(X), labels))]))


def _run_pass(spec, pass_spec, p):
    """(p, rows, sum of losses or None, sums of gradient terms) of one partition, or
    ("miss", p) when its block is not on this host."""
    method, ops, Wargs, loss, h, nt, hook = pass_spec
    if hook is not None:
        hook(p, method)
    if method == "gram":
        try:
            return _gram(spec, p, ops, Wargs)
        except ValueError as exc:
            return ("error", str(exc))
    if method == "block_sum":
        return _block_sum(spec, p, Wargs)
    try:
        hit = _prepare(spec, p, ops)
    except ValueError as exc:   # norm_policy="error": a row over the bound
        return ("error", f"{exc} (partition {p})")
    if hit is None:
        return ("miss", p)
    data, clipped, codes = hit
    nr = data.shape[0]
    if method == "prepare":
        return (p, nr, None, np.float64(clipped))
    if method == "softmax":
        from dperm._core._objective import softmax_sums

        if codes is None:
            return ("error", "X: the softmax pass needs the class indices of multiclass rows "
                             "(SparkRows with task='multiclass', no for_class)")
        W, K = Wargs
        F, G = softmax_sums(data, codes, W, int(K), nt)
        return (p, nr, F, G)
    if codes is not None:
        return ("error", "X: multiclass Spark rows need a class (SparkRows.for_class) before "
                         "a binary pass")
    zero = None
    if method == "value_grad":
        from dperm._core._objective import value_grad

        zero = np.zeros(Wargs.shape[0])
        F, G = value_grad(data, Wargs, zero, None, loss, h, nt)
        return (p, nr, F * nr, G * nr)
    if method == "hess_vec":
        from dperm._core._objective import hess_vec

        W, V = Wargs
        zero = np.zeros(W.shape[0])
        return (p, nr, None, hess_vec(data, W, V, zero, loss, h, nt) * nr)
    raise ValueError(f"method: unknown pass {method!r}")
