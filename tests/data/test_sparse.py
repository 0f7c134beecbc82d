"""CSR, float32 and memory-mapped input, against the dense float64 results."""
import numpy as np
import pytest
import scipy.sparse as sp

import dperm
from dperm.data.validation import apply_norm_bound, check_X, row_norms
from dperm.optim import erm
from dperm.privacy.mechanisms import objective_perturbation, output_perturbation

# rows beyond the bound and small alphas on purpose (both warnings are asserted in
# tests/sklearn/test_estimators.py)
pytestmark = [
    pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning"),
    pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning"),
]

LOSSES = ["logistic", "huber", "smooth_hinge"]


def onehot_like(n=600, d=40, q=6, seed=0, dtype=np.float64, index_dtype=np.int32):
    """Rows with q non-zeros (a few repeated columns), norm <= 1, labels from a planted w."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), q)
    cols = rng.integers(0, d, n * q)
    vals = rng.uniform(0.2, 1.0, n * q)
    X = sp.csr_array((vals, (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    X = X.multiply(1.0 / np.maximum(row_norms(X), 1e-12)[:, None]).tocsr()
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    X = sp.csr_array((X.data.astype(dtype), X.indices.astype(index_dtype),
                      X.indptr.astype(index_dtype)), shape=X.shape)
    return X, y


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_kernels_match_dense(loss, dtype, index_dtype):
    X, y = onehot_like(dtype=dtype, index_dtype=index_dtype)
    assert X.indices.dtype == index_dtype and X.data.dtype == dtype
    Xd = X.toarray()
    rng = np.random.default_rng(1)
    W = rng.standard_normal((5, X.shape[1]))
    V = rng.standard_normal((5, X.shape[1]))
    alpha = np.array([1.0, 0.1, 1e-2, 1e-3, 1e-4])
    B = rng.standard_normal((5, X.shape[1]))
    for nt in (1, 2):
        F1, G1 = erm.objective(X, y, W, loss=loss, alpha=alpha, linear=B, n_threads=nt)
        F2, G2 = erm.objective(Xd, y, W, loss=loss, alpha=alpha, linear=B, n_threads=nt)
        assert rel(F1, F2) < 1e-13 and rel(G1, G2) < 1e-13
        H1 = erm.hessian_vector(X, y, W, V, loss=loss, alpha=alpha, n_threads=nt)
        H2 = erm.hessian_vector(Xd, y, W, V, loss=loss, alpha=alpha, n_threads=nt)
        assert rel(H1, H2) < 1e-13
    assert rel(erm.hessian(X, y, W[0], loss=loss, alpha=0.1),
               erm.hessian(Xd, y, W[0], loss=loss, alpha=0.1)) < 1e-12


@pytest.mark.parametrize("loss", LOSSES)
def test_fit_matches_dense_to_1e10(loss):
    X, y = onehot_like()
    alpha = np.array([1.0, 0.1, 0.01])
    r1 = erm.minimize(X, y, loss=loss, alpha=alpha, tol=1e-13)
    r2 = erm.minimize(X.toarray(), y, loss=loss, alpha=alpha, tol=1e-13)
    assert r1.converged.all() and r2.converged.all()
    for j in range(alpha.size):
        assert rel(r1.coef[j], r2.coef[j]) < 1e-10


def test_batch_equals_single_and_threads_do_not_matter():
    X, y = onehot_like(n=3000)
    alpha = np.array([1e-1, 1e-2, 1e-3])
    batch = erm.minimize(X, y, alpha=alpha, n_threads=1)
    for j, a in enumerate(alpha):
        single = erm.minimize(X, y, alpha=a, n_threads=1)
        np.testing.assert_array_equal(single.coef, batch.coef[j])
    two = erm.minimize(X, y, alpha=alpha, n_threads=2)
    assert rel(two.coef, batch.coef) < 1e-10


def test_float32_is_read_as_float32():
    X, y = onehot_like(dtype=np.float32)
    Xc = check_X(X, accept_sparse=True)
    assert Xc.data.dtype == np.float32 and np.shares_memory(Xc.data, X.data)
    r32 = erm.minimize(X, y, alpha=0.01, tol=1e-12)
    r64 = erm.minimize(X.astype(np.float64), y, alpha=0.01, tol=1e-12)
    assert rel(r32.coef, r64.coef) < 1e-10   # the same float32 values, accumulated in float64


def test_noncanonical_and_other_formats_leave_the_input_alone():
    X, y = onehot_like()
    Xd = X.toarray()
    # unsorted indices and duplicates (split every value in two)
    data = np.concatenate([X.data * 0.25, X.data * 0.75])
    rows = np.concatenate([np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))] * 2)
    cols = np.concatenate([X.indices, X.indices])
    order = np.lexsort((-cols, rows))   # within a row, columns descending
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=X.shape[0]))])
    messy = sp.csr_matrix((data[order], cols[order], indptr), shape=X.shape)
    before = (messy.data.copy(), messy.indices.copy(), messy.indptr.copy())
    want = erm.minimize(Xd, y, alpha=0.1, tol=1e-12).coef
    got = erm.minimize(messy, y, alpha=0.1, tol=1e-12).coef
    assert rel(got, want) < 1e-10
    for a, b in zip(before, (messy.data, messy.indices, messy.indptr)):
        np.testing.assert_array_equal(a, b)
    for fmt in ("csc", "coo", "lil"):
        other = sp.csr_matrix(Xd).asformat(fmt)
        assert rel(erm.minimize(other, y, alpha=0.1, tol=1e-12).coef, want) < 1e-10


BAD = [
    ("nan", ValueError, "X: contains NaN or infinity"),
    ("inf", ValueError, "X: contains NaN or infinity"),
    ("negative index", ValueError, r"X: column indices must lie in \[0, "),
    ("index too large", ValueError, r"X: column indices must lie in \[0, "),
    ("bad indptr", ValueError, "X: malformed CSR"),
]


@pytest.mark.parametrize("case, exc, match", BAD)
def test_bad_sparse_input(case, exc, match):
    X, y = onehot_like(n=50, d=8, q=2)
    data, ind, ptr = X.data.copy(), X.indices.copy(), X.indptr.copy()
    if case == "nan":
        data[3] = np.nan
    elif case == "inf":
        data[5] = np.inf
    elif case == "negative index":
        ind[2] = -1
    elif case == "index too large":
        ind[2] = 8
    else:
        ptr[10] = ptr[11] + 1
    bad = sp.csr_matrix((8, 8))
    bad.data, bad.indices, bad.indptr = data, ind, ptr
    bad._shape = X.shape
    kept = (data.copy(), ind.copy(), ptr.copy())
    for fn in (lambda: erm.minimize(bad, y, alpha=0.1),
               lambda: dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1]).fit(bad, y)):
        with pytest.raises(exc, match=match):
            fn()
    for a, b in zip(kept, (bad.data, bad.indices, bad.indptr)):
        np.testing.assert_array_equal(a, b)


def test_shape_mismatch_names_y():
    X, y = onehot_like(n=50, d=8, q=2)
    with pytest.raises(ValueError, match="^y: "):
        erm.minimize(X, y[:-1], alpha=0.1)


@pytest.mark.parametrize("mech", [objective_perturbation, output_perturbation])
def test_mechanisms_match_dense_with_one_seed(mech):
    X, y = onehot_like()
    kw = dict(alpha=[0.01, 0.1], epsilon=1.0)
    a = mech(X, y, random_state=np.random.default_rng(7), **kw)
    b = mech(X.toarray(), y, random_state=np.random.default_rng(7), **kw)
    assert rel(a.coef, b.coef) < 1e-9
    assert a.record() == b.record()


def test_clipping_sparse_rows_without_touching_the_input():
    X, y = onehot_like()
    X2 = X * 3.0
    kept = X2.data.copy()
    out, clipped = apply_norm_bound(X2, 1.0, "clip", return_clipped=True)
    assert clipped == X.shape[0]
    assert np.all(row_norms(out) <= 1.0)
    np.testing.assert_allclose(out.toarray(), apply_norm_bound(X2.toarray(), 1.0, "clip"), rtol=1e-12)
    np.testing.assert_array_equal(X2.data, kept)
    with pytest.raises(ValueError, match="norm above data_norm"):
        apply_norm_bound(X2, 1.0, "error")


@pytest.mark.parametrize("perturbation", ["none", "objective", "output"])
def test_estimator_sparse_equals_dense(perturbation):
    X, y = onehot_like()
    kw = dict(epsilon=2.0, perturbation=perturbation, classes=[-1, 1], n_threads=1)
    a = dperm.PrivateLinearClassifier(random_state=np.random.default_rng(3), **kw).fit(X, y)
    b = dperm.PrivateLinearClassifier(random_state=np.random.default_rng(3), **kw).fit(X.toarray(), y)
    assert rel(a.coef_, b.coef_) < 1e-9 and rel(a.intercept_, b.intercept_) < 1e-8
    assert a.privacy_ == b.privacy_
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X.toarray()), rtol=1e-9)
    np.testing.assert_array_equal(a.predict(sp.csc_matrix(X)), b.predict(X.toarray()))
    assert a.score(X, y) == b.score(X.toarray(), y)


def test_private_tuning_and_random_features_take_csr():
    X, y = onehot_like(n=1200)
    res = dperm.private_tuning(dperm.PrivateLinearClassifier(classes=[-1, 1], n_threads=1),
                               X, y, {"alpha": [1e-2, 1e-1]}, epsilon=1.0)
    assert res.best_estimator_.score(X, y) > 0.5
    rff = dperm.RandomFourierFeatures(n_components=30, random_state=0).fit(X)
    np.testing.assert_allclose(rff.transform(X), rff.transform(X.toarray()), rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------- memory maps

def _map(tmp_path, n=3000, d=20, dtype=np.float32, order="C", seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1).astype(dtype)
    y = np.where(X @ np.linspace(1, -1, d) > 0, 1.0, -1.0)
    path = tmp_path / "X.npy"
    np.save(path, np.asarray(X, order=order))
    return path, X, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_memmap_is_read_in_place(tmp_path, dtype):
    path, X, y = _map(tmp_path, dtype=dtype)
    mm = np.load(path, mmap_mode="r")
    Xc = check_X(mm)
    assert np.shares_memory(Xc, mm) and Xc.dtype == dtype
    a = erm.minimize(mm, y, alpha=1e-3).coef
    b = erm.minimize(np.array(X), y, alpha=1e-3).coef
    np.testing.assert_array_equal(a, b)
    est = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], n_threads=1).fit(mm, y)
    assert est.score(mm, y) > 0.6
    np.testing.assert_array_equal(np.load(path), X)   # the file is unchanged


def test_memmap_of_wrong_dtype_or_order_is_refused(tmp_path):
    path, _, y = _map(tmp_path, dtype=np.float16)
    with pytest.raises(ValueError, match="X: a memory-mapped array must be float32 or float64"):
        erm.minimize(np.load(path, mmap_mode="r"), y, alpha=0.1)
    path, _, y = _map(tmp_path, order="F")
    with pytest.raises(ValueError, match="X: a memory-mapped array must be C-contiguous"):
        erm.minimize(np.load(path, mmap_mode="r"), y, alpha=0.1)


def test_memmap_with_nan_is_refused(tmp_path):
    path, X, y = _map(tmp_path)
    mm = np.lib.format.open_memmap(path, mode="r+")
    mm[100, 3] = np.nan
    mm.flush()
    with pytest.raises(ValueError, match="X: contains NaN or infinity"):
        erm.minimize(np.load(path, mmap_mode="r"), y, alpha=0.1)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_estimator_never_copies_a_memmap(tmp_path, fit_intercept):
    """The intercept column and clipping are virtual: fitting a 32 MB map allocates < 16 MB.
    (numpy reports its allocations to tracemalloc; a copy of X would show.)"""
    import tracemalloc

    path, X, y = _map(tmp_path, n=200_000, d=20, dtype=np.float64)
    mm = np.load(path, mmap_mode="r")
    est = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], n_threads=1,
                                        fit_intercept=fit_intercept)
    tracemalloc.start()
    try:
        est.fit(mm, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 2, peak
    ram = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], n_threads=1,
                                        fit_intercept=fit_intercept, perturbation="none")
    mapped = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], n_threads=1,
                                           fit_intercept=fit_intercept, perturbation="none")
    np.testing.assert_array_equal(ram.fit(np.array(X), y).coef_, mapped.fit(mm, y).coef_)


def test_broken_variant_a_materialized_intercept_is_caught(tmp_path, monkeypatch):
    """The test above has power: with the old materializing augmentation it fails."""
    import tracemalloc

    from dperm.sklearn import classifier as estimators

    monkeypatch.setattr(estimators, "WithInterceptColumn",
                        lambda X, R: estimators.augment_intercept(
                            X.toarray() if hasattr(X, "toarray") else np.asarray(X), R))
    path, X, y = _map(tmp_path, n=200_000, d=20, dtype=np.float64)
    mm = np.load(path, mmap_mode="r")
    tracemalloc.start()
    try:
        dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], n_threads=1).fit(mm, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak >= X.nbytes / 2


def test_predict_on_a_float32_map_converts_blocks_not_the_whole(tmp_path):
    import tracemalloc

    path, X, y = _map(tmp_path, n=200_000, d=40, dtype=np.float32)
    mm = np.load(path, mmap_mode="r")
    est = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1], n_threads=1).fit(mm, y)
    tracemalloc.start()
    try:
        scores = est.decision_function(mm)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 2, peak          # a float64 copy would be 2 * X.nbytes
    # rows a float32 rounding above norm 1 are clipped onto it: factors 1 - O(1e-7)
    X64 = X.astype(np.float64)
    factor = np.minimum(1.0, 1.0 / np.linalg.norm(X64, axis=1))
    np.testing.assert_allclose(scores, (X64 @ est.coef_[0]) * factor + est.intercept_[0],
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss", LOSSES)
def test_newton_solver_matches_lbfgs(sparse, loss, monkeypatch):
    X, y = onehot_like(n=2000)
    X = X if sparse else X.toarray()
    alpha = np.array([1e-1, 1e-3, 1e-5])
    B = np.random.default_rng(4).standard_normal((3, X.shape[1]))
    ref = erm.minimize(X, y, loss=loss, alpha=alpha, linear=B, tol=1e-12, solver="lbfgs")
    new = erm.minimize(X, y, loss=loss, alpha=alpha, linear=B, solver="newton")
    assert new.converged.all() and np.all(new.grad_norm <= 1e-10)
    for j in range(3):
        assert rel(new.coef[j], ref.coef[j]) < 1e-7
    # the curvature cache is used, and changes the cost, never the answer
    from dperm._core import _objective

    seen = []
    real = _objective.hess_vec
    monkeypatch.setattr(_objective, "hess_vec",
                        lambda *a: seen.append(a[-1] is not None) or real(*a))
    erm.minimize(X, y, loss=loss, alpha=alpha, linear=B, solver="newton")
    assert sum(seen) >= 0.8 * len(seen), seen
    monkeypatch.setattr(_objective, "hess_vec", real)
    monkeypatch.setattr(erm, "CURVATURE_CACHE_BYTES", 0)
    again = erm.minimize(X, y, loss=loss, alpha=alpha, linear=B, solver="newton")
    np.testing.assert_array_equal(again.coef, new.coef)


def test_unknown_solver_is_named():
    X, y = onehot_like(n=50, d=8, q=2)
    with pytest.raises(ValueError, match="^solver="):
        erm.minimize(X, y, alpha=0.1, solver="sag")


def test_estimator_and_mechanisms_take_solver():
    X, y = onehot_like(n=1500)
    kw = dict(epsilon=2.0, classes=[-1, 1], n_threads=1)
    a = dperm.PrivateLinearClassifier(solver="newton", random_state=np.random.default_rng(5), **kw)
    b = dperm.PrivateLinearClassifier(solver="lbfgs", random_state=np.random.default_rng(5), **kw)
    assert rel(a.fit(X, y).coef_, b.fit(X, y).coef_) < 1e-7
    assert a.privacy_ == b.privacy_
    with pytest.raises(ValueError, match="^solver="):
        dperm.PrivateLinearClassifier(solver="sag", **kw).fit(X, y)
    for mech in (objective_perturbation, output_perturbation):
        f1 = mech(X, y, alpha=0.01, epsilon=1.0, solver="newton", random_state=np.random.default_rng(2))
        f2 = mech(X, y, alpha=0.01, epsilon=1.0, solver="lbfgs", random_state=np.random.default_rng(2))
        assert rel(f1.coef, f2.coef) < 1e-7


@pytest.mark.parametrize("vdtype", [np.float64, np.float32])
@pytest.mark.parametrize("idtype", [np.int32, np.int64])
def test_one_scan_counts_what_the_validation_refuses(vdtype, idtype):
    """The fused set-up read (dperm._core._objective.csr_scan): each count is exact on a
    matrix with known defects."""
    from dperm._core._objective import csr_scan

    X, _ = onehot_like(n=300, d=40)
    data = X.data.astype(vdtype)
    ind = X.indices.astype(idtype)
    ptr = X.indptr.astype(idtype)
    assert csr_scan(data, ind, ptr, X.shape[1]) == (0, 0, 0)
    bad = data.copy()
    bad[[3, 17, 40]] = [np.nan, np.inf, -np.inf]
    assert csr_scan(bad, ind, ptr, X.shape[1]) == (3, 0, 0)
    out = ind.copy()
    out[5], out[9] = -1, X.shape[1]
    assert csr_scan(data, out, ptr, X.shape[1])[1] == 2
    # a row written backwards: every in-row neighbour pair is out of order
    r = int(np.argmax(np.diff(ptr)))
    swapped = ind.copy()
    swapped[ptr[r]:ptr[r + 1]] = swapped[ptr[r]:ptr[r + 1]][::-1]
    assert csr_scan(data, swapped, ptr, X.shape[1]) == (0, 0, int(ptr[r + 1] - ptr[r]) - 1)
    dup = ind.copy()
    dup[ptr[r] + 1] = dup[ptr[r]]   # a duplicate entry is not canonical either
    assert csr_scan(data, dup, ptr, X.shape[1])[2] >= 1
    # the scan counts across the rows of every thread alike
    assert csr_scan(bad, ind, ptr, X.shape[1], n_threads=2) == (3, 0, 0)

