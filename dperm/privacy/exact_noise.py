"""Exact discrete-Gaussian noise on a public power-of-two grid.

Why
---
Noise sampled in float64 leaks the data through its low-order bits (Mironov
2012: the set of floats that ``x + noise`` can produce depends on ``x``).  This
module releases Gaussian-noised values through a floating-point-safe
construction:

    released = g * (round(center / g) + Z),    Z ~ N_Z(0, s^2) coordinatewise,

where ``g = 2**-k`` is a public power of two that depends on sigma only
(:func:`grid_for`), ``s^2 >= (sigma / g)^2`` and ``N_Z(0, s^2)`` is the discrete
Gaussian on the integers, P[Z = z] proportional to exp(-z^2 / (2 s^2)).  Z is
sampled *exactly* (Canonne, Kamath & Steinke 2020, "The discrete Gaussian for
differential privacy", NeurIPS; CKS below): by rejection from a discrete
Laplace, itself built from Bernoulli(exp(-gamma)) coins for rational gamma, all
with integer arithmetic on uniform integers from ``rng.integers``.  No float is
ever drawn (``random``, ``normal``, ``uniform`` ... are never called) and no
decision depends on a float computation.  Because g is a power of two and every
integer involved is below 2**53, ``round(center / g)`` and the final products
are exact in float64: released values lie exactly on the grid ``g * Z^d`` and
their distribution is exactly the intended one, whatever the bits of
``center``.

Units: ``sigma``, ``g``, ``center`` and the released values are in the units of
the released quantity (e.g. coefficient units); ``s = sigma / g`` and the
samplers' parameters (``t``, ``sigma2``, ``gamma``) are dimensionless (grid
steps, or pure numbers).

Privacy (what callers rely on)
------------------------------
Let c(D) in R^d be the center (e.g. a coefficient vector) with L2 sensitivity
Delta, and K(D) = round(c(D) / g) in Z^d.  Rounding moves each coordinate by at
most g/2, so ||K(D) - K(D')||_2 <= (Delta + sqrt(d) g) / g for neighbours D, D'
(:func:`grid_sensitivity` returns ``Delta + sqrt(d) g``, rounded up).  The
statement relied on is CKS 2020, multivariate discrete Gaussian, concentrated DP
(Theorem 14 in arXiv:2004.00010v5; the numbering may differ between versions):

    If q: X^n -> Z^d satisfies sum_j (q_j(x) - q_j(x'))^2 / s_j^2 <= eps^2 for all
    neighbours x, x', then M(x) = q(x) + Y with independent Y_j ~ N_Z(0, s_j^2)
    satisfies (eps^2 / 2)-zCDP.

It has no correction term.  With q = K, s_j = s >= sigma / g, this gives
rho = ||K(D) - K(D')||^2 / (2 s^2) <= (Delta + sqrt(d) g)^2 / (2 sigma^2): exactly
the zCDP of the continuous Gaussian mechanism N(0, sigma^2) at sensitivity
Delta + sqrt(d) g.  Multiplying by g is post-processing.  Hence a sigma
calibrated for the continuous Gaussian through its zCDP (or any conversion of
rho-zCDP to (eps, delta)-DP) carries over unchanged, provided it is calibrated
for ``grid_sensitivity(Delta, d, g)`` (:func:`calibrate_on_grid` does this).

Callers that calibrate sigma with the continuous Gaussian's *exact* (eps, delta)
profile (Balle & Wang 2018) use instead CKS's multivariate approximate-DP
theorem, which bounds the discrete Gaussian's delta(eps) by the continuous
expression up to a correction through tau = 10 * sum_j exp(-2 pi^2 s_j^2 * c)
for a fixed constant c of order one in their statement (we do not rely on its
exact value: for any c >= 1e-6, at s >= 2**20 one has 2 pi^2 s^2 c > 2e7, so
tau < 10 d exp(-2e7), far below float64's smallest positive number, i.e. the
profiles agree to within a term that underflows to 0).  ``bits`` below 20 makes
s smaller; keep the default for that argument to hold.

Rounding s^2 up: the samplers take s^2 as an exact rational with bounded
numerator and denominator.  :func:`gaussian_on_grid` rounds (sigma / g)^2 *up*
to a dyadic rational n / 2^k (k = min(20, 52 - bitlength(ceil(s^2))), so
n <= 2^52): the variance grows by a relative 2^-50 at most, and more noise
never weakens the guarantee.

Exactness caveats (events that do not happen): counters that would leave int64
(a run of more than ~2^11 consecutive successes of a Bernoulli(e^-1) coin, a
probability below e^-2048) raise OverflowError rather than return a biased
sample.
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from dperm.data.validation import check_random_state

__all__ = [
    "bernoulli_exp", "discrete_laplace", "discrete_gaussian",
    "grid_for", "round_to_grid", "on_grid", "grid_sensitivity",
    "gaussian_on_grid", "calibrate_on_grid", "grid_variance", "grid_range", "clamp_to_range",
]

_I64_MAX = np.iinfo(np.int64).max
#: the samplers' rational parameters must have numerator and denominator <= 2**52
_MAX_PARAM = 2 ** 52
_DEFAULT_BITS = 20
#: bits of a mechanism's release grid below its noise scale (`grid_for`): the grid of every
#: coefficient release of dperm.privacy.mechanisms and dperm.privacy.gaussian_release
GRID_BITS = 20

# the samplers' random source: a numpy Generator, an int seed or None (OS entropy); the
# helpers also take any object with a Generator-like ``integers`` (tests wrap one)
RNG = Union[np.random.Generator, int, None]
# an exact rational: an int, a Fraction, a float (its exact binary value) or (num, den)
Rational = Union[int, float, Fraction, tuple[int, int]]
# an output shape
Size = Union[int, Sequence[int], None]


# --------------------------------------------------------------------------- helpers

def _as_rng(rng: Any, name: str = "rng") -> Any:
    """A source of uniform integers: a numpy Generator (or anything with
    ``integers``, e.g. a wrapper in tests), an int seed, or None (OS entropy)."""
    if rng is not None and not isinstance(rng, (numbers.Integral, np.integer, np.random.RandomState)):
        if callable(getattr(rng, "integers", None)):
            return rng
    return check_random_state(rng, name=name)


def _size_tuple(size: Size) -> tuple[int, ...]:
    if size is None:
        return ()
    shape: Any = size        # an int, a 0-d array or a sequence (np.ndim tells them apart)
    if np.ndim(shape) == 0:
        return (int(shape),)
    return tuple(int(k) for k in shape)


def _exact_int(x: Any, name: str) -> int:
    """A Python int from an integral scalar (int, numpy integer, integral Fraction / float)."""
    if isinstance(x, bool):
        raise ValueError(f"{name}: expected an integer, got {x!r}")
    if isinstance(x, (numbers.Integral, np.integer)):
        return int(x)
    try:
        f = Fraction(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected an integer, got {x!r}") from None
    if f.denominator != 1:
        raise ValueError(f"{name}: expected an integer, got {x!r}")
    return int(f)


def _rational(x: Any, name: str) -> Fraction:
    """An exact Fraction from an int, Fraction, float (its exact binary value) or
    (numerator, denominator) pair."""
    if isinstance(x, bool):
        raise ValueError(f"{name}: expected a rational number, got {x!r}")
    if isinstance(x, tuple) and len(x) == 2:
        num, den = _exact_int(x[0], name), _exact_int(x[1], name)
        if den == 0:
            raise ValueError(f"{name}: zero denominator")
        return Fraction(num, den)
    try:
        f = Fraction(x)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name}: expected a finite rational number, got {x!r}") from None
    return f


def _int64_array(x: npt.ArrayLike, name: str) -> np.ndarray:
    """int64 array from integers (scalars or arrays), refusing values outside int64."""
    a = np.asarray(x)
    if a.dtype == object or a.dtype.kind not in "iu":
        if a.dtype.kind == "b":
            raise ValueError(f"{name}: expected integers, got booleans")
        try:
            ints = [_exact_int(v, name) for v in a.reshape(-1).tolist()] if a.ndim \
                else [_exact_int(a.item(), name)]
        except ValueError:
            raise ValueError(f"{name}: expected integers, got {x!r}") from None
        if any(v > _I64_MAX or v < -_I64_MAX for v in ints):
            raise ValueError(f"{name}: values must fit in int64")
        return np.array(ints, dtype=np.int64).reshape(a.shape)
    if a.dtype.kind == "u" and a.size and int(a.max()) > _I64_MAX:
        raise ValueError(f"{name}: values must fit in int64")
    return a.astype(np.int64)


def _bern_ratio(r: np.ndarray, q: Any, rng: Any) -> np.ndarray:
    """Bernoulli(r / q) per element: 0 <= r <= q, q >= 1 (int64 arrays or q scalar)."""
    return rng.integers(0, q, size=np.shape(r), dtype=np.int64) < r


def _bern_exp_frac(r: npt.ArrayLike, q: Any, rng: Any) -> np.ndarray:
    """Bernoulli(exp(-r/q)) per element for 0 <= r <= q (gamma in [0, 1]).

    CKS Algorithm 1 for gamma in [0, 1]: K <- 1; draw A ~ Bernoulli(gamma / K)
    until A = 0, incrementing K after each A = 1; return 1 iff K is odd.  Then
    P[K >= k] = gamma^(k-1) / (k-1)!, so P[K odd] = sum_k (-gamma)^k / k! = e^-gamma.
    All live elements share the same K at every round, so Bernoulli(gamma / K)
    is drawn as one uniform integer below q*K when that fits in int64, else as
    Bernoulli(r/q) AND Bernoulli(1/K).
    """
    r = np.asarray(r, dtype=np.int64)
    n = r.size
    r = r.reshape(-1)
    q_arr = np.broadcast_to(np.asarray(q, dtype=np.int64), r.shape).reshape(-1)
    q_scalar = int(q) if np.ndim(q) == 0 else None
    out = np.zeros(n, dtype=bool)
    live = np.arange(n)
    k = 1
    while live.size:
        if q_scalar is not None and q_scalar <= _I64_MAX // k:
            a = rng.integers(0, q_scalar * k, size=live.size, dtype=np.int64) < r[live]
        else:
            a = _bern_ratio(r[live], q_arr[live], rng)
            if k > 1:
                a &= rng.integers(0, k, size=live.size, dtype=np.int64) == 0
        out[live[~a]] = (k % 2 == 1)
        live = live[a]
        k += 1
    return out


def _bern_exp_int(m: npt.ArrayLike, rng: Any) -> np.ndarray:
    """Bernoulli(exp(-m)) per element for integers m >= 0: m independent
    Bernoulli(e^-1) coins all succeed.  Loops while some element is alive with
    coins left; alive elements die at rate 1 - 1/e per round."""
    m = np.asarray(m, dtype=np.int64).reshape(-1)
    alive = np.ones(m.size, dtype=bool)
    left = m.copy()
    while True:
        idx = np.flatnonzero(alive & (left > 0))
        if idx.size == 0:
            return alive
        ones = np.ones(idx.size, dtype=np.int64)
        alive[idx] = _bern_exp_frac(ones, 1, rng)
        left[idx] -= 1


def _geometric_exp1(n: int, rng: Any) -> np.ndarray:
    """V = number of successes of Bernoulli(e^-1) coins before the first failure:
    P[V >= v] = e^-v.  int64 array of length n."""
    v = np.zeros(n, dtype=np.int64)
    live = np.arange(n)
    while live.size:
        ok = _bern_exp_frac(np.ones(live.size, dtype=np.int64), 1, rng)
        live = live[ok]
        v[live] += 1
    return v


def _bern_exp_rational(num: npt.ArrayLike, den: npt.ArrayLike, rng: Any) -> np.ndarray:
    """Bernoulli(exp(-num/den)) per element, int64 arrays num >= 0, den >= 1."""
    num = np.asarray(num, dtype=np.int64)
    den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape).reshape(-1)
    num = num.reshape(-1)
    whole, frac = np.divmod(num, den)
    out = _bern_exp_int(whole, rng)
    idx = np.flatnonzero(out)
    if idx.size:
        d = int(den[0]) if np.all(den == den[0]) else den[idx]
        out[idx] = _bern_exp_frac(frac[idx], d, rng)
    return out


def _laplace(a: int, b: int, n: int, rng: Any) -> np.ndarray:
    """n draws of the discrete Laplace with scale t = a/b (integers 1 <= a, b <= 2^52):
    P[Y = y] proportional to exp(-abs(y) / t).  CKS Algorithm 2.

    Per slot: U uniform in {0..a-1}, keep with probability exp(-U/a); V ~ P[V >= v]
    = e^-v; X = U + a V is then geometric, P[X = x] proportional to exp(-x/a);
    Y = floor(X / b) has P[Y = y] proportional to exp(-y b / a); a fair sign B,
    rejecting (B = 1, Y = 0) so that 0 is not counted twice.
    """
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    vmax = (_I64_MAX - (a - 1)) // a
    while pending.size:
        m = pending.size
        u = rng.integers(0, a, size=m, dtype=np.int64)
        keep = _bern_exp_frac(u, a, rng)
        u = u[keep]
        slots = pending[keep]
        v = _geometric_exp1(u.size, rng)
        if v.size and int(v.max()) > vmax:  # probability < exp(-2^11)
            raise OverflowError("discrete Laplace: geometric counter left int64")
        y = (u + a * v) // b
        neg = rng.integers(0, 2, size=u.size, dtype=np.int64) == 1
        ok = ~(neg & (y == 0))
        out[slots[ok]] = np.where(neg[ok], -y[ok], y[ok])
        done = np.zeros(n, dtype=bool)
        done[slots[ok]] = True
        pending = pending[~done[pending]]
    return out


def _gamma_parts(diff: npt.ArrayLike, den: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    """floor and remainder of gamma = den * diff^2 / q, exactly, as int64 arrays.

    int64 arithmetic where den * diff^2 fits (|diff| <= isqrt(INT64_MAX // den)),
    Python integers for the rest (far tails).  A floor above INT64_MAX is clipped
    to it: accepting would need that many successive e^-1 coins, which no run
    reaches, so the clip changes nothing that can be observed.
    """
    diff = np.asarray(diff, dtype=np.int64).reshape(-1)
    lim = math.isqrt(_I64_MAX // den)
    fast = np.abs(diff) <= lim
    whole = np.empty(diff.size, dtype=np.int64)
    frac = np.empty(diff.size, dtype=np.int64)
    df = diff[fast]
    whole[fast], frac[fast] = np.divmod(den * df * df, q)
    for i in np.flatnonzero(~fast):
        w, f = divmod(den * int(diff[i]) ** 2, q)
        whole[i], frac[i] = min(w, _I64_MAX), f
    return whole, frac


def _check_param(f: Fraction, name: str) -> None:
    if f.numerator > _MAX_PARAM or f.denominator > _MAX_PARAM:
        raise ValueError(
            f"{name}: numerator and denominator must be <= 2**52 to keep the integer "
            f"arithmetic inside int64, got {f.numerator}/{f.denominator}; round it "
            "(upward, for a noise scale) to a coarser rational first")


# --------------------------------------------------------------------------- samplers

def bernoulli_exp(gamma_num: npt.ArrayLike, gamma_den: npt.ArrayLike = 1, size: Size = None,
                  rng: RNG = None) -> np.ndarray:
    """Exact Bernoulli(exp(-gamma)) coins for rational gamma = gamma_num / gamma_den >= 0.

    For gamma in [0, 1]: CKS 2020 Algorithm 1 (the alternating-series "K" loop with
    Bernoulli(gamma / K) coins).  For gamma > 1: floor(gamma) independent
    Bernoulli(exp(-1)) coins and one Bernoulli(exp(-(gamma - floor gamma))), all of
    which must come up 1.  Only ``rng.integers`` is used.

    Parameters
    ----------
    gamma_num : int or array of int, >= 0
        Numerator of gamma (dimensionless); broadcast with ``gamma_den`` to ``size``.
    gamma_den : int or array of int, >= 1
        Denominator.  Both must fit in int64.
    size : int, tuple or None
        Output shape; None gives the broadcast shape of the parameters.
    rng : numpy Generator, int seed or None (OS entropy)

    Returns
    -------
    bool array of shape ``size``: True with probability exp(-gamma), independently.
    """
    rng = _as_rng(rng)
    num = _int64_array(gamma_num, "gamma_num")
    den = _int64_array(gamma_den, "gamma_den")
    if np.any(num < 0):
        raise ValueError("gamma_num: gamma must be >= 0")
    if np.any(den < 1):
        raise ValueError("gamma_den: must be >= 1")
    shape = np.broadcast_shapes(num.shape, den.shape) if size is None else _size_tuple(size)
    num_b = np.broadcast_to(num, shape)
    den_b = np.broadcast_to(den, shape)
    return _bern_exp_rational(num_b, den_b, rng).reshape(shape)


def discrete_laplace(t: Rational, size: Size = None, rng: RNG = None) -> np.ndarray:
    """Exact discrete Laplace samples: P[Y = y] = (1 - e^{-1/t}) / (1 + e^{-1/t}) * exp(-abs(y) / t), y in Z.

    CKS 2020 Algorithm 2, integer arithmetic only.

    Parameters
    ----------
    t : int, Fraction, float (taken at its exact binary value) or (num, den) pair
        Scale, > 0, dimensionless (integer steps); numerator and denominator <= 2**52.
    size : int, tuple or None
        Output shape (None: a scalar-shaped array, shape ()).
    rng : numpy Generator, int seed or None (OS entropy)

    Returns
    -------
    int64 array of shape ``size``.
    """
    rng = _as_rng(rng)
    tf = _rational(t, "t")
    if tf <= 0:
        raise ValueError(f"t: must be > 0, got {t!r}")
    _check_param(tf, "t")
    shape = _size_tuple(size)
    n = int(np.prod(shape, dtype=np.int64))
    return _laplace(tf.numerator, tf.denominator, n, rng).reshape(shape)


def discrete_gaussian(sigma2_num: Rational, sigma2_den: Rational = 1, size: Size = None,
                      rng: RNG = None) -> np.ndarray:
    """Exact discrete Gaussian samples N_Z(0, sigma^2): P[Z = z] proportional to
    exp(-z^2 / (2 sigma^2)), z in Z.

    sigma^2 = sigma2_num / sigma2_den exactly (no rounding here).  Rejection from a
    discrete Laplace (CKS 2020 Algorithm 3), with c = floor(sigma) + 1 and Laplace
    scale t = sigma^2 / c (rational): a candidate Y is kept with probability
    exp(-(abs(Y) - c)^2 / (2 sigma^2)); the product exp(-abs(y) c / sigma^2) *
    exp(-(abs(y) - c)^2 / (2 sigma^2)) is proportional to exp(-y^2 / (2 sigma^2)).
    (Any positive t gives the exact target; choosing t with sigma^2 / t an integer
    keeps the exponent an integer ratio: gamma = den (abs(Y) - c)^2 / (2 num).)  About
    1.3 candidates per sample for large sigma (acceptance about sqrt(2 pi) e^-1/2 / 2);
    10^6 samples at sigma = 2^20 take about 0.8 s on one core.  The variance of N_Z(0, sigma^2) is
    at most sigma^2.

    Parameters
    ----------
    sigma2_num, sigma2_den : int, >= 1, <= 2**52
        Variance parameter sigma^2 (dimensionless, squared integer steps) as an
        exact ratio.  (A Fraction may be passed as ``sigma2_num`` with the default
        ``sigma2_den=1``.)
    size : int, tuple or None
        Output shape (None: shape ()).
    rng : numpy Generator, int seed or None (OS entropy)

    Returns
    -------
    int64 array of shape ``size``.
    """
    rng = _as_rng(rng)
    s2 = _rational(sigma2_num, "sigma2_num") / _rational(sigma2_den, "sigma2_den")
    if s2 <= 0:
        raise ValueError(f"sigma2: must be > 0, got {sigma2_num}/{sigma2_den}")
    _check_param(s2, "sigma2")
    num, den = s2.numerator, s2.denominator
    c = math.isqrt(num // den) + 1                 # floor(sigma) + 1 >= 1
    lap_a, lap_b = num, den * c                     # t = num / (den c); den c < 2^53
    g = math.gcd(lap_a, lap_b)
    lap_a, lap_b = lap_a // g, lap_b // g
    q = 2 * num                                     # gamma = den (|Y| - c)^2 / q
    shape = _size_tuple(size)
    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        y = _laplace(lap_a, lap_b, pending.size, rng)
        whole, frac = _gamma_parts(np.abs(y) - c, den, q)
        acc = _bern_exp_int(whole, rng)
        idx = np.flatnonzero(acc)
        if idx.size:
            acc[idx] = _bern_exp_frac(frac[idx], q, rng)
        out[pending[acc]] = y[acc]
        pending = pending[~acc]
    return out.reshape(shape)


# --------------------------------------------------------------------------- the grid

def _grid_exponent(g: float, name: str = "g") -> int:
    """e with g == 2**e exactly; refuses anything that is not a positive normal power of two."""
    try:
        gf = float(g)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a power of two, got {g!r}") from None
    if not (math.isfinite(gf) and gf > 0):
        raise ValueError(f"{name}: must be a positive finite power of two, got {g!r}")
    m, e = math.frexp(gf)
    if m != 0.5 or gf < 2.0 ** -1022:
        raise ValueError(f"{name}: must be an exact (normal) power of two, got {g!r}")
    return e - 1


def grid_for(sigma: float, bits: int = _DEFAULT_BITS) -> float:
    """The public grid step for noise of standard deviation ``sigma``.

    g = 2**(floor(log2 sigma) - bits), computed exactly (frexp), so that
    s = sigma / g lies in [2**bits, 2**(bits + 1)) and is exact in float64.  A
    function of sigma (public) only, never of the data.

    Parameters
    ----------
    sigma : float > 0
        Noise standard deviation, in the units of the released values.
    bits : int in [1, 25]
        Grid steps per sigma, in bits (25 keeps s^2 <= 2**52).

    Returns
    -------
    float, a power of two, in the units of sigma.
    """
    bits = _exact_int(bits, "bits")
    if not 1 <= bits <= 25:
        raise ValueError(f"bits: must be in [1, 25], got {bits}")
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma: must be positive and finite, got {sigma!r}")
    _, e = math.frexp(sigma)                 # sigma = m 2^e, m in [0.5, 1)
    ge = e - 1 - bits
    if ge < -1022:
        raise ValueError(f"sigma: too small for a normal float64 grid step ({sigma!r} with bits={bits})")
    return math.ldexp(1.0, ge)


def _grid_index(values: npt.ArrayLike, g: float, name: str = "values") -> np.ndarray:
    """round(values / g) (ties to even) as int64, exactly; refuses |v| / g >= 2**52 and non-finite."""
    ge = _grid_exponent(g)
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: must be finite")
    bound = math.ldexp(1.0, 52 + ge) if 52 + ge < 1024 else math.inf
    if np.any(np.abs(v) >= bound):
        # (no value in the message: a release's center is private)
        raise ValueError(f"{name}: |value| / g must be < 2**52 (g = {g!r}) for the grid "
                         "rounding to be exact")
    # v / g only shifts the exponent (exact unless it underflows, and then rint gives 0,
    # which is the nearest grid index anyway)
    return np.rint(v / g).astype(np.int64)


def grid_range(g: float) -> float:
    """(2**52 - 2**40) g: the largest absolute value a release on the grid g * Z handles exactly.

    Room of 2**40 steps is left for the noise.

    Parameters
    ----------
    g : float
        The grid step, a power of two.

    Returns
    -------
    float
        The range, in the units of g.
    """
    ge = _grid_exponent(g)
    return math.ldexp(2.0**52 - 2.0**40, ge) if 52 + ge < 1024 else math.inf


def clamp_to_range(values: npt.ArrayLike, g: float) -> np.ndarray:
    """values clipped coordinate-wise to [-grid_range(g), grid_range(g)] (a new array).

    The releases clamp their private center with this before rounding it, so that
    no center aborts a release (an abort, or its message, would depend on the data).
    A coordinate-wise clamp is 1-Lipschitz in every l_p norm: the sensitivity a
    noise scale was calibrated for holds for the clamped centers too.  NaN stays NaN.

    Parameters
    ----------
    values : array_like
        The centers (any shape; coefficient units).
    g : float
        The grid step, a power of two.

    Returns
    -------
    ndarray
        A new float64 array of the shape of ``values``.
    """
    b = grid_range(g)
    return np.clip(np.asarray(values, dtype=np.float64), -b, b)


def round_to_grid(values: npt.ArrayLike, g: float) -> np.ndarray:
    """The nearest point of the grid g * Z to each value (ties to even), exactly.

    Parameters
    ----------
    values : array_like of float, any shape
        Finite, with abs(value) / g < 2**52 (ValueError naming ``values`` otherwise).
    g : float
        Grid step, an exact power of two (see :func:`grid_for`).

    Returns
    -------
    float64 array of the shape of ``values`` (a new array; the input is not written).
    Each entry is k * g with k an integer and abs(value - k g) <= g / 2.
    """
    k = _grid_index(values, g)
    return k.astype(np.float64) * float(g)


def on_grid(values: npt.ArrayLike, g: float) -> bool:
    """True iff every value is an integer multiple of g (exact test; non-finite values are not).

    Exact: each float is written as M * 2**E with M an integer (np.frexp), and is
    a multiple of g = 2**e iff it is 0 or E + trailing_zeros(M) >= e.

    Parameters
    ----------
    values : array_like of float, any shape
    g : float, an exact power of two

    Returns
    -------
    bool
    """
    ge = _grid_exponent(g)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return True
    if not np.all(np.isfinite(v)):
        return False
    nz = v[v != 0]
    if nz.size == 0:
        return True
    mant, exp = np.frexp(np.abs(nz))                  # |v| = mant 2^exp, mant in [0.5, 1)
    m = np.ldexp(mant, 53).astype(np.int64)           # integer, |v| = m 2^(exp - 53)
    low = m & -m                                      # lowest set bit, a power of two
    tz = np.frexp(low.astype(np.float64))[1] - 1      # exact: low is a power of two
    return bool(np.all(exp.astype(np.int64) - 53 + tz >= ge))


def grid_sensitivity(sensitivity: float, d: int, g: float) -> float:
    """L2 sensitivity of round(center / g) * g: ``sensitivity + sqrt(d) * g``, rounded up.

    Rounding each of d coordinates moves it by at most g / 2, so two centers at
    L2 distance <= ``sensitivity`` round to points at distance <= sensitivity +
    2 * sqrt(d) * g / 2.  Calibrate sigma for this value.

    Parameters
    ----------
    sensitivity : float >= 0, in the units of the released values
    d : int >= 1, number of coordinates that one record can move
    g : float, the grid step (power of two)

    Returns
    -------
    float, in the units of ``sensitivity`` (two ulps above the float sum).
    """
    _grid_exponent(g)
    sensitivity = float(sensitivity)
    if not (math.isfinite(sensitivity) and sensitivity >= 0):
        raise ValueError(f"sensitivity: must be finite and >= 0, got {sensitivity!r}")
    d = _exact_int(d, "d")
    if d < 1:
        raise ValueError(f"d: must be >= 1, got {d}")
    x = sensitivity + math.sqrt(d) * float(g)
    return math.nextafter(math.nextafter(x, math.inf), math.inf)


def grid_variance(sigma: float, g: float) -> Fraction:
    """The exact variance parameter s^2 (in squared grid steps) that :func:`gaussian_on_grid` uses.

    (sigma / g)^2 rounded UP to a dyadic rational n / 2**k with
    k = min(20, 52 - bitlength(ceil((sigma / g)^2))) and n <= 2**52.

    Parameters
    ----------
    sigma : float
        The noise standard deviation, > 0 (coefficient units).
    g : float
        The grid step, a power of two (coefficient units).

    Returns
    -------
    fractions.Fraction
        At least (sigma / g)^2; relative excess <= 2**-50 when sigma / g >= 2**20.
    """
    ge = _grid_exponent(g)
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma: must be positive and finite, got {sigma!r}")
    s = Fraction(sigma) / Fraction(2) ** ge            # exact
    s2 = s * s
    top = math.ceil(s2).bit_length()
    if top > 52:
        raise ValueError(f"sigma: sigma / g = {float(s)!r} is too large (s^2 must be <= 2**52); "
                         "use a coarser grid")
    k = min(20, 52 - top)
    n = math.ceil(s2 * 2 ** k)            # < 2^top 2^k <= 2^52
    return Fraction(n, 2 ** k)


def gaussian_on_grid(center: npt.ArrayLike, sigma: float, rng: RNG = None, *,
                     bits: int = _DEFAULT_BITS) -> tuple[np.ndarray, float]:
    """Release ``center`` + Gaussian noise, exactly, on the public grid g * Z.

    released = round_to_grid(center, g) + g * Z, with Z int64 of the shape of
    ``center``, independent N_Z(0, s^2) coordinates, s^2 = :func:`grid_variance`
    (sigma, g) >= (sigma / g)^2, g = :func:`grid_for` (sigma, bits).  Computed as
    (round(center / g) + Z) * g with an integer sum below 2**53, so every
    released value is exactly a grid point and nothing of ``center`` survives in
    its low bits beyond the nearest grid point.

    Privacy: see the module docstring.  The rounding moves the center by <= g / 2
    per coordinate, so calibrate sigma for ``grid_sensitivity(Delta, d, g)``
    (:func:`calibrate_on_grid`); then the release has the zCDP of the continuous
    Gaussian mechanism with that sigma and sensitivity (CKS 2020, multivariate).

    Parameters
    ----------
    center : array_like of float, any shape, e.g. (d,) or (m, d)
        Noiseless values, in their own units; finite.  Clamped coordinate-wise to
        +-grid_range(g) before rounding (1-Lipschitz: the sensitivity holds).
        Not modified.
    sigma : float > 0
        Noise standard deviation, in the units of ``center``.
    rng : numpy Generator, int seed or None (OS entropy)
        Only ``rng.integers`` is called.  A fixed seed voids the guarantee.
    bits : int, keyword-only
        Grid resolution, g = 2**(floor(log2 sigma) - bits); keep >= 20 for the
        (eps, delta) statement in the module docstring.

    Returns
    -------
    released : float64 array of the shape of ``center``
    g : float, the grid step (a power of two, public)
    """
    rng = _as_rng(rng)
    g = grid_for(sigma, bits)
    center = np.asarray(center, dtype=np.float64)
    if not np.all(np.isfinite(center)):   # a solver failure, never a converged minimiser
        raise ValueError("center: must be finite")
    # clamped (see clamp_to_range): no finite center aborts the release
    k = _grid_index(clamp_to_range(center, g), g, name="center")
    s2 = grid_variance(sigma, g)
    z = discrete_gaussian(s2.numerator, s2.denominator, size=k.shape, rng=rng)
    total = k + z                                      # |k| < 2^52, |z| << 2^52: no overflow
    if k.size and int(np.max(np.abs(total))) >= 2 ** 53:
        raise ValueError("center: |center| / g plus the noise reaches 2**53 grid steps; "
                         "the release would not be exact in float64")
    return total.astype(np.float64) * g, g


def calibrate_on_grid(sigma_for: Callable[[float], float], sensitivity: float, d: int, *,
                      bits: int = _DEFAULT_BITS, max_iter: int = 64) -> tuple[float, float]:
    """Find sigma calibrated for the grid sensitivity of its own grid.

    ``sigma_for(Delta)`` must return the noise standard deviation the caller's
    accounting requires at L2 sensitivity Delta (non-decreasing in Delta).  The
    grid depends on sigma, and the grid sensitivity on the grid; starting from
    g = grid_for(sigma_for(sensitivity)), this iterates sigma = sigma_for(
    grid_sensitivity(sensitivity, d, g)) until grid_for(sigma) <= g, so that the
    returned sigma covers ``grid_sensitivity(sensitivity, d, grid_for(sigma))``.

    Parameters
    ----------
    sigma_for : callable
        float -> float: the standard deviation the accounting requires at an L2
        sensitivity.
    sensitivity : float
        The L2 sensitivity of the released center before rounding (coefficient units).
    d : int
        The number of released coordinates (the rounding adds sqrt(d) g).
    bits : int, default 20
        The grid is the largest power of two g <= sigma / 2**bits.
    max_iter : int, default 64
        Iterations before giving up (RuntimeError).

    Returns
    -------
    sigma, g : float
        Pass sigma (and bits) to :func:`gaussian_on_grid`, which recomputes the same g.
    """
    g = grid_for(sigma_for(float(sensitivity)), bits)
    for _ in range(max_iter):
        sigma = float(sigma_for(grid_sensitivity(sensitivity, d, g)))
        g_new = grid_for(sigma, bits)
        if g_new <= g:
            return sigma, g_new
        g = g_new
    raise RuntimeError(
        "calibrate_on_grid: did not settle: the grid term sqrt(d) * g, with g about "
        "sigma * 2**-bits, keeps raising sigma (d too large for bits: raise bits), or "
        "sigma_for is not non-decreasing")


def warn_if_grid_clamps(g: float, scale: float) -> None:
    """Warn (from public numbers only: the grid and a public bound on the coefficients'
    size) when the release's grid range is below that size: larger coefficients are
    clamped to +-grid_range(g), which keeps the guarantee but may cost accuracy.
    The warning points at the caller of the mechanism step that calls this (stacklevel 3)."""
    limit = grid_range(g)
    if limit < scale:
        warnings.warn(
            f"the release grid (step {g:.3g}, set by the noise scale) represents "
            f"coefficients up to +-{limit:.3g} only, below the public bound {scale:.3g} on "
            "their size: larger ones are clamped (the guarantee holds). The noise is tiny: "
            "raise tol (perturbation='amp') or alpha.", UserWarning, stacklevel=3)
