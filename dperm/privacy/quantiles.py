"""Private bounds: differentially private quantiles of numeric columns.

:func:`estimate_bounds` releases, for each numeric column, a low and a high
quantile (default 1 % and 99 %) as two points of a PUBLIC grid, drawn together by
one exponential mechanism (McSherry & Talwar 2007) over the pairs of grid points;
docs/privacy_analysis.md, "Private bounds", has the derivation.  The result plugs
into :class:`~dperm.PublicSchema` and :class:`~dperm.PublicBoundsTransformer` (it
is a mapping column -> (low, high)).

The mechanism, for one column with values x_1..x_n (missing values dropped, the
rest clipped to the public range [g_0, g_K]):

* one pass counts the values at each grid point and inside each open cell
  (:func:`column_histogram`); nothing else is read from the data, so the counts
  can come from chunks or a cluster;
* the low bound g_i stands for the cell [g_i, g_i+1), the high bound g_j for the
  cell (g_j-1, g_j]; their rank errors e_low(i), e_high(j) are the distances from
  q_low n and q_high n to the cells' rank intervals ([#{x < g_i}, #{x < g_i+1}] and
  [#{x <= g_j-1}, #{x <= g_j}]): a point mass (ties, integers, top-coded values)
  sits inside one cell, whose interval then covers its whole rank range;
* the pair (i, j), i < j, is drawn with probability proportional to
  exp(prior(j - i)) exp(-eps_col max(e_low(i), e_high(j)) / 2): utility
  the worse end's error (sensitivity 1 under replace-one and add/remove), and a
  public base measure that prefers narrow intervals, so that the grid points
  beyond the data, whose errors all tie, lose to the ones next to it.

The draw is exact without the K x K pairs (:class:`PairLaw`): the low end from its
marginal, computed for all K cells in O(K log K), then the high end from its conditional, one row
(:func:`pair_log_probabilities`, the K x K matrix, stays as the tests' reference).
Each column is one draw at eps_col = epsilon / m; the m columns compose
sequentially to epsilon-DP.  :func:`bounds_from_histograms` releases from counts
made elsewhere (chunks, Dask or Spark workers: :func:`column_histogram` per part,
added).  The released values are grid points, low < high:
never a data value unless that value is a public grid point.

Randomness: as every private computation (dperm/privacy/noise.py), a fresh
generator from OS entropy unless ``random_state`` is given (for tests).
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dperm.data.validation import check_epsilon, check_random_state
from dperm.exceptions import ClippingWarning, NoiseDominatedWarning
from dperm.privacy.accountant import BudgetAccountant, PureEvent
from dperm.privacy.neighbouring import RANK_SENSITIVITY
from dperm.privacy.noise import warn_if_seeded
from dperm.privacy.record import ReleaseRecord, record_from_dict, record_to_dict

__all__ = ["estimate_bounds", "bounds_from_histograms", "PrivateBounds", "default_grid",
           "column_histogram", "pair_errors", "width_log_prior", "pair_law", "PairLaw",
           "pair_log_probabilities", "sample_pair", "inaccuracy", "DEFAULT_RANGE",
           "DEFAULT_QUANTILES"]

#: the default public range: wide enough for ordinary data
DEFAULT_RANGE = (-1e9, 1e9)
#: the default quantiles (low, high)
DEFAULT_QUANTILES = (0.01, 0.99)
# the default grid: 0 and +-10^(k / _PER_DECADE), k from _LOW_EXP to _HIGH_EXP decades
_PER_DECADE = 100
_LOW_EXP, _HIGH_EXP = -3, 9
# the exponential mechanism's exp(-eps err / (2 sensitivity)): the 2 covers the change of
# the normalising sum (McSherry & Talwar 2007, Theorem 6)
_EM_DIVISOR = 2.0
# the public base measure of a pair (g_i, g_j), a prior for narrow intervals that breaks
# the ties beyond a point mass towards the data: log weight -_WIDTH_PRIOR per grid step of
# j - i up to _WIDTH_KNEE steps (two decades of the default grid), -_WIDTH_PRIOR_FAR per
# step beyond (so a column spread over many decades, e.g. zeros and amounts in the
# thousands, is not pulled down to its point mass at 0); benchmarks/private_bounds.py
_WIDTH_PRIOR = 0.15
_WIDTH_KNEE = 200
_WIDTH_PRIOR_FAR = 0.03
# the accuracy warning: when P(rank error > _WARN_ALPHA x the tail) > _WARN_BETA
_WARN_ALPHA, _WARN_BETA = 1.0, 0.05
MECHANISM = ("exponential mechanism over pairs of grid points (rank utility of the worse "
             "end, prior for narrow intervals)")


# ----------------------------------------------------------------------------- grid
def default_grid(bounds_range: Sequence[float] | None = None, *,
                 per_decade: int = _PER_DECADE) -> np.ndarray:
    """The public grid: 0 and +-10^(k/per_decade) for magnitudes 1e-3 .. 1e9.

    Default 100 points per decade: 2403 points over +-1e9, consecutive points 2.3 %
    apart (per_decade=10 gives the 243 points of dperm 0.1's grid).  With
    ``bounds_range=(lo, hi)`` the grid is restricted to [lo, hi] and its ends are lo and
    hi (so a range beyond +-1e9 extends the outer cells).

    Parameters
    ----------
    bounds_range : (float, float), optional
        The public range (low, high); default the whole grid, +-1e9.
    per_decade : int, default 100
        Points per decade of magnitude.

    Returns
    -------
    numpy.ndarray
        The grid, strictly increasing.
    """
    if isinstance(per_decade, (bool, np.bool_)) or not isinstance(per_decade, numbers.Integral) \
            or per_decade < 1:
        raise ValueError(f"per_decade: must be a positive integer, got {per_decade!r}")
    k = np.arange(_LOW_EXP * per_decade, _HIGH_EXP * per_decade + 1)
    pos = 10.0 ** (k / per_decade)
    grid = np.concatenate([-pos[::-1], [0.0], pos])
    if bounds_range is None:
        return grid
    lo, hi = _check_range(bounds_range)
    inner = grid[(grid > lo) & (grid < hi)]
    return np.concatenate([[lo], inner, [hi]])


def _check_range(bounds_range):
    if isinstance(bounds_range, (str, bytes)) or not isinstance(bounds_range, (Sequence, np.ndarray)) \
            or len(bounds_range) != 2:
        raise ValueError(f"bounds_range: must be a pair (low, high), got {bounds_range!r}")
    try:
        lo, hi = (float(v) for v in bounds_range)
    except (TypeError, ValueError):
        raise ValueError(f"bounds_range: must be two numbers, got {bounds_range!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds_range: needs finite low < high, got {bounds_range!r}")
    return lo, hi


def _check_grid(grid):
    try:
        g = np.array(grid, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("grid: must be a 1-D array of numbers") from None
    if g.ndim != 1 or g.size < 2:
        raise ValueError(f"grid: must be a 1-D array of at least two numbers, got shape {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError("grid: contains NaN or infinity")
    if not np.all(np.diff(g) > 0):
        raise ValueError("grid: must be strictly increasing")
    return g


def _check_quantiles(quantiles):
    if isinstance(quantiles, (str, bytes)) or not isinstance(quantiles, (Sequence, np.ndarray)) \
            or len(quantiles) != 2:
        raise ValueError(f"quantiles: must be a pair (low, high), got {quantiles!r}")
    q = []
    for v in quantiles:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise ValueError(f"quantiles: must be two numbers in [0, 1], got {quantiles!r}")
        q.append(float(v))
    if not (0.0 <= q[0] < q[1] <= 1.0):
        raise ValueError(f"quantiles: need 0 <= low < high <= 1, got {quantiles!r}")
    return tuple(q)


# ----------------------------------------------------------------------------- mechanism
def column_histogram(x: ArrayLike, grid: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """One pass over a column: the counts at each grid point and inside each open cell.

    Everything the mechanism reads from the data is these counts, so a column can be
    counted in chunks, or on a cluster, and the counts added; release them with
    :func:`bounds_from_histograms`.

    Parameters
    ----------
    x : 1-D array of float
        Finite values inside [grid[0], grid[-1]] (any order; missing values dropped
        and the rest clipped to the range beforehand).
    grid : 1-D array of float
        The public grid, strictly increasing, K + 1 points.

    Returns
    -------
    atoms : int array of shape (K + 1,)
        #{x_i == g_k}.
    cells : int array of shape (K,)
        #{g_k < x_i < g_k+1}.
    """
    x = np.asarray(x, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    k = np.searchsorted(grid, x, side="left")          # g_{k-1} < x <= g_k
    on = np.zeros(x.shape, dtype=bool)
    inside = k < grid.size
    on[inside] = grid[k[inside]] == x[inside]
    atoms = np.bincount(k[on], minlength=grid.size)
    cells = np.bincount(k[~on] - 1, minlength=grid.size - 1)
    return atoms[: grid.size], cells[: grid.size - 1]


def pair_errors(atoms: ArrayLike, cells: ArrayLike,
                quantiles: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The rank errors of the candidate low and high bounds on the grid.

    With A_k = #{x < g_k} (A_K = n) and B_k = #{x <= g_k} (B_0 = 0):

    * low bound g_i (i = 0..K-1) stands for the cell [g_i, g_i+1):
      e_low(i) = distance from q_low n to [A_i, A_i+1];
    * high bound g_j (j = 1..K) stands for the cell (g_j-1, g_j]:
      e_high(j) = distance from q_high n to [B_j-1, B_j].

    Both are V-shaped (non-increasing, then non-decreasing): A and B do not decrease,
    and floating-point subtraction keeps that order.

    Parameters
    ----------
    atoms, cells : int arrays of shape (K + 1,) and (K,)
        The column's counts (:func:`column_histogram`).
    quantiles : (float, float)
        The quantiles (low, high).

    Returns
    -------
    e_low : float array of shape (K,)
        The low bound's error, for i = 0..K-1.
    e_high : float array of shape (K,)
        The high bound's error, for j = 1..K.
    """
    atoms = np.asarray(atoms, dtype=np.float64)
    cells = np.asarray(cells, dtype=np.float64)
    n = atoms.sum() + cells.sum()
    below = np.concatenate([[0.0], np.cumsum(atoms[:-1] + cells)])     # A_k, k = 0..K
    at_or_below = below + atoms                                          # B_k
    below[-1] = n                       # the last cell [g_K-1, g_K] is closed (clipped data)
    at_or_below[0] = 0.0                # the first cell [g_0, g_1] is closed
    t_lo, t_hi = quantiles[0] * n, quantiles[1] * n

    def dist(t, a, b):
        return np.maximum(0.0, np.maximum(a - t, t - b))

    return dist(t_lo, below[:-1], below[1:]), dist(t_hi, at_or_below[:-1], at_or_below[1:])


def width_log_prior(steps: ArrayLike, width_prior: float | None = None) -> np.ndarray:
    """The public base measure's log weight of a pair j - i = ``steps`` grid steps apart.

    -w min(steps, knee) - w_far max(steps - knee, 0).

    Parameters
    ----------
    steps : array of int
        The pairs' j - i.
    width_prior : float, optional
        The slope w below the knee (default the module's ``_WIDTH_PRIOR``).

    Returns
    -------
    numpy.ndarray
        The log weights, of the shape of ``steps``.
    """
    w = _WIDTH_PRIOR if width_prior is None else float(width_prior)
    steps = np.asarray(steps, dtype=np.float64)
    return -w * np.minimum(steps, _WIDTH_KNEE) - _WIDTH_PRIOR_FAR * np.maximum(steps - _WIDTH_KNEE, 0)


def _range_table(values: np.ndarray) -> list[np.ndarray]:
    """Level l holds log sum_{t < 2^l} exp(values[x + t]) for every start x."""
    levels = [values]
    half = 1
    while 2 * half <= values.size:
        prev = levels[-1]
        levels.append(np.logaddexp(prev[:-half], prev[half:]))
        half *= 2
    return levels


def _range_logsum(table: list[np.ndarray], first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """log sum_{x = first..last} exp(values[x]) for each pair of the arrays (-inf where
    last < first): the range split into disjoint blocks of 2^l by the bits of its length,
    so every term is positive and none is subtracted."""
    length = np.maximum(last - first + 1, 0)
    out = np.full(first.shape, -np.inf)
    pos = first.copy()
    for level, block in enumerate(table):
        take = ((length >> level) & 1).astype(bool)
        if take.any():
            out[take] = np.logaddexp(out[take], block[pos[take]])
            pos[take] += 1 << level
    return out


class PairLaw:
    """The exact output law of one column's (low, high) draw, in factored form.

    P(low = g_i, high = g_j) = P(low = g_i) P(high = g_j | low = g_i), i < j, the
    exponential mechanism over pairs with utility -max(e_low(i), e_high(j))
    (sensitivity 1, :data:`RANK_SENSITIVITY`) and the public base measure
    exp(:func:`width_log_prior` (j - i)):

        P(i, j)  proportional to  w(j - i) min(u_i, v_j),
        u_i = exp(-eps e_low(i) / 2),  v_j = exp(-eps e_high(j) / 2).

    The marginal of the low end is computed without the K x K matrix
    (:func:`pair_log_probabilities`, the reference): for a fixed i the pairs split into
    the j whose e_high(j) <= e_low(i) (weight u_i w(j - i); a range of j, as e_high is
    V-shaped) and the rest (weight w(j - i) v_j; at most two ranges).  The prior is
    -w d up to the knee and linear beyond, so on each side of the knee
    log w(j - i) = (a term in j) + (a term in i), and each range sum is a sum of a
    fixed sequence over a range, read from a table of power-of-two blocks in log space
    (O(K log K) to build, O(log K) a range; only positive terms are added).  The
    conditional of the high end is one row, O(K), computed for the drawn low ends only.

    Parameters
    ----------
    atoms, cells : int arrays of shape (K + 1,) and (K,)
        The column's counts (:func:`column_histogram`).
    quantiles : (float, float)
        The quantiles (low, high).
    epsilon : float
        The column's epsilon.
    width_prior : float, optional
        The prior's slope below the knee (default the module's).

    Attributes
    ----------
    log_marginal : numpy.ndarray of shape (K,)
        log P(low = g_i), i = 0..K-1.
    """

    def __init__(self, atoms: ArrayLike, cells: ArrayLike, quantiles: Sequence[float],
                 epsilon: float, width_prior: float | None = None) -> None:
        self.n = float(np.sum(atoms) + np.sum(cells))
        self.quantiles = (float(quantiles[0]), float(quantiles[1]))
        self.e_low, self.e_high = pair_errors(atoms, cells, quantiles)
        self.scale = epsilon / (_EM_DIVISOR * RANK_SENSITIVITY)
        self.width_prior = _WIDTH_PRIOR if width_prior is None else float(width_prior)
        K = self.e_low.size
        self.K = K
        self.log_u = -self.scale * self.e_low
        self.log_v = -self.scale * self.e_high
        # the high end by its index h = j - 1 = 0..K-1 (h >= i); d = j - i = h - i + 1
        h = np.arange(K, dtype=np.float64)
        self._prior = _range_table(width_log_prior(h + 1.0, self.width_prior))   # by d - 1
        self._near = _range_table(-self.width_prior * (h + 1.0) + self.log_v)
        self._far = _range_table(-_WIDTH_PRIOR_FAR * (h + 1.0) + self.log_v)
        self._knee = int(math.floor(_WIDTH_KNEE))
        # for each i, the range [lo_i, hi_i] of h with e_high(h) <= e_low(i)
        self._lo, self._hi = self._sublevel(self.e_low)
        i = np.arange(K)
        self.log_marginal = self._row_logsum(i, i, np.full(K, K - 1))
        top = self.log_marginal.max()
        self.log_marginal -= top + np.log(np.sum(np.exp(self.log_marginal - top)))

    def _sublevel(self, level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each value in ``level``, the range of h with e_high(h) <= it (V-shape:
        a range; empty as [m, m - 1])."""
        e = self.e_high
        m = int(np.argmin(e))
        left = np.searchsorted(-e[: m + 1], -level, side="left")        # first h with e <= level
        right = m - 1 + np.searchsorted(e[m:], level, side="right")     # last h with e <= level
        empty = left > right
        left = np.where(empty, m, left)
        right = np.where(empty, m - 1, right)
        return left, right

    def _dominated(self, i: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """log sum_{h = first..last} w(h - i + 1) v_h (split at the knee)."""
        edge = i + self._knee - 1                      # the last h with d <= knee
        w, w_far, knee = self.width_prior, _WIDTH_PRIOR_FAR, self._knee
        near = _range_logsum(self._near, first, np.minimum(last, edge)) + w * i
        far = _range_logsum(self._far, np.maximum(first, edge + 1), last) \
            + (w_far - w) * knee + w_far * i
        return np.logaddexp(near, far)

    def _row_logsum(self, i: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """log sum_{h = first..last} w(h - i + 1) min(u_i, v_h), for first >= i."""
        lo, hi = self._lo[i], self._hi[i]
        # e_high(h) <= e_low(i): min(u_i, v_h) = u_i
        inner = self.log_u[i] + _range_logsum(self._prior, np.maximum(first, lo) - i,
                                              np.minimum(last, hi) - i)
        left = self._dominated(i, first, np.minimum(last, lo - 1))
        right = self._dominated(i, np.maximum(first, hi + 1), last)
        return np.logaddexp(inner, np.logaddexp(left, right))

    def log_conditional(self, i: int) -> np.ndarray:
        """The law of the high end given the low end g_i, in logs.

        Parameters
        ----------
        i : int
            The low end's index.

        Returns
        -------
        numpy.ndarray of shape (K,)
            Entry j - 1 is log P(high = g_j | low = g_i), j = 1..K (-inf for j <= i).
        """
        row = np.full(self.K, -np.inf)
        row[i:] = width_log_prior(np.arange(1, self.K - i + 1), self.width_prior) \
            - self.scale * np.maximum(self.e_low[i], self.e_high[i:])
        top = row[i:].max()
        row[i:] -= top + np.log(np.sum(np.exp(row[i:] - top)))
        return row

    def sample(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``size`` independent pairs (i, j) of grid indices.

        The low end from its marginal, then the high end from its conditional: ``size``
        uniforms for the low ends, then ``size`` more for the high ends.

        Parameters
        ----------
        size : int
            The number of draws.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        i : int array of shape (size,)
            The grid indices of the low ends.
        j : int array of shape (size,)
            The grid indices of the high ends (j > i).
        """
        i = _inverse_cdf(self.log_marginal, rng.uniform(size=size))
        u = rng.uniform(size=size)
        j = np.empty(size, dtype=np.int64)
        for low in np.unique(i):
            at = np.flatnonzero(i == low)
            j[at] = _inverse_cdf(self.log_conditional(int(low)), u[at]) + 1
        return i, j

    def inaccuracy(self, tolerance: float | None = None) -> tuple[float, float]:
        """(p, tolerated): see :func:`inaccuracy`.

        Parameters
        ----------
        tolerance : float in (0, 1), optional
            The tolerated rank error as a fraction of n, instead of the tail.

        Returns
        -------
        p : float
            The probability that the worse end's rank error exceeds ``tolerated``.
        tolerated : float
            The tolerance, max(min(q_low, 1 - q_high) _WARN_ALPHA, 0.005) n ranks.
        """
        q = self.quantiles
        tolerated = (max(min(q[0], 1.0 - q[1]) * _WARN_ALPHA, 0.005) if tolerance is None
                     else float(tolerance)) * self.n
        p_low = np.exp(self.log_marginal)
        bad = float(np.sum(p_low[self.e_low > tolerated]))
        ok = np.flatnonzero(self.e_low <= tolerated)
        if ok.size:
            lo, hi = self._sublevel(np.array([tolerated]))
            last = np.full(ok.size, self.K - 1)
            # rows with a good low end: the mass of the high ends beyond the tolerance
            rows = np.logaddexp(self._row_logsum(ok, ok, np.minimum(last, lo[0] - 1)),
                                self._row_logsum(ok, np.maximum(ok, hi[0] + 1), last))
            total = self._row_logsum(ok, ok, last)
            bad += float(np.sum(np.exp(rows - total) * p_low[ok]))
        return bad, tolerated


def _inverse_cdf(logp: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Indices drawn from the law exp(logp) (normalised or not) by inverting its CDF."""
    weight = np.exp(logp - logp.max())
    cdf = np.cumsum(weight)
    idx = np.searchsorted(cdf, uniforms * cdf[-1], side="right")
    return np.minimum(idx, np.flatnonzero(weight > 0)[-1])


def pair_law(atoms: ArrayLike, cells: ArrayLike, quantiles: Sequence[float], epsilon: float,
             width_prior: float | None = None) -> PairLaw:
    """One column's exact output law in factored form (:class:`PairLaw`), O(K log K).

    Parameters
    ----------
    atoms, cells : int arrays of shape (K + 1,) and (K,)
        The column's counts (:func:`column_histogram`).
    quantiles : (float, float)
        The quantiles (low, high).
    epsilon : float
        The column's epsilon.
    width_prior : float, optional
        The prior's slope below the knee (default the module's).

    Returns
    -------
    PairLaw
        The law, with ``log_marginal``, ``log_conditional(i)`` and ``sample``.
    """
    return PairLaw(atoms, cells, quantiles, epsilon, width_prior)


def pair_log_probabilities(atoms: ArrayLike, cells: ArrayLike, quantiles: Sequence[float],
                           epsilon: float, width_prior: float | None = None) -> np.ndarray:
    """The output law of one column's (low, high) draw, as a (K, K) matrix: the reference.

    Entry [i, j - 1] is log P(low = g_i, high = g_j); pairs with j <= i have probability 0
    (-inf).  The law is the exponential mechanism (McSherry & Talwar 2007) with utility
    -max(e_low(i), e_high(j)) (sensitivity 1, :data:`RANK_SENSITIVITY`) over the pairs,
    with the public base measure exp(:func:`width_log_prior` (j - i)):

        P(i, j)  proportional to  exp(prior(j - i) - epsilon max(e_low, e_high) / 2).

    O(K^2) time and memory: the sampler uses :func:`pair_law`, the same law factored;
    this matrix is the tests' reference for it.

    Parameters
    ----------
    atoms, cells : int arrays of shape (K + 1,) and (K,)
        The column's counts (:func:`column_histogram`).
    quantiles : (float, float)
        The quantiles (low, high).
    epsilon : float
        The column's epsilon.
    width_prior : float, optional
        The prior's slope below the knee (default the module's).

    Returns
    -------
    numpy.ndarray of shape (K, K)
        Entry [i, j - 1] is log P(low = g_i, high = g_j).
    """
    e_lo, e_hi = pair_errors(atoms, cells, quantiles)
    scale = epsilon / (_EM_DIVISOR * RANK_SENSITIVITY)
    K = e_lo.size
    logw = np.maximum.outer(e_lo, e_hi)                 # [i, j - 1]: the worse end's error
    logw *= -scale
    prior = width_log_prior(np.arange(-K + 1, K + 1), width_prior)   # by j - i = -K+1..K
    logw += prior[(np.arange(1, K + 1)[None, :] - np.arange(K)[:, None]) + K - 1]
    logw[np.tril_indices(K, -1)] = -np.inf              # j <= i: not an interval
    top = logw.max()
    logw -= top + np.log(np.sum(np.exp(logw - top)))
    return logw


def sample_pair(atoms: ArrayLike, cells: ArrayLike, quantiles: Sequence[float], epsilon: float,
                grid: ArrayLike, size: int | tuple[int, ...] | None = None,
                random_state: Any = None, width_prior: float | None = None, *,
                law: PairLaw | None = None) -> tuple[Any, Any]:
    """Draw one column's private (low, high): two grid points, low < high.

    Parameters
    ----------
    atoms, cells : int arrays of shape (K + 1,) and (K,)
        The column's counts (:func:`column_histogram`).
    quantiles : (float, float)
        The quantiles (low, high).
    epsilon : float
        The column's epsilon.
    grid : 1-D array of float
        The public grid, K + 1 points.
    size : int or tuple of int, optional
        None for one draw; else the shape of independent draws.
    random_state : None, int or numpy.random.Generator
        The source of randomness.
    width_prior : float, optional
        The prior's slope below the knee (default the module's).
    law : PairLaw, optional
        :func:`pair_law` of these counts when already computed.

    Returns
    -------
    low : float or numpy.ndarray of shape ``size``
        The low end(s), grid points.
    high : float or numpy.ndarray of shape ``size``
        The high end(s), grid points, above the low ones.
    """
    rng = check_random_state(random_state)
    if law is None:
        law = pair_law(atoms, cells, quantiles, epsilon, width_prior)
    grid = np.asarray(grid, dtype=np.float64)
    m = 1 if size is None else int(np.prod(size))
    i, j = law.sample(m, rng)
    lo, hi = grid[i], grid[j]
    if size is None:
        return float(lo[0]), float(hi[0])
    return lo.reshape(size), hi.reshape(size)


# ----------------------------------------------------------------------------- result
class PrivateBounds(Mapping):
    """Private (low, high) bounds per column: what :func:`estimate_bounds` returns.

    A read-only mapping column -> (low, high) (column names for a DataFrame or a
    mapping of columns, integer indices for an array), so it is given directly as
    ``PublicBoundsTransformer(numeric=bounds, ...)`` or, with column names,
    ``PublicSchema(numeric=bounds, categorical=..., label=...)``.

    Parameters
    ----------
    bounds : mapping of column to (low, high)
        The released bounds, in the columns' units.
    privacy : ReleaseRecord or mapping
        The public release record (a mapping is read as its serialised form).

    Attributes
    ----------
    release_record_ : ReleaseRecord
        The public record (``dperm.privacy.record``), immutable.
    privacy_ : dict
        Its serialised form (a new dict each time), of public values: the mechanism,
        epsilon (total and per quantile), the quantiles, the columns and the public
        grid.  Nothing in it is read from the data but the released bounds.

    Examples
    --------
    >>> import numpy as np
    >>> import dperm
    >>> ages = np.random.default_rng(0).integers(17, 91, size=20_000).astype(float)
    >>> bounds = dperm.estimate_bounds({"age": ages}, epsilon=1.0, bounds_range=(0, 150))
    >>> low, high = bounds["age"]
    >>> bool(0 <= low < high <= 150), sorted(bounds)
    (True, ['age'])
    """

    __slots__ = ("_bounds", "release_record_")

    def __init__(self, bounds: Mapping, privacy: Mapping) -> None:
        # a plain dict behind the read-only Mapping interface: copies, pickles and
        # sklearn's clone (a deep copy of every parameter) work
        self._bounds = {k: (float(lo), float(hi)) for k, (lo, hi) in bounds.items()}
        self.release_record_ = privacy if isinstance(privacy, ReleaseRecord) else \
            record_from_dict(privacy, "bounds")

    @property
    def privacy_(self) -> dict:
        """The release record (``release_record_``) serialised: a new dict."""
        return record_to_dict(self.release_record_)

    @property
    def bounds(self) -> dict:
        """Column -> (low, high): a new dict."""
        return dict(self._bounds)

    def __reduce__(self) -> tuple:
        return (type(self), (self._bounds, self.release_record_))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivateBounds):
            return NotImplemented
        return self._bounds == other._bounds and self.release_record_ == other.release_record_

    # unhashable, as a dict (equality compares values); typeshed's object.__hash__ is a
    # method, so mypy reads None here as a wrong type
    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key: Any) -> tuple[float, float]:
        return self._bounds[key]

    def __iter__(self) -> Iterator:
        return iter(self._bounds)

    def __len__(self) -> int:
        return len(self._bounds)

    def __repr__(self) -> str:
        return f"PrivateBounds({dict(self._bounds)!r}, epsilon={self.privacy_['epsilon']:g})"


# ----------------------------------------------------------------------------- columns
def _as_float(values, name):
    arr = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
    if arr.ndim != 1:
        raise ValueError(f"X: column {name!r} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind in "fiu":
        return arr.astype(np.float64)
    if arr.dtype.kind in "OUS":
        out = np.empty(arr.shape[0])
        for i, v in enumerate(arr.tolist()):
            if v is None or (isinstance(v, float) and v != v) or \
                    type(v).__name__ in ("NAType", "NaTType"):
                out[i] = np.nan
                continue
            try:
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, str)):
                    raise TypeError
                out[i] = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"X: non-numeric value {v!r} in column {name!r} (index {i}); "
                                 "choose numeric columns with columns=[...]") from None
        return out
    raise ValueError(f"X: column {name!r} has values of dtype {arr.dtype}, not numbers; "
                     "choose numeric columns with columns=[...]")


def _columns(X, columns):
    """[(key, float array)] for the chosen columns, without modifying X."""
    if isinstance(X, Mapping) or hasattr(X, "columns"):     # a mapping or a DataFrame
        return _labelled_columns(X, columns)
    return _array_columns(X, columns)


def _labelled_columns(X, columns):
    """_columns of a mapping or a DataFrame: its columns by label."""
    labels = list(X.keys() if isinstance(X, Mapping) else X.columns)
    if columns is None:
        # every column, whatever its values: the set of columns released must not
        # depend on the data (picking columns by pandas' inferred dtype would drop a
        # column from the release when one cell of a neighbour reads "?")
        keys = labels
        if not isinstance(X, Mapping):
            _check_numeric_dtypes(X, labels)
        if not keys:
            raise ValueError("X: has no columns")
    else:
        keys = _column_list(columns)
        lacking = [c for c in keys if c not in labels]
        if lacking:
            raise ValueError(f"columns: {lacking} not in X (X has columns: {labels[:12]})")
    return [(c, _as_float(X[c], c)) for c in keys]


def _check_numeric_dtypes(X, labels):
    """Every column of a DataFrame of numeric dtype (columns=None: all are released)."""
    other = [c for c in labels if getattr(X[c].dtype, "kind", "O") not in "fiu"]
    if other:
        raise ValueError(
            f"columns: X is a DataFrame with columns of non-numeric dtype "
            f"{other[:12]}; name the numeric columns to release with "
            "columns=[...] (which columns are numeric must be public, not read "
            "from the data)")


def _array_columns(X, columns):
    """_columns of a 2-D array: its columns by integer index."""
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"X: expected a 2-D array or DataFrame, got shape {arr.shape}")
    if columns is None:
        keys = list(range(arr.shape[1]))
    else:
        keys = _column_indices(columns, arr.shape[1])
    if not keys:
        raise ValueError("X: has no columns")
    return [(j, _as_float(arr[:, j], j)) for j in keys]


def _column_indices(columns, n_columns):
    """columns= for an array: integer indices in [0, n_columns), as ints."""
    keys = _column_list(columns)
    for j in keys:
        if isinstance(j, (bool, np.bool_)) or not isinstance(j, (numbers.Integral, np.integer)):
            raise ValueError(f"columns: X is an array; name columns by integer index, got {j!r}")
        if not 0 <= j < n_columns:
            raise ValueError(f"columns: index {j} is out of range; X has {n_columns} "
                             "column(s)")
    return [int(j) for j in keys]


def _column_list(columns):
    if isinstance(columns, (str, bytes, numbers.Integral)):
        columns = [columns]
    columns = list(columns)
    if not columns:
        raise ValueError("columns: must name at least one column")
    if len(set(columns)) != len(columns):
        raise ValueError(f"columns: a column is listed twice in {columns!r}")
    return columns


def inaccuracy(atoms: ArrayLike, cells: ArrayLike, quantiles: Sequence[float], epsilon: float,
               width_prior: float | None = None,
               tolerance: float | None = None) -> tuple[float, float]:
    """The probability that the worse end's rank error exceeds what the quantiles tolerate.

    Under the mechanism's exact law; the tolerance is max(min(q_low, 1 - q_high), 0.005) n
    ranks (a bound off by more than its whole tail, e.g. the 1 % bound beyond the 2 %
    quantile, is no longer a 1 % bound).  Read from the private counts: for the analyst's
    warning only, never released.

    Parameters
    ----------
    atoms, cells : int arrays of shape (K + 1,) and (K,)
        The column's counts (:func:`column_histogram`).
    quantiles : (float, float)
        The quantiles (low, high).
    epsilon : float
        The column's epsilon.
    width_prior : float, optional
        The prior's slope below the knee (default the module's).
    tolerance : float in (0, 1), optional
        The tolerated rank error as a fraction of n, instead of the tail (e.g. 0.03:
        a bound may clip up to 3 % of the rows more or fewer than asked).

    Returns
    -------
    p : float
        The probability.
    tolerated : float
        The tolerance, in ranks.
    """
    return pair_law(atoms, cells, quantiles, epsilon, width_prior).inaccuracy(tolerance)


def _check_tolerance(tolerance: Any) -> float | None:
    if tolerance is None:
        return None
    if isinstance(tolerance, (bool, np.bool_)) or not isinstance(tolerance, numbers.Real) \
            or not 0.0 < float(tolerance) < 1.0:
        raise ValueError(f"warn_tolerance: must be a fraction of the rows in (0, 1), got "
                         f"{tolerance!r}")
    return float(tolerance)


def _warn_if_inaccurate(key: Any, law: PairLaw, epsilon: float,
                        tolerance: float | None = None) -> None:
    # stacklevel 4: the user's call of estimate_bounds / bounds_from_histograms
    if law.n == 0:
        warnings.warn(f"column {key!r}: every value is missing; its bounds are drawn from the "
                      "prior alone and say nothing about the column", NoiseDominatedWarning,
                      stacklevel=4)
        return
    p, tolerated = law.inaccuracy(tolerance)
    what = (f"the tail of the quantiles {list(law.quantiles)}" if tolerance is None else
            f"{tolerance:.3g} of the rows, for the quantiles {list(law.quantiles)}")
    if p > _WARN_BETA:
        warnings.warn(
            f"column {key!r}: n x epsilon is too small for accurate bounds: with {int(law.n)} "
            f"values and epsilon {epsilon:g} for this column, a bound lands more than "
            f"{tolerated:.3g} ranks ({what}) from "
            f"its quantile with probability {p:.0%}; give more epsilon, fewer columns, or a "
            "narrower public bounds_range (counts of private rows, for the analyst only)",
            NoiseDominatedWarning, stacklevel=4)


def _resolve_grid(grid: Any, bounds_range: Sequence[float] | None) -> tuple[np.ndarray, str]:
    if grid is not None and bounds_range is not None:
        raise ValueError("grid, bounds_range: give one of them (the grid's ends are its range)")
    if grid is not None:
        g = _check_grid(grid)
        return g, f"public grid of {g.size} points"
    return default_grid(bounds_range), (f"0 and +-10^(k/{_PER_DECADE}), k = "
                                        f"{_LOW_EXP * _PER_DECADE}..{_HIGH_EXP * _PER_DECADE}, "
                                        "restricted to the range")


def _check_accountant(accountant: Any) -> None:
    if accountant is not None and not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant: expected a dperm.BudgetAccountant, got "
                        f"{type(accountant).__name__}")


def _check_histograms(histograms: Any, g: np.ndarray) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    if not isinstance(histograms, Mapping):
        raise TypeError(f"histograms: expected a mapping column -> (atoms, cells), got "
                        f"{type(histograms).__name__}")
    if not histograms:
        raise ValueError("histograms: has no columns")
    K = g.size - 1
    out = []
    for key, counts in histograms.items():
        if isinstance(counts, (str, bytes)) or not isinstance(counts, (Sequence, np.ndarray)) \
                or len(counts) != 2:
            raise ValueError(f"histograms: column {key!r} must be a pair (atoms, cells) from "
                             "column_histogram")
        arrays = []
        for what, c, size in (("atoms", counts[0], K + 1), ("cells", counts[1], K)):
            try:
                a = np.asarray(c, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"histograms: column {key!r}: {what} must be numbers") from None
            if a.shape != (size,):
                raise ValueError(f"histograms: column {key!r}: {what} must have shape ({size},) "
                                 f"for a grid of {K + 1} points, got {a.shape}; count with "
                                 "column_histogram(x, grid) on the same grid")
            if not np.all(np.isfinite(a) & (a >= 0) & (a == np.floor(a))):
                raise ValueError(f"histograms: column {key!r}: {what} must be non-negative "
                                 "whole counts")
            arrays.append(a.astype(np.int64))
        out.append((key, arrays[0], arrays[1]))
    return out


def _release(hists: list[tuple[Any, np.ndarray, np.ndarray]], epsilon: float,
             q: tuple[float, ...], g: np.ndarray, grid_text: str,
             accountant: BudgetAccountant | None, rng: np.random.Generator,
             event: PureEvent, warn_tolerance: float | None = None) -> PrivateBounds:
    """One joint draw per column at epsilon / m, the record, the accountant's charge."""
    eps_col = epsilon / len(hists)
    out = {}
    for key, atoms, cells in hists:
        law = pair_law(atoms, cells, q, eps_col)
        _warn_if_inaccurate(key, law, eps_col, warn_tolerance)
        out[key] = sample_pair(atoms, cells, q, eps_col, g, random_state=rng, law=law)
    record = ReleaseRecord(
        layout="bounds", mechanism=MECHANISM, epsilon=epsilon, delta=0.0,
        epsilon_per_column=eps_col, epsilon_per_quantile=eps_col / 2.0, quantiles=tuple(q),
        columns=tuple(k for k, _, _ in hists), range=(float(g[0]), float(g[-1])),
        grid=grid_text, grid_points=int(g.size),
        width_prior=(_WIDTH_PRIOR, _WIDTH_KNEE, _WIDTH_PRIOR_FAR),
        rank_sensitivity=RANK_SENSITIVITY, neighbouring="replace_one or add_remove")
    if accountant is not None:
        accountant.spend(event, label=f"estimate_bounds(epsilon={epsilon:g})")
    return PrivateBounds(out, record)


# ----------------------------------------------------------------------------- public API
def estimate_bounds(X: Any, epsilon: float, *, columns: Sequence | None = None,
                    quantiles: Sequence[float] = DEFAULT_QUANTILES,
                    bounds_range: Sequence[float] | None = None, grid: Any = None,
                    accountant: BudgetAccountant | None = None,
                    random_state: Any = None,
                    warn_tolerance: float | None = None) -> PrivateBounds:
    """Differentially private (low, high) quantile bounds of numeric columns.

    Parameters
    ----------
    X : DataFrame, mapping column -> 1-D array, or 2-D array
        The private data.  Missing values (NaN, None, pandas' NA) are left out
        of the column's count; values outside the public range are clipped to
        its ends (a ClippingWarning names the column).
    epsilon : float > 0
        The total privacy budget of the release (pure epsilon-DP), split evenly
        over the columns: each column's joint (low, high) draw gets epsilon / m.
    columns : list of column names (DataFrame, mapping) or indices (array), optional
        Default: every column (of a DataFrame, a mapping or an array).  A DataFrame
        with a column of non-numeric dtype needs explicit columns: the columns
        released never depend on the data's inferred dtypes.
    quantiles : (low, high), default (0.01, 0.99)
        The quantiles released as the bounds.
    bounds_range : (low, high), optional
        The public range of every column (default (-1e9, 1e9)); the default log
        grid restricted to it.  A tighter range, when it is public, gives more
        accurate bounds at the same epsilon.
    grid : 1-D array, optional
        The whole public grid instead (strictly increasing; its ends are the
        range).  See ``default_grid``.
    accountant : BudgetAccountant, optional
        Charged a PureEvent(epsilon) (checked before the data are read).
    random_state : None, int or numpy Generator
        None (default) draws fresh OS entropy; a seed is for tests only (it voids
        the guarantee, warns, and is refused with an accountant).
    warn_tolerance : float in (0, 1), optional
        The accuracy warning's tolerated rank error, as a fraction of the rows
        (default: the quantiles' tail, 1 % for the default quantiles).  It changes
        only when the analyst is warned, never the draws.

    Returns
    -------
    PrivateBounds
        A mapping column -> (low, high) with a ``privacy_`` record; pass it as
        ``PublicBoundsTransformer(numeric=bounds)`` or ``PublicSchema(numeric=bounds)``.

    See Also
    --------
    bounds_from_histograms : The same release from counts made elsewhere (in chunks,
        on a cluster).

    Notes
    -----
    The guarantee is epsilon-DP under replacing, adding or removing one row, for any
    public grid (docs/privacy_analysis.md, "Private bounds").  The accuracy needs
    n eps_col large enough against the grid's size and the data's width in grid steps;
    the function warns (NoiseDominatedWarning, for the analyst only: it reads the
    private counts) when the mechanism's exact law puts more than 5 % on pairs whose
    worse end is off by more than its tail (1 % of the rows for the default quantiles).
    On Adult's six columns at epsilon 0.1, about 60 % of the bounds are within 5 % of
    the true 1 %-99 % width, 96 % at 0.5 (benchmarks/private_bounds.py).

    Examples
    --------
    >>> import numpy as np
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> columns = {"age": rng.integers(17, 91, size=20_000).astype(float),
    ...            "hours": rng.integers(1, 100, size=20_000).astype(float)}
    >>> budget = dperm.BudgetAccountant(epsilon=2.0)
    >>> bounds = dperm.estimate_bounds(columns, epsilon=1.0, accountant=budget)
    >>> sorted(bounds), budget.spent
    (['age', 'hours'], 1.0)
    >>> scaler = dperm.PublicBoundsTransformer(numeric=bounds)   # scale by them
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    q = _check_quantiles(quantiles)
    g, grid_text = _resolve_grid(grid, bounds_range)
    _check_accountant(accountant)
    tolerance = _check_tolerance(warn_tolerance)
    cols = _columns(X, columns)          # validation before any budget is checked or spent
    warn_if_seeded(random_state, accountant=accountant)
    event = PureEvent(epsilon)
    if accountant is not None:
        accountant.check(event)
    rng = check_random_state(random_state)
    hists = []
    for key, v in cols:
        v = v[~np.isnan(v)]
        outside = np.count_nonzero((v < g[0]) | (v > g[-1]))
        if outside:
            every = " (all of them: the range misses the data)" if outside == v.size else ""
            warnings.warn(
                f"column {key!r}: {outside} value(s) outside the public range "
                f"[{g[0]:g}, {g[-1]:g}]{every} were clipped to its ends; widen bounds_range "
                "(a count of private rows, for the analyst only)", ClippingWarning, stacklevel=2)
            v = np.clip(v, g[0], g[-1])
        atoms, cells = column_histogram(v, g)
        hists.append((key, atoms, cells))
    return _release(hists, epsilon, q, g, grid_text, accountant, rng, event, tolerance)


def bounds_from_histograms(histograms: Mapping[Any, tuple[ArrayLike, ArrayLike]],
                           epsilon: float, *, quantiles: Sequence[float] = DEFAULT_QUANTILES,
                           bounds_range: Sequence[float] | None = None, grid: Any = None,
                           accountant: BudgetAccountant | None = None,
                           random_state: Any = None,
                           warn_tolerance: float | None = None) -> PrivateBounds:
    """:func:`estimate_bounds` from per-column counts: the release step alone.

    For data counted elsewhere (in chunks, on Dask or Spark workers): count each
    column with :func:`column_histogram` on the public grid, add the counts of the
    parts, and release them here.  The law, the record and the accountant's charge
    are those of :func:`estimate_bounds` on the same data, grid and quantiles (with the
    same generator, the same draws).

    Parameters
    ----------
    histograms : mapping column -> (atoms, cells)
        Each column's counts, ``column_histogram(x, grid)`` of its values with the
        missing ones dropped and the rest clipped to [grid[0], grid[-1]]: atoms of
        shape (K + 1,), cells of shape (K,), non-negative whole numbers.  The
        mapping's order is the release's.
    epsilon : float > 0
        The total privacy budget (pure epsilon-DP), epsilon / m per column.
    quantiles : (low, high), default (0.01, 0.99)
        The quantiles released as the bounds.
    bounds_range : (low, high), optional
        The public range (default (-1e9, 1e9)) of the default grid the counts were
        made on, ``default_grid(bounds_range)``.
    grid : 1-D array, optional
        The public grid the counts were made on, instead.
    accountant : BudgetAccountant, optional
        Charged a PureEvent(epsilon) (checked before anything is drawn).
    random_state : None, int or numpy Generator
        None (default) draws fresh OS entropy; a seed is for tests only.
    warn_tolerance : float in (0, 1), optional
        As for :func:`estimate_bounds`.

    Returns
    -------
    PrivateBounds
        A mapping column -> (low, high) with a ``privacy_`` record.

    See Also
    --------
    estimate_bounds : Counts and releases in one call.
    column_histogram : One part's counts.

    Examples
    --------
    >>> import numpy as np
    >>> from dperm.privacy.quantiles import (bounds_from_histograms, column_histogram,
    ...                                      default_grid)
    >>> grid = default_grid((0, 150))
    >>> ages = np.random.default_rng(0).integers(17, 91, size=20_000).astype(float)
    >>> parts = [column_histogram(chunk, grid) for chunk in np.array_split(ages, 4)]
    >>> counts = (sum(p[0] for p in parts), sum(p[1] for p in parts))
    >>> bounds = bounds_from_histograms({"age": counts}, 1.0, bounds_range=(0, 150))
    >>> low, high = bounds["age"]
    >>> bool(0 <= low < high <= 150)
    True
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    q = _check_quantiles(quantiles)
    g, grid_text = _resolve_grid(grid, bounds_range)
    _check_accountant(accountant)
    hists = _check_histograms(histograms, g)
    tolerance = _check_tolerance(warn_tolerance)
    warn_if_seeded(random_state, accountant=accountant)
    event = PureEvent(epsilon)
    if accountant is not None:
        accountant.check(event)
    rng = check_random_state(random_state)
    return _release(hists, epsilon, q, g, grid_text, accountant, rng, event, tolerance)
