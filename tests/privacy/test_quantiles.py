"""Private bounds (dperm/privacy/quantiles.py): white-box and black-box privacy, ties and
point masses, the release, bad input, and the result's use in PublicSchema /
PublicBoundsTransformer.

The white-box law below is written from the definition in docs/privacy_analysis.md
("Private bounds"), with explicit counts over the rows, not from the module's code: a pair
of grid points (g_i, g_j), i < j, has probability proportional to
exp(-w (j - i)) exp(-eps max(e_low(i), e_high(j)) / 2), where e_low(i) is the distance from
q_low n to [#{x < g_i}, #{x < g_i+1}] (#{x <= g_K} for the last cell) and e_high(j) the
distance from q_high n to [#{x <= g_j-1}, #{x <= g_j}] (0 for the first cell).
"""
import json
import warnings

import numpy as np
import pytest
from _privacy_audit import epsilon_lower_bound

from dperm import (
    BudgetAccountant,
    BudgetExceededError,
    ClippingWarning,
    PrivacyLeakWarning,
    PrivateBounds,
    PublicBoundsTransformer,
    PublicSchema,
    estimate_bounds,
)
from dperm.exceptions import NoiseDominatedWarning
from dperm.privacy import quantiles as Q

GRID = np.arange(0.0, 11.0)                    # public grid 0, 1, ..., 10
# designed pairs (found by search over 3,000 random neighbours): the epsilon-doubled
# mechanism's largest log ratio is 1.67 (replace one) and 1.19 (add one) at epsilon 1
D = np.array([10.0, 0.0, 2.5])
D_REPLACED = np.array([0.0, 0.0, 2.5])
A = np.array([7.0, 8.5, 9.0, 7.0, 7.0])
A_ADDED = np.append(A, 0.0)
QS = (0.25, 0.75)


# ----------------------------------------------------------------------------- profile
def profile(x, q, eps, grid):
    """log P(low = g_i, high = g_j) as a (K, K) matrix [i, j - 1], from the definition;
    the prior: -w per step of j - i up to the knee, -w_far per step beyond."""
    w, knee, w_far = Q._WIDTH_PRIOR, Q._WIDTH_KNEE, Q._WIDTH_PRIOR_FAR
    x = [float(v) for v in x if v == v]
    grid = [float(g) for g in grid]
    n, K = len(x), len(grid) - 1

    def dist(t, a, b):
        return max(0.0, a - t, t - b)

    out = np.full((K, K), -np.inf)
    for i in range(K):
        a = sum(1 for v in x if v < grid[i])
        b = sum(1 for v in x if v < grid[i + 1]) if i + 1 < K else n
        e_lo = dist(q[0] * n, a, b)
        for j in range(i + 1, K + 1):
            c = sum(1 for v in x if v <= grid[j - 1]) if j > 1 else 0
            d = sum(1 for v in x if v <= grid[j])
            e_hi = dist(q[1] * n, c, d)
            d = j - i
            prior = -w * d if d <= knee else -w * knee - w_far * (d - knee)
            out[i, j - 1] = prior - eps / 2 * max(e_lo, e_hi)
    top = out.max()
    return out - (top + np.log(np.sum(np.exp(out - top))))


def factored(law):
    """The (K, K) matrix [i, j - 1] of log P(i, j) = log P(low = g_i) + log P(high = g_j |
    low = g_i), from the sampler's own factors (what sample_pair draws from)."""
    return np.array([law.log_marginal[i] + law.log_conditional(i)
                     for i in range(law.log_marginal.size)])


def implementation(x, q, eps, grid):
    """The law estimate_bounds samples (the factored PairLaw, not the reference matrix)."""
    x = np.asarray(x, float)
    atoms, cells = Q.column_histogram(x[~np.isnan(x)], grid)
    return factored(Q.pair_law(atoms, cells, q, eps))


def max_log_ratio(x1, x2, q, eps, grid, fn=implementation):
    a, b = fn(x1, q, eps, grid), fn(x2, q, eps, grid)
    finite = np.isfinite(a)
    assert np.array_equal(finite, np.isfinite(b))          # same support: every i < j
    return float(np.max(np.abs(a[finite] - b[finite])))


def _pairs():
    """Neighbouring pairs: replace-one, add/remove, a value replaced by a missing one,
    data at grid points (ties, point masses), between them and at the ends."""
    rng = np.random.default_rng(7)
    out = [(D, D_REPLACED), (A, A_ADDED)]
    for _ in range(12):
        n = int(rng.integers(1, 7))
        x = rng.choice(np.arange(0.0, 10.5, 0.5), n) + rng.choice([0.0, 0.25], n)
        x = np.minimum(x, 10.0)
        y = x.copy()
        y[0] = rng.choice([0.0, 3.3, 10.0, 6.0])
        out.append((x, y))                              # replace one
        out.append((x, np.append(x, rng.uniform(0, 10))))  # add one
        z = x.copy()
        z[0] = np.nan
        out.append((x, z))                              # a value becomes missing
    ties = np.array([3.0, 3.0, 3.0, 3.0, 7.0])          # a point mass on a grid point
    out += [(ties, np.append(ties, 3.0)), (ties, np.array([3.0, 3.0, 3.0, 3.5, 7.0]))]
    return out


PAIRS = _pairs()


@pytest.mark.parametrize("knee", [None, 3])
@pytest.mark.parametrize("q", [(0.01, 0.99), (0.25, 0.75), (0.0, 1.0), (0.4, 0.5)])
def test_implementation_matches_the_independent_profile(q, knee, monkeypatch):
    if knee is not None:                    # the default knee is beyond this grid's width
        monkeypatch.setattr(Q, "_WIDTH_KNEE", knee)
    for x, y in PAIRS[:12]:
        for z in (x, y):
            np.testing.assert_allclose(implementation(z, q, 0.7, GRID), profile(z, q, 0.7, GRID),
                                       rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("q", [(0.01, 0.99), (0.25, 0.75), (0.0, 1.0)])
def test_whitebox_log_ratio_at_most_epsilon(q, eps):
    """Exact output probabilities on neighbours: every pair's log ratio <= eps, for
    replace-one, add/remove and value-to-missing neighbours."""
    worst = max(max_log_ratio(x, y, q, eps, GRID) for x, y in PAIRS)
    assert worst <= eps * (1 + 1e-9)
    for x, y in ((D, D_REPLACED), (A, A_ADDED)):
        assert max_log_ratio(x, y, q, eps, GRID, fn=profile) <= eps * (1 + 1e-9)


def test_whitebox_catches_an_epsilon_doubled_mechanism(monkeypatch):
    assert max_log_ratio(D, D_REPLACED, QS, 1.0, GRID) <= 1.0
    assert max_log_ratio(A, A_ADDED, QS, 1.0, GRID) <= 1.0
    monkeypatch.setattr(Q, "_EM_DIVISOR", 1.0)     # exp(-eps err) instead of exp(-eps err / 2)
    assert max_log_ratio(D, D_REPLACED, QS, 1.0, GRID) > 1.6
    assert max_log_ratio(A, A_ADDED, QS, 1.0, GRID) > 1.15


def test_whitebox_catches_a_data_dependent_prior(monkeypatch):
    """A base measure that is not public (here: the width prior scaled by the count of
    rows) breaks the guarantee, and the white-box check sees it."""
    real = Q.pair_law

    def leaky(atoms, cells, quantiles, epsilon, width_prior=None):
        return real(atoms, cells, quantiles, epsilon, 0.3 * (np.sum(atoms) + np.sum(cells)))

    monkeypatch.setattr(Q, "pair_law", leaky)
    assert max_log_ratio(A, A_ADDED, QS, 1.0, GRID) > 1.0


def test_sampler_follows_the_distribution():
    x = np.array([1.5, 2.0, 2.0, 7.25, 3.0])
    atoms, cells = Q.column_histogram(x, GRID)
    logp = Q.pair_log_probabilities(atoms, cells, QS, 1.0)
    lo, hi = Q.sample_pair(atoms, cells, QS, 1.0, GRID, size=200_000, random_state=3)
    assert np.all(lo < hi) and np.all(np.isin(lo, GRID)) and np.all(np.isin(hi, GRID))
    counts = np.zeros_like(logp)
    np.add.at(counts, (lo.astype(int), hi.astype(int) - 1), 1)
    expected = np.exp(logp) * lo.size
    big = expected > 50
    z = (counts[big] - expected[big]) / np.sqrt(expected[big])
    assert np.max(np.abs(z)) < 5.0
    assert counts[~big].sum() < 5 * max(expected[~big].sum(), 10)


def _statistic(lo, hi):
    """A scalar function of the released pair (post-processing): its index."""
    return lo * 100 + hi


@pytest.mark.parametrize("broken", [False, True])
@pytest.mark.parametrize("pair", ["replace", "add"])
def test_blackbox_audit(monkeypatch, broken, pair):
    """Clopper-Pearson lower bound on epsilon from 2 x 100k draws on a designed pair, for
    a replaced and for an added row; the epsilon-doubled mechanism must be caught."""
    if broken:
        monkeypatch.setattr(Q, "_EM_DIVISOR", 1.0)
    x, y = (D, D_REPLACED) if pair == "replace" else (A, A_ADDED)
    s = []
    for z, seed in ((x, 11), (y, 12)):
        atoms, cells = Q.column_histogram(z, GRID)
        s.append(_statistic(*Q.sample_pair(atoms, cells, QS, 1.0, GRID, size=100_000,
                                           random_state=seed)))
    bound, info = epsilon_lower_bound(s[0], s[1], confidence=0.99)
    if broken:
        assert bound > 1.0, info
    else:
        assert bound <= 1.0, info


def test_histogram_is_one_pass_and_adds_over_chunks():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.integers(0, 11, 500).astype(float), rng.uniform(0, 10, 500)])
    atoms, cells = Q.column_histogram(x, GRID)
    assert atoms.sum() + cells.sum() == x.size
    assert np.array_equal(atoms, [np.count_nonzero(x == g) for g in GRID])
    assert np.array_equal(cells, [np.count_nonzero((x > a) & (x < b))
                                  for a, b in zip(GRID[:-1], GRID[1:])])
    parts = [Q.column_histogram(c, GRID) for c in np.array_split(rng.permutation(x), 7)]
    assert np.array_equal(sum(p[0] for p in parts), atoms)
    assert np.array_equal(sum(p[1] for p in parts), cells)


def test_estimate_bounds_draws_with_sample_pair():
    """The audited law is what estimate_bounds releases (one pair per column, eps / m)."""
    X = np.column_stack([D, D_REPLACED])
    with pytest.warns(PrivacyLeakWarning):
        b = estimate_bounds(X, 2.0, quantiles=QS, grid=GRID, random_state=5)
    rng = np.random.default_rng(5)
    expect = []
    for j in range(2):
        atoms, cells = Q.column_histogram(X[:, j], GRID)
        expect.append(Q.sample_pair(atoms, cells, QS, 1.0, GRID, random_state=rng))
    assert [b[0], b[1]] == expect


def test_composition_spends_epsilon_over_m_per_column(monkeypatch):
    """Sequential composition: one joint draw per column at epsilon / m, no more."""
    calls = []
    real = Q.pair_law

    def spy(atoms, cells, quantiles, epsilon, width_prior=None):
        calls.append((tuple(quantiles), epsilon))
        return real(atoms, cells, quantiles, epsilon, width_prior)

    monkeypatch.setattr(Q, "pair_law", spy)
    X = np.random.default_rng(0).normal(size=(40, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoiseDominatedWarning)
        estimate_bounds(X, 0.9, quantiles=(0.1, 0.8))
    assert len(calls) == 3
    assert sum(e for _, e in calls) == pytest.approx(0.9)
    assert all(e == pytest.approx(0.3) and q == (0.1, 0.8) for q, e in calls)


# ----------------------------------------------------------------------------- ties
def _tie_columns(n=30_000, seed=0):
    """Integer, bounded and top-coded columns (issue 28): ages 21-35 with 10 % at 35, weeks
    worked 0-52 with 47 % zeros, years of education 0-18 with 8 % at 18, a month 1-12."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=(3, n))
    return {"age": np.where(u[0] < 0.10, 35, rng.integers(21, 35, n)).astype(float),
            "weeks": np.where(u[1] < 0.47, 0, rng.integers(1, 53, n)).astype(float),
            "educ": np.where(u[2] < 0.08, 18, rng.integers(0, 18, n)).astype(float),
            "month": rng.integers(1, 13, n).astype(float)}


@pytest.mark.parametrize("name", ["age", "weeks", "educ", "month"])
def test_point_masses_keep_the_bounds_next_to_the_data(name):
    """Fails on the old mechanism (0 of 10 draws sane at eps = 1): the exact law puts
    essentially no mass on a pair beyond half the data's range outside [min, max] or
    covering less than half the 1 %-99 % range, at eps = 1 for the column; at eps = 0.1
    at most 5e-5 beyond 10 x the range (measured: 1e-5 for the weeks worked).  And 20
    real draws are all sane."""
    x = _tie_columns()[name]
    g = Q.default_grid()
    atoms, cells = Q.column_histogram(x, g)
    mn, mx = x.min(), x.max()
    r = mx - mn
    q1, q99 = np.quantile(x, [0.01, 0.99])
    lo, hi = g[:-1, None], g[None, 1:]
    sane = (lo >= mn - r / 2) & (hi <= mx + r / 2) & \
        (np.minimum(hi, q99) - np.maximum(lo, q1) >= 0.5 * (q99 - q1))
    p = np.exp(Q.pair_log_probabilities(atoms, cells, (0.01, 0.99), 1.0))
    assert p[~sane].sum() < 1e-6
    p = np.exp(Q.pair_log_probabilities(atoms, cells, (0.01, 0.99), 0.1))
    assert p[(lo < mn - 10 * r) | (hi > mx + 10 * r)].sum() < 5e-5   # < 1 % over 200 draws
    b = _quiet({name: x}, 1.0, random_state=1)
    for _ in range(20):
        low, high = _quiet({name: x}, 1.0)[name]
        assert mn - r / 2 <= low < high <= mx + r / 2
    assert b[name][0] <= q1 and b[name][1] >= q99 - 0.5 * (q99 - q1)


def _near_mass(x, eps):
    g = Q.default_grid()
    atoms, cells = Q.column_histogram(x, g)
    r = x.max() - x.min()
    near = (g[:-1, None] >= x.min() - r) & (g[None, 1:] <= x.max() + r)
    return np.exp(Q.pair_log_probabilities(atoms, cells, (0.01, 0.99), eps))[near].sum()


def test_width_prior_keeps_small_n_epsilon_near_the_data(monkeypatch):
    """3,000 rows at eps 0.1 (q n eps / 2 = 1.5): the prior for narrow intervals keeps
    99.6 % of the law within one range of the data; without it (the old mechanism's flat
    base measure over +-1e9) 2.6 %."""
    x = np.random.default_rng(0).normal(50, 10, 3000)
    assert _near_mass(x, 0.1) > 0.99
    monkeypatch.setattr(Q, "_WIDTH_PRIOR", 0.0)
    monkeypatch.setattr(Q, "_WIDTH_PRIOR_FAR", 0.0)
    assert _near_mass(x, 0.1) < 0.1


def test_prior_is_gentler_beyond_the_knee(monkeypatch):
    """A zero-inflated column with amounts in the thousands (Adult's capital-loss shape:
    95 % zeros, 99 % quantile near 2,000) at eps 0.1: with the knee, most of the law's
    high end is within 5 % of the 99 % quantile; with the steep prior all the way (no
    knee), the high end collapses to the zeros' cell."""
    rng = np.random.default_rng(0)
    n = 45_000
    x = np.where(rng.uniform(size=n) < 0.95, 0.0, rng.choice([1500.0, 1900.0, 1980.0, 2400.0], n))
    g = Q.default_grid()
    atoms, cells = Q.column_histogram(x, g)
    t99 = np.quantile(x, 0.99)

    def good():
        p = np.exp(Q.pair_log_probabilities(atoms, cells, (0.01, 0.99), 0.1)).sum(0)
        return p[np.abs(g[1:] - t99) <= 0.05 * t99].sum()

    assert good() > 0.9
    monkeypatch.setattr(Q, "_WIDTH_KNEE", 10 ** 6)
    assert good() < 0.1


def test_prior_still_decays_beyond_the_knee(monkeypatch):
    """A column spread over four decades (3,000 log-normal rows, eps 0.1): the slope
    beyond the knee keeps 99.9 % of the law within a factor 100 of the 1 % and 99 %
    quantiles; a flat prior beyond the knee lets the ends drift (7 %)."""
    x = np.random.default_rng(0).lognormal(5, 2, 3000)
    g = Q.default_grid()
    atoms, cells = Q.column_histogram(x, g)
    t1, t99 = np.quantile(x, [0.01, 0.99])
    near = (g[:-1, None] >= t1 / 100) & (g[None, 1:] <= t99 * 100)

    def mass():
        return np.exp(Q.pair_log_probabilities(atoms, cells, (0.01, 0.99), 0.1))[near].sum()

    assert mass() > 0.99
    monkeypatch.setattr(Q, "_WIDTH_PRIOR_FAR", 0.0)
    assert mass() < 0.5


def test_released_values_are_grid_points_never_data_values():
    """Issue 29 item 8: the old code separated coinciding draws (_separate); now every
    released bound is a public grid point and low < high, so no data value is released
    unless it is a point of the public grid.  Data all equal, off the grid."""
    x = np.full(50, 3.7)
    g = Q.default_grid()
    for seed in range(30):
        lo, hi = _quiet(x[:, None], 0.5, random_state=seed)[0]
        assert lo < hi and lo in g and hi in g and 3.7 not in (lo, hi)
    lo, hi = Q.sample_pair(*Q.column_histogram(x, GRID), QS, 1.0, GRID, size=5000,
                           random_state=0)
    assert np.all(lo < hi) and np.all(np.isin(lo, GRID)) and np.all(np.isin(hi, GRID))
    # the data's cell [3, 4] is by far the likeliest release
    assert np.mean((lo == 3.0) & (hi == 4.0)) > 0.5


def test_warns_when_n_epsilon_is_too_small():
    """Issue 29 item 9: n x eps below what the quantiles need warns (and names the
    column); enough data at the same epsilon does not."""
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.warns(NoiseDominatedWarning, match=r"column 0: n x epsilon is too small"):
            estimate_bounds(rng.normal(50, 10, (300, 1)), 0.5, random_state=0)
        warnings.simplefilter("error", NoiseDominatedWarning)
        estimate_bounds(rng.normal(50, 10, (30_000, 1)), 2.0, random_state=0)
        warnings.simplefilter("default", NoiseDominatedWarning)
        with pytest.warns(NoiseDominatedWarning, match="column 'b': every value is missing"):
            estimate_bounds({"a": np.arange(10.0), "b": np.full(10, np.nan)}, 1.0, columns=["b"],
                            random_state=0)
    atoms, cells = Q.column_histogram(rng.normal(50, 10, 30_000), Q.default_grid())
    small = Q.inaccuracy(atoms, cells, (0.01, 0.99), 0.003)[0]
    large = Q.inaccuracy(atoms, cells, (0.01, 0.99), 2.0)[0]
    assert small > 0.5 and large < 1e-3


# ----------------------------------------------------------------------------- release
def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", NoiseDominatedWarning)
        return estimate_bounds(*args, **kwargs)


def test_neighbouring_data_release_identical_records():
    rng = np.random.default_rng(0)
    X = rng.normal(50, 10, size=(317, 3))
    replaced = X.copy()
    replaced[0] = [1e3, -1e3, 0.0]
    removed = X[1:]
    records = [_quiet(Z, 1.0, random_state=s).privacy_ for s, Z in enumerate((X, replaced, removed))]
    assert records[0] == records[1] == records[2]
    text = json.dumps(records[0])
    assert "317" not in text and "316" not in text      # no row count
    assert set(records[0]) == {"mechanism", "epsilon", "delta", "epsilon_per_column",
                               "epsilon_per_quantile", "quantiles", "columns", "range", "grid",
                               "grid_points", "width_prior", "rank_sensitivity",
                               "neighbouring"}
    assert records[0]["epsilon_per_column"] == pytest.approx(1.0 / 3)
    assert records[0]["epsilon_per_quantile"] == pytest.approx(1.0 / 6)


def test_accountant_is_charged_the_total_epsilon():
    X = np.random.default_rng(1).uniform(0, 100, size=(50, 2))
    acc = BudgetAccountant(1.0)
    b = estimate_bounds(X, 0.25, accountant=acc)
    assert acc.spent == pytest.approx(0.25)
    assert len(acc.history) == 1 and b.privacy_["epsilon"] == 0.25
    with pytest.raises(BudgetExceededError):
        estimate_bounds(X, 0.8, accountant=acc)
    assert acc.spent == pytest.approx(0.25)


def test_seeded_with_accountant_refused_and_nothing_spent():
    acc = BudgetAccountant(1.0)
    with pytest.raises(ValueError, match="random_state"):
        estimate_bounds(np.ones((5, 1)), 0.5, accountant=acc, random_state=0)
    assert acc.spent == 0 and not acc.history


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=float("nan")), "epsilon"),
    (dict(epsilon=1.0, quantiles=(0.99, 0.01)), "quantiles"),
    (dict(epsilon=1.0, quantiles=(0.1, 1.5)), "quantiles"),
    (dict(epsilon=1.0, quantiles=0.5), "quantiles"),
    (dict(epsilon=1.0, quantiles=("a", "b")), "quantiles"),
    (dict(epsilon=1.0, bounds_range=(5.0, 1.0)), "bounds_range"),
    (dict(epsilon=1.0, bounds_range=(0.0, np.inf)), "bounds_range"),
    (dict(epsilon=1.0, bounds_range=3.0), "bounds_range"),
    (dict(epsilon=1.0, grid=[0.0, 2.0, 1.0]), "grid"),
    (dict(epsilon=1.0, grid=[1.0]), "grid"),
    (dict(epsilon=1.0, grid=[0.0, np.nan]), "grid"),
    (dict(epsilon=1.0, grid=[0.0, 1.0], bounds_range=(0.0, 1.0)), "grid, bounds_range"),
    (dict(epsilon=1.0, columns=[5]), "columns"),
    (dict(epsilon=1.0, columns=["a"]), "columns"),
    (dict(epsilon=1.0, columns=[0, 0]), "columns"),
    (dict(epsilon=1.0, columns=[]), "columns"),
])
def test_bad_parameters_name_the_parameter(kwargs, match):
    X = np.arange(12.0).reshape(6, 2)
    before = X.copy()
    acc = BudgetAccountant(10.0)
    with pytest.raises(ValueError, match=match):
        estimate_bounds(X, accountant=acc, **kwargs)
    assert np.array_equal(X, before) and acc.spent == 0


def test_bad_data():
    with pytest.raises(ValueError, match="2-D"):
        estimate_bounds(np.arange(5.0), 1.0)
    with pytest.raises(ValueError, match="non-numeric value 'x' in column 'b'"):
        estimate_bounds({"a": [1.0, 2.0], "b": [1.0, "x"]}, 1.0)
    with pytest.raises(ValueError, match="dtype"):
        estimate_bounds(np.array([[True, False]]), 1.0)
    with pytest.raises(TypeError, match="accountant"):
        estimate_bounds(np.ones((3, 1)), 1.0, accountant=1.0)


def test_range_that_misses_the_data_warns_naming_the_column():
    X = {"age": np.array([20.0, 30.0, 40.0]), "income": np.array([1.0, 2.0, np.nan])}
    before = {k: v.copy() for k, v in X.items()}
    with pytest.warns(ClippingWarning, match=r"column 'age'.*all of them: the range misses"):
        b = _quiet(X, 1.0, bounds_range=(100.0, 200.0), columns=["age"], random_state=0)
    assert 100.0 <= b["age"][0] < b["age"][1] <= 200.0
    with pytest.warns(ClippingWarning, match=r"column 'income': 1 value"):
        _quiet(X, 1.0, bounds_range=(0.0, 1.5), columns=["income"], random_state=0)
    for k in X:
        np.testing.assert_array_equal(X[k], before[k])


def test_missing_values_are_left_out_and_infinities_clipped():
    x = np.array([1.0, np.nan, 3.0, np.inf])
    with pytest.warns(ClippingWarning, match="1 value"):
        b = _quiet(x[:, None], 5.0, grid=GRID, random_state=1)
    assert 0.0 <= b[0][0] < b[0][1] <= 10.0
    assert np.isnan(x[1]) and np.isinf(x[3])


# ----------------------------------------------------------------------------- use
def test_bounds_are_accurate_with_enough_data():
    """A check with power against a wrong rank or sign: 20000 rows, epsilon 2."""
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.normal(50, 10, 20_000), rng.lognormal(8, 1, 20_000)])
    b = _quiet(X, 2.0, random_state=4)
    true = np.quantile(X, [0.01, 0.99], axis=0).T
    for j in range(2):
        width = true[j, 1] - true[j, 0]
        assert abs(b[j][0] - true[j, 0]) < 0.02 * width
        assert abs(b[j][1] - true[j, 1]) < 0.02 * width


def test_result_plugs_into_schema_and_transformer():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"age": rng.integers(17, 90, 500).astype(float),
                          "hours": rng.integers(1, 99, 500),
                          "sex": rng.choice(["F", "M"], 500)})
    b = _quiet(frame, 1.0, columns=["age", "hours"], random_state=0)
    assert isinstance(b, PrivateBounds) and list(b) == ["age", "hours"]
    assert b.bounds == dict(b) and b.privacy_["columns"] == ["age", "hours"]
    Z = PublicBoundsTransformer(numeric=b, categorical={"sex": ["F", "M"]}).fit_transform(frame)
    assert Z.shape == (500, 4) and np.all(np.linalg.norm(Z, axis=1) <= 1 + 1e-12)
    s = PublicSchema(numeric=b, categorical={"sex": ["F", "M"]}, label="y", classes=[0, 1])
    assert PublicSchema.from_json(s.to_json()) == s
    assert s.numeric["age"] == b["age"]
    Z2 = PublicBoundsTransformer.from_schema(s).fit_transform(frame)
    np.testing.assert_array_equal(Z, Z2)
    arr = _quiet(frame[["age", "hours"]].to_numpy(), 1.0, random_state=0)
    assert list(arr) == [0, 1]
    Z3 = PublicBoundsTransformer(numeric=arr).fit_transform(frame[["age", "hours"]].to_numpy())
    assert Z3.shape == (500, 2)


def test_result_copies_pickles_and_clones():
    import copy
    import pickle

    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline

    from dperm import PrivateLinearClassifier

    b = _quiet(np.random.default_rng(0).normal(50, 10, (300, 2)), 1.0, random_state=0)
    assert copy.deepcopy(b) == b == pickle.loads(pickle.dumps(b))
    assert copy.deepcopy(b).privacy_ == b.privacy_
    pipe = make_pipeline(PublicBoundsTransformer(numeric=b),
                         PrivateLinearClassifier(epsilon=1.0, classes=[0, 1]))
    assert clone(pipe).steps[0][1].numeric == b
    with pytest.raises(TypeError):
        b["x"] = (0.0, 1.0)


def test_default_grid():
    g = Q.default_grid()
    assert g[0] == -1e9 and g[-1] == 1e9 and 0.0 in g and np.all(np.diff(g) > 0)
    assert g.size == 2403 and np.all(g[1203:] / g[1202:-1] == pytest.approx(10 ** 0.01))
    assert Q.default_grid(per_decade=10).size == 243
    with pytest.raises(ValueError, match="per_decade"):
        Q.default_grid(per_decade=0)
    r = Q.default_grid((-5.0, 2e9))
    assert r[0] == -5.0 and r[-1] == 2e9 and np.all(np.diff(r) > 0)


def test_dataframe_columns_do_not_depend_on_the_data():
    """Issue 29 item 3: with columns=None the old code picked a DataFrame's columns by
    pandas' inferred dtype, so one cell changed to "?" silently dropped the column from
    the release.  Now the default is every column, and a frame with a non-numeric column
    needs explicit columns: neighbouring frames release the same columns or none."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.integers(17, 90, 400).astype(float),
                          "hours": rng.integers(1, 99, 400).astype(float)})
    neighbour = frame.astype(object)
    neighbour.loc[3, "hours"] = "?"
    neighbour["age"] = frame["age"]
    assert list(_quiet(frame, 1.0, random_state=0)) == ["age", "hours"]
    with pytest.raises(ValueError, match=r"non-numeric dtype \['hours'\].*columns=\[\.\.\.\]"):
        _quiet(neighbour, 1.0, random_state=0)
    # with explicit columns both release the same columns (the "?" is refused by name)
    with pytest.raises(ValueError, match=r"non-numeric value '\?' in column 'hours'"):
        _quiet(neighbour, 1.0, columns=["age", "hours"], random_state=0)
    assert list(_quiet(neighbour, 1.0, columns=["age"], random_state=0)) == \
        list(_quiet(frame, 1.0, columns=["age"], random_state=0)) == ["age"]
    with_text = frame.assign(sex=rng.choice(["F", "M"], 400))
    with pytest.raises(ValueError, match="sex"):
        _quiet(with_text, 1.0)
