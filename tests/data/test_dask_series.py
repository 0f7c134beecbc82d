"""Labels given as a dask Series -- the common ``fit(ddf[features], ddf["label"])`` -- on a
real LocalCluster: every classifier and regression path (binary, one-vs-rest, multinomial,
regression with objective and output perturbation, and ``alpha="select"``) gives the
fit on the same rows and labels as Dask arrays (coefficients <= 1e-9 for the same seed, the
identical ``privacy_``), and the labels stay on the workers: nothing bigger than 8 values
(per-partition lengths, counts, sums) is brought to the client.  A Series whose partitions
are not X's is refused, naming y and the fix."""
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")

import dperm  # noqa: E402
from dperm.data import oracle as _oracle  # noqa: E402

TOL = 1e-9
NAMES = ["ant", "bee", "cat", "dog"]
FEATURES = ["f0", "f1", "f2", "f3", "f4"]
#: the size above which an array or a Series computed on the client is a leak
SMALL = 8

#: (estimator, its parameters, the label column)
CASES = {
    "binary": ("clf", dict(classes=[-1, 1], epsilon=1.0, alpha=0.05), "y2"),
    "ovr": ("clf", dict(classes=NAMES, epsilon=2.0, alpha=0.05), "name"),
    "multinomial": ("clf", dict(classes=NAMES, epsilon=2.0, delta=1e-5, alpha=0.05), "name"),
    "regression-objective": ("reg", dict(method="objective", epsilon=1.0, alpha=0.05,
                                         label_bounds=(-1.0, 3.0)), "t"),
    "regression-output": ("reg", dict(method="output", epsilon=1.0, alpha=0.05,
                                      label_bound=2.0), "t"),
    "select-binary": ("clf", dict(classes=[-1, 1], epsilon=1.0, alpha="select"), "y2"),
    "select-ovr": ("clf", dict(classes=NAMES, epsilon=2.0, alpha="select"), "name"),
    "select-regression": ("reg", dict(method="objective", epsilon=1.0, alpha="select",
                                      label_bounds=(-1.0, 3.0)), "t"),
}


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def _frame(n=900, d=5, seed=0, npartitions=3):
    """A dask DataFrame of d numeric features (some rows over norm 0.9: clipped) and the
    label columns y2 (+-1), name (4 class names) and t (real targets, some clipped)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (1.1 / np.sqrt(d))
    w = rng.normal(size=d)
    s = X @ w
    frame = pd.DataFrame(X, columns=FEATURES)
    frame["y2"] = np.where(s + 0.3 * rng.normal(size=n) > 0, 1, -1)
    codes = np.argmax(X @ rng.normal(size=(len(NAMES), d)).T * 2.0
                      + 0.5 * rng.normal(size=(n, len(NAMES))), axis=1)
    frame["name"] = np.array(NAMES)[codes]
    t = 1.0 + s + 0.2 * rng.normal(size=n)
    t[:30] *= 5.0
    frame["t"] = t
    return dd.from_pandas(frame, npartitions=npartitions)


def _estimator(kind, seed, **kw):
    cls = dperm.PrivateLinearClassifier if kind == "clf" else dperm.PrivateLinearRegression
    return cls(data_norm=0.9, random_state=seed, **kw)


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the seeded-noise PrivacyLeakWarning, clipping
        return fit()


def _as_arrays(ddf, label):
    """The same rows and labels as Dask arrays chunked by the partitions."""
    lengths = tuple(int(k) for k in ddf.map_partitions(len).compute())
    return (ddf[FEATURES].to_dask_array(lengths=lengths),
            ddf[label].to_dask_array(lengths=lengths))


@pytest.fixture
def no_labels_to_client(monkeypatch):
    """Within it, computing a Dask array or a dask Series / DataFrame of more than SMALL
    values on the client (compute, or numpy's __array__) is an AssertionError."""
    def guard(method, size):
        def wrapped(self, *a, **k):
            out = method(self, *a, **k)
            if size(out) > SMALL:
                raise AssertionError(f"{np.size(out)} values came to the client "
                                     f"({type(self).__name__}.{method.__name__})")
            return out
        return wrapped

    def array_guard(method):
        def wrapped(self, *a, **k):
            if self.size > SMALL:
                raise AssertionError(f"a Dask array of {self.size} values came to the client")
            return method(self, *a, **k)
        return wrapped

    def frame_size(out):
        return int(np.size(out)) if hasattr(out, "shape") else 1

    with monkeypatch.context() as m:
        m.setattr(da.Array, "compute", array_guard(da.Array.compute))
        m.setattr(da.Array, "__array__", array_guard(da.Array.__array__))
        for cls in (dd.Series, dd.DataFrame):
            m.setattr(cls, "compute", guard(cls.compute, frame_size))
            m.setattr(cls, "__array__", guard(cls.__array__, frame_size))
        yield


def test_the_guard_catches_a_label_array(client, no_labels_to_client):
    """The guard of the tests below is not vacuous: a Series of the labels, or the Dask
    array of them, computed on the client is refused."""
    ddf = _frame(n=60)
    with pytest.raises(AssertionError, match="came to the client"):
        ddf["y2"].compute()
    with pytest.raises(AssertionError, match="came to the client"):
        np.asarray(ddf["t"].to_dask_array(lengths=(20, 20, 20)))
    # the per-partition lengths (public bookkeeping) are allowed
    assert list(ddf.map_partitions(len).compute()) == [20, 20, 20]


@pytest.mark.parametrize("case", sorted(CASES))
def test_series_fit_equals_the_dask_array_fit(client, case):
    kind, kw, label = CASES[case]
    ddf = _frame()
    Xd, yd = _as_arrays(ddf, label)
    want = _quiet(lambda: _estimator(kind, 5, **kw).fit(Xd, yd))
    est = _quiet(lambda: _estimator(kind, 5, **kw).fit(ddf[FEATURES], ddf[label]))
    np.testing.assert_allclose(est.coef_, want.coef_, rtol=0, atol=TOL)
    np.testing.assert_allclose(est.intercept_, want.intercept_, rtol=0, atol=TOL)
    assert est.privacy_ == want.privacy_
    if kw["alpha"] == "select":
        assert est.alpha_ == want.alpha_


@pytest.mark.parametrize("case", sorted(CASES))
def test_series_labels_stay_on_the_workers(client, no_labels_to_client, case):
    """fit(ddf[features], ddf[label]) brings no array of more than 8 values to the
    client (the patched compute / __array__ of Dask arrays and dask Series refuse it),
    and gives the fit on Dask arrays."""
    kind, kw, label = CASES[case]
    ddf = _frame(n=600)
    est = _quiet(lambda: _estimator(kind, 5, **kw).fit(ddf[FEATURES], ddf[label]))
    assert np.all(np.isfinite(est.coef_))
    assert est.privacy_["epsilon_total"] == kw["epsilon"]


def test_series_labels_with_dask_array_rows(client, no_labels_to_client):
    """X a Dask array, y a dask Series (chunked otherwise, as a Dask array of labels may
    be): the labels stay on the workers and the fit is the Dask array one."""
    kind, kw, label = CASES["select-ovr"]
    ddf = _frame(n=600)
    Xd = ddf[FEATURES].to_dask_array(lengths=(200, 200, 200)).rechunk(((300, 300), -1))
    yd = ddf[label].to_dask_array(lengths=(200, 200, 200))
    want = _quiet(lambda: _estimator(kind, 5, **kw).fit(Xd, yd))
    est = _quiet(lambda: _estimator(kind, 5, **kw).fit(Xd, ddf[label]))
    np.testing.assert_allclose(est.coef_, want.coef_, rtol=0, atol=TOL)
    assert est.privacy_ == want.privacy_ and est.alpha_ == want.alpha_


@pytest.mark.parametrize("case", ["binary", "regression-output", "select-ovr"])
def test_otherwise_partitioned_series_is_paired_by_position(client, case):
    """A Series partitioned otherwise than X (the same rows, other partition lengths) is
    paired with the rows by position, as a Dask array is: the same fit as the aligned
    Series; one of another length is refused before any fit, nothing charged."""
    kind, kw, label = CASES[case]
    ddf = _frame(n=600)
    want = _quiet(lambda: _estimator(kind, 5, **kw).fit(ddf[FEATURES], ddf[label]))
    for other in (dd.from_pandas(ddf[label].compute(), npartitions=4),
                  ddf[label].repartition(divisions=[0, 150, 400, 599])):
        est = _quiet(lambda y=other: _estimator(kind, 5, **kw).fit(ddf[FEATURES], y))
        np.testing.assert_allclose(est.coef_, want.coef_, rtol=0, atol=TOL)
        assert est.privacy_ == want.privacy_ and est.alpha_ == want.alpha_
    acc = dperm.BudgetAccountant(5.0)
    short = dd.from_pandas(ddf[label].compute().iloc[:-1], npartitions=3)
    with pytest.raises(ValueError, match="y: has 599 labels but X has 600 rows"):
        _quiet(lambda: _estimator(kind, None, **kw).set_params(accountant=acc).fit(
            ddf[FEATURES], short))
    assert acc.spent == 0.0


def test_scored_rows_keeps_the_series_on_the_workers(client):
    """The selection's scoring rows: a numeric dask DataFrame with a dask Series of labels
    become Dask arrays (the labels never computed); with numpy labels the frame is kept."""
    ddf = _frame(n=300)
    X, y = _oracle.scored_rows(ddf[FEATURES], ddf["name"])
    assert _oracle.is_dask_array(X) and _oracle.is_dask_array(y)
    assert X.chunks[0] == y.chunks[0] == (100, 100, 100)
    X, y = _oracle.scored_rows(ddf[FEATURES], ddf["name"].compute().to_numpy())
    assert isinstance(y, np.ndarray) and not _oracle.is_dask_array(X)
