"""alpha="select" on a real LocalCluster: PrivateLinearClassifier (two classes, and K >= 3
one-vs-rest) and PrivateLinearRegression (objective and output perturbation) fitted on a
Dask array give the local fit's release for the same seed -- the coefficients (<= 1e-9),
the chosen Lambda ``alpha_`` and the record ``privacy_`` -- over one chunk and three;
the accountant is charged the local fit's events.  The rows and the labels stay on the
workers: every run is fitted there and scored there (dperm.data.oracle.count_mistakes,
clipped_abs_error), only counts and sums coming back."""
import re
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dperm  # noqa: E402
from dperm import BudgetAccountant  # noqa: E402
from dperm.data import oracle as _oracle  # noqa: E402
from dperm.privacy import selection as S  # noqa: E402

TOL = 1e-9
NAMES = ["ant", "bee", "cat", "dog"]
#: one chunk, three chunks (n = 900)
CHUNKINGS = {"one": (900,), "three": (300, 250, 350)}
#: a seed whose selection draws 3 runs (more than one candidate is scored)
SEED = 5


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def _problem(n=900, d=5, seed=0):
    """Rows (some over norm 0.9: clipped), two-class labels, K class names, targets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (1.1 / np.sqrt(d))
    w = rng.normal(size=d)
    s = X @ w
    y2 = np.where(s + 0.3 * rng.normal(size=n) > 0, 1, -1)
    codes = np.argmax(X @ rng.normal(size=(len(NAMES), d)).T * 2.0
                      + 0.5 * rng.normal(size=(n, len(NAMES))), axis=1)
    t = 1.0 + s + 0.2 * rng.normal(size=n)
    t[:30] *= 5.0                                   # some targets clipped
    return X, y2, np.array(NAMES)[codes], t


CASES = {
    "binary": ("clf", dict(classes=[-1, 1], epsilon=1.0), 1),
    "ovr": ("clf", dict(classes=NAMES, epsilon=2.0), 2),
    "regression-objective": ("reg", dict(method="objective", epsilon=1.0,
                                         label_bounds=(-1.0, 3.0)), 3),
    "regression-output": ("reg", dict(method="output", epsilon=1.0, label_bound=2.0), 3),
}


def _estimator(kind, **kw):
    cls = dperm.PrivateLinearClassifier if kind == "clf" else dperm.PrivateLinearRegression
    return cls(alpha="select", data_norm=0.9, **kw)


def _history(acc):
    """(label, event) of each charge; the final fit's labels name its Lambda, chosen by
    the (unseeded) selection: replaced by a placeholder."""
    return [(re.sub(r"alpha=[-+.0-9e]+", "alpha=<chosen>", lab), ev) for lab, ev in acc.history]


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the seeded-noise PrivacyLeakWarning, clipping
        return fit()


def test_the_seed_draws_several_runs():
    """The seed used here draws more than one run (the selection is exercised)."""
    gamma = S._logarithmic_gamma(S.SELECT_EXPECTED_RUNS)
    assert np.random.default_rng(SEED).logseries(1.0 - gamma) == 3


@pytest.mark.parametrize("case", sorted(CASES))
def test_select_on_dask_equals_the_local_fit(client, case):
    kind, kw, col = CASES[case]
    data = _problem()
    X, y = data[0], data[col]
    local = _quiet(lambda: _estimator(kind, random_state=SEED, **kw).fit(X, y))
    assert local.alpha_ > 0 and local.privacy_["epsilon_total"] == kw["epsilon"]
    for i, (name, chunks) in enumerate(CHUNKINGS.items()):
        Xd = da.from_array(X, chunks=(chunks, -1))
        # labels as a Dask array chunked otherwise than the rows, or as numpy
        yd = da.from_array(y, chunks=400) if i == 0 else y
        est = _quiet(lambda Xd=Xd, yd=yd: _estimator(kind, random_state=SEED, **kw).fit(Xd, yd))
        np.testing.assert_allclose(est.coef_, local.coef_, rtol=0, atol=TOL, err_msg=name)
        np.testing.assert_allclose(est.intercept_, local.intercept_, rtol=0, atol=TOL,
                                   err_msg=name)
        assert est.alpha_ == local.alpha_, name
        assert est.privacy_ == local.privacy_, name
        assert est.alpha == "select"


@pytest.mark.parametrize("case", ["ovr", "regression-objective"])
def test_select_on_dask_charged_as_the_local_fit(client, case):
    """The accountant's history (labels and events) is the local fit's: the selection's
    share, then the final fit's events (K of them one-vs-rest)."""
    kind, kw, col = CASES[case]
    data = _problem()
    X, y = data[0], data[col]
    Xd, yd = da.from_array(X, chunks=((300, 250, 350), -1)), da.from_array(y, chunks=300)
    dask_acc, local_acc = BudgetAccountant(5.0), BudgetAccountant(5.0)
    _quiet(lambda: _estimator(kind, accountant=dask_acc, **kw).fit(Xd, yd))
    _quiet(lambda: _estimator(kind, accountant=local_acc, **kw).fit(X, y))
    assert _history(dask_acc) == _history(local_acc)
    assert len(dask_acc.history) == (1 + len(NAMES) if case == "ovr" else 2)
    assert dask_acc.spent == pytest.approx(kw["epsilon"])


@pytest.mark.parametrize("case", ["ovr", "regression-output"])
def test_labels_and_rows_stay_on_the_workers(client, monkeypatch, case):
    """With a Dask y, the select fit never brings an array of more than a few values
    (per-chunk counts and sums) to the client: not the labels, not the predictions."""
    kind, kw, col = CASES[case]
    data = _problem(n=600)
    X, y = data[0], data[col]
    local = _quiet(lambda: _estimator(kind, random_state=SEED, **kw).fit(X, y))
    Xd, yd = da.from_array(X, chunks=(200, -1)), da.from_array(y, chunks=200)
    compute, to_array = da.Array.compute, da.Array.__array__

    def small_compute(self, *a, **k):
        if self.size > 8:
            raise AssertionError(f"an array of {self.size} values came to the client")
        return compute(self, *a, **k)

    def small_array(self, *a, **k):
        if self.size > 8:
            raise AssertionError(f"an array of {self.size} values came to the client")
        return to_array(self, *a, **k)
    with monkeypatch.context() as m:
        m.setattr(da.Array, "compute", small_compute)
        m.setattr(da.Array, "__array__", small_array)
        est = _quiet(lambda: _estimator(kind, random_state=SEED, **kw).fit(Xd, yd))
    np.testing.assert_allclose(est.coef_, local.coef_, rtol=0, atol=TOL)
    assert est.alpha_ == local.alpha_


def test_scores_on_the_workers_equal_the_local_scores(client):
    """The runs' scores: mistakes of a classifier and the clipped absolute error of a
    regression, computed chunk by chunk on the workers (labels a Dask array chunked
    otherwise than the rows, or numpy), equal the local scores."""
    X, y2, names, t = _problem(n=700)
    Xd = da.from_array(X, chunks=((200, 300, 200), -1))
    for y in (y2, names):
        clf = _quiet(lambda y=y: dperm.PrivateLinearClassifier(
            classes=sorted(set(y.tolist())), alpha=0.05, random_state=0).fit(X, y))
        want = int(np.count_nonzero(clf.predict(X) != y))
        assert 0 < want < len(y)
        for yd in (da.from_array(y, chunks=250), y):
            assert _oracle.count_mistakes(clf, Xd, yd) == want
    reg = _quiet(lambda: dperm.PrivateLinearRegression(label_bound=2.0, alpha=0.05,
                                                       random_state=0).fit(X, t))
    lo, hi = -0.5, 2.5
    want = float(np.sum(np.abs(np.clip(reg.predict(X), lo, hi) - np.clip(t, lo, hi))))
    assert want == _oracle.clipped_abs_error(reg, X, t, lo, hi)
    for td in (da.from_array(t, chunks=250), t):
        assert _oracle.clipped_abs_error(reg, Xd, td, lo, hi) == pytest.approx(want, rel=1e-12)
    # a wrong interval is seen (the clipping is applied on the workers)
    assert _oracle.clipped_abs_error(reg, Xd, t, lo, 1.0) != pytest.approx(want, rel=1e-6)


def test_regression_targets_checked_on_the_workers(client):
    """A Dask y of a regression fit stays on the workers, checked there: a NaN target is
    refused with the local message; the clipped count (a warning) is the local one."""
    X, _, _, t = _problem(n=600)
    bad = t.copy()
    bad[450] = np.nan
    Xd = da.from_array(X, chunks=(200, -1))
    kw = dict(label_bound=2.0, alpha=0.05, random_state=0)
    with pytest.raises(ValueError, match="y: contains NaN or infinity"):
        _quiet(lambda: dperm.PrivateLinearRegression(**kw).fit(Xd, da.from_array(bad, chunks=200)))
    local = _quiet(lambda: dperm.PrivateLinearRegression(**kw).fit(X, t))
    est = _quiet(lambda: dperm.PrivateLinearRegression(**kw).fit(Xd, da.from_array(t, chunks=150)))
    assert est.fit_diagnostics_["labels_clipped"] == local.fit_diagnostics_["labels_clipped"] > 0
    np.testing.assert_allclose(est.coef_, local.coef_, rtol=0, atol=TOL)
