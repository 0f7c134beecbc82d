"""The compiled regression loss (pseudo-Huber of the residual) against a numpy reference:
values, gradients, Hessian-vector products and full Hessians, dense / CSR, float32 /
float64, with and without the intercept column and clipping factors, batches of any size
(a problem's numbers do not depend on which others share its pass)."""
import numpy as np
import pytest
import scipy.sparse as sp

from dperm.data.design import DesignRows
from dperm.data.validation import check_X
from dperm.optim import erm


def _reference(X, y, W, h, l2, V=None):
    R = X @ W.T - y[:, None]
    T = R / h
    S = np.sqrt(1 + T * T)
    n = X.shape[0]
    F = (h * h * T * T / (S + 1)).mean(0) + 0.5 * l2 * (W * W).sum(1)
    G = (h * T / S).T @ X / n + l2 * W
    HV = None
    if V is not None:
        HV = ((1 / S**3) * (X @ V.T)).T @ X / n + l2 * V
    return F, G, HV


def _data(dtype, sparse, n=257, d=9, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if sparse:
        X[rng.random((n, d)) < 0.6] = 0.0
    X = X.astype(dtype)
    y = 3 * rng.normal(size=n)
    return (sp.csr_matrix(X) if sparse else X), X.astype(np.float64), y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [1, 3, 11])
def test_value_grad_hess_vec_match_numpy(sparse, dtype, k):
    Xs, X, y = _data(dtype, sparse)
    rng = np.random.default_rng(1)
    W, V = rng.normal(size=(k, X.shape[1])), rng.normal(size=(k, X.shape[1]))
    h, l2 = 0.8, 0.05
    F, G = erm.objective(Xs, y, W, loss="pseudo_huber", alpha=l2, h=h)
    HV = erm.hessian_vector(Xs, y, W, V, loss="pseudo_huber", alpha=l2, h=h)
    Fr, Gr, HVr = _reference(X, y, W, h, l2, V)
    np.testing.assert_allclose(F, Fr, rtol=1e-12)
    np.testing.assert_allclose(G, Gr, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(HV, HVr, rtol=1e-11, atol=1e-13)
    # batch independence: each problem alone gives the same numbers, bit for bit
    for j in range(k):
        Fj, Gj = erm.objective(Xs, y, W[j], loss="pseudo_huber", alpha=l2, h=h)
        assert Fj == F[j] and np.array_equal(Gj, G[j])
    H = erm.hessian(Xs, y, W, loss="pseudo_huber", alpha=l2, h=h)
    for j in range(k):
        np.testing.assert_allclose(H[j] @ V[j], HVr[j], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_design_rows_intercept_and_clipping(sparse):
    """Clipping factors and the virtual intercept column scale the score, not the label:
    the residual is t_i x_i.w (+ the constant column) - y_i."""
    Xs, X, y = _data(np.float64, sparse, seed=3)
    rng = np.random.default_rng(4)
    factor = rng.uniform(0.3, 1.0, X.shape[0])
    D = DesignRows(check_X(Xs, accept_sparse=True), factor, 2.0, 0.5)
    Xm = D.toarray()
    W = rng.normal(size=(2, X.shape[1] + 1))
    F, G = erm.objective(D, y, W, loss="pseudo_huber", alpha=0.1, h=1.3)
    Fr, Gr, _ = _reference(Xm, y, W, 1.3, 0.1)
    np.testing.assert_allclose(F, Fr, rtol=1e-12)
    np.testing.assert_allclose(G, Gr, rtol=1e-11, atol=1e-13)


def test_solvers_agree_and_reach_the_minimum():
    Xs, X, y = _data(np.float64, False, seed=5)
    a = erm.minimize(Xs, y, loss="pseudo_huber", alpha=0.01, h=2.0)
    b = erm.minimize(Xs, y, loss="pseudo_huber", alpha=0.01, h=2.0, solver="newton")
    assert a.converged and b.converged
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-8)
    # large h: the pseudo-Huber loss is nearly the squared loss; ridge is close
    c = erm.minimize(Xs, y, loss="pseudo_huber", alpha=0.01, h=1e4)
    ridge = np.linalg.solve(X.T @ X / X.shape[0] + 0.01 * np.eye(X.shape[1]), X.T @ y / X.shape[0])
    np.testing.assert_allclose(c.coef, ridge, rtol=1e-5, atol=1e-6)


def test_margin_loss_labels_still_refused_and_regression_labels_checked():
    Xs, X, y = _data(np.float64, False)
    with pytest.raises(ValueError, match="y"):
        erm.minimize(Xs, y, loss="logistic", alpha=0.1)
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="y: contains NaN"):
        erm.minimize(Xs, bad, loss="pseudo_huber", alpha=0.1)
    with pytest.raises(ValueError, match="numeric"):
        erm.minimize(Xs, np.array(["a"] * X.shape[0]), loss="pseudo_huber", alpha=0.1)
