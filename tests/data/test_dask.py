"""The Dask backend (dperm.data.dask_rows) on a real LocalCluster: the same answers as the local
path (dense and CSR chunks, float32 and float64; non-private, both mechanisms, the
estimator), validation on the workers, and a worker killed in the middle of a fit."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dperm  # noqa: E402
from dperm.data import dask_rows as _dask  # noqa: E402
from dperm.exceptions import ClippingWarning, PrivacyLeakWarning  # noqa: E402
from dperm.optim import erm  # noqa: E402
from dperm.privacy import mechanisms  # noqa: E402

RTOL = 1e-8

# subprocesses run here, not in the checkout's root: there `import dperm` would find the
# source tree (no compiled modules) instead of the installed package
_HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def _problem(n=3000, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (1.2 / np.sqrt(d))   # some rows over norm 1: clipping
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.abs(a - b).max() / max(np.abs(a).max(), 1e-300)


def _sparsify(b):
    return sp.csr_matrix(np.where(np.abs(b) > 0.25, b, 0))


def _variants(X, chunks=450):
    """(local, dask) pairs: dense and CSR chunks, float64 and float32."""
    out = []
    for dt in (np.float64, np.float32):
        Xl = X.astype(dt)
        out.append((f"dense-{np.dtype(dt).name}", Xl, da.from_array(Xl, chunks=(chunks, -1))))
        Xs = _sparsify(Xl)
        Xd = da.from_array(Xl, chunks=(chunks, -1)).map_blocks(_sparsify, dtype=dt,
                                                               meta=sp.csr_matrix((0, 0), dtype=dt))
        out.append((f"csr-{np.dtype(dt).name}", Xs, Xd))
    return out


def test_only_public_distributed_api():
    """The backend talks to distributed through its public API only (issue 27, item 7):
    no import from a distributed submodule (distributed.core's send_recv, ...), no
    worker internals (rpc pools, executors, the worker state machine)."""
    import ast

    tree = ast.parse(open(_dask.__file__, encoding="utf-8").read())
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith("distributed."):
            private.append(f"from {node.module} import ...")
        if isinstance(node, ast.Import):
            private += [a.name for a in node.names if a.name.startswith("distributed.")]
        if isinstance(node, ast.Attribute) and node.attr in (
                "rpc", "state", "executors", "send_recv", "actor_execute", "get_worker",
                "_address", "_key", "_worker"):
            private.append(f".{node.attr} (line {node.lineno})")
        if isinstance(node, ast.alias) and node.name == "get_worker":
            private.append("get_worker")
    assert not private, private


def test_import_does_not_import_dask():
    code = ("import dperm, dperm.optim.erm, dperm.sklearn.classifier, dperm.privacy.mechanisms, "
            "dperm.data.dask_rows, sys; "
            "assert 'dask' not in sys.modules and 'distributed' not in sys.modules, "
            "sorted(m for m in sys.modules if 'dask' in m or 'distributed' in m)")
    subprocess.run([sys.executable, "-c", code], cwd=_HERE, check=True)


@pytest.mark.parametrize("solver", ["lbfgs", "newton"])
def test_minimize_matches_local(client, solver):
    X, y = _problem()
    for name, Xl, Xd in _variants(X):
        a = erm.minimize(Xl, y, alpha=[1e-2, 1e-3], solver=solver)
        b = erm.minimize(Xd, y, alpha=[1e-2, 1e-3], solver=solver)
        assert b.converged.all(), name
        assert _rel(a.coef, b.coef) < RTOL, name
        assert np.allclose(a.fun, b.fun, rtol=1e-12), name


def test_labels_as_dask_and_objective(client):
    X, y = _problem(n=1000)
    Xd = da.from_array(X, chunks=(300, -1))
    yd = da.from_array(y, chunks=250)          # rechunked like X's rows
    a = erm.minimize(X, y, alpha=0.05, loss="huber")
    b = erm.minimize(Xd, yd, alpha=0.05, loss="huber")
    assert _rel(a.coef, b.coef) < RTOL
    W = np.random.default_rng(1).normal(size=(3, X.shape[1]))
    lin = np.random.default_rng(2).normal(size=(3, X.shape[1]))
    Fa, Ga = erm.objective(X, y, W, alpha=[0.1, 0.2, 0.3], linear=lin)
    Fb, Gb = erm.objective(Xd, yd, W, alpha=[0.1, 0.2, 0.3], linear=lin)
    assert np.allclose(Fa, Fb, rtol=1e-13) and np.allclose(Ga, Gb, rtol=1e-12, atol=1e-15)
    V = np.ones_like(W)
    assert np.allclose(erm.hessian_vector(X, y, W, V, alpha=0.1),
                       erm.hessian_vector(Xd, yd, W, V, alpha=0.1), rtol=1e-12)


@pytest.mark.parametrize("mech", [mechanisms.output_perturbation,
                                  mechanisms.objective_perturbation])
def test_mechanisms_match_local_with_same_seed(client, mech):
    X, y = _problem()
    for name, Xl, Xd in _variants(X):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            a = mech(Xl, y, alpha=[1e-2, 1e-3], epsilon=1.0, n_draws=2, random_state=7)
            b = mech(Xd, y, alpha=[1e-2, 1e-3], epsilon=1.0, n_draws=2, random_state=7)
        assert _rel(a.coef, b.coef) < RTOL, name
        assert a.record() == b.record(), name


@pytest.mark.parametrize("intercept", [True, False])
def test_estimator_matches_local(client, intercept):
    X, y = _problem()
    labels = np.where(y > 0, "yes", "no")
    kw = dict(epsilon=1.0, alpha=1e-2, data_norm=0.8, fit_intercept=intercept, random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", ClippingWarning)
        e1 = dperm.PrivateLinearClassifier(**kw).fit(X, labels)
        e2 = dperm.PrivateLinearClassifier(**kw).fit(da.from_array(X, chunks=(500, -1)),
                                                     da.from_array(labels, chunks=500))
    assert _rel(e1.coef_, e2.coef_) < RTOL
    assert abs(e1.intercept_[0] - e2.intercept_[0]) <= RTOL * np.abs(e1.coef_).max()
    assert e1.privacy_ == e2.privacy_
    # clipping ran on the workers by the same rule: the same rows were clipped
    assert e1.fit_diagnostics_["rows_clipped"] == e2.fit_diagnostics_["rows_clipped"] > 0


def test_norm_policy_error_on_workers(client):
    X, y = _problem(n=600)
    with pytest.raises(ValueError, match="norm above data_norm"):
        mechanisms.output_perturbation(da.from_array(X, chunks=(200, -1)), y, alpha=0.1,
                                       epsilon=1.0, norm_policy="error")


def test_bad_chunk_is_named(client):
    X, y = _problem(n=1000)
    X[612, 3] = np.nan                         # chunk 3 of chunks of 200 rows
    with pytest.raises(ValueError, match=r"chunk 3 \(rows 600 to 799\).*NaN"):
        erm.minimize(da.from_array(X, chunks=(200, -1)), y, alpha=0.1)
    X, y = _problem(n=1000)
    y[5] = 0.0
    with pytest.raises(ValueError, match=r"y, chunk 0 .*-1 or \+1"):
        erm.minimize(da.from_array(X, chunks=(200, -1)), y, alpha=0.1)


def test_column_chunks_and_unknown_sizes_refused(client):
    X, y = _problem(n=400)
    with pytest.raises(ValueError, match=r"rechunk\(\{1: -1\}\)"):
        erm.minimize(da.from_array(X, chunks=(100, 5)), y, alpha=0.1)
    Xd = da.from_array(X, chunks=(100, -1))
    Xu = Xd[Xd[:, 0] > -np.inf]                # unknown chunk sizes
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        erm.minimize(Xu, y, alpha=0.1)


def test_no_client_is_a_clear_error():
    code = ("import numpy as np, dask.array as da, dperm.optim.erm as e\n"
            "try:\n"
            "    e.minimize(da.ones((10, 2), chunks=(5, 2)) * 0.1, np.ones(10), alpha=1.0)\n"
            "except RuntimeError as exc:\n"
            "    assert 'Client()' in str(exc) and 'dask scheduler' in str(exc), exc\n"
            "else:\n"
            "    raise SystemExit('no error')\n")
    subprocess.run([sys.executable, "-c", code], cwd=_HERE, check=True, timeout=120)


def test_check_X_refuses_to_load_a_dask_array(client):
    with pytest.raises(TypeError, match="map_blocks"):
        dperm.data.validation.check_X(da.ones((4, 2), chunks=(2, 2)))


@pytest.mark.parametrize("mode", ["tree", "flat"])
@pytest.mark.parametrize("fault", ["missing", "twice", "rows"])
def test_partial_sum_is_refused(client, monkeypatch, mode, fault):
    X, y = _problem(n=800)
    rows = _dask.as_rows(da.from_array(X, chunks=(200, -1)), y)
    real = _dask._Shard._per_chunk

    def broken(self, ops, W, fn):
        out = real(self, ops, W, fn)
        if fault == "missing":      # chunk 0's sums never arrive
            return [o for o in out if o[0] != 0]
        if fault == "twice":        # every shard also sends the sums of chunk 1
            return out + [(1,) + tuple(o[1:]) for o in out[:1] if o[0] != 1]
        return [(ci, nr - (ci == 2), f, g) for ci, nr, f, g in out]   # a row short
    monkeypatch.setattr(_dask._Shard, "_per_chunk", broken)
    monkeypatch.setattr(_dask, "REDUCTION", mode)
    match = {"missing": "partial sum", "twice": "contributed twice", "rows": "contributed 199 rows"}
    with pytest.raises(_dask.DistributedFitError, match=match[fault]):
        erm.minimize(rows, None, alpha=0.1)


def _leaf_sums(n_chunks, m=3, d=5, seed=0):
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 50, size=n_chunks)
    bounds = np.concatenate(([0], np.cumsum(rows)))
    # values of mixed magnitudes: a different order of addition gives different bits
    leaves = [{(0, c): (int(rows[c]), rng.normal(size=m) * 10.0 ** rng.integers(-8, 8),
                        rng.normal(size=(m, d)) * 10.0 ** rng.integers(-8, 8))}
              for c in range(n_chunks)]
    return leaves, bounds


@pytest.mark.parametrize("n_chunks", [1, 2, 3, 7, 16, 37])
def test_chunk_tree_order_does_not_depend_on_grouping(n_chunks):
    """Any split of the chunks among workers, any nesting of the partial folds (the
    message tree) and any order of the messages give the same bits."""
    leaves, bounds = _leaf_sums(n_chunks)
    F0, G0 = _dask._root(leaves, bounds)
    F_seq = sum(lv[(0, c)][1] for c, lv in enumerate(leaves))
    rng = np.random.default_rng(n_chunks)
    for trial in range(20):
        owner = rng.integers(0, rng.integers(1, 9), size=n_chunks)   # placement: any
        shards = [_dask._fold([leaves[c] for c in rng.permutation(np.flatnonzero(owner == w))],
                              bounds) for w in np.unique(owner)]
        # a random message tree: fold random groups, then groups of groups
        while len(shards) > 1:
            k = int(rng.integers(2, 5))
            order = rng.permutation(len(shards))
            shards = [_dask._fold([shards[i] for i in order[g:g + k]], bounds)
                      for g in range(0, len(shards), k)]
        F, G = _dask._root(shards, bounds)
        assert F.tobytes() == F0.tobytes() and G.tobytes() == G0.tobytes(), trial
    if n_chunks > 4:   # the test has power: the sequential order gives other bits
        assert F_seq.tobytes() != F0.tobytes()
    # a chunk missing, twice, or with a wrong row count: refused
    if n_chunks > 1:
        with pytest.raises(_dask.DistributedFitError, match="partial sum"):
            _dask._root(leaves[1:], bounds)
    with pytest.raises(_dask.DistributedFitError, match="twice"):
        _dask._root(leaves + leaves[-1:], bounds)
    if n_chunks > 1:   # a folded node overlapping a leaf
        with pytest.raises(_dask.DistributedFitError, match="twice"):
            _dask._root([_dask._fold(leaves[:2], bounds)] + leaves[1:], bounds)
    bad = [dict(lv) for lv in leaves]
    r, f, g = bad[0][(0, 0)]
    bad[0][(0, 0)] = (r + 1, f, g)
    with pytest.raises(_dask.DistributedFitError, match="rows"):
        _dask._root(bad, bounds)


def _placed(client, X, chunk, owners):
    """A Dask array of X's row blocks (chunk rows each), block i scattered to the worker
    owners[i] (an index into the sorted worker addresses)."""
    workers = sorted(client.scheduler_info()["workers"])
    blocks = [X[i:i + chunk] for i in range(0, X.shape[0], chunk)]
    futs = [client.scatter(b, workers=[workers[o % len(workers)]]) for b, o in zip(blocks, owners)]
    return da.concatenate([da.from_delayed(f, shape=b.shape, dtype=b.dtype)
                           for f, b in zip(futs, blocks)])


def test_same_bits_for_any_number_of_workers_and_placement():
    """1, 2, 3 and 8 workers (threads in this process), blocks placed in order or
    shuffled, tree or flat reduction: the coefficients are the same bits; they match
    the local fit to 1e-8 (the order of addition differs from the local pass's)."""
    X, y = _problem(n=2600, seed=9)
    chunk = 200                                   # 13 chunks
    local = {s: erm.minimize(X, y, alpha=[1e-2, 1e-3], solver=s).coef for s in ("lbfgs", "newton")}
    got = {}
    rng = np.random.default_rng(5)
    for P in (1, 2, 3, 8):
        with distributed.LocalCluster(n_workers=P, threads_per_worker=1, processes=False,
                                      dashboard_address=":0") as cl, \
                distributed.Client(cl, set_as_default=False) as c, c.as_current():
            placements = {"in order": np.arange(13) % P, "shuffled": rng.integers(0, P, 13)}
            for where, owners in placements.items():
                Xd = _placed(c, X, chunk, owners)
                for mode in ("tree", "flat"):
                    _dask.REDUCTION = mode
                    try:
                        for s in ("lbfgs", "newton"):
                            got[(P, where, mode, s)] = erm.minimize(
                                Xd, y, alpha=[1e-2, 1e-3], solver=s).coef
                    finally:
                        _dask.REDUCTION = "tree"
    for s in ("lbfgs", "newton"):
        ref = got[(1, "in order", "tree", s)]
        assert _rel(local[s], ref) < RTOL
        for key, coef in got.items():
            if key[-1] == s:
                assert coef.tobytes() == ref.tobytes(), (key, _rel(ref, coef))


def test_tree_pass_one_message_at_the_client(monkeypatch):
    """6 shards, fan-in 4 (a root, 4 children, 1 grandchild): per pass the client calls
    the root once and every shard runs the pass exactly once; the flat gather calls
    every shard from the client."""
    X, y = _problem(n=1200, seed=4)
    seen = []
    real_tree, real_flat = _dask._Shard.tree, _dask._Shard.flat

    async def tree(self, payload):
        seen.append(("tree", tuple(self.chunk_ids)))
        return await real_tree(self, payload)

    def flat(self, payload):
        seen.append(("flat", tuple(self.chunk_ids)))
        return real_flat(self, payload)
    monkeypatch.setattr(_dask._Shard, "tree", tree)
    monkeypatch.setattr(_dask._Shard, "flat", flat)
    client_calls = []
    real_call = _dask._Cluster.call

    def call(self, method, *args, root_only=False):
        client_calls.append((method, 1 if root_only else len(self.shards)))
        return real_call(self, method, *args, root_only=root_only)
    monkeypatch.setattr(_dask._Cluster, "call", call)
    with distributed.LocalCluster(n_workers=6, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cl, \
            distributed.Client(cl, set_as_default=False) as c, c.as_current():
        rows = _dask.as_rows(_placed(c, X, 100, np.arange(12) % 6), y)
        assert len(rows._state.shards) == 6
        W = np.zeros((2, X.shape[1]))
        out = {}
        for mode in ("tree", "flat"):
            monkeypatch.setattr(_dask, "REDUCTION", mode)
            seen.clear()
            client_calls.clear()
            out[mode] = rows.value_grad(W, np.ones(2), None, 0, 0.5)
            assert sorted(seen) == sorted((mode, tuple(s[2])) for s in rows._state.shards)
            assert client_calls == [(mode, 1 if mode == "tree" else 6)]
    assert all(a.tobytes() == b.tobytes() for a, b in zip(out["tree"], out["flat"]))


def test_curvature_cache_on_workers(client, monkeypatch):
    """Newton's Hessian-vector passes reuse the curvature the workers kept from the
    value-and-gradient pass at the same W: the same bits as without the cache, and
    most Hessian-vector passes skip the margins."""
    X, y = _problem(n=2000, seed=2)
    Xd = da.from_array(X, chunks=(300, -1))
    calls = {"hess_vec": 0, "value_grad": 0}
    real = _dask._Cluster.reduce

    def counting(self, method, *args):
        calls[method] += 1
        return real(self, method, *args)
    monkeypatch.setattr(_dask._Cluster, "reduce", counting)
    out = {}
    for budget in (_dask.WORKER_CURVATURE_BYTES, 0):
        monkeypatch.setattr(_dask, "WORKER_CURVATURE_BYTES", budget)
        calls.update(hess_vec=0, value_grad=0)
        rows = _dask.as_rows(Xd, y)
        res = erm.minimize(rows, None, alpha=[1e-2, 1e-3], solver="newton")
        stats = rows._state.stats()
        n_shards = len(rows._state.shards)
        out[budget] = (res.coef, dict(calls), stats, n_shards)
    (c1, calls1, st1, sh1), (c0, calls0, st0, sh0) = out.values()
    assert c1.tobytes() == c0.tobytes()
    assert calls1 == calls0 and calls1["hess_vec"] > 0
    # every shard counts each Hessian-vector pass once: a hit (cached) or a miss
    assert st1["curvature_hits"] + st1["curvature_misses"] == sh1 * calls1["hess_vec"]
    assert st0["curvature_hits"] == 0 and st0["curvature_misses"] == sh0 * calls0["hess_vec"]
    assert st1["curvature_hits"] >= 0.5 * sh1 * calls1["hess_vec"], st1
    assert _rel(erm.minimize(X, y, alpha=[1e-2, 1e-3], solver="newton").coef, c1) < RTOL


def _fault_run():
    """In a fresh process: 3 worker processes; one is killed after a few passes of a fit
    (a worker below the root of the message tree), later the root's worker: the fit must
    finish with the answer of an undisturbed fit (recomputed blocks, rebuilt shards, the
    same pass repeated)."""
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        X, y = _problem(n=4000, d=10, seed=3)
        Xd = da.from_array(X, chunks=(500, -1))
        ref = erm.minimize(Xd, y, alpha=1e-3)
        calls = {"n": 0}
        real = _dask._Cluster.reduce
        _dask.LOST_WORKER_POLL = 0.5     # a lost worker below the root: noticed fast

        def reduce(self, *args):
            calls["n"] += 1
            if calls["n"] in (4, 10):
                # first a worker below the root of the message tree (the root's call to
                # it fails), then the root's own worker (the client's call fails)
                root = self.shards[0][3]
                others = [w for w in c.scheduler_info()["workers"] if w != root]
                victim = others[0] if calls["n"] == 4 else root
                c.submit(os._exit, 1, workers=[victim], pure=False)
                import time
                time.sleep(1.0)
            return real(self, *args)
        _dask._Cluster.reduce = reduce
        try:
            got = erm.minimize(Xd, y, alpha=1e-3)
        finally:
            _dask._Cluster.reduce = real
        assert calls["n"] > 10
        assert np.array_equal(ref.coef, got.coef), _rel(ref.coef, got.coef)
        local = erm.minimize(X, y, alpha=1e-3)
        assert _rel(local.coef, got.coef) < RTOL


def test_killed_worker_recovers_exactly():
    # a subprocess: worker processes need an importable main module
    code = "import sys; sys.path.insert(0, %r); import test_dask; test_dask._fault_run()" % (
        os.path.dirname(__file__))
    subprocess.run([sys.executable, "-c", code], cwd=_HERE, check=True, timeout=180)


def test_private_tuning_matches_local(client):
    X, y = _problem(n=2400, d=8, seed=4)
    labels = np.where(y > 0, "yes", "no")
    est = dperm.PrivateLinearClassifier(epsilon=1.0, data_norm=1.0, classes=["no", "yes"])
    grid = {"alpha": [3e-1, 1e-1, 3e-2]}
    for Xd in (da.from_array(X, chunks=(350, -1)),
               da.from_array(X, chunks=(350, -1)).map_blocks(
                   sp.csr_matrix, meta=sp.csr_matrix((0, 0)))):
        Xl = X if isinstance(Xd._meta, np.ndarray) else sp.csr_matrix(X)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            warnings.simplefilter("ignore", ClippingWarning)
            a = dperm.private_tuning(est, Xl, labels, grid, epsilon=1.0, random_state=3)
            b = dperm.private_tuning(est, Xd, da.from_array(labels, chunks=500), grid,
                                     epsilon=1.0, random_state=3)
        assert a.best_index_ == b.best_index_
        assert np.array_equal(a.fit_diagnostics_["mistakes"], b.fit_diagnostics_["mistakes"])
        assert np.array_equal(a.train_sizes, b.train_sizes)
        for ea, eb in zip(a.estimators_, b.estimators_):
            assert _rel(ea.coef_, eb.coef_) < RTOL
            assert abs(ea.intercept_[0] - eb.intercept_[0]) <= RTOL * np.abs(ea.coef_).max()
            assert ea.privacy_ == eb.privacy_


def test_predictions_on_workers(client):
    X, y = _problem(n=1500, seed=6)
    X[:40] *= 3.0                               # rows over data_norm: clipped at prediction
    labels = np.where(y > 0, "yes", "no")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", ClippingWarning)
        est = dperm.PrivateLinearClassifier(epsilon=1.0, alpha=1e-2, data_norm=0.8,
                                            random_state=5).fit(X, labels)
    for name, Xl, Xd in _variants(X, chunks=400):
        for method in ("decision_function", "predict", "predict_proba", "predict_log_proba"):
            got = getattr(est, method)(Xd)
            assert isinstance(got, da.Array), (name, method)
            want = getattr(est, method)(Xl)
            got = got.compute()
            assert got.shape == want.shape and got.dtype == want.dtype, (name, method)
            if method == "predict":
                assert np.array_equal(got, want), name
            else:
                assert np.allclose(got, want, rtol=1e-12, atol=1e-15), (name, method)
        s = est.score(Xd, labels)
        assert isinstance(s, float) and s == est.score(Xl, labels), name
        assert est.score(Xd, da.from_array(labels, chunks=333)) == s
    with pytest.raises(ValueError, match="expecting 12 features"):
        est.predict(da.ones((10, 5), chunks=(5, 5)))


def _frame(n=2000, seed=8):
    import pandas as pd

    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, size=n).astype(float)
    hours = rng.uniform(0, 99, size=n)
    hours[rng.random(n) < 0.05] = np.nan               # filled by the public schema
    job = rng.choice(["a", "b", "c", "zz"], size=n)    # "zz": not in the public list
    y = np.where((age - 50) / 30 + (hours - 40) / 50 + (job == "b") + 0.3 * rng.normal(size=n)
                 > 0, ">50K", "<=50K")
    return pd.DataFrame({"age": age, "hours": hours, "job": job}), pd.Series(y, name="y")


@pytest.mark.parametrize("sparse_output", [False, True])
def test_dataframe_with_public_schema(client, sparse_output):
    from sklearn.pipeline import make_pipeline
    dd = pytest.importorskip("dask.dataframe")

    frame, y = _frame()
    model = make_pipeline(
        dperm.PublicBoundsTransformer(numeric={"age": (17, 90), "hours": (0, 99)},
                                      categorical={"job": ["a", "b", "c"]}, fill={"hours": 40},
                                      unknown="ignore",      # the frame holds a job 'zz'
                                      sparse_output=sparse_output),
        dperm.PrivateLinearClassifier(epsilon=1.0, alpha=1e-2, classes=["<=50K", ">50K"],
                                      random_state=5))
    from sklearn.base import clone
    dframe = dd.from_pandas(frame, npartitions=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        a = clone(model).fit(frame, y)
        b = clone(model).fit(dframe, dd.from_pandas(y, npartitions=3))
    ea, eb = a[-1], b[-1]
    assert _rel(ea.coef_, eb.coef_) < RTOL
    assert abs(ea.intercept_[0] - eb.intercept_[0]) <= RTOL * np.abs(ea.coef_).max()
    assert ea.privacy_ == eb.privacy_
    Z = b[0].transform(dframe)                 # chunks: the partitions, encoded on the workers
    assert isinstance(Z, da.Array) and Z.chunks[0] == tuple(dframe.map_partitions(len).compute())
    pred = b.predict(dframe)
    assert isinstance(pred, da.Array) and np.array_equal(pred.compute(), a.predict(frame))
    assert b.score(dframe, y) == a.score(frame, y)
    with pytest.raises(ValueError, match="lacks column"):
        b[0].transform(dframe[["age", "job"]])


def test_private_tuning_on_a_dataframe(client):
    """private_tuning with a Pipeline (public schema + private classifier) on a dask
    DataFrame: the parts are cut from the partitions on the workers, the models fitted
    and the mistakes counted there; the same selection and models as on the pandas
    DataFrame (to 1e-8)."""
    from sklearn.pipeline import make_pipeline
    dd = pytest.importorskip("dask.dataframe")

    frame, y = _frame(n=1800, seed=3)
    model = make_pipeline(
        dperm.PublicBoundsTransformer(numeric={"age": (17, 90), "hours": (0, 99)},
                                      categorical={"job": ["a", "b", "c"]}, fill={"hours": 40},
                                      unknown="ignore"),
        dperm.PrivateLinearClassifier(epsilon=1.0, classes=["<=50K", ">50K"]))
    grid = {"privatelinearclassifier__alpha": [3e-1, 1e-1, 3e-2]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        a = dperm.private_tuning(model, frame, y, grid, epsilon=1.0, random_state=3)
        b = dperm.private_tuning(model, dd.from_pandas(frame, npartitions=4),
                                 dd.from_pandas(y, npartitions=4), grid, epsilon=1.0,
                                 random_state=3)
    assert a.best_index_ == b.best_index_
    assert np.array_equal(a.fit_diagnostics_["mistakes"], b.fit_diagnostics_["mistakes"])
    assert a.fit_diagnostics_["mistakes"].min() < 0.45 * a.validation_size   # it learned
    assert np.array_equal(a.train_sizes, b.train_sizes)
    for ea, eb in zip(a.estimators_, b.estimators_):
        ca, cb = ea[-1], eb[-1]
        assert _rel(ca.coef_, cb.coef_) < RTOL
        assert abs(ca.intercept_[0] - cb.intercept_[0]) <= RTOL * np.abs(ca.coef_).max()
        assert ca.privacy_ == cb.privacy_


#: data larger than one worker's memory limit: 2 worker processes of WORKER_LIMIT bytes each
#: (a worker process with dperm imported is ~270 MB before any data) and BIG_BYTES of rows,
#: generated on the workers (never on the client) -- more than one worker's limit, less than
#: the two together
WORKER_LIMIT = 1000 * 2**20
BIG_BYTES = 1100 * 2**20


def _big_run():
    """In a fresh process: the fit over data larger than one worker's memory limit equals
    the local fit to 1e-8 (spilling to disk off, so the rows really are in the workers'
    memory; the workers' memory is checked after the fit)."""
    import time

    import dask

    d = 100
    n = BIG_BYTES // (8 * d)
    chunk = 20000
    cfg = {"distributed.worker.memory.spill": False, "distributed.worker.memory.target": False,
           "distributed.worker.memory.pause": False}
    with dask.config.set(cfg), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     memory_limit=WORKER_LIMIT, dashboard_address=":0") as cl, \
            distributed.Client(cl) as c:
        rng = da.random.default_rng(11)
        X = rng.normal(size=(n, d), chunks=(chunk, d)) * (1.0 / np.sqrt(d))
        w0 = np.random.default_rng(12).normal(size=d)
        y = da.where(X @ w0 + 0.5 * rng.normal(size=n, chunks=chunk) > 0, 1.0, -1.0)
        assert X.nbytes > WORKER_LIMIT and X.nbytes < 2 * WORKER_LIMIT
        t0 = time.perf_counter()
        got = erm.minimize(X, y, alpha=1e-2)
        t_dask = time.perf_counter() - t0

        def rss(dask_worker):
            import psutil

            w = dask_worker
            return psutil.Process(os.getpid()).memory_info().rss, sum(
                getattr(v, "nbytes", 0) for v in w.data.values())
        mem = c.run(rss)
        # every worker held part of the rows, none all of them, within its limit
        assert all(0 < held < X.nbytes and r < WORKER_LIMIT for r, held in mem.values()), mem
        Xl, yl = dask.compute(X, y, scheduler="sync")    # the same blocks (seeded per chunk)
    t0 = time.perf_counter()
    ref = erm.minimize(Xl, yl, alpha=1e-2)
    t_local = time.perf_counter() - t0
    assert np.all(got.converged)
    assert _rel(ref.coef, got.coef) < RTOL, _rel(ref.coef, got.coef)
    print(f"big: {X.nbytes / 2**20:.0f} MiB over 2 workers of {WORKER_LIMIT / 2**20:.0f} MiB; "
          f"held {[(r >> 20, h >> 20) for r, h in mem.values()]} MiB (rss, data); dask fit "
          f"{t_dask:.1f} s ({got.n_iter} iterations), local {t_local:.1f} s; rel "
          f"{_rel(ref.coef, got.coef):.1e}")


@pytest.mark.slow
def test_data_larger_than_one_worker():
    code = "import sys; sys.path.insert(0, %r); import test_dask; test_dask._big_run()" % (
        os.path.dirname(__file__))
    subprocess.run([sys.executable, "-c", code], cwd=_HERE, check=True, timeout=600)


def test_a_slow_pass_is_waited_for(client, monkeypatch):
    """The client checks for lost workers every LOST_WORKER_POLL seconds while a pass is
    out; a pass that takes longer, with every worker alive, is waited for (not rebuilt,
    not repeated)."""
    import time

    X, y = _problem(n=400, d=5)
    rows = _dask.as_rows(da.from_array(X, chunks=(100, -1)), y)
    real, rebuild = _dask._Shard.partial, _dask._Cluster._build
    built = []

    def slow(self, *args):
        time.sleep(0.4)
        return real(self, *args)

    def build(self):
        built.append(1)
        return rebuild(self)
    monkeypatch.setattr(_dask, "LOST_WORKER_POLL", 0.05)
    monkeypatch.setattr(_dask._Shard, "partial", slow)
    monkeypatch.setattr(_dask._Cluster, "_build", build)
    F, G = rows.value_grad(np.zeros((1, 5)), np.ones(1), None, 0, 0.5)
    assert built == [] and np.allclose(F, np.log(2.0))
