"""One-vs-rest on a real LocalCluster: PrivateLinearClassifier with K >= 3 classes fitted
as K binary models (pure epsilon, or a loss other than logistic) on a Dask array gives the
local fit's coefficients (<= 1e-9, same seed), the identical release record and model file
and the local predictions, for every one-vs-rest mode, over one chunk, three chunks and
uneven chunks.  The labels stay on the workers: mapped there to class indices (a label
outside the public classes names its chunk), each class's +-1 labels made there once per
class (dperm.data.dask_rows, `DaskRows.for_class`); a chunk dropped or counted twice for
one class is never turned into a model, and a class picking that maps the wrong class to
+1 is caught."""
import warnings

import numpy as np
import pytest
from _dask_multiclass import (
    CHUNKINGS,
    FAULT_MESSAGE,
    inject_chunk_fault,
    model_file,
    problem,
    quiet,  # noqa: E402
)

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dperm  # noqa: E402
from dperm.data import dask_rows as _dask  # noqa: E402
from dperm.exceptions import PrivacyLeakWarning  # noqa: E402
from dperm.optim import erm  # noqa: E402

TOL = 1e-9
NAMES = ["ant", "bee", "cat", "dog"]
K = len(NAMES)
#: every one-vs-rest mode of the local estimator: pure epsilon (any loss, both
#: mechanisms), delta > 0 with a loss other than logistic (objective, output, AMP), and
#: the non-private baseline of a loss other than logistic
MODES = {
    "objective-pure": dict(perturbation="objective", epsilon=1.0),
    "output-pure": dict(perturbation="output", epsilon=1.0),
    "huber-objective-pure": dict(loss="huber", perturbation="objective", epsilon=2.0),
    "smooth_hinge-output-pure": dict(loss="smooth_hinge", perturbation="output", epsilon=2.0),
    "huber-objective-delta": dict(loss="huber", perturbation="objective", epsilon=1.0,
                                  delta=1e-5),
    "smooth_hinge-output-delta": dict(loss="smooth_hinge", perturbation="output", epsilon=1.0,
                                      delta=1e-5),
    "huber-amp-delta": dict(loss="huber", perturbation="amp", epsilon=1.0, delta=1e-5),
    "huber-none": dict(loss="huber", perturbation="none"),
}


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def _problem(n=1200, d=6, seed=0):
    return problem(K, n=n, d=d, seed=seed)


def _assert_as_local(est, local, X, Xd, name):
    np.testing.assert_allclose(est.coef_, local.coef_, rtol=0, atol=TOL, err_msg=name)
    np.testing.assert_allclose(est.intercept_, local.intercept_, rtol=0, atol=TOL,
                               err_msg=name)
    assert est.privacy_ == local.privacy_, name
    assert model_file(est) == model_file(local), name
    assert est.fit_diagnostics_["rows_clipped"] == local.fit_diagnostics_["rows_clipped"] > 0
    np.testing.assert_array_equal(est.predict(Xd).compute(), local.predict(X), err_msg=name)
    if est.loss == "logistic":
        np.testing.assert_allclose(est.predict_proba(Xd).compute(), local.predict_proba(X),
                                   rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_estimator_equals_the_local_fit(client, mode):
    X, codes = _problem()
    labels = np.array(NAMES)[codes]
    kw = dict(classes=NAMES, data_norm=0.9, random_state=11, **MODES[mode])
    local = quiet(lambda: dperm.PrivateLinearClassifier(**kw).fit(X, labels))
    assert local.privacy_["multiclass"] == "ovr" and local.coef_.shape == (K, 6)
    for i, (name, chunks) in enumerate(CHUNKINGS.items()):
        Xd = da.from_array(X, chunks=(chunks, -1))
        # labels as a numpy array (sent chunked like the rows) or a Dask array chunked
        # otherwise (rechunked like the rows on the workers)
        y = labels if i % 2 else da.from_array(labels, chunks=500)
        est = quiet(lambda Xd=Xd, y=y: dperm.PrivateLinearClassifier(**kw).fit(Xd, y))
        _assert_as_local(est, local, X, Xd, name)


def test_without_intercept_and_with_numeric_labels_read_from_y(client):
    """fit_intercept=False; no classes= (the label set found on the workers, with the
    local fit's PrivacyLeakWarning); float labels; a Dask y."""
    X, codes = _problem(n=900, seed=4)
    y = codes.astype(np.float64) * 10.0
    kw = dict(epsilon=1.0, data_norm=0.9, fit_intercept=False, random_state=2)
    with pytest.warns(PrivacyLeakWarning, match="label set was read"):
        local = dperm.PrivateLinearClassifier(**kw).fit(X, y)
    Xd = da.from_array(X, chunks=((300, 250, 350), -1))
    with pytest.warns(PrivacyLeakWarning, match="label set was read"):
        est = dperm.PrivateLinearClassifier(**kw).fit(Xd, da.from_array(y, chunks=200))
    np.testing.assert_array_equal(est.classes_, local.classes_)
    _assert_as_local(est, local, X, Xd, "no intercept")


def test_labels_are_not_brought_to_the_client(client, monkeypatch):
    """With the public classes given, the fit never computes y (or anything) on the client:
    the labels are mapped, checked and turned into each class's +-1 on the workers."""
    X, codes = _problem(n=600)
    labels = np.array(NAMES)[codes]
    kw = dict(classes=NAMES, epsilon=1.0, data_norm=0.9, random_state=1)
    local = quiet(lambda: dperm.PrivateLinearClassifier(**kw).fit(X, labels))
    Xd, yd = da.from_array(X, chunks=(200, -1)), da.from_array(labels, chunks=200)

    def refuse(self, *a, **k):
        raise AssertionError("an array was brought to the client during the fit")
    with monkeypatch.context() as m:
        m.setattr(da.Array, "compute", refuse)
        m.setattr(da.Array, "__array__", refuse)
        est = quiet(lambda: dperm.PrivateLinearClassifier(**kw).fit(Xd, yd))
    np.testing.assert_allclose(est.coef_, local.coef_, rtol=0, atol=TOL)


def test_each_class_labels_made_once_per_chunk(client, monkeypatch):
    """The +-1 labels of class k are made on the workers once per chunk and class (kept
    with the chunk's prepared rows for every pass of that class's solve), for every class
    and chunk: K x chunks pickings in all."""
    X, codes = _problem(n=1000)
    calls = []
    real = _dask._class_signs

    def counted(c, k):
        calls.append((int(k), int(c.shape[0])))
        return real(c, k)
    monkeypatch.setattr(_dask, "_class_signs", counted)
    Xd = da.from_array(X, chunks=((300, 300, 400), -1))
    quiet(lambda: dperm.PrivateLinearClassifier(classes=list(range(K)), epsilon=1.0,
                                                 random_state=0).fit(Xd, codes))
    assert sorted(calls) == sorted((k, r) for k in range(K) for r in (300, 300, 400))


def test_wrong_class_to_plus_one_is_caught(client, monkeypatch):
    """A deliberately broken class picking (class k + 1 made the positive class of model
    k) no longer gives the local fit: the comparison above would fail."""
    X, codes = _problem(n=800)
    kw = dict(classes=list(range(K)), epsilon=1.0, data_norm=0.9, random_state=3)
    local = quiet(lambda: dperm.PrivateLinearClassifier(**kw).fit(X, codes))
    Xd = da.from_array(X, chunks=(300, -1))
    monkeypatch.setattr(_dask, "_class_signs",
                        lambda c, k: np.where(c == (k + 1) % K, 1.0, -1.0))
    est = quiet(lambda: dperm.PrivateLinearClassifier(**kw).fit(Xd, codes))
    with pytest.raises(AssertionError):
        _assert_as_local(est, local, X, Xd, "broken picking")


def test_per_class_sums_are_the_local_pass_over_every_row_once(client):
    """The objective and gradient of each class's rows (for_class(k)) at random W equal the
    local pass's with that class's +-1 labels to 1e-13 relative, on every chunking; a
    chunk dropped or counted twice (here at least 13 rows of 1200), or another class's
    labels, would be off by far more."""
    X, codes = _problem()
    X = X / np.linalg.norm(X, axis=1).max()
    rng = np.random.default_rng(2)
    W = rng.normal(size=(3, X.shape[1]))
    alpha = [0.1, 0.01, 1e-3]
    for chunks in CHUNKINGS.values():
        rows = _dask.class_rows(da.from_array(X, chunks=(chunks, -1)), codes, range(K))
        for k in range(K):
            yk = np.where(codes == k, 1.0, -1.0)
            F0, G0 = erm.objective(X, yk, W, alpha=alpha)
            F, G = erm.objective(rows.for_class(k), None, W, alpha=alpha)
            np.testing.assert_allclose(F, F0, rtol=1e-13)
            np.testing.assert_allclose(G, G0, rtol=1e-12, atol=1e-14)
    keep, twice = np.r_[0:700, 713:1200], np.r_[0:1200, 700:713]
    y2 = np.where(codes == 2, 1.0, -1.0)
    F0 = erm.objective(X, y2, W, alpha=alpha)[0]
    for idx in (keep, twice):
        F1 = erm.objective(X[idx], y2[idx], W, alpha=alpha)[0]
        assert np.all(np.abs(F1 - F0) > 1e-9 * np.abs(F0))
    F3 = erm.objective(X, np.where(codes == 3, 1.0, -1.0), W, alpha=alpha)[0]
    assert np.all(np.abs(F3 - F0) > 1e-9 * np.abs(F0))


@pytest.mark.parametrize("mode", ["tree", "flat"])
@pytest.mark.parametrize("fault", ["missing", "twice", "rows"])
def test_a_chunk_dropped_or_counted_twice_for_one_class_is_refused(client, monkeypatch,
                                                                   mode, fault):
    """Only class 2's passes are broken (the other classes' fits are sound): the fit stops
    with DistributedFitError, no model is produced."""
    X, codes = _problem(n=800)
    inject_chunk_fault(monkeypatch, _dask._Shard, fault, mode, only_class=2)
    Xd = da.from_array(X, chunks=(200, -1))
    est = dperm.PrivateLinearClassifier(classes=list(range(K)), epsilon=1.0, random_state=0)
    with pytest.raises(_dask.DistributedFitError, match=FAULT_MESSAGE[fault]):
        quiet(lambda: est.fit(Xd, codes))
    assert not hasattr(est, "coef_")


@pytest.mark.parametrize("dask_labels", [False, True])
def test_labels_are_checked_on_the_workers_naming_the_chunk(client, dask_labels):
    X, codes = _problem(n=600)
    labels = np.array(NAMES, dtype=object)[codes]
    labels[450] = "eel"
    y = da.from_array(labels, chunks=300) if dask_labels else labels
    est = dperm.PrivateLinearClassifier(classes=NAMES, epsilon=1.0, random_state=0)
    with pytest.raises(ValueError, match=r"y, chunk 2 \(rows 400 to 599\): values \['eel'\] "
                                         r"are not in classes"):
        quiet(lambda: est.fit(da.from_array(X, chunks=(200, -1)), y))
    y = codes.astype(float)
    y[3] = np.nan
    with pytest.raises(ValueError, match=r"y, chunk 0 \(rows 0 to 199\): contains NaN"):
        quiet(lambda: dperm.PrivateLinearClassifier(classes=list(range(K)), random_state=0)
               .fit(da.from_array(X, chunks=(200, -1)), da.from_array(y, chunks=100)))
    with pytest.raises(ValueError, match="do not match classes"):
        quiet(lambda: dperm.PrivateLinearClassifier(classes=[0, 1, 2, 3], random_state=0)
               .fit(da.from_array(X, chunks=(200, -1)), da.from_array(labels, chunks=200)))


def test_rows_of_one_class_serve_binary_losses_only(client):
    """for_class(k) rows are a binary problem: refused by the softmax objective and by a
    second for_class; k is checked."""
    from dperm.optim import softmax

    X, codes = _problem(n=400)
    rows = _dask.class_rows(da.from_array(X, chunks=(200, -1)), codes, range(K))
    assert rows.n_classes == K and rows.for_class(1).n_classes is None
    with pytest.raises(ValueError, match="for_class"):
        erm.minimize(rows, None, alpha=0.1)
    with pytest.raises(ValueError, match="before for_class"):
        softmax.minimize_multinomial(rows.for_class(1), None, K, alpha=0.1)
    with pytest.raises(ValueError, match=r"k must be a class index in 0\.\.3"):
        rows.for_class(K)
    with pytest.raises(ValueError, match="do not carry class indices"):
        rows.for_class(0).for_class(1)
    assert rows.class_counts().tolist() == np.bincount(codes, minlength=K).tolist()


def test_the_local_notices(client):
    """A column-vector y (sklearn's DataConversionWarning, pointing at the caller) and y of
    one class only (the analyst's notice, from the class counts made on the workers)."""
    from sklearn.exceptions import DataConversionWarning

    X, codes = _problem(n=400)
    Xd = da.from_array(X, chunks=(200, -1))
    est = dperm.PrivateLinearClassifier(classes=list(range(K)), epsilon=1.0, random_state=0)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        est.fit(Xd, da.from_array(codes.reshape(-1, 1), chunks=(100, 1)))
    conv = [w for w in got if issubclass(w.category, DataConversionWarning)]
    assert len(conv) == 1 and conv[0].filename == __file__
    with pytest.warns(UserWarning, match="every label is 2"):
        _quiet_but_notice(lambda: est.fit(Xd, np.full(400, 2)))


def _quiet_but_notice(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return fit()
