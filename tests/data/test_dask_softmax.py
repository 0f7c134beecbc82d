"""The multinomial (softmax) model on a real LocalCluster: the objective's sums per chunk on
the workers (dperm.data.dask_rows, the softmax pass added through the chunk tree) equal the
local pass's; PrivateLinearClassifier with K >= 3 classes gives the local fit's coefficients
(<= 1e-9, same seed) and the identical release record and model file, for every mode the
local softmax model has (objective, output and AMP perturbation with delta > 0, no noise),
over one chunk, three chunks and uneven chunks; a chunk dropped or counted twice is never
turned into a model."""

import numpy as np
import pytest
import scipy.sparse as sp
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
from dperm.optim import softmax  # noqa: E402
from dperm.privacy import mechanisms  # noqa: E402

TOL = 1e-9
K = 4
MODES = {
    "objective": dict(perturbation="objective", epsilon=1.0, delta=1e-5),
    "output": dict(perturbation="output", epsilon=1.0, delta=1e-5),
    "amp": dict(perturbation="amp", epsilon=1.0, delta=1e-5),
    "none": dict(perturbation="none"),
}


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def _problem(n=1200, d=6, seed=0):
    return problem(K, n=n, d=d, seed=seed)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_estimator_equals_the_local_fit(client, mode):
    X, codes = _problem()
    labels = np.array(["ant", "bee", "cat", "dog"])[codes]
    kw = dict(classes=["ant", "bee", "cat", "dog"], data_norm=0.9, random_state=11,
              **MODES[mode])
    local = quiet(lambda: dperm.PrivateLinearClassifier(**kw).fit(X, labels))
    assert local.privacy_["multiclass"] == "multinomial" and local.coef_.shape == (K, 6)
    for name, chunks in CHUNKINGS.items():
        Xd = da.from_array(X, chunks=(chunks, -1))
        est = quiet(lambda Xd=Xd: dperm.PrivateLinearClassifier(**kw).fit(Xd, labels))
        np.testing.assert_allclose(est.coef_, local.coef_, rtol=0, atol=TOL, err_msg=name)
        np.testing.assert_allclose(est.intercept_, local.intercept_, rtol=0, atol=TOL,
                                   err_msg=name)
        assert est.privacy_ == local.privacy_, name
        assert model_file(est) == model_file(local), name
        assert est.fit_diagnostics_["rows_clipped"] == local.fit_diagnostics_["rows_clipped"] > 0
        # predictions on the workers, as the local model's
        np.testing.assert_allclose(est.predict_proba(Xd).compute(), local.predict_proba(X),
                                   rtol=1e-9, atol=1e-12)


def test_mechanisms_and_csr_chunks_equal_the_local_fit(client):
    """The mechanisms themselves (loss="multinomial", several alphas and draws), dense
    float32 and CSR chunks: the local coefficients and the identical record."""
    X, codes = _problem(n=900, seed=3)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.2, X, 0.0))
    Xs_d = da.from_array(Xs.toarray(), chunks=(300, -1)).map_blocks(
        sp.csr_matrix, dtype=np.float64, meta=sp.csr_matrix((0, 0)))
    X32 = X.astype(np.float32)
    kw = dict(loss="multinomial", n_classes=K, alpha=[1e-2, 1e-3], epsilon=1.0, delta=1e-5,
              n_draws=2, random_state=4)
    for local_X, dask_X in ((Xs, Xs_d), (X32, da.from_array(X32, chunks=((500, 400), -1)))):
        for mech in (mechanisms.objective_perturbation, mechanisms.output_perturbation):
            a = quiet(lambda m=mech, A=local_X: m(A, codes, **kw))
            b = quiet(lambda m=mech, A=dask_X: m(A, codes, **kw))
            np.testing.assert_allclose(b.coef, a.coef, rtol=0, atol=TOL)
            assert a.record() == b.record()


def test_the_sums_are_the_local_pass_over_every_row_once(client):
    """The objective and gradient at random W (three problems) equal the local pass's to
    1e-13 relative, on every chunking: a chunk dropped or counted twice would be off by
    its share (here at least 13 rows of 1200)."""
    X, codes = _problem()
    rng = np.random.default_rng(2)
    W = rng.normal(size=(3, K, 6))
    F0, G0 = softmax.multinomial_value_grad(X, codes, W, alpha=[0.1, 0.01, 1e-3])
    for chunks in CHUNKINGS.values():
        Xd = da.from_array(X, chunks=(chunks, -1))
        F, G = softmax.multinomial_value_grad(Xd, codes, W, alpha=[0.1, 0.01, 1e-3])
        np.testing.assert_allclose(F, F0, rtol=1e-13)
        np.testing.assert_allclose(G, G0, rtol=1e-12, atol=1e-14)
    # the tolerance sees the smallest chunk (13 rows): without it, or with it twice, the
    # same objective is off by far more
    keep = np.r_[0:700, 713:1200]
    twice = np.r_[0:1200, 700:713]
    for idx in (keep, twice):
        F1 = softmax.multinomial_value_grad(X[idx], codes[idx], W, alpha=[0.1, 0.01, 1e-3])[0]
        assert np.all(np.abs(F1 - F0) > 1e-9 * np.abs(F0))


@pytest.mark.parametrize("mode", ["tree", "flat"])
@pytest.mark.parametrize("fault", ["missing", "twice", "rows"])
def test_a_chunk_dropped_or_counted_twice_is_refused(client, monkeypatch, mode, fault):
    X, codes = _problem(n=800)
    inject_chunk_fault(monkeypatch, _dask._Shard, fault, mode)
    Xd = da.from_array(X, chunks=(200, -1))
    with pytest.raises(_dask.DistributedFitError, match=FAULT_MESSAGE[fault]):
        softmax.minimize_multinomial(Xd, codes, K, alpha=0.1)
    with pytest.raises(_dask.DistributedFitError, match=FAULT_MESSAGE[fault]):
        quiet(lambda: dperm.PrivateLinearClassifier(epsilon=1.0, delta=1e-5, random_state=0)
               .fit(Xd, codes))


def test_same_bits_for_any_number_of_workers(client):
    """1 and 3 workers: the multinomial fit is the same bits (the chunk tree's order), and
    the local fit's coefficients to TOL."""
    X, codes = _problem(n=1300, seed=5)
    local = softmax.minimize_multinomial(X, codes, K, alpha=[1e-2, 1e-3]).coef
    got = []
    for P in (1, 3):
        with distributed.LocalCluster(n_workers=P, threads_per_worker=1, processes=False,
                                      dashboard_address=":0") as cl, \
                distributed.Client(cl, set_as_default=False) as c, c.as_current():
            Xd = da.from_array(X, chunks=(100, -1))
            got.append(softmax.minimize_multinomial(Xd, codes, K, alpha=[1e-2, 1e-3]).coef)
    assert got[0].tobytes() == got[1].tobytes()
    np.testing.assert_allclose(got[0], local, rtol=0, atol=TOL)


def test_labels_are_checked_on_the_workers(client):
    """A class index out of range is refused where it lives, naming its chunk."""
    X, codes = _problem(n=600)
    bad = codes.copy()
    bad[450] = K
    with pytest.raises(ValueError, match=r"y, chunk 2 \(rows 400 to 599\)"):
        softmax.minimize_multinomial(da.from_array(X, chunks=(200, -1)), bad, K, alpha=0.1)


def test_rows_carry_the_labels_of_their_task(client):
    """Rows on the workers with class indices are not a binary problem, and +-1 rows not
    a softmax one: refused, naming what to build."""
    from dperm.optim import erm

    X, codes = _problem(n=400)
    rows = _dask.as_rows(da.from_array(X, chunks=(200, -1)), codes, n_classes=K)
    assert rows.n_classes == K
    with pytest.raises(ValueError, match="class indices"):
        erm.minimize(rows, None, alpha=0.1)
    pm1 = _dask.as_rows(da.from_array(X, chunks=(200, -1)), np.where(codes == 1, 1.0, -1.0))
    with pytest.raises(ValueError, match="labels in"):
        softmax.minimize_multinomial(pm1, None, K, alpha=0.1)

