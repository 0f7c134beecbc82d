"""Private bounds (dperm/privacy/quantiles.py): white-box and black-box privacy, the
release, bad input, and the result's use in PublicSchema / PublicBoundsTransformer.

The white-box profile below is written from the definition in docs/privacy_analysis.md
("Private bounds"), with explicit counts over the rows, not from the module's code:
base measure = mass 1 on each grid point plus mass 1 spread uniformly over each grid
cell; err(t) = distance from q n to [#{x < t}, #{x <= t}]; output density proportional
to exp(-eps err(t) / 2) with respect to the base measure.
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
from dperm.privacy import quantiles as Q

GRID = np.arange(0.0, 11.0)                    # public grid 0, 1, ..., 10
# a designed pair (found by search): the epsilon-doubled sampler's loss is 1.8 here
D = np.array([9.0, 2.0, 8.5, 8.5])
D_REPLACED = np.array([2.0, 2.0, 8.5, 8.5])


# ----------------------------------------------------------------------------- profile
def _err(x, q, t, atom):
    n = len(x)
    below = sum(1 for v in x if v < t)
    at_or_below = sum(1 for v in x if v <= t)
    if not atom:
        at_or_below = below            # inside a piece no row equals t
    return max(0.0, below - q * n, q * n - at_or_below)


def profile(x, q, eps, grid, breaks):
    """log P(atom g) for each grid point, and the log density at the midpoint of each
    piece of the partition grid U breaks, from the definition (independent code)."""
    x = [float(v) for v in x if v == v]
    grid = [float(g) for g in grid]
    cuts = sorted(set(grid) | {float(b) for b in breaks})
    atom_w = [np.exp(-eps / 2 * _err(x, q, g, True)) for g in grid]
    dens, mass = [], []
    for a, b in zip(cuts[:-1], cuts[1:]):
        m = (a + b) / 2
        k = max(i for i in range(len(grid) - 1) if grid[i] <= m)
        cell = grid[k + 1] - grid[k]
        w = np.exp(-eps / 2 * _err(x, q, m, False)) / cell
        dens.append(w)
        mass.append(w * (b - a))
    z = sum(atom_w) + sum(mass)
    return np.log(np.array(atom_w) / z), np.log(np.array(dens) / z)


def implementation(x, q, eps, grid, breaks):
    """The same two arrays from the module's quantile_distribution."""
    x = np.asarray(x, float)
    lo, hi, logp = Q.quantile_distribution(x[~np.isnan(x)], q, eps, grid)
    k = grid.size
    assert np.array_equal(lo[:k], grid) and np.array_equal(hi[:k], grid)
    assert np.isclose(np.exp(logp).sum(), 1.0)
    cuts = np.union1d(grid, breaks)
    mid = (cuts[:-1] + cuts[1:]) / 2
    lc, hc, pc = lo[k:], hi[k:], logp[k:]
    j = np.searchsorted(hc, mid)
    assert np.all((lc[j] < mid) & (mid < hc[j]))
    return logp[:k], pc[j] - np.log(hc[j] - lc[j])


def max_log_ratio(x1, x2, q, eps, grid, fn=implementation):
    breaks = np.union1d(np.asarray(x1, float)[~np.isnan(x1)], np.asarray(x2, float)[~np.isnan(x2)])
    a1, d1 = fn(x1, q, eps, grid, breaks)
    a2, d2 = fn(x2, q, eps, grid, breaks)
    return max(np.max(np.abs(a1 - a2)), np.max(np.abs(d1 - d2)))


def _pairs():
    """Neighbouring pairs: replace-one, add/remove, a value replaced by a missing one,
    data at grid points, between them and at the ends."""
    rng = np.random.default_rng(7)
    out = [(D, D_REPLACED)]
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
    return out


PAIRS = _pairs()


@pytest.mark.parametrize("q", [0.01, 0.25, 0.5, 0.99])
def test_implementation_matches_the_independent_profile(q):
    for x, _ in PAIRS[:10]:
        breaks = np.union1d(x, [0.5, 7.25])
        a1, d1 = implementation(x, q, 0.7, GRID, breaks)
        a2, d2 = profile(x, q, 0.7, GRID, breaks)
        np.testing.assert_allclose(a1, a2, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(d1, d2, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("q", [0.01, 0.5, 0.99])
def test_whitebox_log_ratio_at_most_epsilon(q, eps):
    worst = max(max_log_ratio(x, y, q, eps, GRID) for x, y in PAIRS)
    assert worst <= eps * (1 + 1e-9)
    # and the independent profile agrees on the designed pair
    assert max_log_ratio(D, D_REPLACED, q, eps, GRID, fn=profile) <= eps * (1 + 1e-9)


def test_whitebox_catches_an_epsilon_doubled_sampler(monkeypatch):
    assert max_log_ratio(D, D_REPLACED, 0.5, 1.0, GRID) <= 1.0
    monkeypatch.setattr(Q, "_EM_DIVISOR", 1.0)     # exp(-eps err) instead of exp(-eps err / 2)
    assert max_log_ratio(D, D_REPLACED, 0.5, 1.0, GRID) > 1.5


def test_sampler_follows_the_distribution():
    x = np.array([1.5, 2.0, 2.0, 7.25])
    lo, hi, logp = Q.quantile_distribution(x, 0.5, 1.0, GRID)
    s = Q.sample_quantile(x, 0.5, 1.0, GRID, size=200_000, random_state=3)
    k = GRID.size
    atoms = np.array([np.count_nonzero(s == g) for g in GRID])
    inner = np.array([np.count_nonzero((s > a) & (s < b)) for a, b in zip(lo[k:], hi[k:])])
    counts = np.concatenate([atoms, inner])
    assert counts.sum() == s.size
    expected = np.exp(logp) * s.size
    big = expected > 50
    z = (counts[big] - expected[big]) / np.sqrt(expected[big])
    assert np.max(np.abs(z)) < 5.0
    assert counts[~big].sum() < 5 * max(expected[~big].sum(), 10)


@pytest.mark.parametrize("broken", [False, True])
def test_blackbox_audit(monkeypatch, broken):
    """Clopper-Pearson lower bound on epsilon from 2 x 100k draws on the designed pair;
    the epsilon-doubled sampler must be caught."""
    if broken:
        monkeypatch.setattr(Q, "_EM_DIVISOR", 1.0)
    s1 = Q.sample_quantile(D, 0.5, 1.0, GRID, size=100_000, random_state=11)
    s2 = Q.sample_quantile(D_REPLACED, 0.5, 1.0, GRID, size=100_000, random_state=12)
    bound, info = epsilon_lower_bound(s1, s2, confidence=0.99)
    if broken:
        assert bound > 1.0, info
    else:
        assert bound <= 1.0, info


@pytest.mark.parametrize("broken", [False, True])
def test_blackbox_audit_add_remove(monkeypatch, broken):
    """The same audit for a row added (n private): D and D plus the row 0.0, q = 0.25
    (a designed pair: the epsilon-doubled sampler's loss is 1.32 here)."""
    if broken:
        monkeypatch.setattr(Q, "_EM_DIVISOR", 1.0)
    x = np.array([4.0, 0.5, 9.0, 4.0])
    s1 = Q.sample_quantile(x, 0.25, 1.0, GRID, size=100_000, random_state=21)
    s2 = Q.sample_quantile(np.append(x, 0.0), 0.25, 1.0, GRID, size=100_000, random_state=22)
    bound, info = epsilon_lower_bound(s1, s2, confidence=0.99)
    if broken:
        assert bound > 1.0, info
    else:
        assert bound <= 1.0, info


def test_estimate_bounds_draws_with_sample_quantile():
    """The audited sampler is what estimate_bounds releases (low then high, per column)."""
    X = np.column_stack([D, D_REPLACED])
    with pytest.warns(PrivacyLeakWarning):
        b = estimate_bounds(X, 2.0, quantiles=(0.25, 0.75), grid=GRID, random_state=5)
    rng = np.random.default_rng(5)
    expect = []
    for j in range(2):
        lo = Q.sample_quantile(X[:, j], 0.25, 0.5, GRID, random_state=rng)
        hi = Q.sample_quantile(X[:, j], 0.75, 0.5, GRID, random_state=rng)
        expect.append(Q._separate(lo, hi, GRID))
    assert [b[0], b[1]] == expect


def test_composition_spends_epsilon_over_two_m_per_draw(monkeypatch):
    """Sequential composition: 2 m draws at epsilon / (2 m) each, no more, no larger."""
    calls = []
    real = Q.sample_quantile

    def spy(x, q, eps, grid, size=None, random_state=None):
        calls.append((q, eps))
        return real(x, q, eps, grid, size=size, random_state=random_state)

    monkeypatch.setattr(Q, "sample_quantile", spy)
    X = np.random.default_rng(0).normal(size=(40, 3))
    estimate_bounds(X, 0.9, quantiles=(0.1, 0.8))
    assert len(calls) == 6
    assert sum(e for _, e in calls) == pytest.approx(0.9)
    assert all(e == pytest.approx(0.15) for _, e in calls)
    assert [q for q, _ in calls] == [0.1, 0.8] * 3


# ----------------------------------------------------------------------------- release
def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return estimate_bounds(*args, **kwargs)


def test_neighbouring_data_release_identical_records():
    rng = np.random.default_rng(0)
    X = rng.normal(50, 10, size=(200, 3))
    replaced = X.copy()
    replaced[0] = [1e3, -1e3, 0.0]
    removed = X[1:]
    records = [_quiet(Z, 1.0, random_state=s).privacy_ for s, Z in enumerate((X, replaced, removed))]
    assert records[0] == records[1] == records[2]
    text = json.dumps(records[0])
    assert "200" not in text and "199" not in text      # no row count
    assert set(records[0]) == {"mechanism", "epsilon", "delta", "epsilon_per_quantile",
                               "quantiles", "columns", "range", "grid", "grid_points",
                               "rank_sensitivity", "neighbouring"}
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
    b = _quiet(frame, 1.0, random_state=0)
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
    assert g.size == 243
    r = Q.default_grid((-5.0, 2e9))
    assert r[0] == -5.0 and r[-1] == 2e9 and np.all(np.diff(r) > 0)
