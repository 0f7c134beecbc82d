"""Shared helpers for the privacy audits (white box and black box).

Written from the definitions in docs/specification.md, not from dperm's code: the mechanisms are
checked against these, so they must not share an implementation.

Notation: u_i = y_i x_i (the losses and A_D depend on the data only through u_i and
x_i x_i^T = u_i u_i^T), lam = n (Lambda + Delta).
"""
import numpy as np
from scipy import stats

from dperm.losses import get_loss

LOSS_H = [("logistic", 0.5), ("huber", 0.5), ("smooth_hinge", 0.5)]


# ------------------------------------------------------------------ data
def rows_in_ball(rng, n, d, R, frac_on_sphere=0.5):
    """n rows with norm <= R; a fraction sits exactly on the sphere (the worst case)."""
    v = rng.standard_normal((n, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    r = R * rng.uniform(0.0, 1.0, n) ** (1.0 / d)
    r[: int(frac_on_sphere * n)] = R
    return v * r[:, None]


def designed_1d(R, t_changed=1.0):
    """A 1-d data set (X, y) whose row 0 is the one to change.

    Row 0 has u = t R; the other rows are balanced (sum of u about 0) and shorter than
    R, so for f where row 0 sits at a kink of the loss, the others sit in a region of
    zero curvature: the setting where objective perturbation's bound is nearly attained.
    Labels alternate so that the data have both classes.
    """
    u = R * np.array([t_changed, 0.9, -0.9, 0.6, -0.6, 0.3, -0.3, 0.1, -0.1, 0.0])
    y = np.where(np.arange(u.size) % 2 == 0, 1.0, -1.0)
    return (y * u)[:, None], y


# ------------------------------------------------------------------ objective perturbation
def margins_terms(U, F, loss, h):
    """phi'(z) and phi''(z) at z = F U^T, shapes (m, n)."""
    Z = F @ U.T
    _, d1, d2 = get_loss(loss).per_sample(Z.ravel(), h)
    return d1.reshape(Z.shape), d2.reshape(Z.shape)


def noise_and_logdet(U, F, loss, h, lam):
    """b_D(F) and log det A_D(F) for outputs F of shape (m, d).

    The mechanism returns argmin_f J_D(f) + b.f/n + (Delta/2)||f||^2; its optimality
    condition grad J_D(f) + b/n + Delta f = 0 gives the unique noise that yields f:
        b_D(f) = -n (grad J_D(f) + Delta f) = -sum_i phi'(z_i) u_i - lam f,
    and the Jacobian of f -> b_D(f) is -A_D(f), A_D(f) = sum_i phi''(z_i) u_i u_i^T + lam I.
    """
    F = np.atleast_2d(F)
    d1, d2 = margins_terms(U, F, loss, h)
    b = -d1 @ U - lam * F
    A = np.einsum("mi,ij,ik->mjk", d2, U, U) + lam * np.eye(U.shape[1])
    sign, logdet = np.linalg.slogdet(A)
    assert np.all(sign > 0)
    return b, logdet


def objective_privacy_loss(U, U2, F, loss, h, lam, beta):
    """log p_D(f) / p_D'(f) for the output density of objective perturbation.

    p_D(f) = nu(b_D(f)) |det d b_D / d f| with nu(b) proportional to exp(-beta ||b||), so
        log p_D/p_D' = beta (||b_D'|| - ||b_D||) + log det A_D - log det A_D'.
    (The determinant of D goes with the density of D: docs/specification.md writes the two
    log det terms in the other order, which is not the log of the density ratio.)
    """
    b1, l1 = noise_and_logdet(U, F, loss, h, lam)
    b2, l2 = noise_and_logdet(U2, F, loss, h, lam)
    return beta * (np.linalg.norm(b2, axis=1) - np.linalg.norm(b1, axis=1)) + l1 - l2


# ------------------------------------------------------------------ black-box statistics
def cp_lower(k, n, a):
    """One-sided Clopper-Pearson lower bound at level a for k successes in n."""
    k = np.asarray(k, dtype=float)
    return np.where(k > 0, stats.beta.ppf(a, np.maximum(k, 1), n - k + 1), 0.0)


def cp_upper(k, n, a):
    """One-sided Clopper-Pearson upper bound at level a for k successes in n."""
    k = np.asarray(k, dtype=float)
    return np.where(k < n, stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1)), 1.0)


def _interval_counts(s, edges):
    """Counts of s in [edges[i], edges[j]) for all i < j, as a matrix (upper triangle)."""
    c = np.concatenate([[0], np.cumsum(np.histogram(s, bins=edges)[0])])
    return c[None, :] - c[:, None]


def _held_out_bound(a_d, b_d, a_d2, b_d2, edges, bounds):
    """The interval of `edges` (and the numerator's data set) that maximizes
    bounds(count, n, count', n') on the first halves a_d, a_d2, and that bound on the
    second halves b_d, b_d2.  Returns (bound, lo, hi, order, kb, kb2, nb, nb2), the
    held-out counts with the numerator's first (order 1: D' in the numerator)."""
    h1, h2 = a_d.size, a_d2.size
    ka, ka2 = _interval_counts(a_d, edges), _interval_counts(a_d2, edges)
    iu = np.triu_indices(edges.size, k=1)
    sel = np.stack([bounds(ka[iu], h1, ka2[iu], h2), bounds(ka2[iu], h2, ka[iu], h1)])
    order, idx = np.unravel_index(np.argmax(sel), sel.shape)
    lo, hi = edges[iu[0][idx]], edges[iu[1][idx]]
    kb = np.count_nonzero((b_d >= lo) & (b_d < hi))
    kb2 = np.count_nonzero((b_d2 >= lo) & (b_d2 < hi))
    nb, nb2 = b_d.size, b_d2.size
    if order == 1:
        kb, kb2, nb, nb2 = kb2, kb, nb2, nb
    bound = float(bounds(kb, nb, kb2, nb2))
    return bound, lo, hi, order, kb, kb2, nb, nb2


def epsilon_lower_bound(s_d, s_d2, *, confidence=0.95, n_edges=48):
    """Lower confidence bound on epsilon from samples of a scalar statistic under D and D'.

    The first half of each sample chooses the event (an interval of the statistic, and
    which data set is in the numerator) that maximizes the conservative log-ratio on
    that half; the second, independent half then gives Clopper-Pearson bounds
    lower(P_num) and upper(P_den), each at level (1 - confidence)/2, so
        epsilon >= log(lower / upper)   with probability >= confidence.
    Returns (bound, info dict).
    """
    s_d, s_d2 = np.asarray(s_d, float), np.asarray(s_d2, float)
    h1, h2 = s_d.size // 2, s_d2.size // 2
    a_d, b_d, a_d2, b_d2 = s_d[:h1], s_d[h1:], s_d2[:h2], s_d2[h2:]
    pooled = np.concatenate([a_d, a_d2])
    inner = np.unique(np.quantile(pooled, np.linspace(0, 1, n_edges + 1)[1:-1]))
    edges = np.concatenate([[-np.inf], inner, [np.inf]])
    a = (1.0 - confidence) / 2.0

    def bounds(x, nx, y, ny):
        with np.errstate(divide="ignore"):
            return np.log(cp_lower(x, nx, a)) - np.log(cp_upper(y, ny, a))

    bound, lo, hi, order, kb, kb2, nb, nb2 = _held_out_bound(a_d, b_d, a_d2, b_d2, edges,
                                                             bounds)
    info = {"event": (float(lo), float(hi)), "numerator": "D" if order == 0 else "D'",
            "counts": (kb, kb2), "n": (nb, nb2),
            "empirical_log_ratio": float(np.log(max(kb, 1) / nb) - np.log(max(kb2, 1) / nb2))}
    return bound, info


def epsilon_delta_lower_bound(s_d, s_d2, delta, *, confidence=0.95, n_edges=48,
                              tail=(1e-4, 0.05), n_tail=16):
    """Lower confidence bound on epsilon at a given delta, from samples of a scalar
    statistic under D and D'.

    (epsilon, delta)-DP gives P(S) <= e^epsilon P'(S) + delta for every event S, so
        epsilon >= log((P(S) - delta) / P'(S)).
    As in :func:`epsilon_lower_bound`, the first half of each sample chooses the event
    (an interval of the statistic, and which data set is in the numerator) that maximizes
    the conservative bound on that half; the second, independent half then gives
    Clopper-Pearson bounds lower(P_num) and upper(P_den), each at level
    (1 - confidence)/2, and the bound log((lower - delta) / upper) (-inf when
    lower <= delta).  The candidate interval ends are quantiles of the pooled first
    halves, with extra quantiles in both tails (where the Gaussian mechanisms' privacy
    loss is largest).  Returns (bound, info dict).
    """
    s_d, s_d2 = np.asarray(s_d, float), np.asarray(s_d2, float)
    delta = float(delta)
    h1, h2 = s_d.size // 2, s_d2.size // 2
    a_d, b_d, a_d2, b_d2 = s_d[:h1], s_d[h1:], s_d2[:h2], s_d2[h2:]
    pooled = np.concatenate([a_d, a_d2])
    t = np.geomspace(tail[0], tail[1], n_tail)
    probs = np.concatenate([np.linspace(0, 1, n_edges + 1)[1:-1], t, 1.0 - t])
    inner = np.unique(np.quantile(pooled, np.clip(probs, 0.0, 1.0)))
    edges = np.concatenate([[-np.inf], inner, [np.inf]])
    a = (1.0 - confidence) / 2.0

    def bounds(x, nx, y, ny):
        num = cp_lower(x, nx, a) - delta
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(num > 0, np.log(np.maximum(num, 1e-300)), -np.inf) \
                - np.log(cp_upper(y, ny, a))

    bound, lo, hi, order, kb, kb2, nb, nb2 = _held_out_bound(a_d, b_d, a_d2, b_d2, edges,
                                                             bounds)
    info = {"event": (float(lo), float(hi)), "numerator": "D" if order == 0 else "D'",
            "counts": (kb, kb2), "n": (nb, nb2), "delta": delta,
            "empirical": float(np.log(max(kb / nb - delta, 1e-300))
                               - np.log(max(kb2, 1) / nb2))}
    return bound, info
