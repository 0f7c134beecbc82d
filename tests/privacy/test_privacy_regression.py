"""Privacy of the regression ERM path (pseudo-Huber loss; docs/privacy_analysis.md,
section 12), tested against an independent numpy model of the loss:

(a) output perturbation: the exact minimizer moves by at most 2 L / (n Lambda), L = h R,
    over adversarial neighbours (and the bound is nearly attained, and 2R/(n Lambda),
    the margin losses' constant, is exceeded when h > 1);
(b) pure objective perturbation, white box: the exact log density ratio of the output,
        beta (|b_D'(f)| - |b_D(f)|) + log A_D(f) - log A_D'(f),
    over every output f of a fine grid (d = 1) and at the mechanism's own draws, stays
    below epsilon with the recorded constants, and exceeds it with the margin losses'
    Lipschitz constant 1 (beta = eps'/(2R)) or their curvature bound;
(c) Gaussian objective perturbation: the privacy profile delta(eps) of the released
    output, computed by quadrature over the noise on the worst pairs, is below delta at
    the calibrated sigma, and above it at the sigma calibrated with L = R;
(d) black box: many releases on a designed pair; the Clopper-Pearson lower bound on
    epsilon stays below epsilon, and exceeds it for a mechanism that believes |rho'| <= 1.
"""
import warnings

import numpy as np
import pytest
from _privacy_audit import epsilon_lower_bound

from dperm.exceptions import ConvergenceWarning
from dperm.losses import PseudoHuber, get_loss
from dperm.optim import erm
from dperm.privacy import calibration
from dperm.privacy.mechanisms import (
    objective_perturbation,
    objective_perturbation_constants,
    output_perturbation_constants,
)

pytestmark = [pytest.mark.filterwarnings("ignore:random_state is a fixed seed")]

EPS = 1.0
LOSS = "pseudo_huber"


# ------------------------------------------------------------------ the loss, in numpy
def rho_d1(r, h):
    t = r / h
    return h * t / np.sqrt(1 + t * t)


def rho_d2(r, h):
    t = r / h
    return (1 + t * t) ** -1.5


def b_and_logdet(X, y, F, h, lam):
    """d = 1: the noise b_D(f) = -sum_i rho'(f x_i - y_i) x_i - lam f that makes f the
    output, and log A_D(f) = log(sum_i rho'' x_i^2 + lam), for an array of outputs F."""
    R = np.outer(F, X[:, 0]) - y
    b = -(rho_d1(R, h) @ X[:, 0]) - lam * F
    A = rho_d2(R, h) @ (X[:, 0] ** 2) + lam
    return b, np.log(A)


def pure_loss(D, D2, F, h, lam, beta):
    b1, l1 = b_and_logdet(*D, F, h, lam)
    b2, l2 = b_and_logdet(*D2, F, h, lam)
    return beta * (np.abs(b2) - np.abs(b1)) + l1 - l2


def worst_pairs(R, B, n=6):
    """d = 1 neighbours built to make the mechanisms tight: the replaced row has norm R
    and its target moves from -B to +B (residuals far beyond h, so rho' -> +-h), or the
    row itself flips sign; the other rows are short and cancel."""
    X = np.array([[R], [0.3 * R], [-0.3 * R], [0.2 * R], [-0.2 * R], [0.0]])[:n]
    y = np.array([-B, 0.1 * B, 0.1 * B, -0.2 * B, -0.2 * B, 0.0])[:n]
    pairs = []
    for x2, y2 in ((R, B), (-R, -B), (-R, B), (0.0, B)):
        X2, yy2 = X.copy(), y.copy()
        X2[0, 0], yy2[0] = x2, y2
        pairs.append(((X, y), (X2, yy2)))
        pairs.append(((X2, yy2), (X, y)))
    return pairs


# =============================================================== (a) output perturbation
def _solve(X, y, alpha, h):
    res = erm.minimize(X, y, loss=LOSS, alpha=alpha, h=h, tol=1e-12, max_iter=10000)
    assert res.converged
    return res.coef


@pytest.mark.parametrize("R,h", [(1.0, 0.5), (3.0, 2.0)])
def test_output_sensitivity_over_adversarial_neighbours(R, h):
    rng = np.random.default_rng(7)
    n, d, B = 12, 3, 20.0 * h
    X = rng.normal(size=(n, d))
    X *= (R / np.linalg.norm(X, axis=1))[:, None]
    y = B * rng.choice([-1.0, 1.0], n)
    alpha = 5.0 * R * R          # residuals stay far beyond h: rho' saturates
    f0 = _solve(X, y, alpha, h)
    L = get_loss(LOSS).gradient_bound(R, h)
    bound = 2.0 * L / (n * alpha)
    assert bound == pytest.approx(2.0 * h * R / (n * alpha))
    worst = 0.0
    for i in range(n):
        for sgn in (1.0, -1.0):
            for yy in (B, -B):
                v = rng.normal(size=d)
                for x_new in (sgn * X[i], R * v / np.linalg.norm(v)):
                    X2, y2 = X.copy(), y.copy()
                    X2[i], y2[i] = x_new, yy
                    worst = max(worst, np.linalg.norm(_solve(X2, y2, alpha, h) - f0))
    assert worst <= bound * (1 + 1e-9) + 1e-10
    assert worst > 0.9 * bound, "search too weak: the bound should be nearly attained"
    if h > 1:
        # the margin losses' constant 2R/(n Lambda) (|phi'| <= 1) would be violated
        assert worst > 2.0 * R / (n * alpha)
        assert output_perturbation_constants(n, alpha, EPS, L) < \
            output_perturbation_constants(n, alpha, EPS, R)


def test_output_perturbation_noise_uses_the_losses_gradient_bound():
    """The released noise of output perturbation is calibrated for 2 h R / (n Lambda):
    pure (beta, with the grid's rounding room) and Gaussian (sigma)."""
    from dperm.privacy.mechanisms import output_perturbation

    R, h, n, alpha = 1.0, 3.0, 60, 0.5
    rng = np.random.default_rng(2)
    X = rng.normal(size=(n, 2))
    X *= (R / np.linalg.norm(X, axis=1))[:, None]
    y = rng.normal(size=n)
    sens = 2 * h * R / (n * alpha)
    rec = output_perturbation(X, y, loss=LOSS, alpha=alpha, epsilon=EPS, h=h, data_norm=R,
                              random_state=0).record()
    assert EPS / sens * 0.999 <= rec["beta"] <= EPS / sens
    rec = output_perturbation(X, y, loss=LOSS, alpha=alpha, epsilon=EPS, delta=1e-5, h=h,
                              data_norm=R, random_state=0).record()
    sigma = calibration.analytic_gaussian_sigma(EPS, 1e-5, sens)
    assert sigma <= rec["sigma"] <= sigma * 1.001


# =============================================================== (b) pure objective
def _real(n, alpha, R, h, nb="replace_one"):
    lo = get_loss(LOSS)
    e, dl, b = objective_perturbation_constants(n, alpha, EPS, lo.curvature(h, R),
                                                lo.gradient_bound(R, h), nb)
    return float(dl[0]), float(b[0])


def _lipschitz_one(n, alpha, R, h, nb="replace_one"):
    # the margin losses' gradient bound R: beta = eps' / (2R), too large when h > 1
    lo = get_loss(LOSS)
    e, dl, b = objective_perturbation_constants(n, alpha, EPS, lo.curvature(h, R), R, nb)
    return float(dl[0]), float(b[0])


def _curvature_of_huber(n, alpha, R, h, nb="replace_one"):
    # the Huber loss's curvature 1/(2h) R^2 in place of R^2: too small when h > 1/2
    lo = get_loss(LOSS)
    e, dl, b = objective_perturbation_constants(n, alpha, EPS, R * R / (2 * h),
                                                lo.gradient_bound(R, h), nb)
    return float(dl[0]), float(b[0])


def _removed(pairs):
    """add_remove at a public n: the differing row is absent (a zero row: no gradient, no
    curvature) in one of the two data sets."""
    out = []
    for (X, y), _ in pairs[::2]:
        X2 = X.copy()
        X2[0, 0] = 0.0
        out += [((X, y), (X2, y)), ((X2, y), (X, y))]
    return out


def _max_loss(constants, R, h, B, q, nb="replace_one"):
    worst = -np.inf
    pairs = worst_pairs(R, B)
    for D, D2 in (pairs if nb == "replace_one" else _removed(pairs)):
        n = D[0].shape[0]
        alpha = get_loss(LOSS).curvature(h, R) / (n * q)
        extra, beta = constants(n, alpha, R, h, nb)
        lam = n * (alpha + extra)
        scale = (2 * h * R + B * R) / lam
        F = np.concatenate([np.linspace(-40 * scale, 40 * scale, 40001),
                            (D[1][0] + np.linspace(-3, 3, 601) * h) / D[0][0, 0]
                            if D[0][0, 0] != 0 else []])
        worst = max(worst, float(np.max(pure_loss(D, D2, F, h, lam, beta))))
    return worst


@pytest.mark.parametrize("nb", ["replace_one", "add_remove"])
@pytest.mark.parametrize("R,h", [(1.0, 3.0), (2.0, 4.0)])
@pytest.mark.parametrize("q", [0.05, 3.0])      # Delta = 0 and Delta > 0 branches
def test_pure_objective_whitebox(R, h, q, nb):
    B = 10.0 * h
    assert _max_loss(_real, R, h, B, q, nb) <= EPS + 1e-9
    # power: a mechanism that assumed |rho'| <= 1 (the margin losses' bound) is caught
    assert _max_loss(_lipschitz_one, R, h, B, q, nb) > EPS + 0.2


def test_pure_objective_whitebox_curvature_has_teeth():
    """The Jacobian term: with the row's residual at 0 in D (rho'' = 1) and far out in
    D' (rho'' ~ 0), a curvature bound below R^2 leaves log A_D - log A_D' unpaid."""
    R, h, q = 1.0, 4.0, 3.0
    assert _max_loss(_real, R, h, 10 * h, q) <= EPS + 1e-9
    assert _max_loss(_curvature_of_huber, R, h, 10 * h, q) > EPS + 0.1


def test_pure_objective_at_the_mechanisms_own_draws():
    """The released outputs of objective_perturbation (its recorded beta, extra_l2,
    alpha), plugged into the exact privacy loss on every worst pair: <= epsilon."""
    R, h, B = 1.0, 2.0, 20.0
    for (X, y), (X2, y2) in worst_pairs(R, B)[:4]:
        fit = objective_perturbation(X, y, loss=LOSS, alpha=0.2, epsilon=EPS, h=h,
                                     data_norm=R, n_draws=400, random_state=3,
                                     max_iter=5000)
        rec = fit.record()
        assert rec["loss"] == LOSS and rec["beta"] == pytest.approx(
            rec["epsilon_prime"] / (2 * h * R))
        lam = X.shape[0] * (rec["alpha"] + rec["extra_l2"])
        F = fit.coef[:, 0]
        loss = pure_loss((X, y), (X2, y2), F, h, lam, rec["beta"])
        assert np.max(loss) <= EPS + 1e-7
        # and the draws do reach into the region where the loss is near its bound
        assert np.max(np.abs(loss)) > 0.5 * rec["epsilon_prime"]


# =============================================================== (c) Gaussian objective
def _f_of_b(X, y, b, h, lam, lo=-1e7, hi=1e7):
    """The output f_D(b): the root of b_D(f) = b (b_D strictly decreasing), by bisection."""
    lo_, hi_ = np.full_like(b, lo), np.full_like(b, hi)
    for _ in range(90):
        mid = 0.5 * (lo_ + hi_)
        bm, _ = b_and_logdet(X, y, mid, h, lam)
        above = bm > b                      # b_D(mid) > b: the root is to the right
        lo_ = np.where(above, mid, lo_)
        hi_ = np.where(above, hi_, mid)
    return 0.5 * (lo_ + hi_)


def _profile_delta(D, D2, sigma, h, lam, eps):
    """delta(eps) of the output distribution of D against D' (f ~ p_D): the expectation
    over b ~ N(0, sigma^2) of (1 - e^{eps - L(f_D(b))})_+, by quadrature in b."""
    z = np.linspace(-12, 12, 12001)
    w = np.exp(-z * z / 2) / np.sqrt(2 * np.pi) * (z[1] - z[0])
    b = sigma * z
    f = _f_of_b(*D, b, h, lam)
    b2, l2 = b_and_logdet(*D2, f, h, lam)
    _, l1 = b_and_logdet(*D, f, h, lam)
    L = (b2 * b2 - b * b) / (2 * sigma * sigma) + l1 - l2
    return float(np.sum(w * np.maximum(0.0, -np.expm1(eps - L))))


def _gauss_pairs(R, B):
    """The d = 1 pairs of the profile: the target of a row of norm R moves from -B to B,
    or the row flips sign (its residual then changes sign too)."""
    X = np.array([[R], [0.3 * R], [0.0]])
    y = np.array([-B, 0.0, 0.0])
    X2 = X.copy()
    X2[0, 0] = -R
    return [((X, y), (X, -y)), ((X, y), (X2, y))]


@pytest.mark.parametrize("nb", ["replace_one", "add_remove"])
def test_gaussian_calibration_against_numerical_profile(nb):
    # targets far out (the guarantee does not depend on them): the replaced row's rho'
    # keeps opposite signs in D and D' over the whole range of the output
    R, h, B, delta = 1.0, 4.0, 1e4, 1e-3
    lo = get_loss(LOSS)
    for D, D2 in _gauss_pairs(R, B):
        if nb == "add_remove":
            # one row removed: a zero row in its place (no gradient, no curvature), the
            # add/remove relation at the same public n
            X2 = D[0].copy()
            X2[0, 0] = 0.0
            D2 = (X2, D[1])
        n = D[0].shape[0]
        alpha = 0.5
        cal = calibration.objective_gaussian_calibration(
            EPS, delta, n=n, alpha=alpha, data_norm=lo.gradient_bound(R, h),
            curvature=lo.curvature(h, R), neighbouring=nb, nonincreasing_loss=lo.nonincreasing)
        lam = n * (alpha + cal.extra_l2)
        for A, A2 in ((D, D2), (D2, D)):
            assert _profile_delta(A, A2, cal.sigma, h, lam, EPS) <= delta
            # the Gaussian part alone (the Jacobian term is ~0 on these pairs: residuals
            # far out) at eps - epsilon_det: within the target, and not far below it
            tight = _profile_delta(A, A2, cal.sigma, h, lam, EPS - cal.epsilon_det)
            assert tight <= delta * (1 + 1e-3)
        assert tight > 0.3 * delta, "the pair is not a near-worst case"
        # power: sigma calibrated for the margin losses' gradient bound R is caught
        bad = calibration.objective_gaussian_calibration(
            EPS, delta, n=n, alpha=alpha, data_norm=R, curvature=lo.curvature(h, R),
            neighbouring=nb, nonincreasing_loss=lo.nonincreasing)
        assert _profile_delta(D, D2, bad.sigma, h, n * (alpha + bad.extra_l2), EPS) > 2 * delta


def test_gaussian_mechanism_uses_the_losses_constants():
    """The released record of Gaussian objective perturbation: sigma and Delta are the
    calibration's for the gradient bound h R, curvature R^2 and the two-signed analysis
    (rho' takes both signs: the margin losses' one-signed bound does not apply)."""
    R, h, n = 2.0, 3.0, 50
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    X *= (R / np.linalg.norm(X, axis=1))[:, None]
    y = rng.normal(size=n)
    fit = objective_perturbation(X, y, loss=LOSS, alpha=0.3, epsilon=EPS, delta=1e-5, h=h,
                                 data_norm=R, random_state=0)
    rec = fit.record()
    cal = calibration.objective_gaussian_calibration(
        EPS, 1e-5, n=n, alpha=0.3, data_norm=h * R, curvature=R * R,
        neighbouring="replace_one", nonincreasing_loss=False)
    assert rec["sigma"] == pytest.approx(cal.sigma, rel=1e-12)
    assert rec["extra_l2"] == pytest.approx(cal.extra_l2, rel=1e-12, abs=1e-300)
    assert rec["curvature"] == R * R


# =============================================================== (d) black box
def _release(y, lipschitz_one, n_draws, seed):
    X = np.array([[1.0], [0.3], [-0.3], [0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if lipschitz_one:
            # an under-noised variant: a loss object that claims |rho'| <= 1
            class Lip1(PseudoHuber):
                def lipschitz(self, h=0.5):
                    return 1.0
            loss = Lip1()
        else:
            loss = LOSS
        return objective_perturbation(X, y, loss=loss, alpha=5.0, epsilon=EPS, h=4.0,
                                      data_norm=1.0, n_draws=n_draws, random_state=seed,
                                      max_iter=3000).coef[:, 0]


@pytest.mark.parametrize("lipschitz_one", [False, True])
def test_blackbox_audit(lipschitz_one):
    B = 1e4
    y, y2 = np.array([-B, 0.0, 0.0, 0.0]), np.array([B, 0.0, 0.0, 0.0])
    s1 = _release(y, lipschitz_one, 12000, 1)
    s2 = _release(y2, lipschitz_one, 12000, 2)
    bound, info = epsilon_lower_bound(s1, s2)
    if lipschitz_one:
        assert bound > EPS, f"the audit misses a mechanism with half the noise: {info}"
    else:
        assert bound <= EPS, f"lower bound {bound} on epsilon exceeds the claimed {EPS}: {info}"


def test_accountant_event_uses_the_losses_gradient_bound():
    """privacy_events reads a regression record's loss and h: the RDP curve of its
    Gaussian objective perturbation is the one for the gradient bound h R (with R, the
    margin losses' bound, the accountant would under-count the spend)."""
    from dperm.privacy import accountant
    from dperm.privacy.mechanisms import privacy_events

    R, h, n = 1.5, 3.0, 40
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    X *= (R / np.linalg.norm(X, axis=1))[:, None]
    fit = objective_perturbation(X, rng.normal(size=n), loss=LOSS, alpha=0.5, epsilon=EPS,
                                 delta=1e-5, h=h, data_norm=R, random_state=0)
    rec = fit.record()
    (ev,) = privacy_events(rec)
    orders = np.asarray(accountant.RDP_ORDERS)
    lam = n * (rec["alpha"] + rec["extra_l2"])
    want = calibration.objective_gaussian_rdp(
        orders, rec["sigma"], data_norm=h * R, curvature=R * R, lambda_total=lam,
        neighbouring="replace_one", nonincreasing_loss=False)
    wrong = calibration.objective_gaussian_rdp(
        orders, rec["sigma"], data_norm=R, curvature=R * R, lambda_total=lam,
        neighbouring="replace_one", nonincreasing_loss=False)
    got = np.asarray(ev.rdp_values)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.all(wrong < want)
