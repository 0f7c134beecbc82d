"""AdaSSP: private ridge regression from noisy sufficient statistics.

Wang (2018), "Revisiting differentially private linear regression: optimal and adaptive
prediction & estimation in unbounded domain" (UAI), Algorithm 2 (AdaSSP), with dperm's
exact calibration: the three noisy releases (the smallest eigenvalue of X^T X, X^T X
itself and X^T y) are one Gaussian mechanism, and its noise is set by the analytic
Gaussian mechanism (Balle & Wang 2018) for the composed sensitivity instead of the
paper's three sqrt(2 log(1.25/delta)) budgets.  Every noisy value is released exactly on
a public power-of-two grid (dperm.privacy.exact_noise).  Derivations, the split of the
budget and what is released: docs/privacy_analysis.md, section "AdaSSP".

Units: the sufficient statistics are SUMS over rows (X^T X, X^T y): nothing is divided by
n, so the count is not used and need not be public under add/remove.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

from dperm.data import oracle as _oracle
from dperm.data.norms import row_norms
from dperm.data.validation import check_random_state
from dperm.privacy import exact_noise
from dperm.privacy.calibration import _finite, _positive, analytic_gaussian_sigma
from dperm.privacy.neighbouring import check_neighbouring, sensitivity_factor

if TYPE_CHECKING:
    from dperm.privacy import accountant

__all__ = ["adassp", "adassp_calibration", "adassp_sensitivities", "adassp_event",
           "AdaSSPCalibration", "DEFAULT_SPLIT", "FAILURE_PROBABILITY", "RIDGE_BOUNDS"]

#: default shares of the composed budget a^2 (docs "AdaSSP", part 3): the smallest
#: eigenvalue, X^T X, X^T y.  Chosen on the regression benchmark (BENCHMARKS.md,
#: "Private linear regression").
DEFAULT_SPLIT = (0.1, 0.45, 0.45)
#: rho of Wang (2018): the probability allowed to each of the two high-probability
#: bounds (the lower bound on lambda_min, the operator norm of the X^T X noise) that
#: choose the ridge; a utility parameter only (the privacy does not depend on it)
FAILURE_PROBABILITY = 0.05
#: the public bound eta on the operator norm of the X^T X noise that sets the ridge
#: (docs "AdaSSP", part 4): "edge" (default), sigma (sqrt(2(d+1)) + sqrt(2 log(1/rho))),
#: the edge of the noise matrix's spectrum plus a Gaussian concentration term;
#: "wang2018", sigma sqrt(d log(2 d^2 / rho)), the paper's (an entrywise union bound,
#: larger by about sqrt(log(2 d^2/rho) / 2)).  Utility only: privacy does not depend on it.
RIDGE_BOUNDS = ("edge", "wang2018")
#: grid resolution of the releases (exact_noise: s = sigma / g in [2^bits, 2^(bits+1)))
_BITS = 20


# --------------------------------------------------------------------------- validation
def _delta(value: float) -> float:
    v = _finite(value, "delta")
    if not 0.0 < v < 1.0:
        raise ValueError(f"delta: must lie strictly between 0 and 1, got {value!r}")
    return v


def _split(split: Sequence[float]) -> tuple[float, ...]:
    try:
        w = np.asarray(split, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"split: must be three positive numbers, got {split!r}") from None
    if w.shape != (3,) or not np.all(np.isfinite(w)) or not np.all(w > 0):
        raise ValueError(f"split: must be three positive finite numbers (shares of the "
                         f"budget for lambda_min, X^T X, X^T y), got {split!r}")
    return tuple(float(v) for v in w / w.sum())


def _ridge_bound(value: str) -> str:
    if not isinstance(value, str) or value not in RIDGE_BOUNDS:
        raise ValueError(f"ridge_bound: must be one of {RIDGE_BOUNDS}, got {value!r}")
    return value


def _n_features(d: int) -> int:
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"n_features: must be an integer >= 1, got {d!r}")
    return int(d)


def _n_public(n_public: float | None, neighbouring: str) -> int | None:
    if n_public is None:
        return None
    if neighbouring != "add_remove":
        raise ValueError("n_public: only used with neighbouring='add_remove' (under "
                         "replace_one the row count n is public)")
    if isinstance(n_public, (bool, np.bool_)) or not isinstance(
            n_public, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(n_public) and float(n_public).is_integer() and n_public >= 1):
        raise ValueError(f"n_public: must be a positive integer (a public count of rows), "
                         f"got {n_public!r}")
    return int(n_public)


def _data(X: npt.ArrayLike, y: npt.ArrayLike, data_norm: float,
          label_bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Dense float64 copies of X (n, d) and y (n,), checked against the bounds."""
    try:
        Xa = np.array(X, dtype=np.float64)       # a copy: the caller's array is never touched
    except (TypeError, ValueError):
        raise ValueError("X: must be a 2-D array of real numbers") from None
    if Xa.ndim != 2 or Xa.shape[0] < 1 or Xa.shape[1] < 1:
        raise ValueError(f"X: must be a 2-D array with at least one row and one column, "
                         f"got shape {Xa.shape}")
    try:
        ya = np.array(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y: must be a 1-D array of real numbers") from None
    if ya.ndim != 1 or ya.shape[0] != Xa.shape[0]:
        raise ValueError(f"y: must be 1-D with one value per row of X ({Xa.shape[0]}), "
                         f"got shape {ya.shape}")
    if not np.all(np.isfinite(Xa)):
        raise ValueError("X: must be finite (no NaN or inf)")
    if not np.all(np.isfinite(ya)):
        raise ValueError("y: must be finite (no NaN or inf)")
    norms = row_norms(Xa)     # dperm.data.norms: no overflow for huge cells
    if np.any(norms > data_norm):
        raise ValueError(f"X: {int(np.count_nonzero(norms > data_norm))} row(s) have norm above "
                         f"data_norm={data_norm}; clip the rows to the public bound first")
    if np.any(np.abs(ya) > label_bound):
        raise ValueError(f"y: {int(np.count_nonzero(np.abs(ya) > label_bound))} value(s) have "
                         f"|y| above label_bound={label_bound}; clip them to the public bound "
                         "first")
    return Xa, ya


# --------------------------------------------------------------------------- calibration
def adassp_sensitivities(data_norm: float, label_bound: float,
                         neighbouring: str) -> tuple[float, float, float]:
    """L2 sensitivities (lambda_min, X^T X, X^T y) of the three statistics (docs "AdaSSP", part 1).

    With m = sensitivity_factor(neighbouring) rows changed (2 replace_one, 1 add_remove),
    rows ||x|| <= R = data_norm and labels |y| <= B = label_bound:

    - lambda_min(X^T X): R^2 under both relations (Weyl: the change x'x'^T - x x^T, or
      +-x x^T, has eigenvalues in [-R^2, R^2]);
    - X^T X in the Frobenius norm: sqrt(m) R^2 (||x'x'^T - x x^T||_F^2 = ||x'||^4 +
      ||x||^4 - 2 (x.x')^2 <= 2 R^4, equality for orthogonal rows of norm R);
    - X^T y: m R B (||x'y' - x y|| <= ||x'||B + ||x||B, equality for x' = -x, y' = y).
    """
    r = _positive(data_norm, "data_norm")
    b = _positive(label_bound, "label_bound")
    m = sensitivity_factor(check_neighbouring(neighbouring))
    return r * r, math.sqrt(m) * r * r, m * r * b


@dataclass(frozen=True)
class AdaSSPCalibration:
    """Public constants of one AdaSSP release (docs "AdaSSP").

    sigma_lambda_min, sigma_xtx, sigma_xty : noise standard deviations of the three
        releases (the off-diagonal entries of X^T X get sigma_xtx / sqrt(2), i.e. the
        noise matrix is (G + G^T)/2 with G iid N(0, sigma_xtx^2)).
    noise_multiplier : sigma / Delta of the one Gaussian mechanism the three releases
        form (the analytic-Gaussian sigma at (epsilon, delta), sensitivity 1).
    split : the shares of the composed budget (sum 1).
    ridge_bound, eta : the rule (RIDGE_BOUNDS) and the public bound on the operator norm
        of the X^T X noise it gives.
    shift : how far the noisy lambda_min is moved down to be a lower bound w.h.p.
    """
    epsilon: float
    delta: float
    neighbouring: str
    data_norm: float
    label_bound: float
    n_features: int
    split: tuple[float, ...]
    sensitivities: tuple[float, float, float]
    noise_multiplier: float
    sigma_lambda_min: float
    sigma_xtx: float
    sigma_xty: float
    ridge_bound: str
    eta: float
    shift: float

    def event(self) -> accountant.ObjectiveGaussianEvent:
        """The accountant event of this release (see :func:`adassp_event`)."""
        return adassp_event(self.epsilon, self.delta, self.noise_multiplier)


def adassp_calibration(epsilon: float, delta: float, *, n_features: int, data_norm: float,
                       label_bound: float, neighbouring: str = "replace_one",
                       split: Sequence[float] = DEFAULT_SPLIT,
                       ridge_bound: str = "edge") -> AdaSSPCalibration:
    """The noise scales of AdaSSP at (epsilon, delta): public numbers only (docs "AdaSSP", part 2).

    a = 1 / analytic_gaussian_sigma(epsilon, delta, 1) is the largest whitened shift
    ||Delta_1/sigma_1, Delta_2/sigma_2, Delta_3/sigma_3|| a Gaussian mechanism may have
    at (epsilon, delta).  The releases are rounded to grids of step g <= sigma 2^-bits,
    which moves each of the M = 1 + d(d+1)/2 + d released coordinates by at most half a
    step; their whitened shift is within a_nom + sqrt(M) 2^-bits, so the budget is
    a_nom = a - sqrt(M) 2^-bits, and sigma_i = Delta_i / (sqrt(w_i) a_nom) for the split w.
    """
    eps = _positive(epsilon, "epsilon")
    dlt = _delta(delta)
    d = _n_features(n_features)
    nb = check_neighbouring(neighbouring)
    sens = adassp_sensitivities(data_norm, label_bound, nb)
    w = _split(split)
    ridge_bound = _ridge_bound(ridge_bound)
    unit = analytic_gaussian_sigma(eps, dlt, 1.0)
    a = 1.0 / unit
    coords = 1 + d * (d + 1) // 2 + d
    a_nom = a - math.sqrt(coords) * 2.0 ** -_BITS
    if not a_nom > 0.5 * a:
        raise ValueError(f"n_features: {d} features leave no room for the grid rounding at "
                         f"epsilon={eps:g}, delta={dlt:g}")
    sig = [s / (math.sqrt(wi) * a_nom) for s, wi in zip(sens, w)]
    rho = FAILURE_PROBABILITY
    if ridge_bound == "edge":
        eta = sig[1] * (math.sqrt(2.0 * (d + 1)) + math.sqrt(2.0 * math.log(1.0 / rho)))
    else:
        eta = sig[1] * math.sqrt(d * math.log(2.0 * d * d / rho))
    shift = sig[0] * float(ndtri(1.0 - rho))
    return AdaSSPCalibration(
        epsilon=eps, delta=dlt, neighbouring=nb, data_norm=float(data_norm),
        label_bound=float(label_bound), n_features=d, split=w, sensitivities=sens,
        noise_multiplier=unit, sigma_lambda_min=sig[0], sigma_xtx=sig[1], sigma_xty=sig[2],
        ridge_bound=ridge_bound, eta=eta, shift=shift)


def adassp_event(epsilon: float, delta: float,
                 noise_multiplier: float) -> accountant.ObjectiveGaussianEvent:
    """The dperm.privacy.accountant event of one AdaSSP release.

    The release is a discrete Gaussian mechanism whose whitened shift is at most
    1/noise_multiplier: rho-zCDP with rho = 1/(2 nm^2) (Canonne, Kamath & Steinke 2020),
    i.e. the RDP curve alpha/(2 nm^2), and (epsilon, delta)-DP as calibrated.  An
    ObjectiveGaussianEvent carries both (docs "AdaSSP", part 4); the estimator passes it to
    BudgetAccountant.check / spend.
    """
    from dperm.privacy import accountant

    nm = _positive(noise_multiplier, "noise_multiplier")
    orders = np.asarray(accountant.RDP_ORDERS)
    return accountant.ObjectiveGaussianEvent(float(epsilon), float(delta),
                                             accountant.RDP_ORDERS,
                                             tuple(orders / (2.0 * nm * nm)))


# --------------------------------------------------------------------------- the mechanism
def _release(center: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    out, _ = exact_noise.gaussian_on_grid(center, sigma, rng, bits=_BITS)
    return out


def _noisy_gram(G: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """G + (Z + Z^T)/2-shaped noise: diagonal N(0, sigma^2), off-diagonal N(0, sigma^2/2),
    each released on its grid; symmetric.  G: (..., d, d), any leading batch shape."""
    d = G.shape[-1]
    out = np.empty(G.shape)
    idx = np.arange(d)
    out[..., idx, idx] = _release(G[..., idx, idx], sigma, rng)
    if d > 1:
        iu = np.triu_indices(d, k=1)
        off = _release(G[..., iu[0], iu[1]], sigma / math.sqrt(2.0), rng)
        out[..., iu[0], iu[1]] = off
        out[..., iu[1], iu[0]] = off
    return out


def _statistics(X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The three statistics: lambda_min(X^T X), X^T X (exactly symmetric), X^T y."""
    return _from_sums(X.T @ X, X.T @ y)


def _from_sums(gram: np.ndarray, xty: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The three statistics from the sums X^T X and X^T y (dperm.data.oracle's
    sufficient_statistics: local rows, or rows on the Dask workers)."""
    gram = (gram + gram.T) / 2.0
    return float(np.linalg.eigvalsh(gram)[0]), gram, xty


def _release_statistics(lam_min: npt.ArrayLike, gram: npt.ArrayLike, xty: npt.ArrayLike,
                        cal: AdaSSPCalibration, rng: np.random.Generator
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The one Gaussian mechanism: (noisy lambda_min, noisy X^T X, noisy X^T y).

    Shapes (...), (..., d, d), (..., d) with one leading batch shape (the audits release
    many copies at once; adassp() releases one)."""
    lam_noisy = _release(np.asarray(lam_min, dtype=np.float64), cal.sigma_lambda_min, rng)
    gram_noisy = _noisy_gram(np.asarray(gram, dtype=np.float64), cal.sigma_xtx, rng)
    xty_noisy = _release(np.asarray(xty, dtype=np.float64), cal.sigma_xty, rng)
    return lam_noisy, gram_noisy, xty_noisy


def adassp(X: Any, y: Any, *, epsilon: float, delta: float, data_norm: float,
           label_bound: float, neighbouring: str = "replace_one", n_public: int | None = None,
           split: Sequence[float] = DEFAULT_SPLIT, ridge_bound: str = "edge",
           random_state: int | np.random.Generator | None = None
           ) -> tuple[np.ndarray, dict[str, Any]]:
    """(epsilon, delta)-DP ridge regression by AdaSSP (Wang 2018, Algorithm 2).

    X : (n, d) array, rows with ||x_i|| <= data_norm; y : (n,) with |y_i| <= label_bound
        (clip before calling: rows over the bounds are refused).  Neither is modified.
        Rows on the Dask workers with their targets there (dperm.data.oracle.check_rows
        with regression; y is then not used): the statistics are summed on the workers.
    epsilon > 0, 0 < delta < 1 : the guarantee, under `neighbouring` ("replace_one" or
        "add_remove"; the statistics are sums, so n is not used; n_public, add_remove
        only, is recorded as the public count).
    split : shares of the budget for (lambda_min, X^T X, X^T y), docs "AdaSSP", part 3.
    ridge_bound : "edge" or "wang2018", the bound eta that sets the ridge (RIDGE_BOUNDS).
    random_state : None (OS entropy), an int seed or a Generator; a seed voids the
        guarantee (tests and experiments only).

    Released: the noisy lambda_min, noisy X^T X and noisy X^T y (one Gaussian mechanism);
    from them, by post-processing,
        lambda_low = max(noisy lambda_min - shift, 0),  ridge = max(0, eta - lambda_low),
        coef = (noisy X^T X + ridge I)^{-1} noisy X^T y.
    Returns (coef (d,), record): the record holds public values only (the inputs'
    bounds and sizes, the noise scales, the split) and the released noisy values
    "lambda_min_noisy" and "ridge" (functions of the release, docs "AdaSSP", part 5).
    """
    eps = _positive(epsilon, "epsilon")
    dlt = _delta(delta)
    r = _positive(data_norm, "data_norm")
    b = _positive(label_bound, "label_bound")
    nb = check_neighbouring(neighbouring)
    n_pub = _n_public(n_public, nb)
    w = _split(split)
    rb = _ridge_bound(ridge_bound)
    gram, xty, (n, d) = _oracle.sufficient_statistics(
        X, y, r, b, lambda X, y: _data(X, y, r, b))
    cal = adassp_calibration(eps, dlt, n_features=d, data_norm=r, label_bound=b,
                             neighbouring=nb, split=w, ridge_bound=rb)
    rng = check_random_state(random_state)

    lam_min, gram, xty = _from_sums(gram, xty)
    lam_release, gram_noisy, xty_noisy = _release_statistics(lam_min, gram, xty, cal, rng)
    lam_noisy = float(lam_release)

    # post-processing of the release only
    lam_low = max(lam_noisy - cal.shift, 0.0)
    ridge = max(0.0, cal.eta - lam_low)
    A = gram_noisy + ridge * np.eye(d)
    try:
        coef = np.linalg.solve(A, xty_noisy)
    except np.linalg.LinAlgError:
        coef = np.linalg.lstsq(A, xty_noisy, rcond=None)[0]
    record = {
        "mechanism": "adassp",
        "epsilon": eps,
        "delta": dlt,
        "neighbouring": nb,
        "data_norm": r,
        "label_bound": b,
        "n_samples": n if nb == "replace_one" else n_pub,
        "n_features": d,
        "split": w,
        "noise_multiplier": cal.noise_multiplier,
        "sigma_lambda_min": cal.sigma_lambda_min,
        "sigma_xtx": cal.sigma_xtx,
        "sigma_xty": cal.sigma_xty,
        "ridge_bound": cal.ridge_bound,
        "eta": cal.eta,
        "shift": cal.shift,
        "failure_probability": FAILURE_PROBABILITY,
        "lambda_min_noisy": lam_noisy,
        "ridge": ridge,
    }
    return coef, record
