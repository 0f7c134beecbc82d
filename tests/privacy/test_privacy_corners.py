"""A worst case the black-box audits cannot reach: replace-one Gaussian objective perturbation
with the logistic loss in d = 2, at the corner where the changed row's gradient difference
approaches 2R.

The stated bound (docs/privacy_analysis.md, section 3) charges replace-one the full 2R shift.
With the logistic loss the shift is only near 2R where BOTH the old row u and its replacement
u' are badly misclassified (phi' -> -1 at both), e.g. u = R(cos a, sin a) and
u' = R(-cos a, sin a) with f far along -(0, 1): a region the mechanism's output rarely visits.
Here the exact output densities of the two neighbours,

    p_D(f) = N(b_D(f); 0, sigma^2 I) det A_D(f),  b_D(f) = -sum_i phi'(y_i f.x_i) y_i x_i - lam f,

are integrated on a 2-d grid wide enough to hold all their mass, and the exact
delta(eps) = max over the two orders of int (p - e^eps p')_+ must stay within the delta the
fit claims. The same integral with the noise cut to a third must exceed it (the check has
power), and each density must integrate to 1 (the grid holds the mass).
"""
import warnings

import numpy as np
import pytest
from scipy.special import expit

from dperm.privacy import calibration
from dperm.privacy.mechanisms import objective_perturbation


def _log_density(F, U, lam, sigma):
    z = F @ U.T
    s = expit(-z)                                  # -phi'(z), logistic
    b = s @ U - lam * F
    w = s * (1.0 - s)                              # phi''(z)
    a11 = (w * U[:, 0] ** 2).sum(1) + lam
    a22 = (w * U[:, 1] ** 2).sum(1) + lam
    a12 = (w * U[:, 0] * U[:, 1]).sum(1)
    return (-(b ** 2).sum(1) / (2 * sigma ** 2) - np.log(2 * np.pi * sigma ** 2)
            + np.log(a11 * a22 - a12 ** 2))


def _exact_delta(eps, U, U2, lam, sigma, half_width, m=1201):
    g = np.linspace(-half_width, half_width, m)
    cell = (g[1] - g[0]) ** 2
    F = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    l1, l2 = _log_density(F, U, lam, sigma), _log_density(F, U2, lam, sigma)
    masses = (np.exp(l1).sum() * cell, np.exp(l2).sum() * cell)
    d12 = np.maximum(np.exp(l1) - np.exp(eps + l2), 0.0).sum() * cell
    d21 = np.maximum(np.exp(l2) - np.exp(eps + l1), 0.0).sum() * cell
    return max(d12, d21), masses


@pytest.mark.slow
@pytest.mark.parametrize("n, alpha, angle", [(10, 1.0, 0.05), (2, 1.0, 0.05), (10, 0.1, 0.02)])
def test_replace_one_logistic_2d_corner_exact_delta(n, alpha, angle):
    R, eps, delta = 1.0, 1.0, 1e-5
    X, y = np.zeros((n, 2)), np.ones(n)          # the other rows are zero rows
    X[0] = R * np.array([np.cos(angle), np.sin(angle)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # a seeded fit: this is an audit
        fit = objective_perturbation(X, y, loss="logistic", alpha=alpha, epsilon=eps,
                                     delta=delta, random_state=0)
    sigma, lam = float(fit.sigma), n * (alpha + float(fit.extra_l2))
    U, U2 = X.copy(), X.copy()
    U2[0] = R * np.array([-np.cos(angle), np.sin(angle)])
    claim = calibration.objective_gaussian_delta(
        eps, sigma, data_norm=R, curvature=0.25 * R * R, lambda_total=lam,
        neighbouring="replace_one", n_classes=2, nonincreasing_loss=True)
    assert claim <= delta
    exact, masses = _exact_delta(eps, U, U2, lam, sigma, 9 * sigma / lam)
    assert all(abs(m - 1.0) < 1e-6 for m in masses), masses
    assert exact <= claim, (exact, claim)
    broken, _ = _exact_delta(eps, U, U2, lam, sigma / 3, 9 * sigma / lam)
    assert broken > 10 * claim, (broken, claim)


def _softmax_log_density(W, x, y, lam, sigma):
    """d = 1, K classes: the output density of multinomial objective perturbation when one row
    (x, y) is informative and the others are zero rows (no gradient, no curvature)."""
    from scipy.special import softmax

    K = W.shape[1]
    p = softmax(W * x, axis=1)
    b = -(p - np.eye(K)[y]) * x - lam * W
    H = (p[:, :, None] * np.eye(K)[None] - p[:, :, None] * p[:, None, :]) * x * x
    logdet = np.linalg.slogdet(H + lam * np.eye(K)[None])[1]
    return -(b ** 2).sum(1) / (2 * sigma ** 2) - K / 2 * np.log(2 * np.pi * sigma ** 2) + logdet


@pytest.mark.slow
@pytest.mark.parametrize("n, alpha", [(10, 1.0), (3, 1.0)])
def test_replace_one_multinomial_label_change_exact_delta(n, alpha):
    """Three classes, d = 1: the row (R, class 0) replaced by (R, class 1), a gradient
    difference of sqrt(2) R, integrated exactly over the 3-d output space. (The 2 sqrt(2) R
    corner needs d >= 2, a 6-d integral: not checked here.)"""
    R, eps, delta, K = 1.0, 1.0, 1e-5, 3
    X = np.zeros((n, 1))
    X[0, 0] = R
    y = np.arange(n) % K
    y[0] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = objective_perturbation(X, y, loss="multinomial", n_classes=K, alpha=alpha,
                                     epsilon=eps, delta=delta, random_state=0)
    sigma, lam = float(fit.sigma), n * (alpha + float(fit.extra_l2))
    claim = calibration.objective_gaussian_delta(
        eps, sigma, data_norm=R, curvature=(1 - 1 / K) * R * R, lambda_total=lam,
        neighbouring="replace_one", n_classes=K)
    assert claim <= delta
    g = np.linspace(-7 * sigma / lam, 7 * sigma / lam, 161)
    cell = (g[1] - g[0]) ** 3
    W = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, K)

    def exact(s):
        l1, l2 = _softmax_log_density(W, R, 0, lam, s), _softmax_log_density(W, R, 1, lam, s)
        mass = np.exp(l1).sum() * cell
        return max(np.maximum(np.exp(l1) - np.exp(eps + l2), 0.0).sum(),
                   np.maximum(np.exp(l2) - np.exp(eps + l1), 0.0).sum()) * cell, mass

    got, mass = exact(sigma)
    assert abs(mass - 1.0) < 1e-4 and got <= claim, (got, claim, mass)
    assert exact(sigma / 3)[0] > 5 * claim                 # the check has power
