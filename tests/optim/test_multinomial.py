"""dperm.optim.softmax: the softmax logistic objective and its batched minimiser.

The reference objective is written directly in numpy/scipy (no shared code);
the minimiser is checked against scikit-learn and against the first-order
condition.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import softmax_reference
from scipy.special import logsumexp, softmax

from dperm.data import oracle
from dperm.data.design import WithInterceptColumn
from dperm.data.validation import bound_rows
from dperm.exceptions import ConvergenceWarning
from dperm.optim import softmax as mn
from dperm.optim.erm import DEFAULT_TOL


def make_data(n=240, d=6, K=4, seed=0, density=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if density is not None:
        X *= rng.random((n, d)) < density
    X /= np.linalg.norm(X, axis=1).max()
    T = rng.standard_normal((K, d)) * 3
    y = np.argmax(X @ T.T + 0.5 * rng.gumbel(size=(n, K)), axis=1)
    return X, y


def ref_objective(X, y, W, l2, B=None):
    """J and its gradient for one W (K, d), written directly."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    Z = X @ W.T
    lse = logsumexp(Z, axis=1)
    f = np.mean(lse - Z[np.arange(n), y]) + 0.5 * l2 * np.sum(W * W)
    R = softmax(Z, axis=1)
    R[np.arange(n), y] -= 1
    g = R.T @ X / n + l2 * W
    if B is not None:
        f += np.sum(B * W) / n
        g = g + B / n
    return f, g


@pytest.fixture
def small_blocks(monkeypatch):
    """Force many row blocks (the blocking must not change the sums)."""
    monkeypatch.setattr(oracle, "BLOCK_ENTRIES", 64)


# ------------------------------------------------------------------ objective
@pytest.mark.parametrize("blocks", [False, True])
def test_value_grad_matches_direct_formula(blocks, monkeypatch):
    if blocks:
        monkeypatch.setattr(oracle, "BLOCK_ENTRIES", 64)
    X, y = make_data()
    rng = np.random.default_rng(1)
    m, K, d = 3, 4, X.shape[1]
    W = rng.standard_normal((m, K, d))
    alpha = np.array([0.1, 0.01, 1.0])
    extra = np.array([0.0, 0.5, 0.02])
    B = rng.standard_normal((m, K, d))
    F, G = mn.multinomial_value_grad(X, y, W, alpha, extra_l2=extra, linear=B)
    assert F.shape == (m,) and G.shape == (m, K, d)
    for j in range(m):
        f, g = ref_objective(X, y, W[j], alpha[j] + extra[j], B[j])
        assert F[j] == pytest.approx(f, rel=1e-13)
        np.testing.assert_allclose(G[j], g, rtol=1e-12, atol=1e-15)
    # a single (K, d) W gives a float and (K, d)
    f1, g1 = mn.multinomial_value_grad(X, y, W[0], alpha[0], extra_l2=extra[0], linear=B[0])
    assert isinstance(f1, float) and g1.shape == (K, d)
    assert f1 == pytest.approx(F[0], rel=1e-14)


def test_gradient_matches_finite_differences():
    X, y = make_data(n=80, d=3, K=3, seed=2)
    rng = np.random.default_rng(3)
    W = rng.standard_normal((3, 3))
    B = rng.standard_normal((3, 3))
    _, G = mn.multinomial_value_grad(X, y, W, 0.3, linear=B)
    eps = 1e-6
    fd = np.empty_like(W)
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = eps
        fp, _ = mn.multinomial_value_grad(X, y, W + E, 0.3, linear=B)
        fm, _ = mn.multinomial_value_grad(X, y, W - E, 0.3, linear=B)
        fd[idx] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(G, fd, rtol=1e-6, atol=1e-8)


def test_logsumexp_is_stable_for_huge_margins():
    X, y = make_data(n=50, d=4, K=3)
    W = np.zeros((3, 4))
    W[0] = 1e5          # margins of order 1e4-1e5: a naive exp overflows
    W[1] = -1e5
    f, g = mn.multinomial_value_grad(X, y, W, 1e-3)
    assert np.isfinite(f) and np.all(np.isfinite(g))
    fr, gr = ref_objective(X, y, W, 1e-3)
    assert f == pytest.approx(fr, rel=1e-12)
    np.testing.assert_allclose(g, gr, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("blocks", [False, True])
def test_dense_csr_float32_agree(blocks, monkeypatch):
    if blocks:
        monkeypatch.setattr(oracle, "BLOCK_ENTRIES", 64)
    X, y = make_data(n=150, d=8, K=3, density=0.4)
    rng = np.random.default_rng(4)
    W = rng.standard_normal((2, 3, 8))
    F, G = mn.multinomial_value_grad(X, y, W, [0.1, 0.2])
    for Xs in (sp.csr_matrix(X), sp.csr_array(X)):
        Fs, Gs = mn.multinomial_value_grad(Xs, y, W, [0.1, 0.2])
        np.testing.assert_allclose(Fs, F, rtol=1e-13)
        np.testing.assert_allclose(Gs, G, rtol=1e-12, atol=1e-15)
    X32 = X.astype(np.float32)
    X32r = X32.astype(np.float64)     # what float32 input means, exactly
    F64r, G64r = mn.multinomial_value_grad(X32r, y, W, [0.1, 0.2])
    for Xf in (X32, sp.csr_matrix(X32)):
        Ff, Gf = mn.multinomial_value_grad(Xf, y, W, [0.1, 0.2])
        np.testing.assert_allclose(Ff, F64r, rtol=1e-13)   # accumulated in float64
        np.testing.assert_allclose(Gf, G64r, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(Ff, F, rtol=1e-6)
    # the solver agrees too
    r = mn.minimize_multinomial(X, y, 3, alpha=0.05)
    rs = mn.minimize_multinomial(sp.csr_matrix(X), y, 3, alpha=0.05)
    np.testing.assert_allclose(rs.coef, r.coef, rtol=1e-8, atol=1e-10)


def test_block_temporaries_are_bounded():
    X, _ = make_data(n=5000, d=10)
    rows = oracle.SoftmaxRows(X)
    for width in (10, 80, 10_000, 10**7):
        nb = rows.block_rows(width)
        assert nb >= 1 and (nb * width <= oracle.BLOCK_ENTRIES or nb == 1)
        assert nb * 10 <= oracle.BLOCK_ENTRIES
    assert oracle.BLOCK_ENTRIES * 8 <= 64 * 2**20


# ------------------------------------------------------------------ minimiser
def test_matches_sklearn_multinomial():
    sklearn_lm = pytest.importorskip("sklearn.linear_model")
    X, y = make_data(n=300, d=5, K=4, seed=5)
    n = X.shape[0]
    for alpha in (1e-2, 1e-3):
        r = mn.minimize_multinomial(X, y, 4, alpha=alpha)
        assert r.converged.all() and r.grad_norm[0] <= DEFAULT_TOL
        # sklearn: sum of losses + ||W||^2 / (2C); ours times n: sum + (n alpha / 2)||W||^2
        clf = sklearn_lm.LogisticRegression(C=1.0 / (n * alpha), fit_intercept=False,
                                            solver="lbfgs", tol=1e-14, max_iter=100_000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(X, y)
        np.testing.assert_allclose(r.coef[0], clf.coef_, rtol=1e-6,
                                   atol=1e-6 * np.abs(clf.coef_).max())
        # and ours is at least as good at our objective
        f_sk, _ = ref_objective(X, y, clf.coef_, alpha)
        assert r.fun[0] <= f_sk + 1e-12


def test_first_order_condition_with_linear_term():
    X, y = make_data(n=200, d=5, K=3, seed=6)
    n = X.shape[0]
    rng = np.random.default_rng(7)
    B = rng.standard_normal((3, 5)) * 5
    r = mn.minimize_multinomial(X, y, 3, alpha=0.02, extra_l2=0.01, linear=B)
    assert r.converged.all()
    W = r.coef[0]
    _, g = ref_objective(X, y, W, 0.03)          # gradient of J without the linear term
    assert np.linalg.norm(g + B / n) <= DEFAULT_TOL * 1.01
    assert r.grad_norm[0] <= DEFAULT_TOL
    # and the linear term moved the solution
    r0 = mn.minimize_multinomial(X, y, 3, alpha=0.02, extra_l2=0.01)
    assert np.linalg.norm(r0.coef - r.coef) > 1e-3


@pytest.mark.parametrize("sparse", [False, True])
def test_batched_equals_each_alone(sparse, monkeypatch):
    monkeypatch.setattr(oracle, "BLOCK_ENTRIES", 4096)    # several blocks per pass
    X, y = make_data(n=260, d=7, K=3, seed=8, density=0.5 if sparse else None)
    if sparse:
        X = sp.csr_matrix(X)
    rng = np.random.default_rng(9)
    m = 5
    alpha = np.array([1e-1, 1e-2, 3e-3, 1e-3, 5e-2])
    extra = np.array([0.0, 0.01, 0.0, 0.002, 0.0])
    B = rng.standard_normal((m, 3, 7))
    B[0] = 0
    rb = mn.minimize_multinomial(X, y, 3, alpha=alpha, extra_l2=extra, linear=B, tol=1e-12)
    assert rb.coef.shape == (m, 3, 7) and rb.converged.all()
    assert np.all(rb.grad_norm <= 1e-12)
    for j in range(m):
        r1 = mn.minimize_multinomial(X, y, 3, alpha=alpha[j], extra_l2=extra[j], linear=B[j],
                                     tol=1e-12)
        assert r1.coef.shape == (1, 3, 7)
        np.testing.assert_allclose(rb.coef[j], r1.coef[0], rtol=1e-8,
                                   atol=1e-8 * np.abs(r1.coef).max())
        assert rb.fun[j] == pytest.approx(r1.fun[0], rel=1e-12)


def test_design_rows_equal_materialised_matrix(monkeypatch):
    monkeypatch.setattr(oracle, "BLOCK_ENTRIES", 256)
    rng = np.random.default_rng(10)
    X = rng.standard_normal((180, 5)) * 0.6          # some rows over the bound 1
    y = rng.integers(0, 3, 180)
    for base in (X, sp.csr_matrix(X * (rng.random(X.shape) < 0.6)), X.astype(np.float32)):
        D = bound_rows(base, 1.0, "clip")
        assert D is not base and D.factor is not None        # rows were clipped
        Di = WithInterceptColumn(D, 1.0)
        for rows in (D, Di):
            M = rows.toarray()
            d = M.shape[1]
            W = rng.standard_normal((2, 3, d))
            F, G = mn.multinomial_value_grad(rows, y, W, [0.1, 0.01])
            Fm, Gm = mn.multinomial_value_grad(M, y, W, [0.1, 0.01])
            np.testing.assert_allclose(F, Fm, rtol=1e-13)
            np.testing.assert_allclose(G, Gm, rtol=1e-11, atol=1e-14)
            P = mn.multinomial_predict_proba(rows, W[0])
            np.testing.assert_allclose(P, softmax(M @ W[0].T, axis=1), rtol=1e-12)
        r = mn.minimize_multinomial(Di, y, 3, alpha=0.01)
        rm = mn.minimize_multinomial(Di.toarray(), y, 3, alpha=0.01)
        np.testing.assert_allclose(r.coef, rm.coef, rtol=1e-8, atol=1e-10)


def test_inputs_unchanged():
    X, y = make_data(n=120, d=4, K=3, seed=11)
    rng = np.random.default_rng(12)
    X32 = X.astype(np.float32)
    Xs = sp.csr_matrix(X)
    alpha = np.array([0.1, 0.01])
    extra = np.array([0.0, 0.1])
    B = rng.standard_normal((2, 3, 4))
    W = rng.standard_normal((2, 3, 4))
    c0 = rng.standard_normal((3, 4))
    yf = y.astype(np.float64)
    keep = [a.copy() for a in (X, X32, y, yf, alpha, extra, B, W, c0)]
    keep_s = (Xs.data.copy(), Xs.indices.copy(), Xs.indptr.copy())
    for Xi in (X, X32, Xs):
        mn.multinomial_value_grad(Xi, y, W, alpha, extra_l2=extra, linear=B)
        mn.minimize_multinomial(Xi, yf, 3, alpha=alpha, extra_l2=extra, linear=B, coef_init=c0)
        mn.multinomial_predict_proba(Xi, W[0], intercept=c0[:, 0])
    for a, b in zip((X, X32, y, yf, alpha, extra, B, W, c0), keep):
        np.testing.assert_array_equal(a, b)
    for a, b in zip((Xs.data, Xs.indices, Xs.indptr), keep_s):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", [
    [0, 1, 3, 0, 1, 2],            # out of range (K = 3)
    [0, 1, -1, 0, 1, 2],           # negative
    [0, 1, 0.5, 0, 1, 2],          # non-integer
    [0, 1, np.nan, 0, 1, 2],       # NaN
    ["a", "b", "a", "b", "a", "b"],
    [True, False, True, False, True, False],
    [0, 1, 2, 0, 1],               # wrong length
])
def test_bad_labels(bad):
    X = np.random.default_rng(0).standard_normal((6, 2)) * 0.3
    with pytest.raises(ValueError, match="y"):
        mn.minimize_multinomial(X, np.array(bad), 3, alpha=0.1)
    with pytest.raises(ValueError, match="y"):
        mn.multinomial_value_grad(X, np.array(bad), np.zeros((3, 2)), 0.1)


def test_integer_valued_float_labels_accepted():
    X, y = make_data(n=60, d=3, K=3)
    r1 = mn.minimize_multinomial(X, y, 3, alpha=0.1)
    r2 = mn.minimize_multinomial(X, y.astype(np.float64), 3, alpha=0.1)
    np.testing.assert_array_equal(r1.coef, r2.coef)


def test_bad_parameters():
    X, y = make_data(n=40, d=3, K=3)
    with pytest.raises(ValueError, match="alpha"):
        mn.minimize_multinomial(X, y, 3, alpha=0.0)
    with pytest.raises(ValueError, match="extra_l2"):
        mn.minimize_multinomial(X, y, 3, alpha=0.1, extra_l2=-1.0)
    with pytest.raises(ValueError, match="linear"):
        mn.minimize_multinomial(X, y, 3, alpha=0.1, linear=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="alpha"):
        mn.minimize_multinomial(X, y, 3, alpha=[0.1, 0.2], linear=np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="n_classes"):
        mn.minimize_multinomial(X, y, 1, alpha=0.1)
    with pytest.raises(ValueError, match="W"):
        mn.multinomial_value_grad(X, y, np.zeros((3, 4)), 0.1)
    with pytest.raises(ValueError, match="tol"):
        mn.minimize_multinomial(X, y, 3, alpha=0.1, tol=0)


def test_max_iter_warns():
    X, y = make_data(n=100, d=5, K=3)
    with pytest.warns(ConvergenceWarning):
        r = mn.minimize_multinomial(X, y, 3, alpha=1e-4, max_iter=2)
    assert not r.converged[0] and r.status[0] == "max_iter reached" and r.n_iter[0] == 2


def test_n_threads_does_not_change_result():
    X, y = make_data(n=200, d=5, K=3)
    r1 = mn.minimize_multinomial(X, y, 3, alpha=0.01, n_threads=1)
    r2 = mn.minimize_multinomial(X, y, 3, alpha=0.01)
    np.testing.assert_allclose(r1.coef, r2.coef, rtol=1e-8, atol=1e-10)


# ------------------------------------------------------------------ probabilities
def test_predict_proba():
    X, y = make_data(n=90, d=4, K=3)
    rng = np.random.default_rng(13)
    W = rng.standard_normal((3, 4))
    b = rng.standard_normal(3)
    P = mn.multinomial_predict_proba(X, W, intercept=b)
    assert P.shape == (90, 3)
    np.testing.assert_allclose(P, softmax(X @ W.T + b, axis=1), rtol=1e-13)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-15)
    Pbig = mn.multinomial_predict_proba(X, W * 1e6)       # overflow-safe
    assert np.all(np.isfinite(Pbig))
    np.testing.assert_allclose(Pbig.sum(axis=1), 1.0, rtol=1e-15)
    with pytest.raises(ValueError, match="intercept"):
        mn.multinomial_predict_proba(X, W, intercept=np.zeros(4))


@pytest.mark.parametrize("form", ["dense", "csr"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_pass_equals_the_numpy_path(monkeypatch, form, dtype, threads):
    """Rows go through the compiled softmax pass (dense: softmax_pass; CSR: the CSR
    pass's softmax mode); with it switched off the numpy row-block path computes the
    same sums: clipped rows with an intercept column, a batch of 3 problems, odd sizes."""
    from dperm.data.design import DesignRows, WithInterceptColumn

    X, y = make_data(n=1001, d=13, K=5, seed=3, density=0.5 if form == "csr" else None)
    X = (X * 1.7).astype(dtype)                      # some rows over the bound: clipped
    norms = np.linalg.norm(X.astype(np.float64), axis=1)
    factor = np.minimum(1.0, 1.0 / np.maximum(norms, 1e-300))
    if form == "csr":
        X = sp.csr_matrix(X)
    rows = WithInterceptColumn(DesignRows(X, factor), 1.0)
    rng = np.random.default_rng(4)
    W = rng.standard_normal((3, 5, 14)) * 2.0
    B = rng.standard_normal((3, 5, 14))
    alpha = np.array([1e-3, 1e-2, 1e-1])
    F, G = mn.multinomial_value_grad(rows, y, W, alpha, linear=B, n_threads=threads)
    assert oracle.SoftmaxRows(rows).compiled() is not None
    F0, G0 = softmax_reference.multinomial_value_grad(rows, y, W, alpha, linear=B)
    np.testing.assert_allclose(F, F0, rtol=1e-12)
    np.testing.assert_allclose(G, G0, rtol=1e-11, atol=1e-14)
    # and each problem alone gives the batch's numbers exactly (batch invariance)
    monkeypatch.undo()
    for j in range(3):
        Fj, Gj = mn.multinomial_value_grad(rows, y, W[j], alpha[j], linear=B[j],
                                           n_threads=threads)
        assert Fj == F[j] and np.array_equal(Gj, G[j])
