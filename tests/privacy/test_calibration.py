"""Tests of dperm.privacy.calibration against independent numerical evaluations.

Each test computes the privacy quantity a second way (quadrature, Monte Carlo over the
corner privacy losses, a 1-d mechanism whose densities are written out, a dp_accounting
RDP conversion) and compares; several also run a deliberately broken variant (noise
halved) to show that the comparison can fail.
"""
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dperm.privacy import calibration as C
from dperm.privacy.calibration import _two_sided_a

ADULT = dict(epsilon=0.1, delta=1.0 / 45222 ** 2, n=36178, alpha=1e-3, data_norm=1.0,
             curvature=0.25)


# ------------------------------------------------------------------ independent evaluations
def quad_gaussian_delta(eps, sens, sigma):
    """int (p - e^eps q)_+ for P = N(0, sigma^2), Q = N(sens, sigma^2), by quadrature."""
    x_star = (sens ** 2 / 2 - eps * sigma ** 2) / sens      # p >= e^eps q iff x <= x_star
    f = lambda x: stats.norm.pdf(x, 0, sigma) - math.exp(eps) * stats.norm.pdf(x, sens, sigma)
    lo = min(x_star, 0.0) - 40 * sigma
    val, _ = integrate.quad(f, lo, x_star, epsabs=0, epsrel=1e-11, limit=200,
                            points=[0.0, sens] if lo < 0 < x_star else None)
    return val


def quad_two_sided(e, a):
    """E[(1 - exp(e - a^2/2 - a|Z|))_+] by quadrature over z >= 0."""
    z0 = max((e - a * a / 2) / a, 0.0)
    f = lambda z: 2 * stats.norm.pdf(z) * (1 - math.exp(e - a * a / 2 - a * z))
    val, _ = integrate.quad(f, z0, z0 + 40, epsabs=0, epsrel=1e-11, limit=200)
    return val


def corner_losses(b, corners, sigma):
    """(2 b.v + ||v||^2) / (2 sigma^2) for every corner v: shape (n_samples, n_corners)."""
    return (2 * b @ corners.T + np.sum(corners ** 2, axis=1)) / (2 * sigma ** 2)


def mc_delta(eps, losses):
    """Monte Carlo mean and standard error of (1 - e^{eps - L})_+."""
    v = np.maximum(-np.expm1(eps - losses), 0.0)
    return v.mean(), v.std() / math.sqrt(v.size)


def unit(rng, d):
    v = rng.standard_normal(d)
    return v / np.linalg.norm(v)


# ------------------------------------------------------------------ Gaussian mechanism
@pytest.mark.parametrize("eps,sens,sigma", [(0.1, 1.0, 1.0), (1.0, 1.0, 1.0), (0.5, 2.0, 7.0),
                                            (3.0, 1.0, 0.5), (0.01, 0.3, 2.0), (1.0, 1.0, 0.2)])
def test_gaussian_delta_matches_quadrature(eps, sens, sigma):
    assert C.gaussian_delta(eps, sens, sigma) == pytest.approx(
        quad_gaussian_delta(eps, sens, sigma), rel=1e-8, abs=1e-300)


def test_gaussian_delta_vectorised_and_tiny_values():
    eps = np.array([0.0, 0.1, 1.0, 5.0])
    vec = C.gaussian_delta(eps, 1.0, 3.0)
    assert vec.shape == (4,)
    np.testing.assert_allclose(vec, [C.gaussian_delta(e, 1.0, 3.0) for e in eps], rtol=0)
    assert vec[0] == pytest.approx(2 * stats.norm.cdf(1 / 6) - 1, rel=1e-12)   # TV at eps = 0
    assert np.all(np.diff(vec) < 0)
    # far tail: relative accuracy where direct subtraction would give 0
    tiny = C.gaussian_delta(1.0, 1.0, 20.0)
    assert 0 < tiny < 1e-30
    assert tiny == pytest.approx(quad_gaussian_delta(1.0, 1.0, 20.0), rel=1e-6)


@pytest.mark.parametrize("eps,delta,sens", [(0.1, 1e-5, 1.0), (0.5, 1e-9, 2.0), (1.0, 1e-3, 0.1),
                                            (4.0, 1e-6, 1.0), (0.1, 1 / 45222 ** 2, 2.0)])
def test_analytic_gaussian_sigma(eps, delta, sens):
    sigma = C.analytic_gaussian_sigma(eps, delta, sens)
    assert C.gaussian_delta(eps, sens, sigma) <= delta                     # exactly, in float
    assert C.gaussian_delta(eps, sens, sigma * (1 - 1e-9)) > delta         # smallest
    assert quad_gaussian_delta(eps, sens, sigma) == pytest.approx(delta, rel=1e-7)
    assert quad_gaussian_delta(eps, sens, sigma / 2) > delta               # broken variant
    if eps < 1:
        classical = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
        assert sigma < classical


# ------------------------------------------------------------------ objective, binary
def test_two_sided_tail_matches_quadrature():
    # eps' above a^2/2, below it, and negative (epsilon < epsilon_det)
    sigma, R, lam, c = 2.0, 1.0, 10.0, 0.5
    e_det = math.log1p(c / lam)
    a = R / sigma
    for eps in [0.0, 0.01, e_det, e_det + a * a / 4, e_det + a * a / 2, 0.5, 1.0, 3.0]:
        got = C.objective_gaussian_delta(eps, sigma, data_norm=R, curvature=c, lambda_total=lam,
                                         neighbouring="add_remove")
        assert got == pytest.approx(quad_two_sided(eps - e_det, a), rel=1e-8, abs=1e-15)
        if eps - e_det >= a * a / 2:
            assert got == pytest.approx(2 * C.gaussian_delta(eps - e_det, R, sigma), rel=1e-12)


def test_add_remove_monte_carlo_over_the_sign():
    """L <= eps_det + max_{s=+-1} (2 s b.x + ||x||^2)/(2 sigma^2), b ~ N(0, sigma^2 I)."""
    rng = np.random.default_rng(0)
    sigma, R, lam, c, d = 1.5, 1.0, 5.0, 0.25, 4
    x = R * unit(rng, d)
    b = sigma * rng.standard_normal((400_000, d))
    L = math.log1p(c / lam) + corner_losses(b, np.stack([x, -x]), sigma).max(axis=1)
    for eps in [0.2, 0.6, 1.2]:
        m, se = mc_delta(eps, L)
        bound = C.objective_gaussian_delta(eps, sigma, data_norm=R, curvature=c,
                                           lambda_total=lam, neighbouring="add_remove")
        assert abs(m - bound) < 5 * se + 1e-12      # ||x|| = R: the bound is the exact tail


def test_replace_one_monte_carlo_four_corners():
    rng = np.random.default_rng(1)
    sigma, R, lam, c, d = 2.0, 1.0, 5.0, 0.25, 5
    e_det = math.log1p(c / lam)
    b = sigma * rng.standard_normal((300_000, d))
    kw = dict(data_norm=R, curvature=c, lambda_total=lam, neighbouring="replace_one")
    for trial in range(4):
        x = R * unit(rng, d)
        xp = -x if trial == 0 else R * unit(rng, d)
        corners = np.stack([x - xp, -(x - xp), x + xp, -(x + xp)])
        L = e_det + corner_losses(b, corners, sigma).max(axis=1)
        for eps in [0.5, 1.0, 2.0]:
            m, se = mc_delta(eps, L)
            bound = C.objective_gaussian_delta(eps, sigma, **kw)
            assert m <= bound + 5 * se
            if trial == 0:       # x' = -x is the u = 0 end of the split: MC = T(eps'; 2R/sigma)
                end = _two_sided_a(eps - e_det, 2 * R / sigma)
                assert abs(m - end) < 5 * se + 1e-12
                assert bound >= end


@pytest.mark.parametrize("eps,sigma", [(1.0, 2.0), (0.05, 0.4), (0.3, 1.0), (-0.1, 1.0)])
def test_replace_one_max_over_split_is_an_upper_bound(eps, sigma):
    """The returned value is >= the corner-union sum at every split u = t/(4R^2) (checked by
    quadrature on a coarse grid and in closed form on a grid 5x finer), and close to the max."""
    R, lam, c = 1.0, 50.0, 0.25
    e_p = eps - math.log1p(c / lam)
    got = C.objective_gaussian_delta(eps, sigma, data_norm=R, curvature=c, lambda_total=lam,
                                     neighbouring="replace_one")
    if e_p > 0:
        for u in np.linspace(0.01, 0.99, 9):
            val = (quad_two_sided(e_p, 2 * R * math.sqrt(u) / sigma)
                   + quad_two_sided(e_p, 2 * R * math.sqrt(1 - u) / sigma))
            assert got >= min(val, 1.0) * (1 - 1e-8)
    u = np.linspace(0, 1, 10_241)
    dense = np.minimum(_two_sided_a(e_p, 2 * R * np.sqrt(u) / sigma)
                       + _two_sided_a(e_p, 2 * R * np.sqrt(1 - u) / sigma), 1.0)
    assert got >= dense.max() * (1 - 1e-12)
    assert got <= dense.max() * (1 + 2e-3) + 1e-12


def _one_d_densities(w, sigma, R, lam, h):
    """Densities in w = lam * theta of the 1-d mechanism argmin lam/2 t^2 + l(R t) + b t.

    P: the data set without the row (b = -w), Q: with the row, l the Huber-like loss with
    l'(u) = clip(u/h, -1, 1) (|l'| <= 1, l'' <= 1/h), so b = -(w + R l'(R w / lam)).
    """
    u = R * w / lam
    g = np.clip(u / h, -1, 1)
    gp = (np.abs(u) < h) / h
    p = stats.norm.pdf(w, 0, sigma)
    q = stats.norm.pdf(w + R * g, 0, sigma) * (1 + R * R * gp / lam)
    return p, q


def _hockey(eps, sigma, R, lam, h, reverse=False):
    def f(w):
        p, q = _one_d_densities(w, sigma, R, lam, h)
        if reverse:
            p, q = q, p
        return max(p - math.exp(eps) * q, 0.0)
    k = h * lam / R
    span = 40 * sigma + 2 * R
    parts = [(-span, -k), (-k, 0.0), (0.0, k), (k, span)]
    return sum(integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-10, limit=400)[0]
               for lo, hi in parts)


def test_one_dimensional_worst_case_attains_the_bound():
    """The saturated loss (l' = +-1 almost everywhere, curvature -> 0 a.e.) attains
    T(eps; R/sigma) = 2 gaussian_delta in the direction without -> with the row, where the
    log-det term is <= 0; and both directions stay under the bound with the real curvature."""
    R, lam = 1.0, 1.0
    sigma = 1.0
    for eps in [0.5, 1.0, 2.0]:
        bound0 = C.objective_gaussian_delta(eps, sigma, data_norm=R, curvature=0.0,
                                            lambda_total=lam, neighbouring="add_remove")
        true = _hockey(eps, sigma, R, lam, h=1e-4)
        assert true <= bound0 * (1 + 1e-7)
        assert true == pytest.approx(bound0, rel=0.02)
        assert bound0 == pytest.approx(2 * C.gaussian_delta(eps, R, sigma), rel=1e-12)
    # a smooth loss, both directions, with the curvature bound 1/h it really has
    h = 0.5
    for eps in [0.5, 1.0, 2.0]:
        bound = C.objective_gaussian_delta(eps, sigma, data_norm=R, curvature=R * R / h,
                                           lambda_total=lam, neighbouring="add_remove")
        assert _hockey(eps, sigma, R, lam, h) <= bound
        assert _hockey(eps, sigma, R, lam, h, reverse=True) <= bound
    # calibrated sigma meets the target on the worst case; half of it does not
    target = 1e-3
    cal = C.objective_gaussian_calibration(1.0, target, n=100, alpha=0.01, data_norm=R,
                                           curvature=0.0, neighbouring="add_remove")
    assert cal.extra_l2 == 0 and cal.epsilon_det == 0 and cal.lambda_total == pytest.approx(1.0)
    assert _hockey(1.0, cal.sigma, R, 1.0, h=1e-5) <= target
    assert _hockey(1.0, cal.sigma / 2, R, 1.0, h=1e-5) > target


def test_log_det_bounds():
    rng = np.random.default_rng(2)
    d, lam, c, R = 6, 3.0, 0.25, 1.0
    for _ in range(200):
        A = rng.standard_normal((d, 10))
        M = A @ A.T * rng.uniform(0, 1) + lam * np.eye(d)     # M >= lam I
        x, xp = R * unit(rng, d), R * unit(rng, d) * rng.uniform(0, 1)
        s, sp = rng.uniform(0, c, 2)
        ld = (np.linalg.slogdet(M + s * np.outer(x, x))[1]
              - np.linalg.slogdet(M + sp * np.outer(xp, xp))[1])
        assert ld <= math.log1p(c * R * R / lam) + 1e-12
    # multinomial: H = (diag p - p p^T) kron x x^T; attained at p uniform, M = lam I
    for K in [3, 5]:
        e_det = (K - 1) * math.log1p(R * R / (K * lam))
        for trial in range(100):
            p = np.full(K, 1 / K) if trial == 0 else rng.dirichlet(np.ones(K) * 0.5)
            x = R * unit(rng, d)
            H = np.kron(np.diag(p) - np.outer(p, p), np.outer(x, x))
            A = rng.standard_normal((d * K, 3))
            M = lam * np.eye(d * K) + (0 if trial == 0 else 1) * A @ A.T
            ld = np.linalg.slogdet(M + H)[1] - np.linalg.slogdet(M)[1]
            assert ld <= e_det + 1e-12
            if trial == 0:
                assert ld == pytest.approx(e_det, rel=1e-10)
        got = C.objective_gaussian_delta(0.0, 1.0, data_norm=R, lambda_total=lam,
                                         neighbouring="add_remove", n_classes=K)
        # at eps = 0: eps' = -e_det, zero corner gives 1 - e^{-e_det}, plus K-1 corners
        assert got == pytest.approx(min(1.0, -math.expm1(-e_det) + (K - 1) * C.gaussian_delta(
            -e_det, math.sqrt(2) * R, 1.0)), rel=1e-12)


# ------------------------------------------------------------------ objective, binary, loss' <= 0
# docs/privacy_analysis.md section 3.3 (profile) and section 4 (RDP): nonincreasing_loss=True.
# The binary losses of docs/specification.md as functions of the margin u = y f.x: first and
# second derivative.
def _huber_derivatives(h):
    """Huber (docs/specification.md): loss'(u) = -1 (u < 1-h), -(1+h-u)/(2h) (|1-u| <= h), 0 (u > 1+h)."""
    return (lambda u: -np.clip((1 + h - u) / (2 * h), 0.0, 1.0),
            lambda u: (np.abs(1 - u) <= h) / (2 * h), [1 - h, 1 + h])


def _logistic_derivatives():
    """loss'(u) = -1/(1 + e^u), loss''(u) = e^u/(1 + e^u)^2 <= 1/4."""
    return (lambda u: -stats.logistic.cdf(-u),
            lambda u: stats.logistic.cdf(u) * stats.logistic.cdf(-u), [])


def _two_signed_derivatives(h):
    """NOT nonincreasing: loss'(u) = clip(u/h, -1, 1), i.e. loss' = +1 for u > h."""
    return (lambda u: np.clip(u / h, -1.0, 1.0), lambda u: (np.abs(u) < h) / h, [-h, h])


def _one_d_pq(loss, w, sigma, R, lam):
    """Densities in w = lam * theta of argmin lam/2 t^2 [+ loss(R t)] + b t, b ~ N(0, sigma^2):
    P without the row (w = -b), Q with the row x = R, y = +1 (b = -(w + R loss'(R w/lam)),
    Jacobian 1 + R^2 loss''/lam)."""
    d1, d2, _ = loss
    u = R * w / lam
    p = stats.norm.pdf(w, 0, sigma)
    q = stats.norm.pdf(w + R * d1(u), 0, sigma) * (1 + R * R * d2(u) / lam)
    return p, q


def _one_d_pieces(loss, sigma, R, lam, extra=()):
    span = 40 * sigma + 2 * R
    pts = sorted({-span, span, *(k * lam / R for k in loss[2]), *extra})
    return list(zip(pts[:-1], pts[1:]))


def _one_d_hockey(loss, eps, sigma, R, lam, reverse=False):
    """True delta(eps) of the 1-d mechanism, without -> with the row (reverse: with -> without)."""
    def f(w):
        p, q = _one_d_pq(loss, w, sigma, R, lam)
        if reverse:
            p, q = q, p
        return max(p - math.exp(eps) * q, 0.0)
    return sum(integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-10, limit=400)[0]
               for lo, hi in _one_d_pieces(loss, sigma, R, lam))


def _one_d_renyi(loss, order, sigma, R, lam):
    """True Renyi divergence D_order(P || Q) of the 1-d mechanism (without -> with the row)."""
    d1, d2, _ = loss

    def f(w):      # p^order q^(1-order) in log space (both tails underflow)
        u = R * w / lam
        log_p = stats.norm.logpdf(w, 0, sigma)
        log_q = stats.norm.logpdf(w + R * d1(u), 0, sigma) + math.log1p(R * R * d2(u) / lam)
        return math.exp(order * log_p + (1 - order) * log_q)
    peak = -(order - 1) * R          # where p^order q^(1-order) peaks on the saturated side
    val = sum(integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-11, limit=400)[0]
              for lo, hi in _one_d_pieces(loss, sigma, R, lam, extra=(peak,)))
    return math.log(val) / (order - 1)


NI = dict(nonincreasing_loss=True)


def test_nonincreasing_one_dimensional_mechanism_attains_the_bound():
    """add_remove, loss' <= 0: the hinge-like Huber (h -> 0: loss' = -1 below the kink, 0 above)
    attains gd(eps; R/sigma) without -> with the row (log-det <= 0 in that order, so the
    curvature bound 0 applies); the smooth Huber and the logistic loss stay below the bound in
    both orders with their real curvature; and a loss with loss' = +1 on part of the line
    breaks the bound (factor 2), so the assumption is what buys the factor."""
    R, lam, sigma = 1.0, 1.0, 1.0
    kw = dict(data_norm=R, lambda_total=lam, neighbouring="add_remove")
    hinge, two_signed = _huber_derivatives(1e-4), _two_signed_derivatives(1e-4)
    for eps in [0.1, 0.5, 1.0, 2.0]:
        bound = C.objective_gaussian_delta(eps, sigma, curvature=0.0, **kw, **NI)
        assert bound == pytest.approx(C.gaussian_delta(eps, R, sigma), rel=1e-12)
        true = _one_d_hockey(hinge, eps, sigma, R, lam)
        assert true <= bound * (1 + 1e-7)
        assert true == pytest.approx(bound, rel=0.01)
        # broken variant: two-signed gradient coefficient; its true tail is the general
        # (two-sided) T(eps; a), about twice the nonincreasing bound
        broken = _one_d_hockey(two_signed, eps, sigma, R, lam)
        assert broken > 1.5 * bound
        assert broken <= C.objective_gaussian_delta(eps, sigma, curvature=0.0, **kw) * (1 + 1e-7)
    for loss, curv in [(_huber_derivatives(0.5), 1 / (2 * 0.5)), (_logistic_derivatives(), 0.25)]:
        for eps in [0.0, 0.3, 1.0, 2.0]:
            bound = C.objective_gaussian_delta(eps, sigma, curvature=curv * R * R, **kw, **NI)
            assert _one_d_hockey(loss, eps, sigma, R, lam) <= bound
            assert _one_d_hockey(loss, eps, sigma, R, lam, reverse=True) <= bound
    # calibrated for loss' <= 0: meets the target on the hinge, half of it does not, and the
    # same sigma is not enough for the two-signed loss
    target = 1e-3
    cal = C.objective_gaussian_calibration(1.0, target, n=100, alpha=0.01, data_norm=R,
                                           curvature=0.0, neighbouring="add_remove", **NI)
    assert cal.lambda_total == pytest.approx(lam) and cal.epsilon_det == 0
    hinge = _huber_derivatives(1e-5)
    assert _one_d_hockey(hinge, 1.0, cal.sigma, R, lam) <= target
    assert _one_d_hockey(hinge, 1.0, cal.sigma, R, lam) == pytest.approx(target, rel=0.01)
    assert _one_d_hockey(hinge, 1.0, cal.sigma / 2, R, lam) > target
    assert _one_d_hockey(_two_signed_derivatives(1e-5), 1.0, cal.sigma, R, lam) > 1.5 * target


def _ni_corners(x, y, xp, yp):
    """Corners of the gradient difference for one-signed gradients (docs 3.3):
    0, w1 = -y x, w2 = y' x', w1 + w2 (replace_one)."""
    w1, w2 = -y * x, yp * xp
    return np.stack([np.zeros_like(x), w1, w2, w1 + w2])


def test_nonincreasing_monte_carlo_corners():
    rng = np.random.default_rng(5)
    sigma, R, lam, c, d = 2.0, 1.0, 5.0, 0.25, 5
    e_det = math.log1p(c / lam)
    b = sigma * rng.standard_normal((200_000, d))
    kw = dict(data_norm=R, curvature=c, lambda_total=lam)
    # add_remove: corners 0 and w, ||w|| = R: the bound is the exact tail for eps' >= 0
    x, y = R * unit(rng, d), rng.choice([-1.0, 1.0])
    L = e_det + corner_losses(b, np.stack([np.zeros(d), -y * x]), sigma).max(axis=1)
    for eps in [0.2, 0.6, 1.2]:
        m, se = mc_delta(eps, L)
        bound = C.objective_gaussian_delta(eps, sigma, neighbouring="add_remove", **kw, **NI)
        assert abs(m - bound) < 5 * se + 1e-12
    # replace_one: random geometry stays below; w1 = w2 (x' = -x y/y') is the worst case,
    # where the tail is exactly gd(eps'; 2a) and the bound adds only 2 gd(eps'; a)
    for trial in range(5):
        x, xp = R * unit(rng, d), R * unit(rng, d)
        y, yp = rng.choice([-1.0, 1.0], 2)
        if trial == 0:
            xp = -x * (y / yp)
        L = e_det + corner_losses(b, _ni_corners(x, y, xp, yp), sigma).max(axis=1)
        for eps in [0.5, 1.0, 2.0, 2.5]:
            m, se = mc_delta(eps, L)
            bound = C.objective_gaussian_delta(eps, sigma, neighbouring="replace_one", **kw, **NI)
            assert m <= bound + 5 * se
            if trial == 0:
                two_a = C.gaussian_delta(eps - e_det, 2 * R, sigma)
                assert abs(m - two_a) < 5 * se
                assert bound == pytest.approx(two_a + 2 * C.gaussian_delta(eps - e_det, R, sigma),
                                              rel=1e-12)
                if eps >= 2.0:
                    assert m == pytest.approx(bound, rel=0.03)
    # broken variant: two-signed coefficients, x' = -x, corners +-(x - x') = +-2x and 0;
    # the true tail T(eps'; 2a) ~ 2 gd(eps'; 2a) is above the nonincreasing bound
    x = R * unit(rng, d)
    L = e_det + corner_losses(b, np.stack([2 * x, -2 * x, np.zeros(d)]), sigma).max(axis=1)
    for eps in [1.0, 2.0, 2.5]:
        m, se = mc_delta(eps, L)
        bound = C.objective_gaussian_delta(eps, sigma, neighbouring="replace_one", **kw, **NI)
        assert m > 1.5 * bound + 5 * se
        assert m <= C.objective_gaussian_delta(eps, sigma, neighbouring="replace_one", **kw) \
            + 5 * se


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_nonincreasing_profile_below_general_and_closed_form(neighbouring):
    """For eps' >= 0 the nonincreasing bound is the stated closed form and never above the
    general bound (both are valid for loss' <= 0); for eps < eps_det the zero corner adds
    1 - e^{eps'}."""
    R, lam, c = 1.0, 10.0, 0.25
    e_det = math.log1p(c / lam)
    kw = dict(data_norm=R, curvature=c, lambda_total=lam, neighbouring=neighbouring)
    eps = np.linspace(-0.5, 4.0, 46)
    for sigma in [0.3, 1.0, 3.0, 20.0]:
        ni = C.objective_gaussian_delta(eps, sigma, **kw, **NI)
        gen = C.objective_gaussian_delta(eps, sigma, **kw)
        ep = eps - e_det
        gd1 = np.array([C.gaussian_delta(e, R, sigma) for e in ep])
        gd2 = np.array([C.gaussian_delta(e, 2 * R, sigma) for e in ep])
        want = np.maximum(-np.expm1(ep), 0) + (gd1 if neighbouring == "add_remove"
                                               else 2 * gd1 + gd2)
        np.testing.assert_allclose(ni, np.minimum(want, 1.0), rtol=1e-12, atol=1e-300)
        pos = ep >= 0
        assert np.all(ni[pos] <= gen[pos] * (1 + 1e-12))
        assert ni.shape == eps.shape and isinstance(
            C.objective_gaussian_delta(0.5, sigma, **kw, **NI), float)


@pytest.mark.parametrize("neighbouring,sigma_general,sigma_ni",
                         [("replace_one", 112.88, 110.29), ("add_remove", 56.44, 55.14)])
def test_nonincreasing_calibration(neighbouring, sigma_general, sigma_ni):
    """Adult setting (docs section 9): sigma 112.88 -> 110.29 (replace_one), 56.44 -> 55.14
    (add_remove).  Each sigma meets the target under its own bound and is the smallest; the
    nonincreasing sigma would NOT meet the target under the general bound; sigma/2 fails."""
    p = dict(ADULT)
    eps, delta = p.pop("epsilon"), p.pop("delta")
    gen = C.objective_gaussian_calibration(eps, delta, neighbouring=neighbouring, **p)
    ni = C.objective_gaussian_calibration(eps, delta, neighbouring=neighbouring, **p, **NI)
    assert gen.sigma == pytest.approx(sigma_general, abs=5e-3)
    assert ni.sigma == pytest.approx(sigma_ni, abs=5e-3)
    assert ni.sigma < gen.sigma
    assert (ni.extra_l2, ni.epsilon_det, ni.lambda_total) == \
        (gen.extra_l2, gen.epsilon_det, gen.lambda_total)
    kw = dict(data_norm=1.0, curvature=0.25, lambda_total=ni.lambda_total,
              neighbouring=neighbouring)
    assert C.objective_gaussian_delta(eps, ni.sigma, **kw, **NI) <= delta
    assert C.objective_gaussian_delta(eps, ni.sigma * (1 - 1e-9), **kw, **NI) > delta
    assert C.objective_gaussian_delta(eps, ni.sigma / 2, **kw, **NI) > delta
    assert C.objective_gaussian_delta(eps, gen.sigma, **kw) <= delta
    assert C.objective_gaussian_delta(eps, ni.sigma, **kw) > delta     # the flag matters
    # independent: quadrature of the corner union bound (eps' > 0, no zero-corner term)
    ep = eps - ni.epsilon_det
    if neighbouring == "add_remove":   # gd(eps'; R/sigma) alone: the analytic Gaussian sigma
        assert ni.sigma == pytest.approx(C.analytic_gaussian_sigma(ep, delta, 1.0), rel=1e-10)
        assert quad_gaussian_delta(ep, 1.0, ni.sigma) <= delta * (1 + 1e-7)
    else:
        q = 2 * quad_gaussian_delta(ep, 1.0, ni.sigma) + quad_gaussian_delta(ep, 2.0, ni.sigma)
        assert q == pytest.approx(delta, rel=1e-7)
        assert 2 * quad_gaussian_delta(ep, 1.0, ni.sigma / 2) \
            + quad_gaussian_delta(ep, 2.0, ni.sigma / 2) > delta
    # other settings: smaller sigma, own target met, half fails
    for e2, d2, n, alpha in [(1.0, 1e-5, 1000, 1e-4), (0.5, 1e-9, 100, 1e-6), (2.0, 1e-3, 50, 1.0)]:
        kw2 = dict(n=n, alpha=alpha, data_norm=1.0, curvature=0.25, neighbouring=neighbouring)
        g2 = C.objective_gaussian_calibration(e2, d2, **kw2)
        n2 = C.objective_gaussian_calibration(e2, d2, **kw2, **NI)
        assert n2.sigma < g2.sigma
        dk = dict(data_norm=1.0, curvature=0.25, lambda_total=n2.lambda_total,
                  neighbouring=neighbouring)
        assert C.objective_gaussian_delta(e2, n2.sigma, **dk, **NI) <= d2
        assert C.objective_gaussian_delta(e2, n2.sigma / 2, **dk, **NI) > d2
    # AMP passes the flag to its objective part
    amp_kw = dict(n=5000, alpha=1e-4, data_norm=1.0, curvature=0.25, neighbouring=neighbouring,
                  grad_tol=1e-7)
    amp_ni = C.amp_calibration(0.3, 1e-7, **amp_kw, **NI)
    amp_gen = C.amp_calibration(0.3, 1e-7, **amp_kw)
    ref = C.objective_gaussian_calibration(amp_ni.epsilon_objective, amp_ni.delta_objective,
                                           n=5000, alpha=1e-4, data_norm=1.0, curvature=0.25,
                                           neighbouring=neighbouring, **NI)
    assert amp_ni.sigma_objective == ref.sigma < amp_gen.sigma_objective
    assert amp_ni.sigma_output == amp_gen.sigma_output


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_nonincreasing_rdp(neighbouring):
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
    orders = np.concatenate([1 + np.geomspace(1e-3, 1, 60), np.geomspace(2.01, 2e5, 600)])
    p = dict(ADULT)
    eps, delta = p.pop("epsilon"), p.pop("delta")
    cal = C.objective_gaussian_calibration(eps, delta, neighbouring=neighbouring, **p, **NI)
    kw = dict(data_norm=1.0, curvature=0.25, lambda_total=cal.lambda_total,
              neighbouring=neighbouring)
    rdp = C.objective_gaussian_rdp(orders, cal.sigma, **kw, **NI)
    rdp_gen = C.objective_gaussian_rdp(orders, cal.sigma, **kw)
    assert rdp.shape == orders.shape and np.all(np.isfinite(rdp))
    # closed form: eps_det + log(1 + [2] e^{(o-1) o a^2/2} [+ e^{(o-1) o (2a)^2/2}]) / (o-1)
    a, k = 1.0 / cal.sigma, orders - 1
    terms = [np.zeros_like(k), k * orders * a * a / 2]
    if neighbouring == "replace_one":
        terms = [np.zeros_like(k), math.log(2) + k * orders * a * a / 2,
                 k * orders * 4 * a * a / 2]
    want = cal.epsilon_det + np.logaddexp.reduce(np.stack(terms), axis=0) / k
    np.testing.assert_allclose(rdp, want, rtol=1e-12)
    eps_ni, order = compute_epsilon(orders, rdp, delta)
    eps_gen, _ = compute_epsilon(orders, rdp_gen, delta)
    assert eps * (1 - 1e-9) <= eps_ni <= eps_gen
    assert eps_ni < 1.1 * eps and order < orders[-1]
    # a Gaussian with the largest corner is a lower bound on any valid curve
    a_max = a if neighbouring == "add_remove" else 2 * a
    assert np.all(rdp >= orders * a_max ** 2 / 2 * (1 - 1e-12))


def test_nonincreasing_rdp_against_one_dimensional_mechanism():
    """True Renyi divergence of the 1-d mechanism (quadrature): the hinge-like Huber stays
    below the nonincreasing curve and within its union-bound slack log(2)/(order-1); the
    two-signed loss exceeds it at large orders (broken variant)."""
    R, lam, sigma = 1.0, 1.0, 1.0
    orders = np.array([1.5, 2.0, 5.0, 20.0])
    rdp = C.objective_gaussian_rdp(orders, sigma, data_norm=R, curvature=0.0, lambda_total=lam,
                                   neighbouring="add_remove", **NI)
    hinge, two_signed = _huber_derivatives(1e-4), _two_signed_derivatives(1e-4)
    for o, r in zip(orders, rdp):
        true = _one_d_renyi(hinge, o, sigma, R, lam)
        assert true <= r + 1e-9
        assert true >= r - math.log(2) / (o - 1)
    broken = _one_d_renyi(two_signed, 20.0, sigma, R, lam)
    assert broken > rdp[-1] + 0.01
    assert broken <= C.objective_gaussian_rdp([20.0], sigma, data_norm=R, curvature=0.0,
                                              lambda_total=lam, neighbouring="add_remove")[0] \
        + 1e-9


def test_nonincreasing_flag_only_changes_the_binary_case():
    kw = dict(data_norm=1.0, lambda_total=5.0, n_classes=3)
    for nb in ["add_remove", "replace_one"]:
        assert C.objective_gaussian_delta(1.0, 2.0, neighbouring=nb, **kw, **NI) == \
            C.objective_gaussian_delta(1.0, 2.0, neighbouring=nb, **kw)
        np.testing.assert_array_equal(
            C.objective_gaussian_rdp([2.0, 10.0], 2.0, neighbouring=nb, **kw, **NI),
            C.objective_gaussian_rdp([2.0, 10.0], 2.0, neighbouring=nb, **kw))
        cal_kw = dict(n=1000, alpha=1e-3, data_norm=1.0, neighbouring=nb, n_classes=3)
        assert C.objective_gaussian_calibration(0.5, 1e-6, **cal_kw, **NI) == \
            C.objective_gaussian_calibration(0.5, 1e-6, **cal_kw)
    # numpy booleans are accepted and mean the same
    bkw = dict(data_norm=1.0, curvature=0.25, lambda_total=5.0, neighbouring="replace_one")
    assert C.objective_gaussian_delta(1.0, 2.0, **bkw, nonincreasing_loss=np.True_) == \
        C.objective_gaussian_delta(1.0, 2.0, **bkw, **NI)
    assert C.objective_gaussian_delta(1.0, 2.0, **bkw, nonincreasing_loss=np.False_) == \
        C.objective_gaussian_delta(1.0, 2.0, **bkw)


# ------------------------------------------------------------------ objective, multinomial
def _multinomial_corners(x, y, K):
    """(p - e_y) kron x at the vertices p = e_j (j = 0..K-1; j = y gives 0), flattened."""
    E = np.eye(K)
    return np.stack([np.kron(E[j] - E[y], x) for j in range(K)])


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_multinomial_monte_carlo(neighbouring):
    rng = np.random.default_rng(3)
    K, d, sigma, R, lam = 4, 3, 3.0, 1.0, 20.0
    e_det = (K - 1) * math.log1p(R * R / (K * lam))
    b = sigma * rng.standard_normal((200_000, d * K))
    for trial in range(3):
        x, y = R * unit(rng, d), int(rng.integers(K))
        if neighbouring == "add_remove":
            corners = -_multinomial_corners(x, y, K)          # contains the zero corner
        else:
            xp = -x if trial == 0 else R * unit(rng, d)
            yp = (y + 1) % K
            g, gp = _multinomial_corners(x, y, K), _multinomial_corners(xp, yp, K)
            corners = (gp[None, :, :] - g[:, None, :]).reshape(-1, d * K)
        L = e_det + corner_losses(b, corners, sigma).max(axis=1)
        for eps in [0.5, 1.0, 2.0]:
            m, se = mc_delta(eps, L)
            bound = C.objective_gaussian_delta(eps, sigma, data_norm=R, lambda_total=lam,
                                               neighbouring=neighbouring, n_classes=K)
            assert m <= bound + 5 * se
            if neighbouring == "add_remove":   # same order: the union bound is loose, not absurd
                assert m > 0.1 * bound


@pytest.mark.parametrize("K", [2, 3, 7])
@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_calibration_meets_target_and_half_sigma_fails(K, neighbouring):
    for eps, delta, n, alpha in [(0.1, 1e-6, 36178, 1e-3), (1.0, 1e-5, 1000, 1e-4),
                                 (0.5, 1e-9, 100, 1e-6), (2.0, 1e-3, 50, 1.0)]:
        curv = 0.25 if K == 2 else None
        cal = C.objective_gaussian_calibration(eps, delta, n=n, alpha=alpha, data_norm=1.0,
                                               curvature=curv, neighbouring=neighbouring,
                                               n_classes=K)
        kw = dict(data_norm=1.0, curvature=curv, lambda_total=cal.lambda_total,
                  neighbouring=neighbouring, n_classes=K)
        assert cal.lambda_total == pytest.approx(n * (alpha + cal.extra_l2), rel=1e-15)
        assert cal.extra_l2 >= 0
        assert cal.epsilon_det <= eps / 2 * (1 + 1e-12)
        if cal.extra_l2 > 0:
            assert cal.epsilon_det == pytest.approx(eps / 2, rel=1e-12)
        assert C.objective_gaussian_delta(eps, cal.sigma, **kw) <= delta
        assert C.objective_gaussian_delta(eps, cal.sigma * (1 - 1e-9), **kw) > delta
        assert C.objective_gaussian_delta(eps, cal.sigma / 2, **kw) > delta
        if K == 2 and neighbouring == "add_remove":   # independent: quadrature of the tail
            a = 1.0 / cal.sigma
            assert quad_two_sided(eps - cal.epsilon_det, a) <= delta * (1 + 1e-7)
            assert quad_two_sided(eps - cal.epsilon_det, 2 * a) > delta


# ------------------------------------------------------------------ RDP
RDP_ORDERS = np.concatenate([1 + np.geomspace(1e-3, 1, 60), np.geomspace(2.01, 2e5, 600)])


@pytest.mark.parametrize("K", [2, 4])
@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_rdp_converts_to_a_looser_but_sane_epsilon(K, neighbouring):
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
    p = dict(ADULT)
    curv = p.pop("curvature") if K == 2 else p.pop("curvature") and None
    eps, delta = p.pop("epsilon"), p.pop("delta")
    cal = C.objective_gaussian_calibration(eps, delta, curvature=curv, neighbouring=neighbouring,
                                           n_classes=K, **p)
    kw = dict(data_norm=1.0, curvature=curv, lambda_total=cal.lambda_total,
              neighbouring=neighbouring, n_classes=K)
    rdp = C.objective_gaussian_rdp(RDP_ORDERS, cal.sigma, **kw)
    assert rdp.shape == RDP_ORDERS.shape and np.all(np.isfinite(rdp))
    eps_rdp, order = compute_epsilon(RDP_ORDERS, rdp, delta)
    assert eps * (1 - 1e-9) <= eps_rdp < 2 * eps
    assert order < RDP_ORDERS[-1]       # the optimum is inside the order grid
    # and the generic form eps_det + order a_max^2/2 + log(m)/(order-1) is never below it
    a = 1.0 / cal.sigma
    if K == 2:   # corners +-x, resp. +-(x - x'), +-(x + x')
        a_max, m = (a, 2) if neighbouring == "add_remove" else (2 * a, 4)
    else:        # K - 1 corners and 0, resp. K^2 - 1 corners and 0
        a_max, m = ((math.sqrt(2) * a, K) if neighbouring == "add_remove"
                    else (2 * math.sqrt(2) * a, K * K))
    generic = cal.epsilon_det + RDP_ORDERS * a_max ** 2 / 2 + np.log(m) / (RDP_ORDERS - 1)
    assert np.all(rdp <= generic * (1 + 1e-12))
    # RDP of the plain Gaussian with the largest corner is a lower bound of the profile's RDP
    assert np.all(rdp >= RDP_ORDERS * a_max ** 2 / 2 * (1 - 1e-12))


def test_rdp_binary_matches_quadrature():
    sigma, R, lam, c = 1.3, 1.0, 4.0, 0.5
    e_det = math.log1p(c / lam)
    orders = np.array([1.5, 2.0, 5.0, 20.0])
    got = C.objective_gaussian_rdp(orders, sigma, data_norm=R, curvature=c, lambda_total=lam,
                                   neighbouring="add_remove")
    for o, g in zip(orders, got):
        def mgf(a, o=o):   # E exp((o-1)(a|Z| + a^2/2)), one exponent so nothing overflows
            f = lambda z: 2 * math.exp(-z * z / 2 + (o - 1) * (a * z + a * a / 2)) \
                / math.sqrt(2 * math.pi)
            peak = (o - 1) * a
            return integrate.quad(f, 0, peak + 40, epsrel=1e-12, points=[peak])[0]
        assert g == pytest.approx(e_det + math.log(mgf(R / sigma)) / (o - 1), rel=1e-8)
        rep = C.objective_gaussian_rdp([o], sigma, data_norm=R, curvature=c, lambda_total=lam,
                                       neighbouring="replace_one")[0]
        for u in [0.0, 0.1, 0.5]:          # the max over the split is above every split
            val = mgf(2 * R * math.sqrt(u) / sigma) + mgf(2 * R * math.sqrt(1 - u) / sigma)
            assert rep >= e_det + math.log(val) / (o - 1) - 1e-12


# ------------------------------------------------------------------ references
def test_tighter_than_kifer_smith_thakurta():
    for neighbouring in ["add_remove", "replace_one"]:
        for eps in [0.01, 0.1, 0.5, 1.0, 2.0]:
            for delta in [1e-3, 1e-6, 1e-10]:
                for n in [100, 36178]:
                    for alpha in [1e-6, 1e-3, 1e-1]:
                        cal = C.objective_gaussian_calibration(
                            eps, delta, n=n, alpha=alpha, data_norm=1.0, curvature=0.25,
                            neighbouring=neighbouring)
                        kifer = C.kifer_objective_sigma(eps, delta, data_norm=1.0,
                                                        neighbouring=neighbouring)
                        assert cal.sigma < kifer
                        # Kifer's regulariser floor is never below ours in the Delta branch
                        if cal.extra_l2 > 0:
                            assert cal.lambda_total <= C.kifer_min_lambda_total(eps, 0.25)
    assert C.kifer_objective_sigma(0.1, 1e-5, data_norm=1.0, neighbouring="replace_one") == \
        pytest.approx(2 * math.sqrt(8 * math.log(2e5) + 0.4) / 0.1, rel=1e-14)
    # the Adult setting: the ratio reported in docs/privacy_analysis.md
    p = dict(ADULT)
    eps, delta = p.pop("epsilon"), p.pop("delta")
    cal = C.objective_gaussian_calibration(eps, delta, neighbouring="replace_one", **p)
    ratio = cal.sigma / C.kifer_objective_sigma(eps, delta, data_norm=1.0,
                                                neighbouring="replace_one")
    assert ratio == pytest.approx(0.4237, abs=5e-4)


# ------------------------------------------------------------------ output perturbation
def test_output_gaussian_sigma_and_add_remove_sensitivity():
    s_rep = C.output_gaussian_sigma(0.5, 1e-6, n=1000, alpha=0.01, data_norm=2.0,
                                    neighbouring="replace_one")
    s_add = C.output_gaussian_sigma(0.5, 1e-6, n=1000, alpha=0.01, data_norm=2.0,
                                    neighbouring="add_remove")
    assert s_rep == C.analytic_gaussian_sigma(0.5, 1e-6, 2 * 2.0 / (1000 * 0.01))
    assert s_add == C.analytic_gaussian_sigma(0.5, 1e-6, 2.0 / (1000 * 0.01))
    # white box: SUM-form minimiser moves by <= R / Lambda_tot when one row is added
    rng = np.random.default_rng(4)
    d, n, R, lam = 3, 40, 1.0, 0.5
    X = rng.standard_normal((n, d))
    X *= R / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), R)
    y = np.sign(X[:, 0] + 0.3 * rng.standard_normal(n))

    def argmin(X, y):
        f = lambda t: np.sum(np.logaddexp(0, -y * (X @ t))) + lam / 2 * t @ t
        g = lambda t: -(X.T @ (y * stats.logistic.cdf(-y * (X @ t)))) + lam * t
        return optimize.minimize(f, np.zeros(d), jac=g, method="BFGS", tol=1e-12).x
    t0 = argmin(X, y)
    worst = 0.0
    for _ in range(20):
        x = R * unit(rng, d)
        for yy in (-1.0, 1.0):
            t1 = argmin(np.vstack([X, x]), np.append(y, yy))
            worst = max(worst, np.linalg.norm(t1 - t0))
    assert worst <= R / lam * (1 + 1e-6)
    assert worst > 0.3 * R / lam     # near-worst rows move it a good fraction of the bound


# ------------------------------------------------------------------ AMP
@pytest.mark.parametrize("fraction", [0.01, 0.05, 0.2, 0.49])
def test_amp_totals(fraction):
    eps, delta = 0.3, 1e-7
    amp = C.amp_calibration(eps, delta, n=5000, alpha=1e-4, data_norm=1.0, curvature=0.25,
                            neighbouring="replace_one", grad_tol=1e-7,
                            output_fraction=fraction)
    te = amp.epsilon_objective + 2 * amp.epsilon_output
    td = (math.exp(amp.epsilon_output) * amp.delta_objective
          + (1 + math.exp(amp.epsilon_objective + amp.epsilon_output)) * amp.delta_output)
    assert te <= eps and te == pytest.approx(eps, rel=1e-12)
    assert td <= delta and td == pytest.approx(delta, rel=1e-9)
    assert amp.total_epsilon() == te and amp.total_delta() == td
    # each part meets its own target
    kw = dict(data_norm=1.0, curvature=0.25, lambda_total=amp.lambda_total,
              neighbouring="replace_one")
    assert C.objective_gaussian_delta(amp.epsilon_objective, amp.sigma_objective, **kw) \
        <= amp.delta_objective
    shift = 5000 * amp.grad_tol / amp.lambda_total       # gamma / Lambda_tot, coefficient units
    assert shift == pytest.approx(amp.grad_tol / (1e-4 + amp.extra_l2), rel=1e-12)
    assert C.gaussian_delta(amp.epsilon_output, shift, amp.sigma_output) <= amp.delta_output
    assert C.gaussian_delta(amp.epsilon_output, shift, amp.sigma_output / 2) > amp.delta_output
    ref = C.objective_gaussian_calibration(amp.epsilon_objective, amp.delta_objective, n=5000,
                                           alpha=1e-4, data_norm=1.0, curvature=0.25,
                                           neighbouring="replace_one")
    assert (ref.sigma, ref.extra_l2, ref.lambda_total) == \
        (amp.sigma_objective, amp.extra_l2, amp.lambda_total)


def test_amp_gaussian_shift_step_by_simulation():
    """The first link of the chain: for a fixed b, theta_hat + N vs theta* + N with
    ||theta_hat - theta*|| <= gamma/Lambda_tot is (eps_out, delta_out)-close; check the
    hockey-stick of the worst shift by quadrature (1-d projection)."""
    amp = C.amp_calibration(1.0, 1e-5, n=100, alpha=0.1, data_norm=1.0, curvature=0.25,
                            neighbouring="add_remove", grad_tol=1e-3)
    shift = amp.grad_tol / (0.1 + amp.extra_l2)
    assert quad_gaussian_delta(amp.epsilon_output, shift, amp.sigma_output) <= \
        amp.delta_output * (1 + 1e-7)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("call,name", [
    (lambda: C.analytic_gaussian_sigma(0.0, 1e-5, 1.0), "epsilon"),
    (lambda: C.analytic_gaussian_sigma(-1.0, 1e-5, 1.0), "epsilon"),
    (lambda: C.analytic_gaussian_sigma(float("nan"), 1e-5, 1.0), "epsilon"),
    (lambda: C.analytic_gaussian_sigma(1.0, 0.0, 1.0), "delta"),
    (lambda: C.analytic_gaussian_sigma(1.0, 1.0, 1.0), "delta"),
    (lambda: C.analytic_gaussian_sigma(1.0, 1e-5, 0.0), "sensitivity"),
    (lambda: C.gaussian_delta(1.0, 1.0, 0.0), "sigma"),
    (lambda: C.gaussian_delta(1.0, -1.0, 1.0), "sensitivity"),
    (lambda: C.objective_gaussian_calibration(1.0, 1e-5, n=10, alpha=0.1, data_norm=1.0,
                                              curvature=0.25, neighbouring="swap"), "neighbouring"),
    (lambda: C.objective_gaussian_calibration(1.0, 1e-5, n=0, alpha=0.1, data_norm=1.0,
                                              curvature=0.25, neighbouring="add_remove"), "n"),
    (lambda: C.objective_gaussian_calibration(1.0, 1e-5, n=10, alpha=0.0, data_norm=1.0,
                                              curvature=0.25, neighbouring="add_remove"), "alpha"),
    (lambda: C.objective_gaussian_calibration(1.0, 1e-5, n=10, alpha=0.1, data_norm=-1.0,
                                              curvature=0.25, neighbouring="add_remove"),
     "data_norm"),
    (lambda: C.objective_gaussian_calibration(1.0, 1e-5, n=10, alpha=0.1, data_norm=1.0,
                                              curvature=-0.25, neighbouring="add_remove"),
     "curvature"),
    (lambda: C.objective_gaussian_calibration(1.0, 1e-5, n=10, alpha=0.1, data_norm=1.0,
                                              neighbouring="add_remove"), "curvature"),
    (lambda: C.objective_gaussian_calibration(1.0, 1e-5, n=10, alpha=0.1, data_norm=1.0,
                                              neighbouring="add_remove", n_classes=1), "n_classes"),
    (lambda: C.objective_gaussian_delta(1.0, 1.0, data_norm=1.0, curvature=0.1,
                                        lambda_total=0.0, neighbouring="add_remove"),
     "lambda_total"),
    (lambda: C.objective_gaussian_rdp([1.0, 2.0], 1.0, data_norm=1.0, curvature=0.1,
                                      lambda_total=1.0, neighbouring="add_remove"), "orders"),
    (lambda: C.amp_calibration(1.0, 1e-5, n=10, alpha=0.1, data_norm=1.0, curvature=0.1,
                               neighbouring="add_remove", grad_tol=0.0), "grad_tol"),
    (lambda: C.amp_calibration(1.0, 1e-5, n=10, alpha=0.1, data_norm=1.0, curvature=0.1,
                               neighbouring="add_remove", grad_tol=1e-6, output_fraction=0.5),
     "output_fraction"),
    (lambda: C.kifer_objective_sigma(1.0, 2.0, data_norm=1.0, neighbouring="add_remove"), "delta"),
    (lambda: C.output_gaussian_sigma(1.0, 1e-5, n=10, alpha=0.1, data_norm=1.0,
                                     neighbouring="replace"), "neighbouring"),
])
def test_errors_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name}:"):
        call()


def _call_with_flag(function, K, value):
    curv = 0.1 if K == 2 else None
    obj = dict(data_norm=1.0, curvature=curv, lambda_total=1.0, neighbouring="add_remove",
               n_classes=K, nonincreasing_loss=value)
    cal = dict(n=10, alpha=0.1, data_norm=1.0, curvature=curv, neighbouring="add_remove",
               n_classes=K, nonincreasing_loss=value)
    if function == "delta":
        return C.objective_gaussian_delta(1.0, 1.0, **obj)
    if function == "rdp":
        return C.objective_gaussian_rdp([2.0], 1.0, **obj)
    if function == "calibration":
        return C.objective_gaussian_calibration(1.0, 1e-5, **cal)
    return C.amp_calibration(1.0, 1e-5, grad_tol=1e-6, **cal)


@pytest.mark.parametrize("function,K", [
    ("delta", 2), ("rdp", 2), ("calibration", 2), ("amp", 2),
    ("delta", 3), ("rdp", 3), ("calibration", 3), ("amp", 3),
])
def test_nonincreasing_flag_must_be_a_bool(function, K):
    for value in [1, 0, 1.0, "True", None, [True]]:
        with pytest.raises(ValueError, match=r"^nonincreasing_loss:"):
            _call_with_flag(function, K, value)
    for value in [True, False, np.True_]:     # accepted
        _call_with_flag(function, K, value)
