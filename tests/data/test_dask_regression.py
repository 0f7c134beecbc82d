"""PrivateLinearRegression on a real LocalCluster (issue 30, item 2): the same coefficients
as the local fit for every method (objective, output, AdaSSP, none), dense and CSR chunks,
a dask DataFrame through the public schema, the same bits for any number of workers, and
the targets validated on the workers."""
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

TOL = 1e-9


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def _problem(n=2400, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (1.2 / np.sqrt(d))     # some rows over norm 1: clipped
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=n)
    y[:40] *= 4.0                                         # some targets over label_bound
    return X, y


def _rel(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.abs(a - b).max() / max(np.abs(a).max(), 1e-300)


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", ClippingWarning)
        return dperm.PrivateLinearRegression(**kw).fit(X, y)


METHODS = [("none", 0.0), ("objective", 0.0), ("objective", 1e-6), ("output", 0.0),
           ("output", 1e-6), ("adassp", 1e-6)]


@pytest.mark.parametrize("method,delta", METHODS)
@pytest.mark.parametrize("intercept", [True, False])
def test_regression_matches_local(client, method, delta, intercept):
    """Dask array X (y numpy or Dask): the local fit's coefficients, intercept and
    record; predictions on the workers."""
    X, y = _problem()
    kw = dict(method=method, epsilon=1.0, delta=delta, label_bound=2.0, data_norm=1.0,
              fit_intercept=intercept, random_state=7)
    if method != "adassp":
        kw["alpha"] = 1e-2
    a = _fit(X, y, **kw)
    Xd = da.from_array(X, chunks=(350, -1))
    for yd in (y, da.from_array(y, chunks=500)):
        b = _fit(Xd, yd, **kw)
        assert _rel(a.coef_, b.coef_) <= TOL, (method, delta)
        assert abs(a.intercept_ - b.intercept_) <= TOL * np.abs(a.coef_).max()
        assert a.privacy_ == b.privacy_
        assert a.fit_diagnostics_["rows_clipped"] == b.fit_diagnostics_["rows_clipped"] > 0
        assert a.fit_diagnostics_["labels_clipped"] == b.fit_diagnostics_["labels_clipped"] > 0
    pred = b.predict(Xd)
    assert isinstance(pred, da.Array)
    assert np.allclose(pred.compute(), b.predict(X), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("method,delta", [("objective", 0.0), ("adassp", 1e-6)])
def test_regression_csr_and_float32_chunks(client, method, delta):
    X, y = _problem(seed=3)
    kw = dict(method=method, epsilon=2.0, delta=delta, label_bound=2.0, random_state=1)
    if method != "adassp":
        kw["alpha"] = 1e-2
    for dt in (np.float64, np.float32):
        Xl = np.where(np.abs(X) > 0.2, X, 0).astype(dt)
        Xs = sp.csr_matrix(Xl)
        Xd = da.from_array(Xl, chunks=(500, -1)).map_blocks(
            sp.csr_matrix, dtype=dt, meta=sp.csr_matrix((0, 0), dtype=dt))
        a, b = _fit(Xs, y, **kw), _fit(Xd, y, **kw)
        assert _rel(a.coef_, b.coef_) <= TOL, (method, dt)
        assert abs(a.intercept_ - b.intercept_) <= TOL * np.abs(a.coef_).max()


def test_adassp_statistics_are_one_pass_on_the_workers(client, monkeypatch):
    """AdaSSP reads X^T X and X^T y from one pass over the workers (no rows brought
    to the client), in the chunk tree's order: the statistics match the local ones."""
    X, y = _problem(n=1500)
    passes = []
    real = _dask._Cluster.reduce

    def reduce(self, method, *args):
        passes.append(method)
        return real(self, method, *args)
    monkeypatch.setattr(_dask._Cluster, "reduce", reduce)
    import dperm.privacy.adassp as adassp

    def local_rows(*args):
        raise AssertionError("the rows were materialized on the client")
    monkeypatch.setattr(adassp, "_data", local_rows)
    b = _fit(da.from_array(X, chunks=(200, -1)), y, method="adassp", epsilon=1.0,
             delta=1e-6, label_bound=2.0, random_state=2)
    assert passes == ["gram"]
    monkeypatch.undo()
    a = _fit(X, y, method="adassp", epsilon=1.0, delta=1e-6, label_bound=2.0, random_state=2)
    assert _rel(a.coef_, b.coef_) <= TOL
    # the statistics themselves, against the local sums (rows already in bounds)
    Xc = X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    yc = np.clip(y, -2.0, 2.0)
    rows = _dask.as_rows(da.from_array(Xc, chunks=(200, -1)), yc, regression=True)
    gram, xty = rows.sufficient_statistics(1.0 + 1e-12, 2.0)
    assert _rel(Xc.T @ Xc, gram) < 1e-13 and _rel(Xc.T @ yc, xty) < 1e-13
    with pytest.raises(ValueError, match=r"y, chunk \d+ .*label_bound=1.0"):
        rows.sufficient_statistics(2.0, 1.0)
    with pytest.raises(ValueError, match=r"X, chunk \d+ .*row \d+ has norm above data_norm=0.5"):
        rows.sufficient_statistics(0.5, 2.0)
    # a chunk materialized in blocks of a few rows: the same sums to rounding
    monkeypatch.setattr(_dask, "GRAM_BLOCK_ENTRIES", 64)
    g2, v2 = rows.sufficient_statistics(1.0 + 1e-12, 2.0)
    assert _rel(gram, g2) < 1e-13 and _rel(xty, v2) < 1e-13


def _placed(client, X, chunk, owners):
    workers = sorted(client.scheduler_info()["workers"])
    blocks = [X[i:i + chunk] for i in range(0, X.shape[0], chunk)]
    futs = [client.scatter(b, workers=[workers[o % len(workers)]]) for b, o in zip(blocks, owners)]
    return da.concatenate([da.from_delayed(f, shape=b.shape, dtype=b.dtype)
                           for f, b in zip(futs, blocks)])


def test_regression_same_bits_for_any_number_of_workers():
    """1, 2 and 3 workers, blocks in order or shuffled: the same bits (the chunk tree's
    order of addition), for the ERM path and AdaSSP's statistics."""
    X, y = _problem(n=2000, seed=5)
    got = {}
    rng = np.random.default_rng(1)
    for P in (1, 2, 3):
        with distributed.LocalCluster(n_workers=P, threads_per_worker=1, processes=False,
                                      dashboard_address=":0") as cl, \
                distributed.Client(cl, set_as_default=False) as c, c.as_current():
            for where, owners in {"in order": np.arange(10) % P,
                                  "shuffled": rng.integers(0, P, 10)}.items():
                Xd = _placed(c, X, 200, owners)
                for method, delta in (("objective", 0.0), ("adassp", 1e-6)):
                    kw = dict(method=method, epsilon=1.0, delta=delta, label_bound=2.0,
                              random_state=4)
                    if method != "adassp":
                        kw["alpha"] = 1e-2
                    est = _fit(Xd, y, **kw)
                    got[(P, where, method)] = np.append(est.coef_, est.intercept_)
    for method in ("objective", "adassp"):
        ref = got[(1, "in order", method)]
        for key, coef in got.items():
            if key[-1] == method:
                assert coef.tobytes() == ref.tobytes(), key


def test_erm_regression_on_workers(client):
    """erm.minimize with the pseudo-Huber loss on a Dask array: the local minimizer;
    the targets are validated on the workers (a non-finite one is named by its chunk),
    and rows built for one task are refused by the other."""
    X, y = _problem(n=1200, seed=2)
    Xd = da.from_array(X, chunks=(300, -1))
    a = erm.minimize(X, y, loss="pseudo_huber", alpha=1e-2, h=1.0)
    b = erm.minimize(Xd, y, loss="pseudo_huber", alpha=1e-2, h=1.0)
    assert _rel(a.coef, b.coef) < 1e-8
    bad = y.copy()
    bad[700] = np.nan
    with pytest.raises(ValueError, match=r"y, chunk 2 \(rows 600 to 899\).*NaN"):
        erm.minimize(Xd, bad, loss="pseudo_huber", alpha=1e-2, h=1.0)
    rows = _dask.as_rows(Xd, np.sign(y) + (y == 0))
    with pytest.raises(ValueError, match="real targets"):
        erm.minimize(rows, None, loss="pseudo_huber", alpha=1e-2, h=1.0)
    reg = _dask.as_rows(Xd, y, regression=True)
    with pytest.raises(ValueError, match=r"labels in \{-1, \+1\}"):
        erm.minimize(reg, None, loss="logistic", alpha=1e-2)


def test_regression_dataframe_with_public_schema(client):
    """A dask DataFrame through the public schema (PublicBoundsTransformer) and
    PrivateLinearRegression in a Pipeline: the pandas fit's coefficients."""
    import pandas as pd
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline

    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(8)
    n = 2000
    age = rng.integers(17, 91, size=n).astype(float)
    hours = rng.uniform(0, 99, size=n)
    hours[rng.random(n) < 0.05] = np.nan
    job = rng.choice(["a", "b", "c", "zz"], size=n)
    y = pd.Series((age - 50) / 30 + (np.nan_to_num(hours, nan=40.0) - 40) / 50 + (job == "b")
                  + 0.3 * rng.normal(size=n), name="y")
    frame = pd.DataFrame({"age": age, "hours": hours, "job": job})
    model = make_pipeline(
        dperm.PublicBoundsTransformer(numeric={"age": (17, 90), "hours": (0, 99)},
                                      categorical={"job": ["a", "b", "c"]}, fill={"hours": 40},
                                      unknown="ignore"),
        dperm.PrivateLinearRegression(epsilon=1.0, alpha=1e-2, label_bound=3.0,
                                      random_state=5))
    dframe = dd.from_pandas(frame, npartitions=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        a = clone(model).fit(frame, y)
        b = clone(model).fit(dframe, dd.from_pandas(y, npartitions=3))
    ea, eb = a[-1], b[-1]
    assert _rel(ea.coef_, eb.coef_) <= TOL
    assert abs(ea.intercept_ - eb.intercept_) <= TOL * np.abs(ea.coef_).max()
    assert ea.privacy_ == eb.privacy_
    pred = b.predict(dframe)
    assert isinstance(pred, da.Array)
    assert np.allclose(pred.compute(), a.predict(frame), rtol=1e-12, atol=1e-14)


def test_numeric_dask_dataframe(client):
    """A dask DataFrame of numeric columns, given as it is: fitted and predicted on the
    workers (a Dask array chunked by its partitions), as the pandas DataFrame is locally;
    its column names are the model's; a non-numeric column is named."""
    import pandas as pd

    dd = pytest.importorskip("dask.dataframe")
    X, y = _problem(n=1800, d=4, seed=6)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["d"] = (frame["d"] > 0).astype(np.int64)            # an integer column
    dframe = dd.from_pandas(frame, npartitions=4)
    kw = dict(epsilon=1.0, alpha=1e-2, label_bound=2.0, random_state=3)
    a = _fit(frame, y, **kw)
    b = _fit(dframe, dd.from_pandas(pd.Series(y), npartitions=3), **kw)
    assert list(b.feature_names_in_) == ["a", "b", "c", "d"]
    assert _rel(a.coef_, b.coef_) <= TOL and a.privacy_ == b.privacy_
    pred = b.predict(dframe)
    assert isinstance(pred, da.Array)
    assert np.allclose(pred.compute(), a.predict(frame), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="feature names"):
        b.predict(dframe.rename(columns={"a": "z"}))
    clf = dperm.PrivateLinearClassifier(epsilon=1.0, alpha=1e-2, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        ca = clf.fit(frame, np.sign(y)).coef_
        cb = dperm.PrivateLinearClassifier(epsilon=1.0, alpha=1e-2, random_state=3).fit(
            dframe, np.sign(y)).coef_
    assert _rel(ca, cb) < 1e-8
    text = dframe.assign(e="x")
    with pytest.raises(ValueError, match="column 'e' of the dask DataFrame is not numeric"):
        _fit(text, y, **kw)
