"""Exact privacy audits of the PURE mechanisms under neighbouring="add_remove", and the
intercept column's radius when a mechanism is called directly with a row description.

Add/remove neighbours D and D' = D + {u'} are normalised by the same public count
n_public (the data set's size is private). Objective perturbation's output density ratio is

    L(f) = beta (||b_D'(f)|| - ||b_D(f)||) + log det A_D(f) - log det A_D'(f),
    b_D(f) = -sum_{i in D} phi'(z_i) u_i - lam f,  lam = n_public (Lambda + Delta),

with b_D' = b_D - phi'(z') u' and A_D' = A_D + phi''(z') u' u'^T: one row's gradient, not
two, so beta = eps'/R and eps' = eps - log(1 + c R^2 / lam). Output perturbation's
minimiser moves by at most R/(n_public Lambda), and its exact loss is beta times the actual
move (the supremum over outputs t of beta (||t - w_D'|| - ||t - w_D||)).

Each audit runs on what dperm's mechanism records, must stay within eps, must come close to
it (power), and a deliberately broken constant (the mutants the mutation test found alive:
beta doubled, the output sensitivity halved) must exceed it.
"""
import warnings

import numpy as np
import pytest
from _privacy_audit import designed_1d, objective_privacy_loss, rows_in_ball

from dperm import erm
from dperm.data.design import WithInterceptColumn
from dperm.data.validation import apply_norm_bound
from dperm.exceptions import ConvergenceWarning, PrivacyLeakWarning
from dperm.losses import get_loss
from dperm.privacy.mechanisms import objective_perturbation, output_perturbation

EPS = 1.0
RS = [1.0, 5.0]
LOSS_H = [("logistic", 0.5), ("huber", 0.5), ("smooth_hinge", 0.5)]
# the audits must reach these fractions of eps (logistic: |phi'| < 1 at any finite margin)
POWER_FLOOR = {"logistic": 0.45, "huber": 0.7, "smooth_hinge": 0.6}


def _kinks(loss, h):
    if loss == "logistic":
        return np.array([0.0, -1.0, 1.0, -2.0, -6.0])
    return np.array([1 - h, 1.0, 1 + h, 1 - h / 2, 1 + h / 2, -(1 - h), 0.0, -3.0])


def _objective_fit(X, y, loss, h, R, q, seed):
    n = X.shape[0]
    alpha = get_loss(loss).curvature(h, R) / (n * q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (ConvergenceWarning, PrivacyLeakWarning))
        return objective_perturbation(X, y, loss=loss, alpha=alpha, epsilon=EPS, h=h,
                                      data_norm=R, neighbouring="add_remove", n_public=n,
                                      n_draws=600, random_state=seed)


def audit_objective_add_remove(loss, h, R, q, beta_factor=1.0, seed=0):
    """Max |L(f)| over added rows u' and outputs f, on a 1-d designed and a 3-d random set."""
    rng = np.random.default_rng(seed)
    worst, info = 0.0, {}
    for d in (1, 3):
        if d == 1:
            X, y = designed_1d(R)
        else:
            X = rows_in_ball(rng, 20, 3, R)
            y = rng.choice([-1.0, 1.0], 20)
        fit = _objective_fit(X, y, loss, h, R, q, seed + d)
        beta = float(fit.beta) * beta_factor
        lam = X.shape[0] * (float(fit.alpha) + float(fit.extra_l2))
        U = y[:, None] * X
        if d == 1:
            adds = [np.array([t * R]) for t in np.linspace(-1, 1, 41)]
            F = np.concatenate([np.linspace(-8, 8, 3201) / R,
                                _kinks(loss, h) / R, -_kinks(loss, h) / R])[:, None]
        else:
            adds = []
            for _ in range(40):
                v = rng.standard_normal(3)
                adds.append(R * v / np.linalg.norm(v))
            F = rng.standard_normal((1500, 3)) * (4.0 / R)
        F = np.concatenate([F, fit.coef.reshape(-1, d)])
        for u in adds:
            Fu = F
            if d == 3:      # outputs that put the added row at the loss's kinks
                z = rng.choice(_kinks(loss, h), 600)
                G = rng.standard_normal((600, 3)) * (2.0 / R)
                Fu = np.concatenate([F, G + ((z - G @ u) / (u @ u))[:, None] * u[None, :]])
            U2 = np.vstack([U, u[None, :]])
            L = np.maximum(objective_privacy_loss(U, U2, Fu, loss, h, lam, beta),
                           objective_privacy_loss(U2, U, Fu, loss, h, lam, beta))
            worst = max(worst, float(L.max()))
        info[d] = dict(beta=beta, lam=lam, eps_prime=float(fit.epsilon_prime),
                       delta=float(fit.extra_l2))
    return worst, info


@pytest.mark.parametrize("q", [0.2, 100.0], ids=["delta0", "delta_pos"])
@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("loss,h", LOSS_H)
def test_pure_objective_perturbation_add_remove_exact_privacy_loss(loss, h, R, q):
    worst, info = audit_objective_add_remove(loss, h, R, q)
    assert worst <= EPS + 1e-9, f"add/remove objective perturbation: loss {worst} > {EPS}: {info}"
    assert worst > POWER_FLOOR[loss] * EPS, f"audit too weak: {worst}, {info}"
    for v in info.values():
        # the add/remove constants: beta = eps'/R (one row's gradient), eps' = eps - log(1+q')
        assert v["beta"] == pytest.approx(v["eps_prime"] / R, rel=1e-12)
        assert (v["delta"] == 0) == (q < 1)


@pytest.mark.parametrize("loss,h", [("huber", 0.5), ("smooth_hinge", 0.5)])
def test_add_remove_objective_with_beta_doubled_is_caught(loss, h):
    """The surviving mutant (beta = 2 eps'/R, the replace-one noise halved again)."""
    worst, _ = audit_objective_add_remove(loss, h, 1.0, 0.2, beta_factor=2.0)
    assert worst > EPS * 1.2


def _add_remove_pair(loss, h, R, n=10):
    """D: n zero rows (both labels), so its minimiser is 0; D' adds u' = -R (label +1),
    which for the Huber and smoothed-hinge losses stays in the linear part (|phi'| = 1) when
    R^2/(n Lambda) < 1 - h: the minimiser then moves by exactly R/(n Lambda), the bound."""
    X = np.zeros((n, 1))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    alpha = 4.0 * R * R / n          # R^2/(n Lambda) = 1/4 < 1 - h
    X2, y2 = np.vstack([X, [[-R]]]), np.append(y, 1.0)
    return X, y, X2, y2, alpha


@pytest.mark.parametrize("R", RS)
@pytest.mark.parametrize("loss,h", [("huber", 0.5), ("smooth_hinge", 0.5), ("logistic", 0.5)])
def test_pure_output_perturbation_add_remove_exact_privacy_loss(loss, h, R):
    X, y, X2, y2, alpha = _add_remove_pair(loss, h, R)
    n = X.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fit = output_perturbation(X, y, loss=loss, alpha=alpha, epsilon=EPS, h=h, data_norm=R,
                                  neighbouring="add_remove", n_public=n, random_state=0)
    # both minimisers normalised by n_public: (1/n) sum + (Lambda/2)||w||^2 over n + 1 rows is
    # (n+1)/n times erm's (1/(n+1)) sum + (Lambda n/(n+1)/2)||w||^2
    w1 = erm.minimize(X, y, loss=loss, h=h, alpha=alpha, tol=1e-13).coef
    w2 = erm.minimize(X2, y2, loss=loss, h=h, alpha=alpha * n / (n + 1), tol=1e-13).coef
    move = float(np.linalg.norm(w2 - w1))
    assert move <= R / (n * alpha) * (1 + 1e-9)
    worst = float(fit.beta) * move     # sup over outputs t of beta(||t - w2|| - ||t - w1||)
    assert worst <= EPS + 1e-9
    if loss != "logistic":
        assert move == pytest.approx(R / (n * alpha), rel=1e-9)      # the bound is attained
        assert worst > 0.9 * EPS                                      # power
        # the surviving mutant: the add/remove sensitivity factor halved (beta doubled)
        assert 2.0 * float(fit.beta) * move > 1.5 * EPS


@pytest.mark.parametrize("R", [1.0, 3.0])
def test_intercept_column_radius_when_rows_are_not_clipped_first(R):
    """A mechanism called directly with WithInterceptColumn(X, R) over UNclipped rows (as an
    experiment may do): clipping must leave room for the constant column, so every row of
    the design, intercept included, has norm <= R. Ignoring the column's radius would let
    rows reach sqrt(3/2) R."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 4)) * 5 * R
    rows = WithInterceptColumn(X, R)
    bounded = apply_norm_bound(rows, R, "clip")
    norms = np.linalg.norm(bounded.toarray(), axis=1)
    assert np.all(norms <= R) and norms.max() > 0.999 * R
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        y = np.where(rng.random(50) < 0.5, -1.0, 1.0)
        fit = objective_perturbation(rows, y, alpha=1e-2, epsilon=1.0, data_norm=R,
                                     random_state=0)
    assert np.all(np.isfinite(fit.coef))
