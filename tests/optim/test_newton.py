"""dperm.optim.newton.trust_region_newton: the batched trust-region Newton-CG solver.

The solver only sees an oracle; here the oracle is the package's own compiled
objective / Hessian-vector kernels (dperm.optim.erm.objective, hessian_vector), and
the reference answer is the compiled batched L-BFGS (dperm.optim.erm.minimize), a
different algorithm.
"""
import numpy as np
import pytest

from dperm.losses import get_loss
from dperm.optim.erm import hessian_vector, minimize, objective
from dperm.optim.newton import trust_region_newton

LOSS_NAMES = ["logistic", "huber", "smooth_hinge"]
TOL = 1e-10


# ------------------------------------------------------------------ helpers
def make_adultlike(n=3000, d=40, seed=0):
    """Adult-like: a few continuous columns in [0, 1] and one-hot-like binary
    columns, some rare (ill-conditioned Hessian at small alpha)."""
    rng = np.random.default_rng(seed)
    dc = d // 4
    Xc = rng.random((n, dc))
    Xb = (rng.random((n, d - dc)) < np.geomspace(0.5, 0.002, d - dc)).astype(float)
    X = np.hstack([Xc, Xb]) / np.sqrt(d / 4)
    X /= max(1.0, np.linalg.norm(X, axis=1).max())
    z = X @ (3.0 * rng.standard_normal(d))
    y = np.where(z - np.median(z) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


class Oracle:
    """value_grad / hess_vec / hess_diag adapters over dperm.optim.erm for k problems
    (per-problem alpha and linear term, indexed by idx); counts the calls and
    checks the calling convention of every call."""

    def __init__(self, X, y, loss, alpha, h=0.5, linear=None):
        self.X, self.y, self.loss, self.h = X, y, loss, h
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self.linear = None if linear is None else np.asarray(linear, dtype=np.float64)
        self.d = X.shape[1]
        self.n_vg = self.n_hv = self.n_hd = 0
        self.hv_rows = []

    def _check(self, W, idx):
        assert W.dtype == np.float64 and W.flags.c_contiguous and W.ndim == 2
        assert W.shape == (idx.size, self.d) and idx.size >= 1
        assert np.issubdtype(idx.dtype, np.integer)
        assert np.all(np.diff(idx) > 0), "rows in increasing problem order, no repeats"

    def value_grad(self, W, idx):
        self._check(W, idx)
        self.n_vg += 1
        B = None if self.linear is None else self.linear[idx]
        return objective(self.X, self.y, W, loss=self.loss, alpha=self.alpha[idx], h=self.h, linear=B)

    def hess_vec(self, W, V, idx):
        self._check(W, idx)
        assert V.shape == W.shape and V.flags.c_contiguous
        self.n_hv += 1
        self.hv_rows.append(idx.size)
        return hessian_vector(self.X, self.y, W, V, loss=self.loss, alpha=self.alpha[idx], h=self.h)

    def hess_diag(self, W, idx):
        self._check(W, idx)
        self.n_hd += 1
        lo = get_loss(self.loss)
        X2 = self.X**2
        D = np.empty_like(W)
        for j in range(W.shape[0]):
            curv = lo.per_sample(self.y * (self.X @ W[j]), self.h)[2]
            D[j] = curv @ X2 / self.X.shape[0] + self.alpha[idx[j]]
        return D

    @property
    def calls(self):
        return self.n_vg + self.n_hv + self.n_hd


def solve(oracle, W0, tol=TOL, max_iter=200, precondition=False, **kw):
    return trust_region_newton(oracle.value_grad, oracle.hess_vec, W0, tol, max_iter,
                               hess_diag=oracle.hess_diag if precondition else None, **kw)


def true_grad_norm(oracle, W):
    """||gradient|| at W, recomputed through a fresh oracle call."""
    _, G = objective(oracle.X, oracle.y, W, loss=oracle.loss, alpha=oracle.alpha, h=oracle.h,
                     linear=oracle.linear)
    return np.linalg.norm(G, axis=1)


# ------------------------------------------- agreement with L-BFGS, tolerance
@pytest.mark.parametrize("precondition", [False, True])
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_agrees_with_lbfgs_and_reaches_tol(loss, precondition, linear_problem):
    X, y = linear_problem(2000, 20)
    alphas = np.array([1.0, 1e-2, 1e-4, 1e-6])
    ref = minimize(X, y, loss=loss, alpha=alphas, tol=1e-12, warn=False)
    assert all(s == "converged" for s in ref.status)
    o = Oracle(X, y, loss, alphas)
    W, F, n_iter, gnorm, status = solve(o, np.zeros((4, X.shape[1])), precondition=precondition)
    assert W.shape == (4, X.shape[1]) and F.shape == gnorm.shape == n_iter.shape == status.shape == (4,)
    np.testing.assert_array_equal(status, 1)
    assert np.all(gnorm <= TOL)
    # the reported numbers are the oracle's at the returned point
    np.testing.assert_allclose(true_grad_norm(o, W), gnorm, rtol=1e-6, atol=1e-13)
    Fo, _ = objective(X, y, W, loss=loss, alpha=alphas)
    np.testing.assert_allclose(F, Fo, rtol=1e-14, atol=0)
    rel = np.linalg.norm(W - ref.coef, axis=1) / np.maximum(np.linalg.norm(ref.coef, axis=1), 1e-300)
    assert np.all(rel <= 1e-8), rel
    assert np.all(n_iter <= 40)
    assert o.n_hd == (0 if not precondition else o.n_hd) and (o.n_hd > 0) == precondition


def test_objective_perturbation_linear_term_large_f(linear_problem):
    """Linear terms b.w/n (objective perturbation), up to |f| ~ 1e5, where f's rounding
    error (~1e-8) is far above the last reductions: gradient norms still reach 1e-10."""
    X, y = linear_problem(1500, 15, seed=3)
    n, d = X.shape
    rng = np.random.default_rng(7)
    alphas = np.array([1e-2, 1e-3, 1e-5, 1e-2])
    B = rng.standard_normal((4, d))
    B *= (n * np.array([0.5, 2.0, 0.05, 50.0]) / np.linalg.norm(B, axis=1))[:, None]
    ref = minimize(X, y, loss="logistic", alpha=alphas, linear=B, tol=1e-10, warn=False)
    o = Oracle(X, y, "logistic", alphas, linear=B)
    W, F, n_iter, gnorm, status = solve(o, np.zeros((4, d)))
    assert np.abs(F).max() > 1e4            # the big-f case is really big
    np.testing.assert_array_equal(status, 1)
    assert np.all(gnorm <= TOL)
    np.testing.assert_allclose(true_grad_norm(o, W), gnorm, rtol=1e-3, atol=1e-13)
    rel = np.linalg.norm(W - ref.coef, axis=1) / np.linalg.norm(ref.coef, axis=1)
    assert np.all(rel <= 1e-8), rel


def test_noisy_f_is_judged_by_the_gradient():
    """f with a random error of 1e-10 (|f| + 1) (far above the real rounding error,
    to make the regime long): the ratio actual / predicted reduction is noise for the
    last steps, which must be judged by the gradient norm; every problem converges."""
    X, y = make_adultlike(n=1500, d=30, seed=2)
    n, d = X.shape
    rng = np.random.default_rng(7)
    alphas = np.array([1e-3, 1e-4, 1e-5])
    B = rng.standard_normal((3, d))
    B *= (n * 5.0 / np.linalg.norm(B, axis=1))[:, None]
    o = Oracle(X, y, "logistic", alphas, linear=B)
    noise = np.random.default_rng(0)

    def noisy_value_grad(W, idx):
        F, G = o.value_grad(W, idx)
        return F + 1e-10 * (np.abs(F) + 1) * noise.uniform(-1, 1, F.shape), G

    W, F, n_iter, gnorm, status = trust_region_newton(noisy_value_grad, o.hess_vec,
                                                      np.zeros((3, d)), TOL, 500)
    np.testing.assert_array_equal(status, 1)
    assert np.all(gnorm <= TOL) and np.all(true_grad_norm(o, W) <= TOL)
    assert np.all(n_iter <= 40)


def test_f_without_information_converges_on_the_gradient():
    """The extreme of f's rounding noise: F constant (1e5).  The ratio test rejects
    until the predicted reduction falls below f's rounding level; from there the
    steps are judged by the gradient norm, the radius grows back, and a problem
    that Newton without globalization would send away (pseudo-Huber, start far
    from the minimizer) converges."""
    rng = np.random.default_rng(0)
    d = 6
    t = rng.uniform(-20, 20, (2, d))
    c = np.array([[1.0], [3.0]])
    alpha = 1e-2

    def value_grad(W, idx):
        u = W - t[idx]
        return np.full(W.shape[0], 1e5), c[idx] * u / np.sqrt(1 + u * u) + alpha * W

    def hess_vec(W, V, idx):
        u = W - t[idx]
        return (c[idx] * (1 + u * u) ** -1.5 + alpha) * V

    W, F, n_iter, gnorm, status = trust_region_newton(value_grad, hess_vec, np.zeros((2, d)), TOL, 200)
    np.testing.assert_array_equal(status, 1)
    assert np.all(gnorm <= TOL) and np.all(n_iter <= 60)
    u = W - t
    np.testing.assert_allclose(c * u / np.sqrt(1 + u * u) + alpha * W, 0, atol=TOL)


# --------------------------------------------------- batching and determinism
@pytest.mark.parametrize("precondition", [False, True])
def test_batch_equals_single_and_shares_calls(precondition, linear_problem):
    X, y = linear_problem(1500, 12, seed=1)
    d = X.shape[1]
    rng = np.random.default_rng(2)
    alphas = np.array([1e-1, 1e-3, 1e-6, 1e-4, 1e-2])
    B = rng.standard_normal((5, d)) * 30.0
    W0 = rng.standard_normal((5, d))
    for loss in ["logistic", "smooth_hinge"]:
        ob = Oracle(X, y, loss, alphas, linear=B)
        Wb, Fb, itb, gb, sb = solve(ob, W0, precondition=precondition)
        np.testing.assert_array_equal(sb, 1)
        singles = []
        for j in range(5):
            o1 = Oracle(X, y, loss, alphas[j:j + 1], linear=B[j:j + 1])
            W1, F1, it1, g1, s1 = solve(o1, W0[j:j + 1], precondition=precondition)
            np.testing.assert_allclose(W1[0], Wb[j], rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(F1[0], Fb[j], rtol=1e-12, atol=0)
            assert it1[0] == itb[j] and s1[0] == sb[j]
            singles.append(o1)
        # lockstep: one value_grad call per trust-region step for the whole batch,
        # so the batch needs as many as its slowest problem, not the sum
        assert ob.n_vg == max(o1.n_vg for o1 in singles)
        assert max(o1.n_hv for o1 in singles) <= ob.n_hv < sum(o1.n_hv for o1 in singles)
        # a permuted batch gives the same per-problem answers
        perm = np.array([3, 0, 4, 2, 1])
        op = Oracle(X, y, loss, alphas[perm], linear=B[perm])
        Wp, *_ = solve(op, W0[perm], precondition=precondition)
        np.testing.assert_allclose(Wp, Wb[perm], rtol=1e-12, atol=1e-14)


def test_hess_vec_gets_only_rows_still_in_cg(linear_problem):
    X, y = linear_problem(800, 10, seed=4)
    alphas = np.array([1.0, 1e-5])          # the first needs far fewer CG iterations
    o = Oracle(X, y, "logistic", alphas)
    solve(o, np.zeros((2, 10)))
    assert 1 in o.hv_rows and max(o.hv_rows) == 2


# ------------------------------------------------------------- exact Newton
def test_quadratic_converges_in_one_iteration():
    """On a quadratic, the first (unrestricted) Newton step is exact when CG solves
    the system: for A = a I from far away (CG exact in one step, step lengths up to
    1e3 |g|, which the trust region must not cut), and for a random SPD A from a
    start close enough that the forcing term asks CG for the tolerance."""
    rng = np.random.default_rng(0)
    d = 12
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A_spd = Q @ np.diag(np.geomspace(1e-2, 1.0, d)) @ Q.T
    As = np.stack([1e-3 * np.eye(d), np.eye(d), 1e2 * np.eye(d), A_spd])
    c = rng.standard_normal((4, d))
    calls = {"vg": 0, "hv": 0}

    def value_grad(W, idx):
        calls["vg"] += 1
        E = W - c[idx]
        G = np.einsum("jpq,jq->jp", As[idx], E)
        return 0.5 * np.einsum("jp,jp->j", E, G) + 7.0, G

    def hess_vec(W, V, idx):
        calls["hv"] += 1
        return np.einsum("jpq,jq->jp", As[idx], V)

    W0 = c + rng.standard_normal((4, d)) * np.array([[100.0], [100.0], [100.0], [1e-7]])
    W, F, n_iter, gnorm, status = trust_region_newton(value_grad, hess_vec, W0, TOL, 50)
    np.testing.assert_array_equal(status, 1)
    np.testing.assert_array_equal(n_iter, 1)
    assert calls["vg"] == 2
    np.testing.assert_allclose(W, c, rtol=0, atol=1e-8)
    np.testing.assert_allclose(F, 7.0, rtol=1e-15)


# ------------------------------------------------------- cost of the oracle
def test_few_passes_on_ill_conditioned_problem():
    """alpha = 1e-6 on Adult-like data: Newton evaluates f and g at a handful of
    points where L-BFGS needs dozens of iterations (each one pass over X), and its
    total number of passes (value_grad + hess_vec) stays near the L-BFGS iteration
    count (measured: logistic 81 passes, 9 of them value_grad, against 84 L-BFGS
    iterations; huber 94 (16) against 82).  Without the quasi-Newton
    preconditioning of CG this fails."""
    X, y = make_adultlike()
    for loss in ["logistic", "huber"]:
        ref = minimize(X, y, loss=loss, alpha=1e-6, warn=False)
        assert ref.converged and ref.n_iter >= 60
        o = Oracle(X, y, loss, [1e-6])
        W, F, n_iter, gnorm, status = solve(o, np.zeros((1, X.shape[1])))
        assert status[0] == 1 and gnorm[0] <= TOL
        assert o.n_vg <= ref.n_iter / 3
        assert o.calls <= 1.5 * ref.n_iter, (o.n_vg, o.n_hv, ref.n_iter)
        assert np.linalg.norm(W[0] - ref.coef) <= 1e-6 * np.linalg.norm(ref.coef)


# ------------------------------------------------------------- edge cases
def test_max_iter_zero_returns_start(linear_problem):
    X, y = linear_problem(500, 8)
    o = Oracle(X, y, "logistic", [1e-2, 1e-3])
    W0 = np.random.default_rng(0).standard_normal((2, 8))
    W, F, n_iter, gnorm, status = solve(o, W0, max_iter=0)
    np.testing.assert_array_equal(W, W0)
    np.testing.assert_array_equal(status, 2)
    np.testing.assert_array_equal(n_iter, 0)
    F0, G0 = objective(X, y, W0, alpha=o.alpha)
    np.testing.assert_array_equal(F, F0)
    np.testing.assert_allclose(gnorm, np.linalg.norm(G0, axis=1), rtol=1e-14)
    assert o.n_vg == 1 and o.n_hv == 0
    # one step: status 2 again, n_iter 1, f decreased
    W1, F1, n1, g1, s1 = solve(Oracle(X, y, "logistic", [1e-2, 1e-3]), W0, max_iter=1)
    np.testing.assert_array_equal(s1, 2)
    np.testing.assert_array_equal(n1, 1)
    assert np.all(F1 < F0)


def test_start_at_the_optimum_and_input_checks(linear_problem):
    X, y = linear_problem(500, 8)
    ref = minimize(X, y, alpha=1e-2, tol=1e-12)
    o = Oracle(X, y, "logistic", [1e-2])
    W, F, n_iter, gnorm, status = solve(o, ref.coef[None, :], max_iter=0)
    assert status[0] == 1 and n_iter[0] == 0 and o.n_hv == 0
    with pytest.raises(ValueError):
        solve(o, np.zeros(8))
    with pytest.raises(ValueError):
        solve(o, np.zeros((1, 8)), tol=0.0)
    with pytest.raises(ValueError):
        solve(o, np.zeros((1, 8)), max_iter=-1)


# ----------------------------------------------- broken oracles are detected
@pytest.mark.parametrize("defect", ["sign", "scale", "zero", "nan"])
def test_broken_hess_vec_never_claims_convergence(defect):
    """A wrong Hessian must not produce a false 'converged': the solver either
    stops with status 2/3, or (where the defect is harmless) converges for real."""
    X, y = make_adultlike(n=1500, d=30, seed=1)
    alphas = np.array([1e-4, 1e-6])
    o = Oracle(X, y, "logistic", alphas)
    good_hv = o.hess_vec

    def bad_hv(W, V, idx):
        HV = good_hv(W, V, idx)
        return {"sign": -HV, "scale": 100.0 * HV, "zero": 0.0 * HV,
                "nan": np.full_like(HV, np.nan)}[defect]

    W, F, n_iter, gnorm, status = trust_region_newton(o.value_grad, bad_hv, np.zeros((2, 30)),
                                                      TOL, 30)
    true_g = true_grad_norm(o, W)
    np.testing.assert_allclose(gnorm, true_g, rtol=1e-6)
    assert np.all((status != 1) | (true_g <= TOL))
    assert np.all(status != 1)               # none of these can reach 1e-10 in 30 steps
    if defect == "nan":
        np.testing.assert_array_equal(status, 3)
        np.testing.assert_array_equal(n_iter, 0)


def test_collapsing_trust_region_reports_failure(linear_problem):
    """An oracle whose f is NaN away from the start: every trial point is rejected,
    the radius shrinks, and the solver gives up with status 3 (in bounded work)."""
    X, y = linear_problem(500, 8)
    o = Oracle(X, y, "logistic", [1e-2])
    W0 = np.zeros((1, 8))

    def vg(W, idx):
        F, G = o.value_grad(W, idx)
        F = np.where(np.all(W == 0, axis=1), F, np.nan)
        return F, G

    W, F, n_iter, gnorm, status = trust_region_newton(vg, o.hess_vec, W0, TOL, 1000)
    assert status[0] == 3 and n_iter[0] == 0
    np.testing.assert_array_equal(W, W0)
    assert o.n_vg <= 100


def test_unreachable_tolerance_stops_at_the_rounding_floor(linear_problem):
    """tol below the gradient's rounding floor: the solver gets to the floor
    (no radius collapse on the way), then reports status 3 well before max_iter."""
    X, y = linear_problem(1000, 10, seed=5)
    o = Oracle(X, y, "logistic", [1e-3])
    W, F, n_iter, gnorm, status = solve(o, np.zeros((1, 10)), tol=1e-30, max_iter=500)
    assert status[0] == 3
    assert n_iter[0] < 200
    assert gnorm[0] <= 1e-13


def test_solver_split_into_short_functions():
    """The solver is split as liblinear's tron.cpp is (newton / pcg / step): no function of
    dperm/optim/newton.py is over 80 lines (trust_region_newton was 311, complexity 51)."""
    import ast
    import pathlib

    import dperm.optim.newton as newton

    tree = ast.parse(pathlib.Path(newton.__file__).read_text())
    long = [(f.name, f.end_lineno - f.lineno + 1) for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef) and f.end_lineno - f.lineno + 1 > 80]
    assert not long, long
