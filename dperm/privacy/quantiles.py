"""Private bounds: differentially private quantiles of numeric columns.

:func:`estimate_bounds` releases, for each numeric column, a low and a high
quantile (default 1 % and 99 %) drawn by the exponential mechanism (McSherry &
Talwar 2007) over a PUBLIC range, the quantile construction of Smith (2011)
with a public base measure; docs/privacy_analysis.md, "Private bounds", has
the derivation.  The result plugs into :class:`~dperm.PublicSchema` and
:class:`~dperm.PublicBoundsTransformer` (it is a mapping column -> (low, high)).

The mechanism, for one quantile q of one column with values x_1..x_n (missing
values dropped, the rest clipped to the public range [g_0, g_K]):

* the public grid g_0 < g_1 < ... < g_K (default: 0 and +-10^(k/10) for
  k = -30..90, i.e. a log-scale grid over +-1e9) defines a base measure mu:
  mass 1 on each grid point (an atom) and mass 1 spread uniformly over each
  cell [g_k, g_k+1];
* an output t has rank interval [L(t), U(t)] = [#{x_i < t}, #{x_i <= t}] and
  error err(t) = distance from q n to [L(t), U(t)]; replacing, adding or
  removing one row changes err(t) by at most RANK_SENSITIVITY = 1 (with n the
  column's count of non-missing values, private under add/remove);
* t is drawn from the density proportional to exp(-eps_q err(t) / 2) d mu(t).
  The density is constant between consecutive grid points and data values:
  a piece (or an atom) is chosen with probability proportional to its base
  mass times exp(-eps_q err / 2), computed by a stable log-sum-exp, and t is
  uniform inside a chosen piece.

Each draw is eps_q-DP; the m columns' 2 quantiles are released together at
eps_q = epsilon / (2 m) each, so the whole release is epsilon-DP (sequential
composition; a row holds a value of every column).  If a column's low draw is
above its high draw the two are swapped, and equal draws are separated to the
next grid point: post-processing of the private draws, with public rules.

Randomness: as every private computation (dperm/privacy/noise.py), a fresh
generator from OS entropy unless ``random_state`` is given (for tests).
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dperm.data.validation import check_epsilon, check_random_state
from dperm.exceptions import ClippingWarning
from dperm.privacy.accountant import BudgetAccountant, PureEvent
from dperm.privacy.neighbouring import RANK_SENSITIVITY
from dperm.privacy.noise import warn_if_seeded
from dperm.privacy.record import ReleaseRecord, record_from_dict, record_to_dict

__all__ = ["estimate_bounds", "PrivateBounds", "default_grid", "quantile_distribution",
           "sample_quantile", "DEFAULT_RANGE", "DEFAULT_QUANTILES"]

#: the default public range: wide enough for ordinary data
DEFAULT_RANGE = (-1e9, 1e9)
#: the default quantiles (low, high)
DEFAULT_QUANTILES = (0.01, 0.99)
# the default grid: 0 and +-10^(k / _PER_DECADE), k from _LOW_EXP to _HIGH_EXP decades
_PER_DECADE = 10
_LOW_EXP, _HIGH_EXP = -3, 9
# the exponential mechanism's exp(-eps err / (2 sensitivity)): the 2 covers the change of
# the normalising sum (McSherry & Talwar 2007, Theorem 6)
_EM_DIVISOR = 2.0
MECHANISM = "exponential mechanism over a public grid (rank utility)"


# ----------------------------------------------------------------------------- grid
def default_grid(bounds_range: Sequence[float] | None = None) -> np.ndarray:
    """The public grid: 0 and +-10^(k/10), k = -30..90 (243 points over +-1e9).

    With ``bounds_range=(lo, hi)`` the grid is restricted to [lo, hi] and its ends
    are lo and hi (so a range beyond +-1e9 extends the outer cells).
    """
    k = np.arange(_LOW_EXP * _PER_DECADE, _HIGH_EXP * _PER_DECADE + 1)
    pos = 10.0 ** (k / _PER_DECADE)
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
def quantile_distribution(x, q, epsilon, grid):
    """The output law of one private quantile draw, as pieces.

    Parameters
    ----------
    x : 1-D array of finite floats inside [grid[0], grid[-1]] (any order)
    q : float in [0, 1]
    epsilon : float > 0, this draw's epsilon
    grid : strictly increasing 1-D array (public)

    Returns
    -------
    lo, hi : arrays of the pieces' ends (an atom has lo == hi, a grid point)
    logp : log probability of each piece (they sum to 1; the output is lo for an
        atom, uniform on [lo, hi] otherwise)
    """
    x = np.sort(np.asarray(x, dtype=np.float64))
    n = x.size
    target = q * n
    scale = epsilon / (_EM_DIVISOR * RANK_SENSITIVITY)
    # atoms: the grid points, base mass 1, rank interval [#{x < g}, #{x <= g}]
    lo_rank = np.searchsorted(x, grid, side="left")
    hi_rank = np.searchsorted(x, grid, side="right")
    err_atom = np.maximum(0.0, np.maximum(lo_rank - target, target - hi_rank))
    logw_atom = -scale * err_atom
    # pieces: each cell cut at the data values inside it; base mass = fraction of the cell
    cuts = np.union1d(grid, x)
    a, b = cuts[:-1], cuts[1:]
    cell = np.searchsorted(grid, a, side="right") - 1
    cell_len = grid[cell + 1] - grid[cell]
    rank = np.searchsorted(x, a, side="right")      # #{x_i <= a} = #{x_i < t} for t in (a, b)
    err_piece = np.abs(rank - target)
    logw_piece = np.log(b - a) - np.log(cell_len) - scale * err_piece
    lo = np.concatenate([grid, a])
    hi = np.concatenate([grid, b])
    logw = np.concatenate([logw_atom, logw_piece])
    top = logw.max()
    logp = logw - (top + np.log(np.sum(np.exp(logw - top))))
    return lo, hi, logp


def sample_quantile(x, q, epsilon, grid, size=None, random_state=None):
    """Draw the private q-quantile of x (see :func:`quantile_distribution`).

    Returns a float, or an array of `size` independent draws.
    """
    rng = check_random_state(random_state)
    lo, hi, logp = quantile_distribution(x, q, epsilon, grid)
    cdf = np.cumsum(np.exp(logp - logp.max()))
    m = 1 if size is None else int(np.prod(size))
    idx = np.searchsorted(cdf, rng.uniform(0.0, cdf[-1], m), side="right")
    idx = np.minimum(idx, cdf.size - 1)
    t = lo[idx] + (hi[idx] - lo[idx]) * rng.uniform(0.0, 1.0, m)
    t = np.minimum(np.maximum(t, lo[idx]), hi[idx])
    return float(t[0]) if size is None else t.reshape(size)


# ----------------------------------------------------------------------------- result
class PrivateBounds(Mapping):
    """Private (low, high) bounds per column: what :func:`estimate_bounds` returns.

    A read-only mapping column -> (low, high) (column names for a DataFrame or a
    mapping of columns, integer indices for an array), so it is given directly as
    ``PublicBoundsTransformer(numeric=bounds, ...)`` or, with column names,
    ``PublicSchema(numeric=bounds, categorical=..., label=...)``.

    Attributes
    ----------
    bounds : dict column -> (low, high)
    release_record_ : ReleaseRecord (dperm.privacy.record), immutable
    privacy_ : dict, its serialised form (a new dict each time), of public values:
        the mechanism, epsilon (total and per quantile), the quantiles, the columns
        and the public grid.  Nothing in it is read from the data but the released
        bounds.
    """

    __slots__ = ("_bounds", "release_record_")

    def __init__(self, bounds: Mapping, privacy: Mapping) -> None:
        # a plain dict behind the read-only Mapping interface: copies, pickles and
        # sklearn's clone (a deep copy of every parameter) work
        self._bounds = {k: (float(lo), float(hi)) for k, (lo, hi) in bounds.items()}
        self.release_record_ = privacy if isinstance(privacy, ReleaseRecord) else \
            record_from_dict(privacy, "bounds")

    @property
    def privacy_(self):
        """The release record (``release_record_``) serialised: a new dict."""
        return record_to_dict(self.release_record_)

    def __reduce__(self):
        return (type(self), (self._bounds, self.release_record_))

    def __eq__(self, other):
        if not isinstance(other, PrivateBounds):
            return NotImplemented
        return self._bounds == other._bounds and self.release_record_ == other.release_record_

    __hash__ = None

    bounds = property(lambda self: dict(self._bounds), doc="column -> (low, high), a new dict")

    def __getitem__(self, key):
        return self._bounds[key]

    def __iter__(self):
        return iter(self._bounds)

    def __len__(self):
        return len(self._bounds)

    def __repr__(self):
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
        labels = list(X.keys() if isinstance(X, Mapping) else X.columns)
        if columns is None:
            if isinstance(X, Mapping):
                keys = labels
            else:
                keys = [c for c in labels if getattr(X[c].dtype, "kind", "O") in "fiu"]
            if not keys:
                raise ValueError("X: no numeric columns; name them with columns=[...]")
        else:
            keys = _column_list(columns)
            lacking = [c for c in keys if c not in labels]
            if lacking:
                raise ValueError(f"columns: {lacking} not in X (X has columns: {labels[:12]})")
        return [(c, _as_float(X[c], c)) for c in keys]
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"X: expected a 2-D array or DataFrame, got shape {arr.shape}")
    if columns is None:
        keys = list(range(arr.shape[1]))
    else:
        keys = _column_list(columns)
        for j in keys:
            if isinstance(j, (bool, np.bool_)) or not isinstance(j, (numbers.Integral, np.integer)):
                raise ValueError(f"columns: X is an array; name columns by integer index, got {j!r}")
            if not 0 <= j < arr.shape[1]:
                raise ValueError(f"columns: index {j} is out of range; X has {arr.shape[1]} "
                                 "column(s)")
        keys = [int(j) for j in keys]
    if not keys:
        raise ValueError("X: has no columns")
    return [(j, _as_float(arr[:, j], j)) for j in keys]


def _column_list(columns):
    if isinstance(columns, (str, bytes, numbers.Integral)):
        columns = [columns]
    columns = list(columns)
    if not columns:
        raise ValueError("columns: must name at least one column")
    if len(set(columns)) != len(columns):
        raise ValueError(f"columns: a column is listed twice in {columns!r}")
    return columns


def _separate(lo, hi, grid):
    """Public post-processing: (low, high) ordered and distinct."""
    lo, hi = min(lo, hi), max(lo, hi)
    if lo < hi:
        return lo, hi
    above = grid[grid > lo]
    if above.size:
        return lo, float(above[0])
    return float(grid[grid < lo][-1]), hi


# ----------------------------------------------------------------------------- public API
def estimate_bounds(X: Any, epsilon: float, *, columns: Sequence | None = None,
                    quantiles: Sequence[float] = DEFAULT_QUANTILES,
                    bounds_range: Sequence[float] | None = None, grid: Any = None,
                    accountant: BudgetAccountant | None = None,
                    random_state: Any = None) -> PrivateBounds:
    """Differentially private (low, high) quantile bounds of numeric columns.

    Parameters
    ----------
    X : DataFrame, mapping column -> 1-D array, or 2-D array
        The private data.  Missing values (NaN, None, pandas' NA) are left out
        of the column's count; values outside the public range are clipped to
        its ends (a ClippingWarning names the column).
    epsilon : float > 0
        The total privacy budget of the release (pure epsilon-DP), split evenly
        over the columns' quantiles: each of the 2 m draws gets epsilon / (2 m).
    columns : list of column names (DataFrame, mapping) or indices (array), optional
        Default: every numeric-dtype column of a DataFrame, every key of a
        mapping, every column of an array.
    quantiles : (low, high), default (0.01, 0.99)
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

    Returns
    -------
    PrivateBounds
        A mapping column -> (low, high) with a ``privacy_`` record; pass it as
        ``PublicBoundsTransformer(numeric=bounds)`` or ``PublicSchema(numeric=bounds)``.

    Notes
    -----
    The guarantee is epsilon-DP under replacing, adding or removing one row, for any
    public grid (docs/privacy_analysis.md, "Private bounds").  Its accuracy needs
    enough rows beyond each quantile: with eps_q = epsilon / (2 m), a draw below (or
    above) all the data loses only a factor exp(-eps_q q n / 2) against the base mass
    there, so q n eps_q / 2 should be well above log(base mass of the range / base mass
    near the quantile), about 3 for the default grid and ordinary data.  On Adult
    (45,222 rows, 6 columns, q = 1 %) the bounds are mostly within 5 % of the true
    quantiles from epsilon = 0.5 on, and mostly far off at 0.1 (BENCHMARKS.md,
    "Private bounds").
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    q = _check_quantiles(quantiles)
    if grid is not None and bounds_range is not None:
        raise ValueError("grid, bounds_range: give one of them (the grid's ends are its range)")
    if grid is not None:
        g = _check_grid(grid)
        grid_text = f"public grid of {g.size} points"
    else:
        g = default_grid(bounds_range)
        grid_text = (f"0 and +-10^(k/{_PER_DECADE}), k = {_LOW_EXP * _PER_DECADE}.."
                     f"{_HIGH_EXP * _PER_DECADE}, restricted to the range")
    if accountant is not None and not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant: expected a dperm.BudgetAccountant, got "
                        f"{type(accountant).__name__}")
    cols = _columns(X, columns)          # validation before any budget is checked or spent
    warn_if_seeded(random_state, accountant=accountant)
    event = PureEvent(epsilon)
    if accountant is not None:
        accountant.check(event)
    rng = check_random_state(random_state)
    eps_q = epsilon / (2 * len(cols))
    out = {}
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
        lo = sample_quantile(v, q[0], eps_q, g, random_state=rng)
        hi = sample_quantile(v, q[1], eps_q, g, random_state=rng)
        out[key] = _separate(lo, hi, g)
    record = ReleaseRecord(
        layout="bounds", mechanism=MECHANISM, epsilon=epsilon, delta=0.0,
        epsilon_per_quantile=eps_q, quantiles=list(q), columns=[k for k, _ in cols],
        range=[float(g[0]), float(g[-1])], grid=grid_text, grid_points=int(g.size),
        rank_sensitivity=RANK_SENSITIVITY, neighbouring="replace_one or add_remove")
    if accountant is not None:
        accountant.spend(event, label=f"estimate_bounds(epsilon={epsilon:g})")
    return PrivateBounds(out, record)
