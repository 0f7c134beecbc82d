"""White-box privacy tests (docs/specification.md, "How privacy is tested").

(a) Sensitivity of the exact minimizer, the premise of output perturbation:
    ||f*(D) - f*(D')|| <= 2R/(n Lambda) over adversarially chosen neighbours.
(b) Objective perturbation: the exact log density ratio of the output,
        L(f) = beta (||b_D'(f)|| - ||b_D(f)||) + log det A_D(f) - log det A_D'(f),
    stays within [-eps, eps] at many outputs f (mechanism draws, targeted points at the
    loss's kinks, local maximization), in the Delta = 0 and the Delta > 0 branch.
(c) Power: the same audit with deliberately broken constants finds L > eps.

Everything runs at data_norm R = 1 and R = 5: the gradient bound scales with R and
the curvature bound with R^2, and only R > 1 separates the two.
"""
import warnings

import numpy as np
import pytest
from _privacy_audit import LOSS_H, designed_1d, noise_and_logdet, objective_privacy_loss, rows_in_ball
from scipy import stats
from scipy.optimize import minimize as sp_minimize

from dperm.exceptions import ConvergenceWarning
from dperm.losses import get_loss
from dperm.optim import erm
from dperm.privacy.mechanisms import objective_perturbation, objective_perturbation_constants

# audits replay mechanism draws with fixed seeds (the seed's warning is asserted in
# tests/privacy/test_release.py)
pytestmark = [pytest.mark.filterwarnings("ignore:random_state is a fixed seed")]

EPS = 1.0
RS = [1.0, 5.0]
TOL = 1e-11


def _solve(X, y, loss, alpha, h):
    res = erm.minimize(X, y, loss=loss, alpha=alpha, h=h, tol=TOL, max_iter=10000)
    assert res.converged, res.status
    return res.coef


# =============================================================== (a) sensitivity
class _Sensitivity:
    """Distances ||f*(D) - f*(D')|| for neighbours of one (X, y), replacing row i."""

    def __init__(self, X, y, loss, alpha, h):
        self.X, self.y, self.loss, self.alpha, self.h = X, y, loss, alpha, h
        self.f0 = _solve(X, y, loss, alpha, h)
        self.best = (0.0, None)

    def dist(self, i, x_new, y_new):
        X2, y2 = self.X.copy(), self.y.copy()
        X2[i], y2[i] = x_new, y_new
        dist = np.linalg.norm(_solve(X2, y2, self.loss, self.alpha, self.h) - self.f0)
        if dist > self.best[0]:
            self.best = (dist, (i, np.array(x_new), y_new))
        return dist


def _adversarial_sensitivity(X, y, loss, alpha, h, R, rng, n_random=120, n_climb=80):
    s = _Sensitivity(X, y, loss, alpha, h)
    n, d = X.shape
    fhat = s.f0 / max(np.linalg.norm(s.f0), 1e-300)
    for i in range(n):
        s.dist(i, -X[i], y[i])                     # x -> -x
        s.dist(i, X[i], -y[i])                     # label flip
        for sgn in (1.0, -1.0):                    # max-norm rows along +-f*, both labels
            s.dist(i, sgn * R * fhat, 1.0)
            s.dist(i, sgn * R * fhat, -1.0)
    for _ in range(n_random):                      # random rows on the sphere of radius R
        v = rng.standard_normal(d)
        s.dist(rng.integers(n), R * v / np.linalg.norm(v), rng.choice([-1.0, 1.0]))
    step = 0.5                                     # hill climbing on the best replacement
    for _ in range(n_climb):
        dist, (i, x, yy) = s.best
        v = x + step * R * rng.standard_normal(d)
        if s.dist(i, R * v / np.linalg.norm(v), yy) <= dist:
            step *= 0.9
    return s.best[0]


@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("loss,h", LOSS_H)
def test_minimizer_sensitivity(loss, h, R):
    rng = np.random.default_rng(11)
    n, d = 25, 3
    X = rows_in_ball(rng, n, d, R)
    y = rng.choice([-1.0, 1.0], n)
    ratios, unscaled = [], []
    for s in (0.02, 0.3, 3.0):
        # margins scale as R^2 / Lambda: these cover curved and (for large s) linear regimes
        alpha = s * R**2
        worst = _adversarial_sensitivity(X, y, loss, alpha, h, R, rng)
        bound = 2.0 * R / (n * alpha)
        slack = 2 * TOL / alpha + 1e-12 * bound    # the minimizers are exact to tol / Lambda
        assert worst <= bound + slack, (
            f"{loss} R={R} Lambda={alpha}: ||f*(D)-f*(D')|| = {worst:.6g} exceeds the "
            f"sensitivity 2R/(n Lambda) = {bound:.6g} that output perturbation relies on")
        ratios.append(worst / bound)
        unscaled.append(worst * n * alpha / 2.0)   # relative to 2/(n Lambda)
    # teeth: huber / smooth hinge reach the bound exactly once every margin is in the
    # linear region (large Lambda); logistic has |phi'(z) + phi'(-z)| = 1, so about 1/2
    floor = 0.45 if loss == "logistic" else 0.99
    assert max(ratios) > floor, f"sensitivity search too weak: ratios {ratios}"
    if R > 1:
        # forgetting R (sensitivity 2/(n Lambda)) would be wrong, and this search shows it
        assert max(unscaled) > 1.5, f"no pair violates 2/(n Lambda) at R={R}: {unscaled}"


# =============================================================== (b) objective perturbation
def real_constants(n, alpha, eps, curvature, R):
    e, dl, b = objective_perturbation_constants(n, alpha, eps, curvature, R)
    return float(e[0]), float(dl[0]), float(b[0])


# deliberately broken constant sets (curvature is c R^2, as Loss.curvature gives it)
def broken_no_curvature(n, alpha, eps, curvature, R):
    return eps, 0.0, eps / (2.0 * R)                      # Jacobian term ignored


def broken_c_times_R(n, alpha, eps, curvature, R):
    return real_constants(n, alpha, eps, curvature / R, R)  # c R where c R^2 belongs


def broken_beta_doubled(n, alpha, eps, curvature, R):
    e, dl, b = real_constants(n, alpha, eps, curvature, R)
    return e, dl, 2.0 * b                                 # noise halved


def broken_beta_without_R(n, alpha, eps, curvature, R):
    e, dl, b = real_constants(n, alpha, eps, curvature, R)
    return e, dl, b * R                                   # beta = eps'/2 instead of eps'/(2R)


def _alpha_for(loss, h, R, n, q):
    """Lambda with c R^2 / (n Lambda) = q: q small -> Delta = 0 branch, large -> Delta > 0."""
    return get_loss(loss).curvature(h, R) / (n * q)


def _kink_margins(loss, h):
    """Margins where phi'' is largest or jumps: where the density ratio peaks."""
    if loss == "logistic":
        return np.array([0.0, -1.0, 1.0, -2.0])
    return np.array([1 - h, 1.0, 1 + h, 1 - h / 2, 1 + h / 2, -(1 - h), 0.0])


class _Audit:
    """Max over (D' candidates) x (outputs f) of |L(f)|, both orders of the pair."""

    def __init__(self, loss, h, lam, beta):
        self.loss, self.h, self.lam, self.beta = loss, h, lam, beta
        self.max_loss = -np.inf
        self.arg = None

    def losses(self, U, U2, F):
        a = objective_privacy_loss(U, U2, F, self.loss, self.h, self.lam, self.beta)
        b = objective_privacy_loss(U2, U, F, self.loss, self.h, self.lam, self.beta)
        return np.maximum(a, b)

    def scan(self, U, U2, F):
        L = self.losses(U, U2, F)
        k = int(np.argmax(L))
        if L[k] > self.max_loss:
            self.max_loss, self.arg = float(L[k]), (U, U2[0].copy(), F[k].copy())
        return L

    def refine(self, R):
        """Nelder-Mead over (f, replacement row) from the best point found so far."""
        U, u2, f = self.arg
        d = f.size

        def neg(p):
            v = p[d:]
            nv = np.linalg.norm(v)
            U2 = U.copy()
            U2[0] = v if nv <= R else v * (R / nv)
            return -self.losses(U, U2, p[None, :d])[0]

        r = sp_minimize(neg, np.concatenate([f, u2]), method="Nelder-Mead",
                        options={"maxiter": 400, "xatol": 1e-9, "fatol": 1e-12})
        if -r.fun > self.max_loss:
            self.max_loss = float(-r.fun)


def _targeted_f(u, z_targets, R, rng, m, scale):
    """Random f's moved so that the changed row u has one of the target margins."""
    d = u.size
    F = scale * rng.standard_normal((m, d))
    z = rng.choice(z_targets, m)
    return F + ((z - F @ u) / (u @ u))[:, None] * u[None, :]


MECHANISM = object()   # audit what dperm's objective_perturbation records and outputs


def audit_objective(loss, h, R, q, constants, *, eps=EPS, seed=0):
    """Max |privacy loss| of objective perturbation run with `constants`, over:

    * a 1-d designed data set (row 0 at norm R, others shorter and balanced), every
      replacement row u' on a 41-point grid of [-R, R] (x -> -x, label flips and zero
      rows among them) and a dense grid of f plus the loss's kinks;
    * a 3-d random data set, replacement rows -x, +-R f*-aligned and 30 random rows on
      the sphere, f targeted at the kinks;
    then local maximization from the best point. Returns (max loss, details).

    `constants` is either a function (n, Lambda, eps, c R^2, R) -> (eps', Delta, beta),
    or MECHANISM: run dperm's objective_perturbation on the data set, audit the
    constants its result records and add its outputs to the f's.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for d in (1, 3):
        if d == 1:
            n = 10
            X, y = designed_1d(R)
        else:
            n = 20
            X = rows_in_ball(rng, n, d, R)
            X[0] *= R / np.linalg.norm(X[0])
            y = rng.choice([-1.0, 1.0], n)
        alpha = _alpha_for(loss, h, R, n, q)
        extra_f = np.empty((0, d))
        if constants is MECHANISM:
            with warnings.catch_warnings():
                # a few batched fits may stall near 1e-9; irrelevant to where f lies
                warnings.simplefilter("ignore", ConvergenceWarning)
                fit = objective_perturbation(X, y, loss=loss, alpha=alpha, epsilon=eps, h=h,
                                             data_norm=R, n_draws=1500, random_state=seed + 5)
            eps_p, delta, beta = map(float, (fit.epsilon_prime, fit.extra_l2, fit.beta))
            extra_f = fit.coef
        else:
            eps_p, delta, beta = constants(n, alpha, eps, get_loss(loss).curvature(h, R), R)
        lam = n * (alpha + delta)
        U = y[:, None] * X
        audit = _Audit(loss, h, lam, beta)
        u0 = U[0]
        if d == 1:
            cands = [np.array([t * R]) for t in np.linspace(-1, 1, 41)]
            F = np.concatenate([np.linspace(-8, 8, 3201), _kink_margins(loss, h),
                                -_kink_margins(loss, h)])[:, None] / R
        else:
            fstar = _solve(X, y, loss, alpha + delta, h)
            fhat = fstar / np.linalg.norm(fstar)
            cands = [-u0, R * fhat, -R * fhat, np.zeros(d)]
            for _ in range(30):
                v = rng.standard_normal(d)
                cands.append(R * v / np.linalg.norm(v))
            F = np.concatenate([
                fstar[None, :],
                _targeted_f(u0, _kink_margins(loss, h), R, rng, 1500, 2.0 / R),
                _targeted_f(u0, -_kink_margins(loss, h), R, rng, 500, 2.0 / R),
                rng.standard_normal((500, d)) * (4.0 / R),
            ])
        F = np.concatenate([F, extra_f])
        for u2 in cands:
            U2 = U.copy()
            U2[0] = u2
            audit.scan(U, U2, F)
        audit.refine(R)
        out[d] = {"max_loss": audit.max_loss, "eps_prime": eps_p, "delta": delta,
                  "beta": beta, "alpha": alpha}
    return max(v["max_loss"] for v in out.values()), out


# the observed maxima must reach these (fractions of eps), or the audit has no teeth;
# logistic cannot get closer: |phi'(z) + phi'(-z)| = 1 caps the noise term at eps'/2 in 1-d
POWER_FLOOR = {"logistic": 0.45, "huber": 0.7, "smooth_hinge": 0.6}
BRANCH_Q = {"delta0": 0.2, "delta_pos": 100.0}


@pytest.mark.parametrize("branch", ["delta0", "delta_pos"])
@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("loss,h", LOSS_H)
def test_objective_perturbation_exact_privacy_loss(loss, h, R, branch):
    q = BRANCH_Q[branch]
    worst, info = audit_objective(loss, h, R, q, MECHANISM)
    assert worst <= EPS + 1e-9, (
        f"objective perturbation ({loss}, R={R}, {branch}) has privacy loss {worst:.6f} "
        f"> eps = {EPS} at some output: {info}")
    for v in info.values():
        assert (v["delta"] == 0) == (branch == "delta0"), f"wrong branch for {branch}: {info}"
    assert worst > POWER_FLOOR[loss] * EPS, f"audit too weak: max loss {worst:.4f}, {info}"
    if loss == "huber":
        # on the 1-d design the sup is known: at margin 1 - h the changed row has
        # |phi'| = 1 on both sides (noise term 2 R beta) and phi'' = c on one side only
        # (Jacobian term log(1 + c R^2 / lam)); the audit must find it
        v = info[1]
        lam = 10 * (v["alpha"] + v["delta"])
        sup = 2 * R * v["beta"] + np.log1p(get_loss(loss).curvature(h, R) / lam)
        assert abs(v["max_loss"] - sup) < 1e-3, (
            f"audit missed the known supremum {sup:.6f} (found {v['max_loss']:.6f}): the "
            f"search lost power, or the constants differ from docs/specification.md: {v}")


@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("loss,h", LOSS_H)
def test_optimality_convention_matches_solver(loss, h, R):
    # b_D(f) and A_D(f) above must describe what erm.minimize solves: with linear = b_D(f)
    # and extra_l2 = Delta, f is a stationary point, and n * Hessian = A_D(f)
    rng = np.random.default_rng(3)
    n, d = 20, 3
    X = rows_in_ball(rng, n, d, R)
    y = rng.choice([-1.0, 1.0], n)
    alpha, delta = 0.05, 0.3
    lam = n * (alpha + delta)
    U = y[:, None] * X
    F = rng.standard_normal((8, d)) / R
    b, logdet = noise_and_logdet(U, F, loss, h, lam)
    for f, bf, ld in zip(F, b, logdet):
        _, g = erm.objective(X, y, f, loss=loss, alpha=alpha, h=h, linear=bf, extra_l2=delta)
        assert np.linalg.norm(g) < 1e-10 * (1 + np.linalg.norm(bf)), g
        H = erm.hessian(X, y, f, loss=loss, alpha=alpha, h=h, extra_l2=delta)
        assert np.isclose(np.linalg.slogdet(n * H)[1], ld, rtol=0, atol=1e-10)


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("branch", ["delta0", "delta_pos"])
@pytest.mark.parametrize("R", RS)
def test_mechanism_noise_recovered_from_outputs(R, branch, d):
    # the audit's model of the mechanism, checked against the mechanism itself: the
    # noise recovered from its outputs, b_D(f), must follow exp(-beta ||b||) with the
    # recorded constants (catches a dropped Delta, a wrong beta or a non-solved output)
    loss, h = "huber", 0.5
    rng = np.random.default_rng(17)
    if d == 1:
        X, y = designed_1d(R)
    else:
        X = rows_in_ball(rng, 20, d, R)
        y = rng.choice([-1.0, 1.0], 20)
    n = X.shape[0]
    alpha = _alpha_for(loss, h, R, n, BRANCH_Q[branch])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = objective_perturbation(X, y, loss=loss, alpha=alpha, epsilon=EPS, h=h,
                                     data_norm=R, n_draws=4000, random_state=23)
    eps_p, delta, beta = real_constants(n, alpha, EPS, get_loss(loss).curvature(h, R), R)
    assert np.allclose([fit.epsilon_prime, fit.extra_l2, fit.beta], [eps_p, delta, beta], rtol=1e-12)
    b, _ = noise_and_logdet(y[:, None] * X, fit.coef, loss, h, n * (alpha + delta))
    p = stats.kstest(np.linalg.norm(b, axis=1), "gamma", args=(d, 0, 1 / beta)).pvalue
    assert p > 1e-4, f"noise recovered from the outputs is not Gamma({d}, 1/beta): p = {p:.2e}"


# =============================================================== (c) power
# (bug, R, q): q = 2 makes the Jacobian term large (curvature bugs show there); q = 0.2
# leaves eps' large (noise-scale bugs show there). The real constants pass these same
# audits: q = 0.2 is the Delta = 0 case of test (b), and q = 2 is its Delta > 0 case
# (in that branch only Lambda + Delta = c R^2 / (n (e^{eps/4} - 1)) enters, whatever Lambda).
BROKEN = [
    ("no_curvature", broken_no_curvature, 1.0, 2.0),
    ("no_curvature", broken_no_curvature, 5.0, 2.0),
    ("c_times_R", broken_c_times_R, 5.0, 2.0),
    ("beta_doubled", broken_beta_doubled, 1.0, 0.2),
    ("beta_doubled", broken_beta_doubled, 5.0, 0.2),
    ("beta_without_R", broken_beta_without_R, 5.0, 0.2),
]


def _broken_cases():
    for loss, h in LOSS_H:
        for name, fn, R, q in BROKEN:
            # logistic: |phi'(z)+phi'(-z)| = 1 and phi'' is small where |phi'| is near 1,
            # so even halved noise keeps the exact loss below eps; no f exposes it
            if loss == "logistic" and name == "beta_doubled":
                continue
            yield pytest.param(loss, h, fn, R, q, id=f"{loss}-{name}-R{R:g}")


@pytest.mark.parametrize("loss,h,constants,R,q", list(_broken_cases()))
def test_broken_constants_are_caught(loss, h, constants, R, q):
    worst, info = audit_objective(loss, h, R, q, constants)
    assert worst > EPS * 1.05, (
        f"the white-box audit did not catch {constants.__name__} ({loss}, R={R}): "
        f"max loss {worst:.4f} <= eps = {EPS}; {info}")
