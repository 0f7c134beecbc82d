"""The Dask backend: the objective over rows that live on a Dask cluster.

`erm.minimize`, `minimize_multinomial`, both mechanisms (the multinomial loss
included), AdaSSP, `PrivateLinearClassifier.fit` (two classes; K > 2 as the multinomial
model or one-vs-rest) and `PrivateLinearRegression.fit` accept a `dask.array` (chunked by
rows only; dense or scipy.sparse CSR chunks; float32 or float64).  The rows never leave the
workers:

* a classifier's labels do not leave them either (`class_rows`): they are mapped to
  their indices in the public classes chunk by chunk there (a label outside the classes
  is an error naming its chunk), and those indices are the rows' labels.  The softmax
  model reads them as they are; each binary model (two classes, or one class against the
  rest) is the same rows with a class picked (`DaskRows.for_class(k)`, a public row map
  like the others), whose +-1 labels a shard makes from the indices once per chunk and
  class, when that class's first pass prepares the chunk.  K one-vs-rest models share one
  persisted copy of the rows and one set of shards;

* the row blocks (and the labels, chunked like them) are persisted; on every
  worker that holds blocks a long-lived `_Shard` (a Dask actor) builds the
  compiled `dperm._core._objective.Data` over its local blocks once, after
  validating them there (finite values, labels in {-1, +1}, finite real
  targets for a regression loss, or class indices 0..K-1 for the softmax model; a bad
  block raises an error that names its chunk index);
* the public row maps -- clipping onto the ball of radius `data_norm` and the
  estimator's intercept column -- are replayed on the workers by the same code
  as on one machine (`bound_rows`, `WithInterceptColumn`), as a list of public
  operations (`DaskRows.ops`);
* each pass of the solver sends the current batch W (m x d) to the shards; a
  shard computes, PER CHUNK, the unnormalized sums of the losses and of the
  gradient terms (or Hessian-vector terms; for the softmax model, the compiled softmax
  pass of the local objective, `softmax_sums`) and the chunk's row count -- never
  anything but sums (AdaSSP's pass: X_c^T X_c and X_c^T y_c, `sufficient_statistics`);
* the sums are added in ONE fixed order, the chunk tree: an aligned binary tree
  over the chunk indices 0..C-1 whose leaves are the chunks and whose node
  (level l, index j) covers chunks j 2^l .. (j + 1) 2^l - 1; a node's sum is
  left + right, computed as soon as both children are known, wherever that is
  (a left child with no chunk to its right is its parent unchanged).  A shard
  folds its own chunks as far as they fill whole nodes; partial results are
  {node: (rows, sums)} and any union of them folds to the same bits, so the
  answer depends neither on the number of workers, nor on which worker holds
  which chunk, nor on a recovery that moved chunks, nor on the order in which
  messages arrive (tests/data/test_dask.py checks 1, 2, 3 and 8 workers, blocks
  in order and shuffled);
* the reduction (`REDUCTION = "tree"`, the default): the client sends the pass to
  ONE shard, the root of a message tree over the shards (shard s forwards to
  shards s k + 1 .. s k + k, k = TREE_FAN_IN = 4; arguments pickled once by the
  client and forwarded as bytes); each shard forwards first, computes its own
  chunks meanwhile, folds its children's answers with its own and answers its
  parent, so the client receives one message per pass whatever the number of
  workers, and the critical path has about log_k(workers) hops.
  `REDUCTION = "flat"` has every shard answer the client, which folds the P
  answers itself (the same bits; kept for benchmarks/dask_overhead.py).  The
  cost model and the measurements are in BENCHMARKS.md ("Tree reduction");
* only distributed's public API is used: the shards are actors (`Client.submit(...,
  actor=True)`), a shard holds the Actor handles of its children (given by the
  client in `link`) and calls them as any worker may call an actor (distributed's
  documentation, "Actors": calls from a worker go directly to the actor's worker;
  an actor's `async def` method runs on its worker's event loop and awaits the
  actor calls it makes); the threads per worker come from `Client.nthreads()`;
* every fold checks that no chunk is counted twice and that each node holds the
  public number of rows; the client checks that the result is the root of the
  chunk tree (every chunk once, n rows), and only then applies 1/n, the ridge
  term and the linear term B.  B (the objective-perturbation noise) is drawn on
  the client and never leaves it.  With the tree, a worker also receives the
  partial sums of the shards below it (sums over their rows, as the client did):
  the workers are inside the trust boundary (docs/user_guide/large_data.md, "On a cluster (Dask)").

Newton-CG's curvature cache lives on the workers: a value-and-gradient pass asked
to keep it stores phi''(margins) per chunk and per point (row of W) on each shard,
least recently used first out (CACHED_POINTS per problem, within
WORKER_CURVATURE_BYTES); a Hessian-vector pass at points whose curvature every shard
kept skips the margins (the same numbers either way: the compiled pass reads the
curvature it would have computed).

Rounding: the compiled pass returns means (sums times 1/n_chunk) plus the
regularizer; a shard calls it with l2 = 0 and no linear term and multiplies by
the chunk's row count, which restores the sum to within a unit or two in the
last place.  With the different order of summation (the chunk tree, not threads)
the objective and gradient match the local pass to ~1e-15 relative, and minimizers
to the solver's tolerance (tests: 1e-8 relative); across clusters, placements and
the two reductions they are the same bits.

Faults: a shard on a worker that died makes the pass fail: the client's call to the
root fails, or the client, waiting for the root's answer, finds a shard's worker gone
from the scheduler (`Client.nthreads()`, asked every LOST_WORKER_POLL seconds while a
pass is out: a root waiting on a lost child is not waited for); the backend waits for
the scheduler to recompute the lost blocks from their source (their task graph),
builds the shards and the message tree again and repeats the same pass -- the same
W, the same per-chunk sums, the same tree order, so the fit completes with the answer
it would have given.  If the blocks cannot be recomputed or the workers keep failing,
the fit raises `DistributedFitError`; a reduction with a missing chunk, a chunk
counted twice or a wrong row count is never turned into a model.

Importing this module does not import dask; only a Dask collection does.
"""
import pickle
import sys
from collections import OrderedDict

import numpy as np

__all__ = ["is_dask_array", "is_dask_frame", "is_distributed", "as_rows", "class_rows",
           "label_set", "DaskRows", "DistributedFitError"]

#: how many times a pass is repeated after rebuilding the shards on a lost worker
MAX_RECOVERIES = 3
#: shards cache the prepared rows of this many distinct row maps (ops)
_CACHE_SPECS = 4
#: how partial sums reach the client: "tree" (through the shards' message tree, one
#: answer at the client) or "flat" (every shard answers the client); the same bits
REDUCTION = "tree"
#: fan-in of the message tree: a shard forwards a pass to at most this many shards and
#: folds their answers with its own (depth about log_FAN_IN(workers))
TREE_FAN_IN = 4
#: while a pass is out, the client checks every this many seconds that the shards'
#: workers are still known to the scheduler (a lost one: the pass is repeated on rebuilt
#: shards instead of waiting for the root's call to it to time out)
LOST_WORKER_POLL = 1.0
#: memory a shard may spend on Newton's curvature cache (phi'' per row, per cached point)
WORKER_CURVATURE_BYTES = 512 * 2**20
#: AdaSSP's pass materializes a chunk's design rows in blocks of at most this many
#: float64 entries (16 MiB)
GRAM_BLOCK_ENTRIES = 1 << 21
#: points per problem whose curvature a shard keeps (as the local solver, dperm.optim.erm)
CACHED_POINTS = 3


class DistributedFitError(RuntimeError):
    """The cluster could not complete a pass over every row (no model is produced)."""


def is_dask_array(X):
    """True for a dask.array.Array (without importing dask: a program that holds
    one has imported dask.array already)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def is_dask_frame(X):
    """True for a dask.dataframe.DataFrame (without importing dask)."""
    dd = sys.modules.get("dask.dataframe")
    return dd is not None and isinstance(X, dd.DataFrame)


def is_distributed(X):
    """A Dask array, a DaskRows, or a DesignRows over a Dask array."""
    if isinstance(X, DaskRows) or is_dask_array(X):
        return True
    from dperm.data.design import DesignRows

    return isinstance(X, DesignRows) and is_dask_array(X.X)


def _client():
    try:
        from distributed import get_client
    except ImportError:  # pragma: no cover - dask without distributed
        raise ImportError("dperm: fitting on a Dask array needs the 'distributed' package: "
                          "pip install 'dperm[dask]'") from None
    try:
        return get_client()
    except ValueError:
        raise RuntimeError(
            "dperm: a Dask array was given but no distributed client is running. Start one "
            "before fitting: `from distributed import Client; client = Client()` (a local "
            "cluster), or connect to a cluster started with `dask scheduler` and "
            "`dask worker tcp://SCHEDULER:8786`: `Client('tcp://SCHEDULER:8786')`.") from None


def _check_array(X, name="X"):
    if X.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D Dask array (n_samples, n_features), got "
                         f"{X.ndim} dimensions")
    if any(np.isnan(c) for c in X.chunks[0]) or any(np.isnan(c) for c in X.chunks[1]):
        raise ValueError(f"{name}: the Dask array has unknown chunk sizes; n is public and "
                         f"must be known: call {name}.compute_chunk_sizes() first")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"{name}: the Dask array is chunked along columns ({len(X.chunks[1])} "
                         f"column chunks); dperm needs whole rows in every block: "
                         f"{name} = {name}.rechunk({{1: -1}})")
    if X.dtype not in (np.float32, np.float64):
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(f"{name}: must be numeric, got dtype {X.dtype}")
        X = X.astype(np.float64)
    return X


def _label_kind(regression, n_classes):
    if n_classes is not None:
        return f"class indices 0..{int(n_classes) - 1} (the softmax model of {int(n_classes)} classes)"
    return "real targets (a regression loss)" if regression else "labels in {-1, +1}"


def as_rows(X, y, *, min_samples=1, name="X", regression=False, n_classes=None):
    """A DaskRows over a Dask array X and labels y in {-1, +1}, or with `regression`
    finite real targets, or with `n_classes` = K class indices 0..K-1 (the softmax
    model) (a numpy array, or a Dask array: rechunked like X's rows).  A
    DaskRows is returned as it is (its labels are already on the workers; y is
    ignored), if its labels are of the kind asked for."""
    from dperm.data.design import DesignRows

    if n_classes is not None:
        if regression:
            raise ValueError("n_classes: class indices and real targets exclude each other")
        from dperm.losses import check_n_classes

        n_classes = check_n_classes(n_classes)
    if isinstance(X, DaskRows):
        if X.picked_class is not None and n_classes is not None:
            raise ValueError(
                f"{name}: these rows on the workers carry the labels of class "
                f"{X.picked_class} against the rest (labels in {{-1, +1}}); this objective "
                f"needs {_label_kind(regression, n_classes)}: use the rows before for_class")
        if X.n_classes != n_classes:
            raise ValueError(
                f"{name}: these rows on the workers carry "
                f"{_label_kind(X.regression, X.n_classes)}; this objective needs "
                f"{_label_kind(regression, n_classes)}: build the rows with the labels of "
                "this task" + (", or take one class against the rest (rows.for_class(k))"
                               if X.n_classes is not None and n_classes is None
                               and not regression else ""))
        if X.regression != bool(regression):
            raise ValueError(
                f"{name}: these rows on the workers carry "
                f"{'real targets (a regression loss)' if X.regression else 'labels in {-1, +1}'}"
                f"; a {'regression' if regression else 'margin (classification)'} loss needs "
                f"{'real targets' if regression else 'labels in {-1, +1}'}: build the rows "
                "with the labels of this task")
        return X
    ops = ()
    if isinstance(X, DesignRows):
        if X.factor is not None:
            raise ValueError(f"{name}: row factors of a Dask array are applied on the workers; "
                             "pass the Dask array and data_norm instead of a DesignRows with "
                             "factors")
        ops = ((("icpt", X.constant, X.scale),) if X.constant is not None else
               ((("scale", X.scale),) if X.scale != 1.0 else ()))
        X = X.X
    import dask.array as da

    client = _client()
    X = _check_array(X, name)
    n, d = X.shape
    if n < min_samples:
        raise ValueError(f"{name}: needs at least {min_samples} samples; found {n}")
    if y is None:
        raise ValueError("y: labels are required")
    if is_dask_array(y):
        if y.ndim == 2 and 1 in y.shape:
            y = y.reshape(-1)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y: expected {n} labels (1-D), got shape {y.shape}")
        y = y.rechunk((X.chunks[0],))
    else:
        yy = np.asarray(y)
        if yy.ndim == 2 and 1 in yy.shape:
            yy = yy.reshape(-1)
        if yy.ndim != 1 or yy.shape[0] != n:
            raise ValueError(f"y: has {yy.shape[0] if yy.ndim else 0} labels but X has {n} rows")
        y = da.from_array(yy, chunks=(X.chunks[0],))
    return DaskRows(client, X, y, ops, regression=regression, n_classes=n_classes)


class DaskRows:
    """Rows of a Dask array with their labels, held by shards on the workers.

    shape is public (n, d + intercept column); `ops` are the public row maps
    replayed on the workers.  `value_grad` / `hess_vec` are the objective oracle
    the solvers call (W blocks in, objective values / gradients out).
    """

    _dperm_distributed = True

    def __init__(self, client, X, y, ops=(), _state=None, regression=False, n_classes=None):
        self.ops = tuple(ops)
        if _state is None:
            import dask

            # labels given as a numpy array travel in the graph (so that a lost block can
            # be recomputed from it): not the "large graph" the warning is about
            limit = dask.config.get("distributed.admin.large-graph-warning-threshold", "10MB")
            limit = max(dask.utils.parse_bytes(limit), 4 * y.nbytes)
            with dask.config.set({"distributed.admin.large-graph-warning-threshold": limit}):
                X, y = client.persist([X, y])
            _state = _Cluster(client, X, y, regression, n_classes)
        self._state = _state
        self.X = _state.X

    # --- the public shape of the design -----------------------------------------
    @property
    def shape(self):
        n, d = self._state.X.shape
        return (n, d + sum(op[0] == "icpt" for op in self.ops))

    @property
    def dtype(self):
        return self._state.X.dtype

    @property
    def n_chunks(self):
        return self._state.n_chunks

    @property
    def regression(self):
        """Whether the labels on the workers are real targets (a regression loss reads
        them apart from the rows) rather than labels in {-1, +1}."""
        return self._state.regression

    @property
    def n_classes(self):
        """K when the labels on the workers are class indices 0..K-1 (the softmax
        model's rows), else None (also for rows of one class against the rest,
        `for_class`: their labels are +-1)."""
        return self._state.n_classes if self.picked_class is None else None

    @property
    def picked_class(self):
        """k for the rows of one class against the rest (`for_class(k)`), else None."""
        ks = [op[1] for op in self.ops if op[0] == "class"]
        return ks[-1] if ks else None

    def for_class(self, k):
        """Rows with class indices as the binary problem class k (+1) against the rest
        (-1): the labels of one-vs-rest's k-th model, made on the workers from the class
        indices there (`_class_signs`, once per chunk when a pass first needs them; y
        never comes to the client).  The same shards and persisted blocks serve every
        class."""
        K = self._state.n_classes
        if K is None or self.picked_class is not None:
            raise ValueError("for_class: these rows on the workers do not carry class "
                             "indices (build them with as_rows(X, y, n_classes=K))")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < K:
            raise ValueError(f"for_class: k must be a class index in 0..{K - 1}, got {k!r}")
        return self._with(("class", int(k)))

    def class_counts(self):
        """Rows per class (K,) of rows with class indices, counted on the workers (only
        the K counts come back).  A statistic of the private data, for the analyst's
        notices only (the estimator's "every label is ..." warning); never released."""
        if self._state.n_classes is None:
            raise ValueError("class_counts: these rows on the workers do not carry class "
                             "indices")
        return np.sum(self._state.call("class_counts"), axis=0)

    def _with(self, op):
        return DaskRows(None, None, None, self.ops + (op,), _state=self._state)

    def with_intercept(self, value, scale):
        """WithInterceptColumn, on the workers."""
        if any(op[0] == "icpt" for op in self.ops):
            raise ValueError("WithInterceptColumn: X already has a constant column")
        return self._with(("icpt", float(value), float(scale)))

    def bound_rows(self, data_norm, norm_policy, *, name="X", return_clipped=False):
        """bound_rows, on the workers (the same code, per chunk); "error" raises there."""
        from dperm.data.validation import check_choice

        check_choice(norm_policy, "norm_policy", {"clip", "error"})
        out = self._with(("clip", float(data_norm), norm_policy, name))
        clipped = out._state.call("prepare", out.ops)
        total = int(sum(sum(c) for c in clipped))
        return (out, total) if return_clipped else out

    # --- the oracle ---------------------------------------------------------------
    def _require_binary(self):
        if self.n_classes is not None:
            raise ValueError("y: these rows on the workers carry class indices (the softmax "
                             "model); a binary or regression loss needs rows built with its "
                             "own labels, or one class against the rest (rows.for_class(k))")

    def value_grad(self, W, l2, B, loss, h, n_threads=None, keep_curvature=False):
        """Objective values (m,) and gradients (m, d) at W (m, d) over all rows;
        keep_curvature: the shards remember phi''(margins) at W for `hess_vec`."""
        self._require_binary()
        W = np.ascontiguousarray(W, dtype=np.float64)
        S, SG = self._state.reduce("value_grad", self.ops, W, loss, h, n_threads,
                                   keep_curvature)
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
        """Hessian-vector products (m, d) at W along V; keep_curvature: a shard that
        kept the curvature at every row of W (from value_grad) skips the margins."""
        self._require_binary()
        W = np.ascontiguousarray(W, dtype=np.float64)
        V = np.ascontiguousarray(V, dtype=np.float64)
        _, SH = self._state.reduce("hess_vec", self.ops, (W, V), loss, h, n_threads,
                                   keep_curvature)
        l2 = np.asarray(l2, dtype=np.float64).reshape(-1)
        return SH * (1.0 / self.shape[0]) + l2[:, None] * V

    def softmax_sums(self, W, n_threads=None):
        """The softmax data term as SUMS over every row (dperm.optim.softmax): the sums
        of logsumexp(W_j x_i) - (W_j x_i)_{y_i} (m,) and of their gradients (m, K, d) at
        W (m, K, d), each chunk's by the compiled softmax pass on its worker (the one
        the local objective runs), added in the chunk tree's order.  The rows must carry
        class indices (`as_rows(..., n_classes=K)`)."""
        if self.n_classes is None:   # (rows of one class picked by for_class too)
            raise ValueError("y: the softmax objective needs class indices on the workers "
                             "(rows built with as_rows(X, y, n_classes=K))")
        W = np.ascontiguousarray(W, dtype=np.float64)
        m, K, d = W.shape
        if K != self.n_classes or d != self.shape[1]:
            raise ValueError(f"W: expected shape (m, {self.n_classes}, {self.shape[1]}), got "
                             f"{W.shape}")
        F, G = self._state.reduce("softmax", self.ops, (W.reshape(m * K, d), K), 0, 0.0,
                                  n_threads)
        return F, G.reshape(m, K, d)

    def sufficient_statistics(self, data_norm, label_bound):
        """(X^T X (d, d), X^T y (d,)) over the design rows (after the row maps) and the
        real targets on the workers: per chunk on its worker, added in the chunk tree's
        order (one pass; AdaSSP's statistics, dperm.privacy.adassp).  Sums, not means.
        A row of norm over data_norm or a target over label_bound raises ValueError
        naming its chunk (the estimator clips both first)."""
        if not self.regression:
            raise ValueError("y: the sufficient statistics X^T y need real targets on the "
                             "workers (rows built for a regression loss)")
        xty, gram = self._state.reduce("gram", self.ops, (float(data_norm), float(label_bound)),
                                       0, 0.0, None)
        return gram, xty


class _LostWorker(Exception):
    """A shard's worker left the cluster while a pass was out."""


class _Cluster:
    """The persisted blocks, their layout and the shards (one actor per worker)."""

    def __init__(self, client, X, y, regression=False, n_classes=None):
        from distributed import futures_of

        self.client, self.X, self.y = client, X, y
        self.regression = bool(regression)
        #: K: the labels are class indices 0..K-1 (the softmax model); None otherwise
        self.n_classes = None if n_classes is None else int(n_classes)
        xkeys = [k[0] for k in X.__dask_keys__()]
        ykeys = list(y.__dask_keys__())
        fx = {f.key: f for f in futures_of(X)}
        fy = {f.key: f for f in futures_of(y)}
        self.xf = [fx[k] for k in xkeys]
        self.yf = [fy[k] for k in ykeys]
        self.n_chunks = len(self.xf)
        self.rows = np.asarray(X.chunks[0], dtype=np.int64)
        self.starts = np.concatenate(([0], np.cumsum(self.rows)[:-1]))
        #: public row offsets of the chunks (n_chunks + 1): what every node of the chunk
        #: tree must hold
        self.bounds = np.concatenate(([0], np.cumsum(self.rows))).astype(np.int64)
        self.n = int(self.rows.sum())
        self.shards = []
        self._build()

    def _build(self):
        """(Re)create one shard per worker over the blocks it holds, in a fixed order, and
        link them into the message tree (shard s sends to shard (s - 1) // TREE_FAN_IN)."""
        from distributed import wait

        self.shards = []
        wait(self.xf + self.yf)
        who = self.client.who_has(self.xf)
        groups = {}
        for i, f in enumerate(self.xf):
            holders = sorted(who.get(f.key, ()))
            if not holders:
                raise DistributedFitError(f"chunk {i}: no worker holds it after recomputation")
            groups.setdefault(holders[0], []).append(i)
        threads = self.client.nthreads()
        shards = []
        for w in sorted(groups):
            idx = groups[w]
            fut = self.client.submit(
                _Shard, idx, [int(self.starts[i]) for i in idx],
                [self.xf[i] for i in idx], [self.yf[i] for i in idx], self.bounds,
                int(threads.get(w, 1)), self.regression, self.n_classes, actor=True,
                workers=[w], allow_other_workers=False,
                pure=False)
            shards.append((fut, idx, w))
        # construction validates the blocks: a bad chunk raises here, with its index
        built = [(fut.result(), fut, idx, w) for fut, idx, w in shards]
        links = []
        for s, (actor, _, _, _) in enumerate(built):
            kids = [built[c][0]
                    for c in range(s * TREE_FAN_IN + 1, min(len(built), (s + 1) * TREE_FAN_IN + 1))]
            if kids:
                links.append(actor.link(kids))
        for f in links:
            f.result()
        self.shards = built

    def call(self, method, *args, root_only=False):
        """method(*args) on every shard (all calls in flight together), or on the root
        of the message tree only; repeated after a rebuild if a worker is lost.  Returns
        the shards' results."""
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                if not self.shards:
                    self._build()
                shards = self.shards[:1] if root_only else self.shards
                futs = [getattr(actor, method)(*args) for actor, _, _, _ in shards]
                return [self._result(f) for f in futs]
            except (ValueError, TypeError, MemoryError, KeyboardInterrupt, DistributedFitError):
                raise
            except _LostWorker:
                if attempt == MAX_RECOVERIES:
                    raise DistributedFitError(
                        f"dperm: a pass over the Dask array failed {attempt + 1} times (a "
                        "worker holding rows was lost each time); the fit was stopped rather "
                        "than finished on partial sums. Check the workers (memory limits, "
                        "restarts) and fit again.") from None
                self.shards = []
            except Exception as exc:   # a lost worker, a closed connection, ...
                if attempt == MAX_RECOVERIES:
                    raise DistributedFitError(
                        f"dperm: a pass over the Dask array failed {attempt + 1} times "
                        f"({type(exc).__name__}: {exc}); the fit was stopped rather than "
                        "finished on partial sums. Check the workers (memory limits, "
                        "restarts) and fit again.") from exc
                self.shards = []   # rebuilt from the persisted blocks (recomputed if lost)

    def _result(self, fut):
        """The result of a shard's call; while waiting, every LOST_WORKER_POLL seconds,
        _LostWorker if a shard's worker is no longer known to the scheduler (its shards'
        calls cannot complete: the pass is repeated on rebuilt shards)."""
        import asyncio

        while True:
            try:
                return fut.result(timeout=LOST_WORKER_POLL)
            except (TimeoutError, asyncio.TimeoutError):   # distinct classes before 3.11
                alive = self.client.nthreads()
                if any(w not in alive for _, _, _, w in self.shards):
                    raise _LostWorker() from None

    def reduce(self, method, ops, Wargs, loss, h, n_threads, keep_curvature=False):
        """The sums of a pass over every row, added in the fixed order of the chunk tree:
        (sums of losses (m,) or None, sums of gradient terms (m, d)).

        REDUCTION "tree": the root shard receives the pass and forwards it down the
        message tree; partial sums travel back up and the client receives one answer.
        "flat": every shard answers the client, which folds the answers itself.  Both
        give the same bits (the order is the chunk tree's, not the messages')."""
        args = (method, tuple(ops), Wargs, int(loss), float(h), n_threads, bool(keep_curvature))
        if REDUCTION == "tree":
            parts = [pickle.loads(p) for p in self.call("tree", pickle.dumps(args, protocol=5),
                                                        root_only=True)]
        else:
            parts = [pickle.loads(p) for p in self.call("flat", pickle.dumps(args, protocol=5))]
        F, G = _root(parts, self.bounds)
        return F, G

    def stats(self):
        """Counters of the shards (curvature cache hits and misses), added up."""
        out = {}
        for s in self.call("stats"):
            for k, v in s.items():
                out[k] = out.get(k, 0) + v
        return out


# --- the chunk tree: the one order in which partial sums are added -------------------
def _top(n_chunks):
    """Level of the chunk tree's root: the smallest L with 2**L >= n_chunks."""
    return max(n_chunks - 1, 0).bit_length()


def _span(key, n_chunks):
    """Chunks [lo, hi) under node key = (level, j): the aligned range j 2**level ..."""
    level, j = key
    return j << level, min((j + 1) << level, n_chunks)


def _fold(parts, bounds):
    """Union of partial results (dicts node -> (rows, F or None, G)) folded bottom-up
    through the chunk tree: siblings (level, 2i) and (level, 2i + 1) become their
    parent (level + 1, i) = left + right as soon as both are present; a left child
    whose sibling lies past the last chunk becomes its parent unchanged.  The sum at
    a node therefore depends only on the chunks under it, never on which worker
    computed which part or in which order the messages came.  Overlapping parts
    (a chunk counted twice) and nodes whose row count is not the public one raise
    DistributedFitError.  Returns the maximal nodes (a dict)."""
    n_chunks = len(bounds) - 1
    nodes = {}
    for part in parts:
        for key, val in part.items():
            key = (int(key[0]), int(key[1]))
            lo, hi = _span(key, n_chunks)
            if key in nodes or lo >= hi:
                raise DistributedFitError(
                    f"dperm: chunks {lo} to {hi - 1} contributed twice (or do not exist); the "
                    "pass is not a sum over every row once (no model is produced)")
            if int(val[0]) != bounds[hi] - bounds[lo]:
                raise DistributedFitError(
                    f"dperm: chunks {lo} to {hi - 1} contributed {int(val[0])} rows, not "
                    f"{int(bounds[hi] - bounds[lo])}; the pass is not a sum over every row once "
                    "(no model is produced)")
            nodes[key] = val
    end = 0
    for lo, hi in sorted(_span(k, n_chunks) for k in nodes):
        if lo < end:
            raise DistributedFitError(
                f"dperm: chunk {lo} contributed twice; the pass is not a sum over every row "
                "once (no model is produced)")
        end = hi
    for level in range(_top(n_chunks)):
        for j in sorted(k[1] for k in nodes if k[0] == level and k[1] % 2 == 0):
            left = nodes[(level, j)]
            if (level, j + 1) in nodes:
                right = nodes.pop((level, j + 1))
                nodes[(level + 1, j >> 1)] = (
                    left[0] + right[0], None if left[1] is None else left[1] + right[1],
                    left[2] + right[2])
                del nodes[(level, j)]
            elif (j + 1) << level >= n_chunks:
                nodes[(level + 1, j >> 1)] = nodes.pop((level, j))
    return nodes


def _root(parts, bounds):
    """The root's sums (F or None, G) of the folded parts, or DistributedFitError if a
    chunk is missing (the rows and every chunk once were checked by the fold)."""
    nodes = _fold(parts, bounds)
    n_chunks = len(bounds) - 1
    root = (_top(n_chunks), 0)
    if set(nodes) != {root}:
        rows = sum(int(v[0]) for v in nodes.values())
        covered = sum(hi - lo for lo, hi in (_span(k, n_chunks) for k in nodes))
        raise DistributedFitError(
            f"dperm: a pass over the Dask array covered {rows} of {int(bounds[-1])} rows "
            f"({n_chunks - covered} chunk(s) missing); no model is produced from a partial sum")
    _, F, G = nodes[root]
    return F, G


def _class_signs(codes, k):
    """One-vs-rest's labels of class k from class indices: +1 where the index is k, -1
    elsewhere (as PrivateLinearClassifier's local targets)."""
    return np.where(codes == k, 1.0, -1.0)


def _class_codes(y, classes, block_info=None):
    """A chunk of labels as their indices in the public `classes` (on a worker); a label
    that is not finite or not one of the classes raises ValueError naming the chunk."""
    where = "y"
    if block_info is not None and block_info.get(0):
        ci = block_info[0]["chunk-location"][0]
        r0, r1 = block_info[0]["array-location"][0]
        where = f"y, chunk {ci} (rows {r0} to {r1 - 1})"
    y = np.asarray(y).reshape(-1)
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        raise ValueError(f"{where}: contains NaN or infinity")
    codes = np.full(y.shape[0], -1, dtype=np.int64)
    for k, c in enumerate(classes):
        codes[y == c] = k
    if (codes < 0).any():
        raise ValueError(f"{where}: values {np.unique(y[codes < 0])[:5].tolist()} are not in "
                         f"classes={list(classes)}")
    return codes


def _centred_targets(block, centre):
    """One chunk of regression targets, checked as `check_real_labels` checks them (on
    a worker), as float64 minus the public centre."""
    y = np.asarray(block)
    if y.dtype.kind not in "biuf":
        raise ValueError(f"y: a regression target must be numeric, got dtype {y.dtype}")
    yf = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(yf)):
        raise ValueError("y: contains NaN or infinity")
    return yf if centre is None else yf - centre


def _clipped_targets(block, bound, count):
    """One chunk's targets clipped to [-bound, bound] (on a worker); with `count`, how
    many were clipped, as a (1,) array (as `bound_labels`)."""
    yf = np.asarray(block, dtype=np.float64)
    if count:
        return np.array([np.count_nonzero(np.abs(yf) > bound)], dtype=np.int64)
    return np.clip(yf, -bound, bound)


def _own_name(what):
    """A task name of its own: a fit's persisted labels never share a name with another
    graph's tasks of another form (dask/dask#9888)."""
    import uuid

    return f"dperm-{what}-{uuid.uuid4().hex}"


def centred_targets(y, n, centre=None):
    """dperm.data.oracle.real_targets for the Dask array y: checked (numeric, finite)
    and moved by the public centre on the workers, lazily."""
    if y.ndim == 2 and 1 in y.shape:
        y = y.reshape(-1)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y: expected {n} targets (1-D), got shape {y.shape}")
    if y.dtype.kind not in "biuf":
        raise ValueError(f"y: a regression target must be numeric, got dtype {y.dtype}")
    return y.map_blocks(_centred_targets, None if centre is None else float(centre),
                        dtype=np.float64, meta=np.empty((0,), np.float64),
                        name=_own_name("targets"))


def clipped_targets(y, label_bound):
    """(y clipped to [-label_bound, label_bound] on the workers, lazily; how many were
    clipped, counted there): dperm.data.oracle.targets_to_workers for a Dask y."""
    B = float(label_bound)
    counts = y.map_blocks(_clipped_targets, B, True, chunks=((1,) * y.numblocks[0],),
                          dtype=np.int64, meta=np.empty((0,), np.int64),
                          name=_own_name("targets-clipped-count"))
    clipped = y.map_blocks(_clipped_targets, B, False, dtype=np.float64,
                           meta=np.empty((0,), np.float64), name=_own_name("targets-clipped"))
    return clipped, int(counts.sum().compute())


def label_set(y):
    """The distinct labels of y (numpy, or a Dask array: found on the workers, only the
    set comes back), sorted."""
    if is_dask_array(y):
        import dask.array as da

        seen = np.asarray(da.unique(y.reshape(-1)).compute())
    else:
        seen = np.unique(np.asarray(y).reshape(-1))
    if seen.dtype.kind in "fc" and not np.isfinite(seen).all():
        raise ValueError("y: contains NaN or infinity")
    return seen


def class_rows(X, y, classes, *, min_samples=1, name="X"):
    """A DaskRows over the Dask array X whose labels on the workers are the indices
    0..K-1 of y's labels in the public `classes` (K = len(classes) >= 2): y (a Dask
    array, or numpy, sent chunked like X's rows) is mapped chunk by chunk on the workers
    (`_class_codes`; a label outside `classes` raises ValueError naming its chunk), so
    the labels never come to the client.  The rows serve the softmax model (K >= 3) and,
    through `DaskRows.for_class(k)`, each binary model of one class against the rest."""
    import warnings

    import dask.array as da
    from sklearn.exceptions import DataConversionWarning

    X = _check_array(X, name)
    n = X.shape[0]
    if not is_dask_array(y):
        y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:   # as the local fit (stacklevel: the caller of fit)
        warnings.warn("A column-vector y was passed when a 1d array was expected; "
                      "using y.ravel()", DataConversionWarning, stacklevel=5)
        y = y.reshape(-1)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y: expected {n} labels (1-D), got shape {y.shape}")
    cls = np.asarray(classes)
    if (np.dtype(y.dtype).kind in "OUS") != (cls.dtype.kind in "OUS"):
        raise ValueError(f"y: labels of dtype {y.dtype} do not match "
                         f"classes={cls.tolist()!r}")
    y = y.rechunk((X.chunks[0],)) if is_dask_array(y) else \
        da.from_array(y, chunks=(X.chunks[0],))
    classes = tuple(cls.tolist())   # a keyword, not an array to block
    codes = y.map_blocks(_class_codes, classes=classes, dtype=np.int64,
                         meta=np.empty((0,), dtype=np.int64))
    return as_rows(X, codes, min_samples=min_samples, name=name, n_classes=len(classes))


def _replay(block, y, ops, loss_name=None):
    """The design rows of one block after the public row maps `ops`, as on one machine."""
    from dperm.data.design import DesignRows, WithInterceptColumn
    from dperm.data.validation import bound_rows

    D = DesignRows(block)
    clipped = []
    for op in ops:
        if op[0] == "clip":
            out, c = bound_rows(D, op[1], op[2], name=op[3], return_clipped=True)
            D = out if isinstance(out, DesignRows) else D
            clipped.append(c)
        elif op[0] == "icpt":
            D = WithInterceptColumn(D, op[1], op[2])
        elif op[0] == "scale":
            D = DesignRows(D.X, D.factor, D.constant, D.scale * op[1])
    return D, clipped


class _Shard:
    """One worker's row blocks and their compiled Data (a Dask actor)."""

    def __init__(self, chunk_ids, starts, blocks, labels, bounds, n_threads=1, regression=False,
                 n_classes=None):
        import threading

        from dperm.data.validation import (
            check_class_labels,
            check_pm1_labels,
            check_real_labels,
            check_X,
        )

        self.chunk_ids = list(chunk_ids)
        self.starts = [int(r) for r in starts]
        self.bounds = np.asarray(bounds, dtype=np.int64)
        #: labels are real targets, read apart from the rows (row weights 1)
        self.regression = bool(regression)
        #: K: the labels are class indices 0..K-1, read by the softmax pass
        self.n_classes = None if n_classes is None else int(n_classes)
        self.blocks, self.labels = [], []
        for ci, r0, X, y in zip(chunk_ids, starts, blocks, labels):
            where = f"chunk {ci} (rows {r0} to {r0 + X.shape[0] - 1})"
            X = check_X(X, name=f"X, {where}", accept_sparse=True)
            if self.n_classes is not None:
                y = np.ascontiguousarray(check_class_labels(
                    y, X.shape[0], self.n_classes, name=f"y, {where}"), dtype=np.int64)
            else:
                y = (check_real_labels if regression else check_pm1_labels)(
                    y, X.shape[0], name=f"y, {where}")
            self.blocks.append(X)
            self.labels.append(y)
        self.cache = {}
        #: the shards below this one in the message tree (Actor handles)
        self.children = []
        #: passes of `tree` run in a thread of their own, one at a time with the other
        #: methods (which distributed runs in the worker's actor thread)
        self.lock = threading.RLock()
        self.n_threads = max(1, int(n_threads))
        #: phi''(margins) of the last value_grad passes, per point: key -> [per chunk]
        self.curv = OrderedDict()
        self.curv_batch = 0
        self.counters = {"curvature_hits": 0, "curvature_misses": 0}

    def link(self, children):
        """Set the shards (Actor handles) this one forwards a tree pass to (and folds the
        answers of)."""
        self.children = list(children)
        return len(self.children)

    def stats(self):
        return dict(self.counters)

    def class_counts(self):
        """Rows per class over this worker's chunks (K,) (rows with class indices)."""
        out = np.zeros(self.n_classes, dtype=np.int64)
        for y in self.labels:
            out += np.bincount(y, minlength=self.n_classes)
        return out

    def prepare(self, ops):
        """Build (and cache) the kernels' Data for the row maps ops; returns the number
        of rows each map clipped, per chunk (a statistic for the analyst)."""
        ops = tuple(ops)
        with self.lock:
            return self._prepare(ops)

    def _prepare(self, ops):
        hit = self.cache.get(ops)
        if hit is None:
            from dperm._core._objective import Data

            datas, counts = [], []
            for X, y in zip(self.blocks, self.labels):
                D, clipped = _replay(X, y, ops)
                picked = [op[1] for op in ops if op[0] == "class"]
                if self.regression:   # as dperm.data.oracle.binary_oracle: labels apart
                    datas.append(Data(D.X, D.signed_weights(np.ones(X.shape[0])),
                                      D.constant_column(), y))
                elif picked:   # one class against the rest: +-1 from the class indices
                    datas.append(Data(D.X, D.signed_weights(_class_signs(y, picked[-1])),
                                      D.constant_column()))
                elif self.n_classes is not None:   # as SoftmaxRows.compiled: row weights,
                    # the constant column; the class indices are read apart by the pass
                    datas.append(Data(D.X, D.signed_weights(np.ones(X.shape[0])),
                                      D.constant_column()))
                else:
                    datas.append(Data(D.X, D.signed_weights(y), D.constant_column()))
                counts.append(sum(clipped))
            if len(self.cache) >= _CACHE_SPECS:
                self.cache.pop(next(iter(self.cache)))
            hit = self.cache[ops] = (datas, counts)
        return hit[1]

    def _nt(self, n_threads):
        return self.n_threads if n_threads is None else int(n_threads)

    def _per_chunk(self, ops, W, fn, sums=False):
        """[(chunk, rows, sum of losses or None, sum of gradient terms)] of fn(chunk
        position, Data, zero ridge) over this worker's chunks: the kernels' means times
        the chunk's rows (with `sums`, fn's answers are sums already: the softmax pass)."""
        self.prepare(ops)
        zero = np.zeros(W.shape[0])
        out = []
        for pos, (ci, D) in enumerate(zip(self.chunk_ids, self.cache[tuple(ops)][0])):
            nr = D.shape[0]
            F, G = fn(pos, D, zero)
            if sums:
                out.append((ci, nr, F, G))
            else:
                out.append((ci, nr, None if F is None else F * nr, G * nr))
        return out

    # --- Newton's curvature cache: phi'' at the points of the last value_grad passes ---
    def _curv_keys(self, ops, W, loss, h):
        return [(ops, loss, h, W[j].tobytes()) for j in range(W.shape[0])]

    def _keep_curvature(self, keys, curvs):
        """Remember per point (row of W) its chunks' curvature rows, least recently used
        first out: at most CACHED_POINTS points per problem of the largest batch seen
        (as the local solver keeps), within WORKER_CURVATURE_BYTES."""
        rows = sum(c.shape[1] for c in curvs)
        size = 8 * rows
        if size == 0 or size > WORKER_CURVATURE_BYTES:
            return
        self.curv_batch = max(self.curv_batch, len(keys))
        cap = min(CACHED_POINTS * self.curv_batch, WORKER_CURVATURE_BYTES // size)
        for j, key in enumerate(keys):
            if key in self.curv:
                self.curv.move_to_end(key)
                continue
            self.curv[key] = [c[j].copy() for c in curvs]
            while len(self.curv) > cap:
                self.curv.popitem(last=False)

    def value_grad(self, ops, W, loss, h, n_threads=None, keep_curvature=False):
        from dperm._core._objective import value_grad

        nt = self._nt(n_threads)
        if not keep_curvature:
            return self._per_chunk(ops, W, lambda pos, D, zero:
                                   value_grad(D, W, zero, None, loss, h, nt))
        curvs = []

        def vg(pos, D, zero):
            curvs.append(np.empty((W.shape[0], D.shape[0])))
            return value_grad(D, W, zero, None, loss, h, nt, curvs[-1])
        out = self._per_chunk(ops, W, vg)
        self._keep_curvature(self._curv_keys(tuple(ops), W, loss, h), curvs)
        return out

    def hess_vec(self, ops, WV, loss, h, n_threads=None, keep_curvature=False):
        from dperm._core._objective import hess_vec

        W, V = WV
        nt = self._nt(n_threads)
        cached = None
        if keep_curvature:
            rows = [self.curv.get(k) for k in self._curv_keys(tuple(ops), W, loss, h)]
            if all(r is not None for r in rows):
                cached = rows
            self.counters["curvature_hits" if cached else "curvature_misses"] += 1

        def hv(pos, D, zero):
            curv = None if cached is None else np.stack([r[pos] for r in cached])
            return None, hess_vec(D, W, V, zero, loss, h, nt, curv)
        return self._per_chunk(ops, W, hv)

    def softmax(self, ops, WK, loss=None, h=None, n_threads=None, keep_curvature=False):
        """[(chunk, rows, sum of the softmax losses (m,), sums of their gradients (m K, d))]
        over this worker's chunks: per chunk, the compiled softmax pass that the local
        objective runs (dperm._core._objective.softmax_sums), on the chunk's Data (row
        weights and constant column as dperm.data.oracle.SoftmaxRows builds them)."""
        from dperm._core._objective import softmax_sums

        if self.n_classes is None:
            raise ValueError("y: the softmax pass needs class indices on the workers")
        W, K = WK
        if any(op[0] == "class" for op in ops):
            raise ValueError("y: the softmax pass needs every class's indices, not one "
                             "class against the rest (rows before for_class)")
        if int(K) != self.n_classes:
            raise ValueError(f"K: the rows carry {self.n_classes} classes, the pass {K}")
        nt = self._nt(n_threads)
        labels = self.labels
        return self._per_chunk(ops, W, lambda pos, D, zero:
                               softmax_sums(D, labels[pos], W, int(K), nt), sums=True)

    def gram(self, ops, bounds, loss=None, h=None, n_threads=None, keep_curvature=False):
        """[(chunk, rows, X_c^T y_c, X_c^T X_c)] over this worker's chunks: the design
        rows after the row maps, materialized one chunk at a time (d x d is the output
        anyway).  bounds = (data_norm, label_bound): a row or target beyond them raises
        ValueError naming the chunk (a sensitivity bound would not hold)."""
        R, B = bounds
        out = []
        for ci, r0, X, y in zip(self.chunk_ids, self.starts, self.blocks, self.labels):
            nr = X.shape[0]
            where = f"chunk {ci} (rows {r0} to {r0 + nr - 1})"
            if np.any(np.abs(y) > B):
                raise ValueError(f"y, {where}: {int(np.count_nonzero(np.abs(y) > B))} "
                                 f"target(s) have |y| above label_bound={B}; clip them first")
            # the chunk's rows in blocks of GRAM_BLOCK_ENTRIES entries, added in order (the
            # row maps act row by row: the same rows as the whole chunk's)
            step = max(1, GRAM_BLOCK_ENTRIES // max(1, X.shape[1] + 1))
            gram = xty = None
            for i0 in range(0, nr, step):
                A = _replay(X[i0:i0 + step], y[i0:i0 + step], ops)[0].toarray()
                over = np.sqrt(np.einsum("ij,ij->i", A, A)) > R
                if np.any(over):
                    raise ValueError(f"X, {where}: row {r0 + i0 + int(np.argmax(over))} has "
                                     f"norm above data_norm={R}; clip the rows first")
                g, v = A.T @ A, A.T @ y[i0:i0 + step]
                gram, xty = (g, v) if gram is None else (gram + g, xty + v)
            out.append((ci, nr, xty, gram))
        return out

    # --- the reduction: this worker's chunks folded, then the message tree ----------
    def partial(self, method, ops, Wargs, loss, h, n_threads=None, keep_curvature=False):
        """This worker's per-chunk sums of a pass (value_grad, hess_vec or gram), folded through
        the chunk tree as far as its own chunks allow: {node: (rows, F, G)}."""
        if method not in ("value_grad", "hess_vec", "gram", "softmax"):
            raise ValueError(f"method: unknown pass {method!r}")
        with self.lock:
            per = getattr(self, method)(ops, Wargs, loss, h, n_threads, keep_curvature)
        return _fold([{(0, ci): (nr, F, G)} for ci, nr, F, G in per], self.bounds)

    def flat(self, payload):
        """`partial` for the flat gather, pickled arguments in, pickled nodes out (as
        `tree`, so that the two reductions differ by their topology only)."""
        return pickle.dumps(self.partial(*pickle.loads(payload)), protocol=5)

    async def tree(self, payload):
        """A pass over the rows of this shard and of every shard below it.  payload: the
        pickled arguments of `partial`, forwarded as they came (serialized once, by the
        client) to the children first (their Actor handles' calls are under way at once);
        their answers come while this worker computes its own chunks in a thread; then
        all partial sums are folded.  Returns the folded nodes, pickled (read once, by
        the parent)."""
        import asyncio

        below = [child.tree(payload) for child in self.children]
        mine = await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.partial(*pickle.loads(payload)))
        parts = [pickle.loads(await f) for f in below]
        return pickle.dumps(_fold([mine, *parts], self.bounds), protocol=5)


# --- row selection and blockwise evaluation (private_tuning, predictions) -------------
def _take_rows(block, where):
    """Rows `where` (sorted positions within the block) of a dense or CSR block."""
    return block[where]


def split_rows(X, parts):
    """The Dask arrays X[sorted(part)] for each part (disjoint int64 row-index arrays),
    built without bringing rows to the client: each chunk of X is cut on its worker by
    the positions of the part's rows inside it.  The parts are public (a permutation
    drawn from public randomness); a chunk without rows of a part is left out of that
    part.  Returns [(Dask array, sorted indices)] in the order of `parts`."""
    import dask.array as da

    X = _check_array(X)
    bounds = np.concatenate(([0], np.cumsum(X.chunks[0])))
    d = X.shape[1]
    out = []
    for part in parts:
        idx = np.sort(np.asarray(part, dtype=np.int64))
        cuts = np.searchsorted(idx, bounds)
        pieces = []
        for j in range(X.numblocks[0]):
            where = idx[cuts[j]:cuts[j + 1]] - bounds[j]
            if where.size:
                pieces.append(X.blocks[j].map_blocks(
                    _take_rows, where, chunks=((where.size,), (d,)), dtype=X.dtype,
                    meta=X._meta))
        out.append((da.concatenate(pieces, axis=0) if len(pieces) > 1 else pieces[0], idx))
    return out


def frame_as_array(X, name="X"):
    """A dask DataFrame of numeric (or boolean) columns as a Dask array whose row chunks
    are its partitions (their lengths counted on the workers: n is public to a fit).  A
    column of another type is an error naming it: encode such columns with the public
    schema first (dperm.PublicBoundsTransformer in a Pipeline)."""
    bad = _non_numeric_columns(X)
    if bad:
        raise ValueError(f"{name}: column {bad[0]!r} of the dask DataFrame is not numeric "
                         f"({X.dtypes[bad[0]]}); encode it with the public schema first "
                         "(dperm.PublicBoundsTransformer in a Pipeline)")
    return X.to_dask_array(lengths=True)


def _non_numeric_columns(X):
    import pandas as pd

    return [c for c, t in X.dtypes.items()
            if not (pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t))]


def is_numeric_frame(X):
    """True for a dask DataFrame of numeric (or boolean) columns only (frame_as_array
    takes it)."""
    return is_dask_frame(X) and not _non_numeric_columns(X)


def is_dask_series(y):
    """True for a dask.dataframe.Series (without importing dask)."""
    dd = sys.modules.get("dask.dataframe")
    return dd is not None and isinstance(y, dd.Series)


def series_labels(y, row_chunks=None, name="y"):
    """A dask Series of labels as a Dask array chunked by its partitions (their lengths
    counted on the workers; the values stay there).  With `row_chunks` (the rows per
    partition of X, a dask DataFrame) the labels are paired with the rows by position, as
    a Dask array's are: a Series partitioned otherwise is re-chunked like X on the
    workers, and one with another number of labels is refused."""
    lengths = tuple(int(k) for k in y.map_partitions(len).compute())
    rows = None if row_chunks is None else tuple(int(k) for k in row_chunks)
    if rows is not None and sum(lengths) != sum(rows):
        raise ValueError(f"{name}: has {sum(lengths)} labels but X has {sum(rows)} rows")
    import warnings

    with warnings.catch_warnings():
        # labels of a pandas string dtype become object: read as they are by the fit
        warnings.filterwarnings("ignore", message="Dask currently has limited support for "
                                "converting pandas extension dtypes", category=UserWarning)
        labels = y.to_dask_array(lengths=lengths)
    return labels if rows is None or lengths == rows else labels.rechunk((rows,))


def frame_lengths(X):
    """Rows per partition of a dask DataFrame (counted on the workers).  Bookkeeping
    only, as in PublicBoundsTransformer: their sum n is public to a fit anyway."""
    return np.array([int(k) for k in X.map_partitions(len).compute()], dtype=np.int64)


def _take_frame_rows(frame, where):
    return frame.iloc[where]


def split_frame(X, parts):
    """split_rows for a dask DataFrame: the dask DataFrames X.iloc[sorted(part)], each
    partition cut on its worker (partitions without rows of a part are left out).
    Returns [(dask DataFrame, sorted indices)] in the order of `parts`."""
    import dask.dataframe as dd

    bounds = np.concatenate(([0], np.cumsum(frame_lengths(X))))
    out = []
    for part in parts:
        idx = np.sort(np.asarray(part, dtype=np.int64))
        cuts = np.searchsorted(idx, bounds)
        pieces = [X.partitions[j].map_partitions(_take_frame_rows,
                                                 idx[cuts[j]:cuts[j + 1]] - bounds[j],
                                                 meta=X._meta)
                  for j in range(X.npartitions) if cuts[j + 1] > cuts[j]]
        out.append((dd.concat(pieces) if len(pieces) > 1 else pieces[0], idx))
    return out


def count_frame_mistakes(estimator, X, y):
    """count_mistakes for a dask DataFrame X: each partition's rows are predicted and
    compared with its slice of y (a numpy array) on a worker; the counts come back."""
    import dask
    from dask import delayed

    y = np.asarray(y)
    bounds = np.concatenate(([0], np.cumsum(frame_lengths(X))))
    counts = [delayed(_count_mistakes)(b, y[bounds[j]:bounds[j + 1]], estimator.predict)
              for j, b in enumerate(X.to_delayed()) if bounds[j + 1] > bounds[j]]
    return int(sum(int(c[0]) for c in dask.compute(*counts)))


def _count_mistakes(block, labels, predict):
    return np.array([np.count_nonzero(np.asarray(predict(block)) != labels)], dtype=np.int64)


def _aligned(pred, y):
    """(pred, y) as Dask arrays of the same chunks: y a Dask array keeps its chunks (the
    predictions are rechunked to them, never the labels: a rechunk of y would share its
    task names with the fit's own rechunk, persisted on the workers), a numpy y is cut
    like the predictions (sent with the tasks)."""
    import dask.array as da

    pred = pred.reshape(-1)
    n = int(pred.shape[0])
    if is_dask_array(y):
        y = y.reshape(-1)
        if y.shape[0] != n:
            raise ValueError(f"y: has {y.shape[0]} labels but X has {n} rows")
        return pred.rechunk(y.chunks), y
    y = np.asarray(y).reshape(-1)
    if y.shape[0] != n:
        raise ValueError(f"y: has {y.shape[0]} labels but X has {n} rows")
    return pred, da.from_array(y, chunks=pred.chunks)


def count_mistakes(estimator, X, y):
    """Number of rows of the Dask array X whose predicted label differs from y, counted
    on the workers: y a numpy array (each chunk's slice sent with its task), or a Dask
    array (the predictions compared with its chunks there: the labels never come to the
    client); each chunk returns its count, the client adds them."""
    import dask.array as da

    X = _check_array(X)
    if is_dask_array(y):
        pred, y = _aligned(estimator.predict(X), y)
        return int((pred != y).sum().compute())
    y = np.asarray(y)
    bounds = np.concatenate(([0], np.cumsum(X.chunks[0])))
    counts = [da.from_delayed(
        _delayed_count(X.blocks[j], y[bounds[j]:bounds[j + 1]], estimator.predict),
        shape=(1,), dtype=np.int64) for j in range(X.numblocks[0])]
    return int(da.concatenate(counts).sum().compute())


def _delayed_count(block, labels, predict):
    from dask import delayed

    return delayed(_count_mistakes)(block.to_delayed().ravel()[0], labels, predict)


def clipped_abs_error(pred, y, low, high):
    """sum_i |clip(pred_i) - clip(y_i)|, both clipped to [low, high], for predictions
    pred (a Dask array, on the workers) and labels y (numpy, or a Dask array: compared
    with its chunks there); computed on the workers, the sum comes back."""
    import dask.array as da

    pred, y = _aligned(pred, y)
    err = da.abs(da.clip(pred.astype(np.float64), low, high)
                 - da.clip(y.astype(np.float64), low, high))
    return float(err.sum().compute())


def map_rows(X, fn, n_features, out_cols=None, dtype=np.float64):
    """fn applied to every row block of the Dask array X on the workers: a Dask array of
    shape (n,) (out_cols None) or (n, out_cols), chunked like X's rows.  Used for
    predictions: fn is the local, public row map of a fitted model (released anyway)."""
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-D Dask array (n_samples, n_features), got "
                         f"{X.ndim} dimensions")
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but the model is expecting "
                         f"{n_features} features as input")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"X: the Dask array is chunked along columns ({len(X.chunks[1])} "
                         "column chunks); predictions need whole rows in every block: "
                         "X = X.rechunk({1: -1})")
    dtype = np.dtype(dtype)
    if out_cols is None:
        return X.map_blocks(fn, drop_axis=1, dtype=dtype, meta=np.empty((0,), dtype))
    return X.map_blocks(fn, chunks=(X.chunks[0], (out_cols,)), dtype=dtype,
                        meta=np.empty((0, 0), dtype))
