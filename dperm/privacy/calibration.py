"""(epsilon, delta) calibration of Gaussian noise for ERM: pure functions of public numbers.

Every function here takes public values only (epsilon, delta, n, alpha, the norm bound R,
the curvature bound, the neighbouring relation) and returns noise scales or privacy
profiles; nothing reads data.  The derivations, every constant and the normalisations are
written out in ``docs/privacy_analysis.md``; the section numbers below refer to it.

Units.  The package's objective is the MEAN form::

    J(f) = (1/n) sum_i loss(y_i f.x_i) + (alpha/2) ||f||^2 [+ (Delta/2) ||f||^2 + b.f / n]

Multiplied by n it is the SUM form::

    sum_i loss(y_i f.x_i) + (Lambda_tot/2) ||f||^2 + b.f,   Lambda_tot = n (alpha + Delta),

and the objective-perturbation noise ``b ~ N(0, sigma^2 I)`` (sigma, ``sigma_objective``)
is in SUM units.  Output-perturbation noise (``output_gaussian_sigma``, ``sigma_output``)
is added to the coefficients: coefficient units.  ``extra_l2`` (Delta) is in mean units,
like alpha.  ``curvature`` is the bound on loss''(z) ||x||^2, i.e. c R^2 for a loss with
loss'' <= c and rows ||x|| <= R = ``data_norm``; for ``n_classes >= 3`` (softmax
cross-entropy, coefficient matrix d x K) it is the bound on the trace of one row's Hessian,
default (1 - 1/K) R^2.

Neighbouring relations: ``"replace_one"`` (one row replaced, n public and unchanged) and
``"add_remove"`` (one row added or removed; the SUM-form regulariser Lambda_tot, i.e. the
normalisation n, must be the same public number for both data sets).

All arrays are float64; every delta returned is an upper bound computed so that rounding
and the numerical maximisations err on the safe side (section 7).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_ndtr, logsumexp

from dperm.losses import SOFTMAX_GRADIENT_FACTOR, check_n_classes, softmax_curvature
from dperm.privacy.neighbouring import check_neighbouring, sensitivity_factor

__all__ = [
    "gaussian_delta", "analytic_gaussian_sigma",
    "objective_gaussian_delta", "objective_gaussian_rdp", "objective_gaussian_calibration",
    "ObjectiveGaussianCalibration",
    "kifer_objective_sigma", "kifer_min_lambda_total",
    "output_gaussian_sigma",
    "amp_calibration", "AMPCalibration",
]

_LOG2 = math.log(2.0)
# cells of the grid on which the replace-one maximum over the corner split is bounded
_SPLIT_CELLS = 2048


# --------------------------------------------------------------------------- validation
def _finite(value: Any, name: str) -> float:
    """value as a finite float; a bool is refused (True is not an epsilon)."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}: must be a real number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be a real number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name}: must be finite, got {value!r}")
    return v


def _positive(value: Any, name: str) -> float:
    v = _finite(value, name)
    if not v > 0:
        raise ValueError(f"{name}: must be > 0, got {value!r}")
    return v


def _nonnegative(value: Any, name: str) -> float:
    v = _finite(value, name)
    if not v >= 0:
        raise ValueError(f"{name}: must be >= 0, got {value!r}")
    return v


def _unit_open(value: Any, name: str) -> float:
    v = _finite(value, name)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name}: must lie strictly between 0 and 1, got {value!r}")
    return v


def _curvature(curvature: float | None, data_norm: float, n_classes: int) -> float:
    if curvature is None:
        if n_classes == 2:
            raise ValueError("curvature: required for n_classes=2 (the bound c R^2 on "
                             "loss'' ||x||^2)")
        return softmax_curvature(n_classes, data_norm)
    return _nonnegative(curvature, "curvature")


def _epsilon_array(epsilon: ArrayLike) -> np.ndarray:
    e = np.asarray(epsilon, dtype=np.float64)
    if not np.all(np.isfinite(e)):
        raise ValueError(f"epsilon: must be finite, got {epsilon!r}")
    return e


def _flag(value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"nonincreasing_loss: must be True or False, got {value!r}")
    return bool(value)


def _out(x: np.ndarray, scalar: bool) -> float | np.ndarray:
    return float(x) if scalar else x


# --------------------------------------------------------------------------- Gaussian core
def _gauss_delta_a(e: ArrayLike, a: ArrayLike) -> np.ndarray:
    """Hockey-stick delta at e of N(0,1) vs N(a,1): Phi(a/2 - e/a) - e^e Phi(-a/2 - e/a).

    e, a broadcast; a >= 0 (a = 0 gives (1 - e^e)_+).  Evaluated as
    Phi(A) (1 - exp(e + log Phi(B) - log Phi(A))) in log space, so tiny deltas keep
    their relative accuracy.
    """
    e, a = np.broadcast_arrays(np.asarray(e, dtype=np.float64), np.asarray(a, dtype=np.float64))
    out = np.empty(e.shape)
    zero = a <= 0
    out[zero] = np.maximum(-np.expm1(e[zero]), 0.0)
    pos = ~zero
    if np.any(pos):
        ap, ep = a[pos], e[pos]
        la = log_ndtr(ap / 2 - ep / ap)
        lb = log_ndtr(-ap / 2 - ep / ap)
        with np.errstate(invalid="ignore", over="ignore"):
            r = np.minimum(ep + lb - la, 0.0)
            val = np.exp(la) * -np.expm1(r)
        val = np.where(np.isneginf(la), 0.0, val)
        out[pos] = np.clip(val, 0.0, 1.0)
    return out


def _two_sided_a(e: ArrayLike, a: ArrayLike) -> np.ndarray:
    """E[(1 - exp(e - a^2/2 - a|Z|))_+], Z ~ N(0,1): the tail of the bound a|Z| + a^2/2.

    Equals 2 * _gauss_delta_a(e, a) when e >= a^2/2, and 1 - 2 e^e Phi(-a) below
    (docs section 3.2); a = 0 gives (1 - e^e)_+.  Increasing in a.
    """
    e, a = np.broadcast_arrays(np.asarray(e, dtype=np.float64), np.asarray(a, dtype=np.float64))
    upper = 2.0 * _gauss_delta_a(e, a)
    with np.errstate(over="ignore"):
        lower = -np.expm1(_LOG2 + e + log_ndtr(-a))
    out = np.where(e >= 0.5 * a * a, upper, lower)
    return np.clip(out, 0.0, 1.0)


def gaussian_delta(epsilon: ArrayLike, sensitivity: float, sigma: float) -> float | np.ndarray:
    """Exact delta(epsilon) of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    Computed in log space, with S = ``sensitivity``::

        delta = Phi(S/(2 sigma) - epsilon sigma/S) - e^epsilon Phi(-S/(2 sigma) - epsilon sigma/S)

    Parameters
    ----------
    epsilon : float or array_like
        Any real epsilon (vectorised: the result has its shape).
    sensitivity : float
        The L2 sensitivity S >= 0, in the units of ``sigma`` (0 gives (1 - e^epsilon)_+).
    sigma : float
        The noise's standard deviation, > 0.

    Returns
    -------
    float or ndarray
        A float for a scalar epsilon, else an array of epsilon's shape.

    Examples
    --------
    >>> from dperm.privacy.calibration import gaussian_delta
    >>> float(gaussian_delta(1.0, 1.0, 2.0)) < 0.1
    True
    """
    e = _epsilon_array(epsilon)
    s = _nonnegative(sensitivity, "sensitivity")
    sg = _positive(sigma, "sigma")
    return _out(_gauss_delta_a(e, s / sg), e.ndim == 0)


def _smallest_sigma(ok: Callable[[float], Any], guess: float) -> float:
    """Smallest sigma > 0 with ok(sigma), ok monotone (False below, True above).

    Geometric bisection to relative width 1e-12; the returned value is one at which
    ok was evaluated True, so the inequality holds exactly in floating point.
    """
    hi = guess
    for _ in range(2000):
        if ok(hi):
            break
        hi *= 2.0
    else:  # pragma: no cover - ok never true
        raise RuntimeError("calibration: no sigma found that meets the target delta")
    lo = hi
    for _ in range(2000):
        lo *= 0.5
        if not ok(lo):
            break
    else:  # pragma: no cover
        raise RuntimeError("calibration: target delta met by every sigma; check the inputs")
    while hi / lo - 1.0 > 1e-12:
        mid = math.sqrt(lo * hi)
        if mid <= lo or mid >= hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with gaussian_delta(epsilon, sensitivity, sigma) <= delta.

    Bisection in log sigma to relative 1e-12; the returned sigma satisfies the inequality
    when gaussian_delta is evaluated at it (Balle & Wang 2018's analytic Gaussian mechanism).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    sensitivity : float
        L2 sensitivity, > 0; sigma comes back in its units.

    Returns
    -------
    float
        The noise standard deviation sigma.

    Examples
    --------
    >>> from dperm.privacy.calibration import analytic_gaussian_sigma, gaussian_delta
    >>> s = analytic_gaussian_sigma(1.0, 1e-6, 1.0)
    >>> bool(gaussian_delta(1.0, 1.0, s) <= 1e-6)
    True
    """
    eps = _positive(epsilon, "epsilon")
    dlt = _unit_open(delta, "delta")
    s = _positive(sensitivity, "sensitivity")
    guess = s * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps
    return _smallest_sigma(lambda sg: gaussian_delta(eps, s, sg) <= dlt, guess)


# --------------------------------------------------------------------------- objective perturbation
def _epsilon_det(curvature: float, lambda_total: float, n_classes: int) -> float:
    """Bound on the log-det (Jacobian) part of the privacy loss (docs section 3.1)."""
    if n_classes == 2:
        return math.log1p(curvature / lambda_total)
    k1 = n_classes - 1
    return k1 * math.log1p(curvature / (k1 * lambda_total))


def _lambda_for_epsilon_det(target: float, curvature: float, n_classes: int) -> float:
    """Lambda_tot at which _epsilon_det equals target (closed form)."""
    if n_classes == 2:
        return curvature / math.expm1(target)
    k1 = n_classes - 1
    return curvature / (k1 * math.expm1(target / k1))


def _split_grid() -> np.ndarray:
    """u_k = t_k / (4 R^2), k = 0..N on [0, 1/2] (the split is symmetric in u <-> 1 - u)."""
    return np.linspace(0.0, 0.5, _SPLIT_CELLS + 1)


def _objective_delta_core(eps_prime: ArrayLike, sigma: float, data_norm: float,
                          neighbouring: str, n_classes: int,
                          nonincreasing: bool = False) -> np.ndarray:
    """delta bound as a function of eps' = epsilon - epsilon_det (array), docs section 3."""
    ep = np.asarray(eps_prime, dtype=np.float64)
    a = data_norm / sigma
    if n_classes == 2 and nonincreasing:
        # loss' <= 0: one row's gradient moves along one signed direction only, so the
        # corners are 0, w1, w2, w1 + w2 (||w_i|| <= R, ||w1 + w2|| <= 2R); docs section 3.3
        base = np.maximum(-np.expm1(ep), 0.0)
        if neighbouring == "add_remove":
            out = base + _gauss_delta_a(ep, a)
        else:
            out = base + 2.0 * _gauss_delta_a(ep, a) + _gauss_delta_a(ep, 2.0 * a)
    elif n_classes == 2:
        if neighbouring == "add_remove":
            out = _two_sided_a(ep, a)
        else:
            # corners +-(x - x'), +-(x + x') with ||x-x'||^2 + ||x+x'||^2 <= 4R^2:
            # sup over u in [0,1/2] of T(eps'; 2a sqrt(u)) + T(eps'; 2a sqrt(1-u)),
            # bounded above cell by cell with T increasing in its second argument.
            u = _split_grid()
            e = ep[..., None]
            t1 = _two_sided_a(e, 2 * a * np.sqrt(u[1:]))      # right end of each cell
            t2 = _two_sided_a(e, 2 * a * np.sqrt(1 - u[:-1]))  # left end of each cell
            out = np.max(t1 + t2, axis=-1)
    else:
        k1 = n_classes - 1
        base = np.maximum(-np.expm1(ep), 0.0)      # the zero corner, > 0 only if eps' < 0
        g1 = _gauss_delta_a(ep, SOFTMAX_GRADIENT_FACTOR * a)
        if neighbouring == "add_remove":
            out = base + k1 * g1
        else:
            g2 = _gauss_delta_a(ep, 2.0 * SOFTMAX_GRADIENT_FACTOR * a)
            out = base + 2 * k1 * g1 + k1 * k1 * g2
    return np.minimum(out, 1.0)


def _objective_args(sigma: float, data_norm: float, curvature: float | None,
                    lambda_total: float, neighbouring: str, n_classes: int
                    ) -> tuple[float, float, float, float, str, int]:
    sg = _positive(sigma, "sigma")
    r = _positive(data_norm, "data_norm")
    k = check_n_classes(n_classes)
    c = _curvature(curvature, r, k)
    lam = _positive(lambda_total, "lambda_total")
    nb = check_neighbouring(neighbouring)
    return sg, r, c, lam, nb, k


def objective_gaussian_delta(epsilon: ArrayLike, sigma: float, *, data_norm: float,
                             curvature: float | None = None, lambda_total: float,
                             neighbouring: str, n_classes: int = 2,
                             nonincreasing_loss: bool = False) -> float | np.ndarray:
    """Upper bound on delta(epsilon) of objective perturbation with b ~ N(0, sigma^2 I).

    The mechanism releases argmin sum_i loss + (lambda_total/2)||f||^2 + b.f (SUM units:
    ``sigma`` and ``lambda_total`` = n (alpha + Delta) are both per SUM objective).
    With eps' = epsilon - epsilon_det, epsilon_det = log(1 + curvature/lambda_total)
    (binary) or (K-1) log(1 + curvature/((K-1) lambda_total)) (K = n_classes >= 3),
    a = data_norm / sigma, Z ~ N(0,1) and T(e; a) = E[(1 - exp(e - a^2/2 - a abs(Z)))_+]
    (= 2 gaussian_delta(e; a) for e >= a^2/2)::

        binary, add_remove:   T(eps'; a)
        binary, replace_one:  max over u in [0,1/2] of T(eps'; 2a sqrt(u)) + T(eps'; 2a sqrt(1-u))
                              (>= T(eps'; 2a), its u = 0 end; the max is bounded from above)
        K classes, add_remove:  (K-1) gd(eps'; sqrt(2) a)                     [+ (1-e^eps')_+]
        K classes, replace_one: (K-1)^2 gd(eps'; 2 sqrt(2) a) + 2(K-1) gd(eps'; sqrt(2) a)
                                                                               [+ (1-e^eps')_+]

    with gd the one-sided gaussian_delta in units of sigma; every result is capped at 1.
    ``nonincreasing_loss=True`` (binary only; loss' <= 0 everywhere, as for the logistic,
    Huber and smoothed-hinge losses): one row's gradient moves along a single signed
    direction, the corners are 0, w1, w2, w1 + w2, and::

        binary, add_remove:   gd(eps'; a)                          [+ (1-e^eps')_+]
        binary, replace_one:  2 gd(eps'; a) + gd(eps'; 2a)         [+ (1-e^eps')_+]

    Derivations: docs/privacy_analysis.md, section 3.

    Parameters
    ----------
    epsilon : float or array_like
        The epsilon(s) at which to bound delta (vectorised).
    sigma : float
        Noise scale of b, SUM units, > 0.
    data_norm : float
        R, the public bound on every row's L2 norm.
    curvature : float, optional
        Bound on loss'' ||x||^2 (c R^2); for n_classes >= 3 a bound on the trace of one
        row's Hessian, default (1 - 1/K) R^2.
    lambda_total : float
        n (alpha + Delta), the SUM-form regulariser, > 0.
    neighbouring : {"replace_one", "add_remove"}
            The neighbouring relation: one row replaced (n public) or one row added or removed.
    n_classes : int, default 2
        K, the number of classes (K >= 3: the multinomial model).
    nonincreasing_loss : bool, default False
        True when loss' <= 0 everywhere (binary losses only): the tighter bound above.

    Returns
    -------
    float or ndarray
        A float for a scalar epsilon, else an array of epsilon's shape.
    """
    e = _epsilon_array(epsilon)
    sg, r, c, lam, nb, k = _objective_args(sigma, data_norm, curvature, lambda_total,
                                           neighbouring, n_classes)
    ed = _epsilon_det(c, lam, k)
    return _out(_objective_delta_core(e - ed, sg, r, nb, k, _flag(nonincreasing_loss)),
                e.ndim == 0)


def objective_gaussian_rdp(orders: ArrayLike, sigma: float, *, data_norm: float,
                           curvature: float | None = None, lambda_total: float,
                           neighbouring: str, n_classes: int = 2,
                           nonincreasing_loss: bool = False) -> np.ndarray:
    """Upper bound on the Renyi DP curve of Gaussian objective perturbation.

    RDP(order) <= epsilon_det + (1/(order-1)) log sum_i E exp((order-1)(a_i Z_i + a_i^2/2))
    over the corners i of the gradient difference (docs/privacy_analysis.md, section 4)::

        binary, add_remove:   eps_det + order a^2/2 + log(2 Phi((order-1) a)) / (order-1)
        binary, replace_one:  eps_det + log max_u [H(2a sqrt(u)) + H(2a sqrt(1-u))] / (order-1),
                              H(b) = 2 Phi((order-1) b) exp((order-1) order b^2/2)
        K classes, add_remove:  eps_det + log(1 + (K-1) e^{(order-1) order a1^2/2}) / (order-1)
        K classes, replace_one: eps_det + log(1 + 2(K-1) e^{(order-1) order a1^2/2}
                                              + (K-1)^2 e^{(order-1) order a2^2/2}) / (order-1)

    with a = data_norm/sigma, a1 = sqrt(2) a, a2 = 2 sqrt(2) a.  All within
    epsilon_det + order a_max^2/2 + log(m)/(order-1), m the number of non-zero corners.

    Parameters
    ----------
    orders : array_like
        Renyi orders, each > 1.
    sigma : float
        Noise scale of b, SUM units, > 0.
    data_norm : float
        R, the public bound on every row's L2 norm.
    curvature : float, optional
        As in :func:`objective_gaussian_delta`.
    lambda_total : float
        n (alpha + Delta), the SUM-form regulariser, > 0.
    neighbouring : {"replace_one", "add_remove"}
            The neighbouring relation: one row replaced (n public) or one row added or removed.
    n_classes : int, default 2
        K, the number of classes.
    nonincreasing_loss : bool, default False
        True when loss' <= 0 everywhere (binary losses only).

    Returns
    -------
    ndarray
        The RDP epsilon at each order, of the shape of ``orders``.
    """
    o = np.asarray(orders, dtype=np.float64)
    if o.size == 0 or not np.all(np.isfinite(o)) or not np.all(o > 1):
        raise ValueError(f"orders: every order must be finite and > 1, got {orders!r}")
    sg, r, c, lam, nb, k = _objective_args(sigma, data_norm, curvature, lambda_total,
                                           neighbouring, n_classes)
    nonincreasing = _flag(nonincreasing_loss)
    ed = _epsilon_det(c, lam, k)
    a = r / sg
    m1 = o - 1.0
    if k == 2 and nonincreasing:
        # corners 0, w1, w2, w1 + w2 (docs section 4): 1 + 2 e^{..a^2} + e^{..(2a)^2}
        # (add_remove: 1 + e^{..a^2})
        terms = [np.zeros_like(m1), m1 * (m1 + 1.0) * a * a / 2.0]
        if nb == "replace_one":
            terms = [np.zeros_like(m1), _LOG2 + m1 * (m1 + 1.0) * a * a / 2.0,
                     m1 * (m1 + 1.0) * 4.0 * a * a / 2.0]
        log_sum = logsumexp(np.stack(terms), axis=0)
    elif k == 2:
        def log_h(b: Any) -> Any:   # log H(b), b broadcast against m1
            return _LOG2 + log_ndtr(m1 * b) + m1 * (m1 + 1.0) * b * b / 2.0
        if nb == "add_remove":
            log_sum = log_h(a)
        else:
            u = _split_grid()
            mm = m1[..., None]
            o1 = mm + 1.0
            b1 = 2 * a * np.sqrt(u[1:])
            b2 = 2 * a * np.sqrt(1 - u[:-1])
            l1 = _LOG2 + log_ndtr(mm * b1) + mm * o1 * b1 * b1 / 2.0
            l2 = _LOG2 + log_ndtr(mm * b2) + mm * o1 * b2 * b2 / 2.0
            log_sum = np.max(np.logaddexp(l1, l2), axis=-1)
    else:
        k1 = n_classes - 1
        a1sq = 2.0 * a * a     # (SOFTMAX_GRADIENT_FACTOR a)^2
        terms = [np.zeros_like(m1), math.log(k1) + m1 * (m1 + 1.0) * a1sq / 2.0]
        if nb == "replace_one":
            terms = [np.zeros_like(m1), math.log(2 * k1) + m1 * (m1 + 1.0) * a1sq / 2.0,
                     2 * math.log(k1) + m1 * (m1 + 1.0) * 4.0 * a1sq / 2.0]
        log_sum = logsumexp(np.stack(terms), axis=0)
    return ed + log_sum / m1


@dataclass(frozen=True)
class ObjectiveGaussianCalibration:
    """Constants of Gaussian objective perturbation.

    Parameters
    ----------
    sigma : float
        Noise scale of b ~ N(0, sigma^2 I) in SUM units (the term b.f, not b.f/n; on the
        mean objective the term is b.f/n with the same b).
    extra_l2 : float
        Delta, the extra regulariser in MEAN units (like alpha), >= 0.
    epsilon_det : float
        The log-det part of epsilon it leaves for (<= epsilon/2).
    lambda_total : float
        n (alpha + Delta), the SUM-form regulariser.
    """
    sigma: float
    extra_l2: float
    epsilon_det: float
    lambda_total: float


def _calibrate_objective(eps: float, dlt: float, n: float, alpha: float, r: float, c: float,
                         nb: str, k: int,
                         nonincreasing: bool = False) -> ObjectiveGaussianCalibration:
    lam0 = n * alpha
    if _epsilon_det(c, lam0, k) <= eps / 2.0:
        extra = 0.0
    else:
        extra = max(_lambda_for_epsilon_det(eps / 2.0, c, k) / n - alpha, 0.0)
    lam = n * (alpha + extra)
    ed = _epsilon_det(c, lam, k)
    ep = eps - ed
    scale = sensitivity_factor(nb)
    if k > 2:
        scale *= SOFTMAX_GRADIENT_FACTOR
    guess = scale * r * math.sqrt(2.0 * math.log(2.5 / dlt)) / ep

    def ok(sg: float) -> bool:
        return float(_objective_delta_core(ep, sg, r, nb, k, nonincreasing)) <= dlt

    sigma = _smallest_sigma(ok, guess)
    return ObjectiveGaussianCalibration(sigma=sigma, extra_l2=extra, epsilon_det=ed,
                                        lambda_total=lam)


def _calibration_args(epsilon: float, delta: float, n: float, alpha: float, data_norm: float,
                      curvature: float | None, neighbouring: str, n_classes: int
                      ) -> tuple[float, float, float, float, float, float, str, int]:
    """The validated public inputs of an objective-perturbation calibration."""
    eps = _positive(epsilon, "epsilon")
    dlt = _unit_open(delta, "delta")
    nn = _positive(n, "n")
    al = _positive(alpha, "alpha")
    r = _positive(data_norm, "data_norm")
    k = check_n_classes(n_classes)
    c = _curvature(curvature, r, k)
    nb = check_neighbouring(neighbouring)
    return eps, dlt, nn, al, r, c, nb, k


def objective_gaussian_calibration(epsilon: float, delta: float, *, n: float, alpha: float,
                                   data_norm: float, curvature: float | None = None,
                                   neighbouring: str, n_classes: int = 2,
                                   nonincreasing_loss: bool = False) -> ObjectiveGaussianCalibration:
    """(sigma, Delta) of objective perturbation with Gaussian noise at (epsilon, delta).

    Delta rule (as the paper's): if epsilon_det at Delta = 0 is <= epsilon/2, Delta = 0;
    otherwise Delta is chosen in closed form so that epsilon_det = epsilon/2 exactly.
    Then sigma is the smallest value (relative 1e-12) with objective_gaussian_delta <= delta,
    checked at the returned value.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    n : float
        The public normalisation (a count) of the mean objective.
    alpha : float
        Lambda, the mean-units regulariser, > 0.
    data_norm : float
        R, the public bound on every row's L2 norm.
    curvature : float, optional
        c R^2 (binary) or the per-row Hessian trace bound (n_classes >= 3, default
        (1 - 1/K) R^2).
    neighbouring : {"replace_one", "add_remove"}
            The neighbouring relation: one row replaced (n public) or one row added or removed.
    n_classes : int, default 2
        K, the number of classes.
    nonincreasing_loss : bool, default False
        True when loss' <= 0 everywhere (binary losses only).

    Returns
    -------
    ObjectiveGaussianCalibration
        sigma (SUM units), Delta (mean units), epsilon_det and lambda_total.

    Examples
    --------
    >>> from dperm.privacy.calibration import objective_gaussian_calibration
    >>> cal = objective_gaussian_calibration(1.0, 1e-6, n=10_000, alpha=1e-3, data_norm=1.0,
    ...                                      curvature=0.25, neighbouring="replace_one")
    >>> cal.extra_l2, bool(cal.sigma > 0)
    (0.0, True)
    """
    eps, dlt, nn, al, r, c, nb, k = _calibration_args(epsilon, delta, n, alpha, data_norm,
                                                      curvature, neighbouring, n_classes)
    return _calibrate_objective(eps, dlt, nn, al, r, c, nb, k, _flag(nonincreasing_loss))


# --------------------------------------------------------------------------- references
def kifer_objective_sigma(epsilon: float, delta: float, *, data_norm: float,
                          neighbouring: str) -> float:
    """Reference: sigma of Kifer, Smith & Thakurta (2012), Thm 2 as usually quoted.

    sigma^2 = zeta^2 (8 log(2/delta) + 4 epsilon) / epsilon^2, SUM units, with zeta the
    L2 bound on the change of the summed gradient between neighbours: zeta = R for
    add_remove (one gradient of norm <= R), 2R for replace_one (difference of two such
    gradients; docs/privacy_analysis.md, section 5).  Valid together with
    lambda_total >= kifer_min_lambda_total.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    data_norm : float
        R, the public bound on every row's L2 norm.
    neighbouring : {"replace_one", "add_remove"}
            The neighbouring relation: one row replaced (n public) or one row added or removed.

    Returns
    -------
    float
        sigma, SUM units.
    """
    eps = _positive(epsilon, "epsilon")
    dlt = _unit_open(delta, "delta")
    r = _positive(data_norm, "data_norm")
    zeta = sensitivity_factor(check_neighbouring(neighbouring)) * r
    return zeta * math.sqrt(8.0 * math.log(2.0 / dlt) + 4.0 * eps) / eps


def kifer_min_lambda_total(epsilon: float, curvature: float) -> float:
    """Reference: smallest SUM-form regulariser of Kifer et al. (2012), 2 lambda_h / epsilon.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    curvature : float
        lambda_h = c R^2, the bound on the rank-one Hessian's eigenvalue.

    Returns
    -------
    float
        The smallest lambda_total (SUM units) their theorem allows.
    """
    eps = _positive(epsilon, "epsilon")
    return 2.0 * _nonnegative(curvature, "curvature") / eps


# --------------------------------------------------------------------------- output perturbation
def output_gaussian_sigma(epsilon: float, delta: float, *, n: float, alpha: float,
                          data_norm: float, neighbouring: str) -> float:
    """Gaussian output perturbation: sigma (coefficient units) for the exact minimiser.

    L2 sensitivity of the argmin of the mean objective with public normalisation n
    (Lambda_tot = n alpha): 2R/(n alpha) for replace_one, R/(n alpha) for add_remove
    (docs/privacy_analysis.md, section 6; add_remove needs the same n for both neighbours).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    n : float
        The public normalisation (a count) of the mean objective.
    alpha : float
        Lambda, the mean-units regulariser, > 0.
    data_norm : float
        R, the public bound on every row's L2 norm.
    neighbouring : {"replace_one", "add_remove"}
            The neighbouring relation: one row replaced (n public) or one row added or removed.

    Returns
    -------
    float
        The analytic Gaussian sigma of that sensitivity, in coefficient units.
    """
    eps = _positive(epsilon, "epsilon")
    dlt = _unit_open(delta, "delta")
    nn = _positive(n, "n")
    al = _positive(alpha, "alpha")
    r = _positive(data_norm, "data_norm")
    factor = sensitivity_factor(check_neighbouring(neighbouring))
    return analytic_gaussian_sigma(eps, dlt, factor * r / (nn * al))


# --------------------------------------------------------------------------- AMP
@dataclass(frozen=True)
class AMPCalibration:
    """Constants of approximate minima perturbation (docs/privacy_analysis.md, section 8).

    Parameters
    ----------
    sigma_objective : float
        Objective noise b ~ N(0, sigma^2 I), SUM units.
    extra_l2 : float
        Delta, mean units.
    sigma_output : float
        Noise N(0, sigma_output^2 I) added to the approximate minimiser, coefficient units.
    epsilon_objective, epsilon_output, delta_objective, delta_output : float
        The split: epsilon_objective + 2 epsilon_output <= epsilon and
        e^{eps_out} delta_obj + (1 + e^{eps_obj + eps_out}) delta_out <= delta.
    grad_tol : float
        The gradient-norm threshold of the MEAN private objective the solver must meet.
    epsilon_det, lambda_total : float
        As in :class:`ObjectiveGaussianCalibration` (SUM units).
    """
    sigma_objective: float
    extra_l2: float
    sigma_output: float
    epsilon_objective: float
    epsilon_output: float
    delta_objective: float
    delta_output: float
    grad_tol: float
    epsilon_det: float
    lambda_total: float

    def total_epsilon(self) -> float:
        """The total epsilon of the two releases: epsilon_objective + 2 epsilon_output.

        Returns
        -------
        float
            At most the epsilon the calibration was asked for.
        """
        return self.epsilon_objective + 2.0 * self.epsilon_output

    def total_delta(self) -> float:
        """The total delta of the two releases.

        e^{eps_out} delta_objective + (1 + e^{eps_obj + eps_out}) delta_output.

        Returns
        -------
        float
            At most the delta the calibration was asked for.
        """
        eo, ej = self.epsilon_output, self.epsilon_objective
        return math.exp(eo) * self.delta_objective + (1.0 + math.exp(ej + eo)) * self.delta_output


def amp_calibration(epsilon: float, delta: float, *, n: float, alpha: float, data_norm: float,
                    curvature: float | None = None, neighbouring: str, grad_tol: float,
                    output_fraction: float = 0.05, n_classes: int = 2,
                    nonincreasing_loss: bool = False) -> AMPCalibration:
    """Approximate minima perturbation: objective noise, then output noise on an approximate
    minimiser theta_hat with ||grad J_priv(theta_hat)||_2 <= grad_tol (MEAN objective,
    Delta and b.f/n included; SUM units gamma = n grad_tol).

    Split (f = output_fraction, 0 < f < 1/2): eps_out = f eps, eps_obj = eps - 2 eps_out;
    delta_obj = (1-f) delta e^{-eps_out}, delta_out = f delta / (1 + e^{eps_obj + eps_out}),
    so that eps_obj + 2 eps_out = eps and e^{eps_out} delta_obj + (1 + e^{eps_obj+eps_out})
    delta_out = delta (checked <= in floating point).  The objective part is
    objective_gaussian_calibration(eps_obj, delta_obj, ...); the output part is the
    analytic Gaussian sigma for (eps_out, delta_out) and L2 shift gamma / lambda_total =
    grad_tol / (alpha + Delta) (coefficient units).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    n : float
        The public normalisation (a count) of the mean objective.
    alpha : float
        Lambda, the mean-units regulariser, > 0.
    data_norm : float
        R, the public bound on every row's L2 norm.
    curvature : float, optional
        As in :func:`objective_gaussian_calibration`.
    neighbouring : {"replace_one", "add_remove"}
            The neighbouring relation: one row replaced (n public) or one row added or removed.
    grad_tol : float
        The gradient-norm threshold (MEAN private objective) the solver must meet, > 0.
    output_fraction : float, default 0.05
        f, the share of epsilon and delta spent on the output noise, in (0, 1/2).
    n_classes : int, default 2
        K, the number of classes.
    nonincreasing_loss : bool, default False
        True when loss' <= 0 everywhere (binary losses only).

    Returns
    -------
    AMPCalibration
        The two noise scales and the split.
    """
    eps, dlt, nn, al, r, c, nb, k = _calibration_args(epsilon, delta, n, alpha, data_norm,
                                                      curvature, neighbouring, n_classes)
    gt = _positive(grad_tol, "grad_tol")
    f = _finite(output_fraction, "output_fraction")
    if not 0.0 < f < 0.5:
        raise ValueError(f"output_fraction: must lie strictly between 0 and 1/2, "
                         f"got {output_fraction!r}")
    e_out = f * eps
    e_obj = eps - 2.0 * e_out
    while e_obj + 2.0 * e_out > eps:
        e_obj = math.nextafter(e_obj, 0.0)
    d_obj = (1.0 - f) * dlt * math.exp(-e_out)
    d_out = f * dlt / (1.0 + math.exp(e_obj + e_out))
    while math.exp(e_out) * d_obj + (1.0 + math.exp(e_obj + e_out)) * d_out > dlt:
        d_obj *= 1.0 - 1e-12
        d_out *= 1.0 - 1e-12
    obj = _calibrate_objective(e_obj, d_obj, nn, al, r, c, nb, k, _flag(nonincreasing_loss))
    shift = gt / (al + obj.extra_l2)       # = n grad_tol / lambda_total, coefficient units
    s_out = analytic_gaussian_sigma(e_out, d_out, shift)
    return AMPCalibration(sigma_objective=obj.sigma, extra_l2=obj.extra_l2, sigma_output=s_out,
                          epsilon_objective=e_obj, epsilon_output=e_out, delta_objective=d_obj,
                          delta_output=d_out, grad_tol=gt, epsilon_det=obj.epsilon_det,
                          lambda_total=obj.lambda_total)
