"""Black-box privacy audit (docs/specification.md, "How privacy is tested").

Many releases of a mechanism on a worst-case neighbouring pair D, D' (row 0 flipped
x -> -x), a scalar statistic (the projection of the coefficients on f*(D) - f*(D')),
an event chosen on half of the samples, and Clopper-Pearson bounds on the other half
give a lower confidence bound on epsilon. It must not exceed the claimed epsilon, and a
deliberately broken mechanism (noise halved, or R forgotten in the noise scale) must
be caught by the very same test.

The pairs are built to make the mechanisms tight: with the Huber loss and Lambda large
enough that every margin stays in the linear region, f*(D) - f*(D') has norm exactly
2R/(n Lambda), so output perturbation's privacy loss reaches eps; for objective
perturbation the outputs spend most of their mass where the loss is exactly eps'.
"""
import warnings

import numpy as np
import pytest
from _privacy_audit import designed_1d, epsilon_lower_bound, rows_in_ball

from dperm.exceptions import ConvergenceWarning
from dperm.losses import get_loss
from dperm.optim import erm
from dperm.privacy.mechanisms import (
    objective_perturbation,
    objective_perturbation_constants,
    output_perturbation,
    output_perturbation_constants,
)
from dperm.privacy.noise import sample_l2_laplace

# audits draw many seeded fits (the seed's warning is asserted in tests/privacy/test_release.py)
pytestmark = [pytest.mark.filterwarnings("ignore:random_state is a fixed seed")]

EPS = 1.0
H = 0.5


# ------------------------------------------------------------------ neighbouring pairs
def flipped_pair(R, d, seed=0):
    """(X, y), (X', y) with row 0 of norm R flipped to -x; the other rows are shorter and
    their u_i = y_i x_i cancel, so f*(D) and f*(D') are symmetric about 0."""
    if d == 1:
        X, y = designed_1d(R)
    else:
        v = rows_in_ball(np.random.default_rng(seed), 4, d, 0.6 * R, frac_on_sphere=0.0)
        # each v twice, with opposite labels, and a zero row: n = 10, both classes
        X = np.vstack([R * np.eye(d)[:1], v, v, np.zeros((1, d))])
        y = np.array([1.0, 1, 1, 1, 1, -1, -1, -1, -1, -1])
    X2 = X.copy()
    X2[0] = -X[0]
    return X, X2, y


def _projection(coef, X, X2, y, loss, alpha):
    """Scalar statistic: coefficients projected on the unit vector along f*(D) - f*(D')."""
    f1 = erm.minimize(X, y, loss=loss, alpha=alpha, h=H).coef
    f2 = erm.minimize(X2, y, loss=loss, alpha=alpha, h=H).coef
    e = (f1 - f2) / np.linalg.norm(f1 - f2)
    return coef @ e


# ------------------------------------------------------------------ mechanisms
def real_output(X, y, *, loss, alpha, R, n_draws, seed):
    return output_perturbation(X, y, loss=loss, alpha=alpha, epsilon=EPS, h=H, data_norm=R,
                               n_draws=n_draws, random_state=seed).coef


def real_objective(X, y, *, loss, alpha, R, n_draws, seed):
    with warnings.catch_warnings():
        # a handful of the batched fits may stall around 1e-9: immaterial to this audit
        warnings.simplefilter("ignore", ConvergenceWarning)
        return objective_perturbation(X, y, loss=loss, alpha=alpha, epsilon=EPS, h=H,
                                      data_norm=R, n_draws=n_draws, random_state=seed).coef


def broken_output(beta_factor):
    """Algorithm 1 with its noise scale divided by beta_factor (a bug to be caught)."""
    def mech(X, y, *, loss, alpha, R, n_draws, seed):
        n, d = X.shape
        f = erm.minimize(X, y, loss=loss, alpha=alpha, h=H).coef
        beta = output_perturbation_constants(n, alpha, EPS, R) * beta_factor
        return f + sample_l2_laplace(beta, d, size=n_draws, random_state=seed)
    return mech


def broken_objective(beta_factor):
    """Algorithm 2 with its noise scale divided by beta_factor (a bug to be caught)."""
    def mech(X, y, *, loss, alpha, R, n_draws, seed):
        n, d = X.shape
        c = get_loss(loss).curvature(H, R)
        _, delta, beta = objective_perturbation_constants(n, alpha, EPS, c, R)
        b = sample_l2_laplace(beta[0] * beta_factor, d, size=n_draws, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = erm.minimize(X, y, loss=loss, alpha=np.full(n_draws, alpha), h=H,
                               linear=b, extra_l2=delta[0])
        return res.coef
    return mech


# ------------------------------------------------------------------ the audit
def output_alpha(R, n=10):
    # n Lambda = 10 R^2: every margin, on D and on D', stays below 1 - h = 0.5, so the
    # minimizers move by exactly 2R/(n Lambda) and the Laplace shift costs exactly eps
    return 10.0 * R**2 / n


def objective_alpha(R, n=10, loss="huber", q=0.05):
    # c R^2/(n Lambda) = q small: eps' = eps - 2 log(1 + q) is close to eps (Delta = 0),
    # and the bulk of the outputs keeps every margin in the linear region
    return get_loss(loss).curvature(H, R) / (n * q)


def audit(mech, *, R, d, alpha, n_samples, loss="huber", confidence=0.95, seed=0):
    X, X2, y = flipped_pair(R, d)
    c1 = mech(X, y, loss=loss, alpha=alpha, R=R, n_draws=n_samples, seed=seed + 1)
    c2 = mech(X2, y, loss=loss, alpha=alpha, R=R, n_draws=n_samples, seed=seed + 2)
    s1 = _projection(c1, X, X2, y, loss, alpha)
    s2 = _projection(c2, X, X2, y, loss, alpha)
    return epsilon_lower_bound(s1, s2, confidence=confidence)


def _check(mech_real, mech_broken, *, real_floor, confidence=0.95, **kw):
    lb, info = audit(mech_real, confidence=confidence, **kw)
    assert lb <= EPS, (f"privacy violated: the audit proves eps >= {lb:.3f} > {EPS} "
                       f"at {confidence:.0%} confidence ({info})")
    # the audit must be near-tight on the real mechanism, or it could not see much
    assert lb > real_floor, f"audit too weak on the real mechanism: bound {lb:.3f} ({info})"
    lb_b, info_b = audit(mech_broken, confidence=confidence, **kw)
    assert lb_b > EPS, (f"the audit missed a broken mechanism (noise too small): bound "
                        f"{lb_b:.3f} <= {EPS} ({info_b})")
    return lb, lb_b


# ------------------------------------------------------------------ fast versions
@pytest.mark.parametrize("R", [1.0, 5.0])
def test_output_perturbation_blackbox(R):
    _check(real_output, broken_output(2.0), real_floor=0.6, R=R, d=1,
           alpha=output_alpha(R), n_samples=20000)


@pytest.mark.parametrize("R", [1.0, 5.0])
def test_objective_perturbation_blackbox(R):
    _check(real_objective, broken_objective(2.0), real_floor=0.6, R=R, d=1,
           alpha=objective_alpha(R), n_samples=20000)


def test_forgotten_R_is_caught():
    # beta computed as if R = 1 while rows reach R = 5: noise 5 times too small
    R = 5.0
    lb, info = audit(broken_output(R), R=R, d=1, alpha=output_alpha(R), n_samples=4000)
    assert lb > EPS, (lb, info)


# ------------------------------------------------------------------ slow versions
SLOW_CASES = [
    # id, real mechanism, broken one, R, d, loss, Lambda, floor for the real mechanism
    ("output-huber-R5-d2-halved", real_output, broken_output(2.0), 5.0, 2, "huber",
     output_alpha(5.0), 0.7),
    ("objective-huber-R5-d1-halved", real_objective, broken_objective(2.0), 5.0, 1, "huber",
     objective_alpha(5.0), 0.8),
    ("objective-huber-R1-d2-halved", real_objective, broken_objective(2.0), 1.0, 2, "huber",
     objective_alpha(1.0), 0.65),
    # Delta > 0 branch: eps' = eps/2, so halved noise stays near eps; forgetting R
    # (beta = eps'/2 at R = 5: noise 5 times too small) must still be caught
    ("objective-huber-R5-d1-delta-noR", real_objective, broken_objective(5.0), 5.0, 1,
     "huber", objective_alpha(5.0, q=2.0), 0.35),
    # logistic: |phi'(z) + phi'(-z)| = 1 halves the noise term, so only a larger bug shows
    ("objective-logistic-R5-d1-noR", real_objective, broken_objective(5.0), 5.0, 1,
     "logistic", objective_alpha(5.0, loss="logistic", q=0.05), 0.25),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,real,broken,R,d,loss,alpha,floor", SLOW_CASES,
                         ids=[c[0] for c in SLOW_CASES])
def test_blackbox_large_sample(name, real, broken, R, d, loss, alpha, floor):
    _check(real, broken, real_floor=floor, R=R, d=d, loss=loss, alpha=alpha,
           n_samples=1000000, confidence=0.99)
