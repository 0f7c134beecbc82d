"""The factored sampler of the private bounds (dperm/privacy/quantiles.py, PairLaw): its law
is the K x K reference (pair_log_probabilities) pair for pair, its draws follow that law,
and bounds_from_histograms releases what estimate_bounds releases from the same counts.

The reference matrix is itself checked against a law written from the definition with
explicit counts (tests/privacy/test_quantiles.py, profile); the white-box privacy checks there
read the factored law, which is what estimate_bounds samples.
"""
import warnings

import numpy as np
import pytest
from scipy import stats

from dperm import BudgetAccountant, PrivacyLeakWarning, estimate_bounds
from dperm.exceptions import NoiseDominatedWarning
from dperm.privacy import quantiles as Q


def factored(law):
    """log P(i, j) as a (K, K) matrix [i, j - 1] from the sampler's two factors."""
    return np.array([law.log_marginal[i] + law.log_conditional(i)
                     for i in range(law.log_marginal.size)])


def assert_same_law(atoms, cells, q, eps, width_prior=None, rows=None):
    """The sampler's factors against the reference matrix: the marginal of the low end
    (its row sums) and, for ``rows`` (default every row), the pairs P(low) P(high | low)
    to 1e-12; and the analyst's warning's mass."""
    ref = Q.pair_log_probabilities(atoms, cells, q, eps, width_prior)
    law = Q.pair_law(atoms, cells, q, eps, width_prior)
    K = ref.shape[0]
    top = ref.max(axis=1, keepdims=True)
    ref_marginal = top[:, 0] + np.log(np.sum(np.exp(ref - top), axis=1))
    np.testing.assert_allclose(np.exp(law.log_marginal), np.exp(ref_marginal), rtol=0, atol=1e-12)
    big = ref_marginal > -30                                  # every low end of p > 1e-13
    np.testing.assert_allclose(law.log_marginal[big], ref_marginal[big], rtol=0, atol=1e-10)
    for i in range(K) if rows is None else rows:
        row = law.log_marginal[i] + law.log_conditional(i)
        finite = np.isfinite(ref[i])
        assert np.array_equal(finite, np.isfinite(row))      # the same support: j > i
        assert np.array_equal(finite, np.arange(K) >= i)
        np.testing.assert_allclose(np.exp(row), np.exp(ref[i]), rtol=0, atol=1e-12)
        big = ref[i] > -30
        np.testing.assert_allclose(row[big], ref[i][big], rtol=0, atol=1e-10)
        # the conditional of the high end is a law
        assert abs(np.sum(np.exp(law.log_conditional(i))) - 1.0) < 1e-11
    # the analyst's warning reads the same mass as the matrix
    p, tolerated = law.inaccuracy()
    bad = np.maximum.outer(*Q.pair_errors(atoms, cells, q)) > tolerated
    assert abs(p - float(np.sum(np.exp(ref[bad])))) < 1e-12
    return law


def _small_cases(seed):
    """Random small grids (uniform and not), with ties on grid points, point masses,
    values at the ends, empty columns and single values."""
    rng = np.random.default_rng(seed)
    for case in range(60):
        K = int(rng.integers(1, 30))
        grid = np.arange(K + 1.0) if case % 2 else np.cumsum(rng.uniform(0.1, 3.0, K + 1))
        n = [0, 1, 2, 5, 20, 60][case % 6]
        pool = np.concatenate([grid, (grid[:-1] + grid[1:]) / 2])   # on and between points
        x = rng.choice(pool, n)
        if case % 5 == 0 and n:
            x[: n // 2 + 1] = grid[int(rng.integers(0, K + 1))]      # a point mass
        a, b = np.sort(rng.uniform(size=2))
        q = [(0.01, 0.99), (0.0, 1.0), (0.25, 0.75), (float(a), float(b))][case % 4]
        eps = [0.01, 0.3, 1.0, 5.0, 80.0][case % 5]
        yield Q.column_histogram(x, grid), q, eps


@pytest.mark.parametrize("knee, far", [(None, None), (1, None), (3, 0.0), (4, 1.0)])
@pytest.mark.parametrize("width_prior", [None, 0.0, 2.0])
def test_factored_law_equals_the_reference_matrix(monkeypatch, knee, far, width_prior):
    """Per pair, P(low) P(high | low) from the sampler equals the K x K matrix to 1e-12,
    on both sides of the prior's knee, flat and steep priors."""
    if knee is not None:
        monkeypatch.setattr(Q, "_WIDTH_KNEE", knee)
    if far is not None:
        monkeypatch.setattr(Q, "_WIDTH_PRIOR_FAR", far)
    for (atoms, cells), q, eps in _small_cases(0 if knee is None else knee):
        assert_same_law(atoms, cells, q, eps, width_prior)


def _default_grid_columns():
    rng = np.random.default_rng(4)
    n = 30_000
    u = rng.uniform(size=n)
    return {"normal": rng.normal(50, 10, n),
            "age top-coded": np.where(u < 0.10, 35, rng.integers(21, 35, n)).astype(float),
            "weeks, 47 % zeros": np.where(u < 0.47, 0, rng.integers(1, 53, n)).astype(float),
            "log-normal": rng.lognormal(5, 2, 3000),
            "negative and positive": rng.normal(0, 1e4, 5000),
            "one value": np.full(40, 3.7),
            "empty": np.array([])}


@pytest.mark.parametrize("name", list(_default_grid_columns()))
@pytest.mark.parametrize("eps", [0.02, 2.0])
def test_factored_law_equals_the_reference_on_the_default_grid(name, eps):
    """2,402 cells: every low end's marginal, and the whole row of 60 low ends (those
    the law favours and a spread of the rest)."""
    x = _default_grid_columns()[name]
    atoms, cells = Q.column_histogram(x, Q.default_grid())
    likely = np.argsort(Q.pair_law(atoms, cells, (0.01, 0.99), eps).log_marginal)[-20:]
    rows = np.unique(np.concatenate([likely, np.linspace(0, 2401, 40).astype(int)]))
    assert_same_law(atoms, cells, (0.01, 0.99), eps, rows=rows)


def test_factored_law_without_the_matrix_on_a_fine_grid():
    """1,000 points a decade (24,003 points): the K x K matrix would take 4.6 GB; the
    factored law is a few arrays of K, and its draws stay next to the data."""
    g = Q.default_grid(per_decade=1000)
    x = np.random.default_rng(0).normal(100, 10, 100_000)
    atoms, cells = Q.column_histogram(x, g)
    law = Q.pair_law(atoms, cells, (0.01, 0.99), 1.0)
    assert law.log_marginal.size == g.size - 1
    assert abs(np.sum(np.exp(law.log_marginal)) - 1.0) < 1e-12
    lo, hi = Q.sample_pair(atoms, cells, (0.01, 0.99), 1.0, g, size=200, random_state=0,
                           law=law)
    t1, t99 = np.quantile(x, [0.01, 0.99])
    assert np.all(np.abs(lo - t1) < 2.0) and np.all(np.abs(hi - t99) < 2.0)


def _chi_square(lo_idx, hi_idx, logp):
    """Pearson's statistic of the draws against the law exp(logp) (cells expected >= 5;
    the rest pooled) and its degrees of freedom."""
    K = logp.shape[0]
    counts = np.bincount(lo_idx * K + (hi_idx - 1), minlength=K * K).astype(float)
    expected = np.exp(logp.ravel()) * lo_idx.size
    keep = expected >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp_ = np.append(expected[keep], expected[~keep].sum())
    if exp_[-1] < 5:                                   # pool the tail into the last kept cell
        obs[-2] += obs[-1]
        exp_[-2] += exp_[-1]
        obs, exp_ = obs[:-1], exp_[:-1]
    return float(np.sum((obs - exp_) ** 2 / exp_)), obs.size - 1


@pytest.mark.parametrize("x, eps", [
    (np.array([1.5, 2.0, 2.0, 7.25, 3.0]), 1.0),            # ties on a grid point
    (np.array([3.0, 3.0, 3.0, 3.0, 7.0]), 0.5),             # a point mass
    (np.array([]), 1.0),                                     # an empty column: the prior
    (np.array([0.0, 0.0, 10.0, 10.0, 10.0, 5.5]), 3.0),     # masses at both ends
])
def test_draws_follow_the_exact_law(x, eps):
    """Chi-square of 300,000 seeded draws against the reference matrix, at a level of
    1e-7 (the seed fixes the draws; a wrong law of the same size is rejected below)."""
    grid = np.arange(11.0)
    atoms, cells = Q.column_histogram(x, grid)
    q = (0.25, 0.75)
    lo, hi = Q.sample_pair(atoms, cells, q, eps, grid, size=300_000, random_state=11)
    assert np.all(lo < hi) and np.all(np.isin(lo, grid)) and np.all(np.isin(hi, grid))
    i, j = lo.astype(int), hi.astype(int)
    stat, df = _chi_square(i, j, Q.pair_log_probabilities(atoms, cells, q, eps))
    assert stat < stats.chi2.ppf(1 - 1e-7, df), (stat, df)
    # the same test rejects a law with a 10 % larger epsilon (its power on these draws)
    wrong = Q.pair_log_probabilities(atoms, cells, q, eps * 1.1)
    if x.size:
        stat, df = _chi_square(i, j, wrong)
        assert stat > stats.chi2.ppf(1 - 1e-7, df)
    # and a sampler that draws the high end from the marginal of the high end, not from
    # its conditional, fails it too
    ref = np.exp(Q.pair_log_probabilities(atoms, cells, q, eps))
    rng = np.random.default_rng(12)
    hi_marginal = ref.sum(axis=0)
    jj = rng.choice(np.arange(1, 11), size=300_000, p=hi_marginal / hi_marginal.sum())
    keep = jj > i
    stat, df = _chi_square(i[keep], jj[keep], np.log(ref / ref.sum()))
    assert stat > stats.chi2.ppf(1 - 1e-7, df)


def test_sampler_reads_two_uniforms_per_draw_and_groups_by_low_end():
    """The draws of size m are the draws of m single calls on the same stream (the low end
    from m uniforms, then the high ends from m more)."""
    grid = np.arange(11.0)
    atoms, cells = Q.column_histogram(np.array([1.5, 2.0, 2.0, 7.25, 3.0]), grid)
    law = Q.pair_law(atoms, cells, (0.25, 0.75), 1.0)
    rng = np.random.default_rng(3)
    i, j = law.sample(1000, rng)
    rng = np.random.default_rng(3)
    u1, u2 = rng.uniform(size=1000), rng.uniform(size=1000)
    cdf = np.cumsum(np.exp(law.log_marginal))
    expect_i = np.minimum(np.searchsorted(cdf, u1 * cdf[-1], side="right"), 9)
    assert np.array_equal(i, expect_i)
    for k in range(0, 1000, 97):
        row = np.cumsum(np.exp(law.log_conditional(int(i[k]))))
        assert j[k] == np.searchsorted(row, u2[k] * row[-1], side="right") + 1


# ----------------------------------------------------------------------------- from counts
def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", NoiseDominatedWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("where", [dict(), dict(bounds_range=(-50.0, 500.0)),
                                   dict(grid=np.linspace(-10, 200, 300))])
def test_bounds_from_histograms_is_estimate_bounds(where):
    """Counted in chunks and added, then released: the same bounds (same seed) and the
    same record as estimate_bounds on the whole columns."""
    rng = np.random.default_rng(0)
    X = {"a": rng.normal(50, 10, 3000), "b": rng.integers(0, 20, 3000).astype(float)}
    X["a"][::7] = np.nan
    g = where["grid"] if "grid" in where else Q.default_grid(where.get("bounds_range"))
    hists = {}
    for key, v in X.items():
        v = v[~np.isnan(v)]
        parts = [Q.column_histogram(c, g) for c in np.array_split(v, 5)]
        hists[key] = (sum(p[0] for p in parts), sum(p[1] for p in parts))
    a = _quiet(estimate_bounds, X, 0.6, quantiles=(0.05, 0.9), random_state=7, **where)
    b = _quiet(Q.bounds_from_histograms, hists, 0.6, quantiles=(0.05, 0.9), random_state=7,
               **where)
    assert a == b and a.privacy_ == b.privacy_ and list(b) == ["a", "b"]
    # the histograms' order is the release's
    c = _quiet(Q.bounds_from_histograms, {"b": hists["b"], "a": hists["a"]}, 0.6,
               quantiles=(0.05, 0.9), random_state=7, **where)
    assert list(c) == ["b", "a"] and c.privacy_["columns"] == ["b", "a"]


def test_bounds_from_histograms_charges_the_accountant_and_warns():
    g = Q.default_grid()
    hists = {"x": Q.column_histogram(np.random.default_rng(1).normal(0, 1, 200), g),
             "none": Q.column_histogram(np.array([]), g)}
    acc = BudgetAccountant(1.0)
    with pytest.warns(NoiseDominatedWarning, match="column 'none': every value is missing"):
        b = Q.bounds_from_histograms(hists, 0.4, accountant=acc)
    assert acc.spent == pytest.approx(0.4) and len(acc.history) == 1
    assert b.privacy_["epsilon_per_column"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="random_state"):
        Q.bounds_from_histograms(hists, 0.1, accountant=acc, random_state=0)
    assert acc.spent == pytest.approx(0.4)


@pytest.mark.parametrize("histograms, kwargs, match", [
    ([(np.zeros(11), np.zeros(10))], {}, "histograms: expected a mapping"),
    ({}, {}, "histograms: has no columns"),
    ({"a": np.zeros(11)}, {}, r"column 'a' must be a pair \(atoms, cells\)"),
    ({"a": (np.zeros(12), np.zeros(10))}, {}, r"column 'a': atoms must have shape \(11,\)"),
    ({"a": (np.zeros(11), np.zeros(11))}, {}, r"column 'a': cells must have shape \(10,\)"),
    ({"a": (np.zeros(11), -np.ones(10))}, {}, "column 'a': cells must be non-negative whole"),
    ({"a": (np.full(11, 0.5), np.zeros(10))}, {}, "column 'a': atoms must be non-negative"),
    ({"a": (np.full(11, np.nan), np.zeros(10))}, {}, "column 'a': atoms must be non-negative"),
    ({"a": (["x"] * 11, np.zeros(10))}, {}, "column 'a': atoms must be numbers"),
    ({"a": (np.zeros(11), np.zeros(10))}, dict(bounds_range=(0, 1)), "grid, bounds_range"),
    ({"a": (np.zeros(11), np.zeros(10))}, dict(epsilon=0.0), "epsilon"),
    ({"a": (np.zeros(11), np.zeros(10))}, dict(quantiles=(0.9, 0.1)), "quantiles"),
])
def test_bounds_from_histograms_refuses_bad_counts(histograms, kwargs, match):
    acc = BudgetAccountant(1.0)
    kwargs = {"epsilon": 0.5, "grid": np.arange(11.0), **kwargs}
    eps = kwargs.pop("epsilon")
    with pytest.raises((ValueError, TypeError), match=match):
        Q.bounds_from_histograms(histograms, eps, accountant=acc, **kwargs)
    assert acc.spent == 0
