"""Private tuning (Algorithm 4): the exponential mechanism's probabilities and sampling, the
paper's Theorem 9 in simulation, the grid and estimator checks, the random split, end to end."""
from decimal import Decimal, getcontext

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline

from dperm import (
    BudgetAccountant,
    PrivacyLeakWarning,
    PrivateLinearClassifier,
    PrivateTuningResult,
    RandomFourierFeatures,
    private_tuning,
)
from dperm.data.validation import check_random_state
from dperm.privacy.tuning import exponential_mechanism, random_split

# seeded tuning runs; the grids hold small alphas on purpose, whose NoiseDominatedWarning is
# asserted in tests/sklearn/test_estimators.py
pytestmark = [
    pytest.mark.filterwarnings("ignore:random_state is a fixed seed"),
    pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning"),
]


def _exact_probabilities(z, eps, sensitivity=1.0):
    """exp(-eps z_i / (2 s)) / sum_k exp(-eps z_k / (2 s)) in 60-digit decimal arithmetic."""
    getcontext().prec = 60
    s2 = 2 * Decimal(repr(float(sensitivity)))
    w = [(-Decimal(repr(float(eps))) * Decimal(repr(float(zi))) / s2).exp()
         for zi in z]
    total = sum(w)
    return np.array([float(wi / total) for wi in w])


# ------------------------------------------------------------------ exponential mechanism
@pytest.mark.parametrize("z,eps", [
    ([0, 1, 2, 3], 1.0), ([5, 5, 5], 0.1), ([17, 3, 40, 3, 8], 0.7), ([0], 2.0),
    ([10.0, 12.5, 11.0], 3.0), (list(range(50)), 0.25),
])
def test_probabilities_match_direct_formula(z, eps):
    z = np.asarray(z, dtype=float)
    direct = np.exp(-eps * z / 2) / np.sum(np.exp(-eps * z / 2))
    _, q = exponential_mechanism(z, eps, random_state=0)
    np.testing.assert_allclose(q, direct, rtol=1e-13, atol=0)
    np.testing.assert_allclose(q, _exact_probabilities(z, eps), rtol=1e-13, atol=0)
    assert q.sum() == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("z,eps", [
    ([1e6, 1e6 + 1, 1e6 + 5, 2e6], 1.0),       # naive exp underflows to 0/0
    ([3000, 3001, 2999, 4000], 0.5),
    ([-1e6, -1e6 + 2, 0.0], 1.0),              # naive exp overflows
])
def test_probabilities_exact_where_naive_exp_fails(z, eps):
    z = np.asarray(z, dtype=float)
    with np.errstate(all="ignore"):
        naive = np.exp(-eps * z / 2) / np.sum(np.exp(-eps * z / 2))
    assert not np.all(np.isfinite(naive)) or np.any(naive != naive)
    _, q = exponential_mechanism(z, eps, random_state=0)
    exact = _exact_probabilities(z, eps)
    assert np.all(np.isfinite(q))
    np.testing.assert_allclose(q, exact, rtol=1e-12, atol=1e-300)


def test_sensitivity_scales_the_exponent():
    z = np.array([0.0, 2.0, 7.0])
    _, q = exponential_mechanism(z, 1.0, sensitivity=3.0, random_state=0)
    np.testing.assert_allclose(q, _exact_probabilities(z, 1.0, 3.0), rtol=1e-13)


def test_exponential_mechanism_input_checks():
    for bad in ([], [[1, 2]], [1.0, np.nan], [np.inf, 1.0], "abc"):
        with pytest.raises(ValueError, match="scores"):
            exponential_mechanism(bad, 1.0)
    for eps in (0, -1, np.nan, np.inf):
        with pytest.raises(ValueError, match="epsilon"):
            exponential_mechanism([1, 2], eps)
    with pytest.raises(ValueError, match="sensitivity"):
        exponential_mechanism([1, 2], 1.0, sensitivity=0)


def _draw_counts(z, eps, n_draws, seed, sensitivity=1.0):
    rng = np.random.default_rng(seed)
    counts = np.zeros(len(z), dtype=np.int64)
    for _ in range(n_draws):
        i, _ = exponential_mechanism(z, eps, sensitivity=sensitivity, random_state=rng)
        counts[i] += 1
    return counts


def test_selection_frequencies_chi_square_with_power_check():
    z = np.array([0, 1, 2, 3, 5, 8])
    eps = 1.0
    expected = np.exp(-eps * z / 2) / np.exp(-eps * z / 2).sum()   # computed independently
    n_draws = 20000
    counts = _draw_counts(z, eps, n_draws, seed=12345)
    p_ok = stats.chisquare(counts, expected * n_draws).pvalue
    assert p_ok > 1e-3, (counts, expected * n_draws, p_ok)
    # power: a mechanism with the wrong scaling exp(-eps z) (epsilon/2 -> epsilon) is rejected
    wrong = _draw_counts(z, eps, n_draws, seed=54321, sensitivity=0.5)
    p_wrong = stats.chisquare(wrong, expected * n_draws).pvalue
    assert p_wrong < 1e-10, p_wrong


def test_same_seed_same_choice():
    z = np.arange(10)
    a = [exponential_mechanism(z, 0.3, random_state=7)[0] for _ in range(3)]
    assert len(set(a)) == 1
    b = [exponential_mechanism(z, 0.3)[0] for _ in range(200)]
    assert len(set(b)) > 1  # None: fresh entropy every call


def test_theorem9_utility_bound_in_simulation():
    # Nearly worst case for the bound: one model at z_min, the m - 1 others just past
    # z_min + 2 log(m/delta)/eps.  The bound says P(z > z_min + 2 log(m/delta)/eps) <= delta;
    # here the true probability is about 0.045 for delta = 0.05.
    m, eps, delta = 20, 1.0, 0.05
    thr = 2 * np.log(m / delta) / eps                        # 11.98
    z = np.array([0] + [int(np.floor(thr)) + 1] * (m - 1))   # 0, then 12s
    n_draws = 20000
    counts = _draw_counts(z, eps, n_draws, seed=2024)
    bad = n_draws - counts[0]
    assert stats.binomtest(int(bad), n_draws, delta, alternative="greater").pvalue > 1e-3, bad / n_draws
    assert bad / n_draws > 0.03  # the case is nearly tight, so the check has teeth
    # power: halving the exponent (a wrong mechanism) breaks the bound and is detected
    wrong = 4000 - _draw_counts(z, eps, 4000, seed=99, sensitivity=2.0)[0]
    assert stats.binomtest(int(wrong), 4000, delta, alternative="greater").pvalue < 1e-10

    # random score vectors (exact probabilities, so no sampling error): the bound holds
    rng = np.random.default_rng(0)
    for _ in range(200):
        m = int(rng.integers(2, 30))
        eps = float(rng.choice([0.1, 0.5, 1.0, 2.0]))
        delta = float(rng.choice([0.01, 0.1, 0.3]))
        z = rng.integers(0, 200, size=m)
        _, q = exponential_mechanism(z, eps, random_state=0)
        assert q[z > z.min() + 2 * np.log(m / delta) / eps].sum() <= delta


# ------------------------------------------------------------------ the split
@pytest.mark.parametrize("n,k", [(10, 3), (100, 7), (101, 101), (5, 1), (1000, 9)])
def test_random_split_disjoint_covering_balanced(n, k):
    parts = random_split(n, k, random_state=3)
    assert len(parts) == k
    allidx = np.concatenate(parts)
    assert np.array_equal(np.sort(allidx), np.arange(n))          # disjoint and covering
    sizes = np.array([len(p) for p in parts])
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == n
    again = random_split(n, k, random_state=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))


def test_random_split_is_uniform():
    # each row lands in each part equally often over many splits
    n, k, reps = 12, 4, 3000
    rng = np.random.default_rng(1)
    hits = np.zeros((n, k))
    for _ in range(reps):
        for j, p in enumerate(random_split(n, k, rng)):
            hits[p, j] += 1
    assert stats.chisquare(hits.ravel(), np.full(n * k, reps / k)).pvalue > 1e-3


def test_random_split_checks():
    with pytest.raises(ValueError, match="n_parts"):
        random_split(3, 4)
    with pytest.raises(ValueError, match="n_parts"):
        random_split(3, 0)
    with pytest.raises(ValueError, match="n_samples"):
        random_split(2.5, 1)


# ------------------------------------------------------------------ private_tuning
def _linear_data(n, seed, d=5):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    X = rng.standard_normal((n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * 1.0
    X *= 0.9
    y = np.where(X @ w + 0.05 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def _clf(**kw):
    kw.setdefault("classes", [-1, 1])
    kw.setdefault("n_threads", 1)  # tiny problems: threads cost more than they save
    return PrivateLinearClassifier(**kw)


def _grid_fail(grid, exc, match="param_grid"):
    X, y = _linear_data(60, 0)
    with pytest.raises(exc, match=match):
        private_tuning(_clf(), X, y, grid, epsilon=1.0, random_state=0)


def test_grid_generator_refused():
    _grid_fail(({"alpha": a} for a in (1e-3, 1e-2)), TypeError)


def test_grid_iterator_refused():
    _grid_fail(iter([{"alpha": 1e-3}, {"alpha": 1e-2}]), TypeError)
    _grid_fail(map(lambda a: {"alpha": a}, [1e-3]), TypeError)


def test_grid_callable_refused():
    _grid_fail(lambda: [{"alpha": 1e-3}], TypeError)


@pytest.mark.parametrize("grid", [[], (), {"alpha": []}])
def test_grid_empty_refused(grid):
    _grid_fail(grid, ValueError)


@pytest.mark.parametrize("grid,exc", [
    ([1e-3, 1e-2], TypeError), ("alpha", TypeError), (np.array([1e-3]), TypeError),
    ({"alpha": (a for a in [1e-3])}, TypeError), ({"alpha": 1e-3}, TypeError),
    ([{"alpha": 1e-3}, {"epsilon": 5.0}], ValueError), ([{"perturbation": "none"}], ValueError),
    ([{"random_state": 1}], ValueError), ([{"no_such_param": 1}], ValueError),
    ([{1: 2}], TypeError),
])
def test_grid_bad_entries_refused(grid, exc):
    _grid_fail(grid, exc)


def test_grid_too_large_for_the_data():
    X, y = _linear_data(20, 0)
    with pytest.raises(ValueError, match="param_grid"):
        private_tuning(_clf(), X, y, {"alpha": list(np.logspace(-4, -1, 12))}, epsilon=1.0)


def test_estimator_must_be_private_with_public_classes():
    X, y = _linear_data(100, 0)
    grid = [{"alpha": 1e-2}]
    with pytest.raises(ValueError, match="perturbation"):
        private_tuning(_clf(perturbation="none"), X, y, grid, epsilon=1.0)
    with pytest.raises(ValueError, match="classes"):
        private_tuning(PrivateLinearClassifier(), X, y, grid, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        private_tuning(LogisticRegression(), X, y, [{"C": 1.0}], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        private_tuning(_clf(), X, y, grid, epsilon=0.0)
    with pytest.raises(ValueError, match="y"):
        private_tuning(_clf(classes=[0, 1]), X, y, grid, epsilon=1.0)
    with pytest.raises(TypeError, match="estimator"):
        private_tuning(object(), X, y, grid, epsilon=1.0)


def test_end_to_end_linear():
    n, eps, seed = 900, 1.0, 42
    X, y = _linear_data(n, 7)
    grid = {"alpha": [1e-3, 1e-2, 1e-1], "loss": ["logistic", "huber"]}
    est = _clf(random_state=123)          # the clones' seeds come from private_tuning
    res = private_tuning(est, X, y, grid, epsilon=eps, random_state=seed)
    assert isinstance(res, PrivateTuningResult)
    params = list(ParameterGrid(grid))
    m = len(params)
    assert res.params == params and res.n_candidates == m
    assert res.best_params_ in params and res.best_params_ == params[res.best_index_]
    assert res.best_estimator_ is res.estimators_[res.best_index_]
    assert res.best_estimator_.get_params()["alpha"] == res.best_params_["alpha"]
    assert res.best_estimator_.predict(X).shape == (n,)
    assert not hasattr(est, "coef_")                # the given estimator is left untouched
    mistakes = res.fit_diagnostics_["mistakes"]
    probabilities = res.fit_diagnostics_["probabilities"]
    assert res.epsilon == eps and mistakes.shape == (m,) and probabilities.shape == (m,)
    np.testing.assert_allclose(probabilities, _exact_probabilities(mistakes, eps), rtol=1e-12)
    # parts: equal sizes +-1, each model's constants from its own part (privacy_ n_samples)
    sizes = np.append(res.train_sizes, res.validation_size)
    assert sizes.sum() == n and sizes.max() - sizes.min() <= 1
    for e, size in zip(res.estimators_, res.train_sizes):
        assert e.privacy_["n_samples"] == size and e.privacy_["epsilon"] == eps
        assert e.privacy_["mechanism"] == "objective"
        assert e.random_state is None      # no seed or generator left in what is released
    # the split is the first draw of the generator: reproduce it and the mistake counts
    parts = random_split(n, m + 1, check_random_state(seed))
    assert [len(p) for p in parts[:-1]] == res.train_sizes.tolist()
    val = parts[-1]
    z = [np.count_nonzero(e.predict(X[val]) != y[val]) for e in res.estimators_]
    assert z == mistakes.tolist()
    # the data are nearly separable: the chosen model is decent
    assert np.mean(res.best_estimator_.predict(X) != y) < 0.3
    # reproducible with the same seed
    res2 = private_tuning(est, X, y, grid, epsilon=eps, random_state=seed)
    assert res2.best_index_ == res.best_index_
    np.testing.assert_array_equal(res2.best_estimator_.coef_, res.best_estimator_.coef_)


def test_unseeded_runs_draw_fresh_randomness():
    X, y = _linear_data(300, 1)
    est = _clf(random_state=5)
    coefs = []
    for _ in range(2):
        res = private_tuning(est, X, y, [{"alpha": 1e-2}], epsilon=1.0)
        assert res.best_estimator_.random_state is None   # the fixed seed is not shared
        coefs.append(res.best_estimator_.coef_.copy())
    assert not np.array_equal(coefs[0], coefs[1])


def test_pipeline_with_random_features():
    rng = np.random.default_rng(0)
    n = 900
    X = rng.uniform(-0.7, 0.7, size=(n, 2))
    y = np.where(np.linalg.norm(X, axis=1) > 0.45, 1, -1)
    pipe = Pipeline([("rff", RandomFourierFeatures(gamma=5.0, n_components=30)),
                     ("clf", _clf(perturbation="output"))])
    res = private_tuning(pipe, X, y, {"clf__alpha": [1e-2, 1e-1], "rff__gamma": [2.0, 5.0]},
                         epsilon=2.0, random_state=0)
    assert res.best_params_ in list(ParameterGrid({"clf__alpha": [1e-2, 1e-1], "rff__gamma": [2.0, 5.0]}))
    best = res.best_estimator_
    assert best.named_steps["clf"].privacy_["epsilon"] == 2.0
    assert best.named_steps["rff"].omega_.shape == (2, 30)
    assert best.named_steps["rff"].gamma == res.best_params_["rff__gamma"]


def test_accountant_charged_once():
    X, y = _linear_data(300, 2)
    acc = BudgetAccountant(1.0)
    res = private_tuning(_clf(accountant=acc), X, y, {"alpha": [1e-3, 1e-2, 1e-1]}, epsilon=0.6)
    assert acc.spent == pytest.approx(0.6) and len(acc.history) == 1
    assert all(e.accountant is None for e in res.estimators_)
    from dperm import BudgetExceededError

    with pytest.raises(BudgetExceededError):
        private_tuning(_clf(accountant=acc), X, y, {"alpha": [1e-3]}, epsilon=0.6)
    assert acc.spent == pytest.approx(0.6)
    with pytest.raises(ValueError, match="random_state: a fixed seed"):
        private_tuning(_clf(accountant=acc), X, y, {"alpha": [1e-3]}, epsilon=0.1, random_state=0)
    assert acc.spent == pytest.approx(0.6)


def test_estimator_without_classes_param_warns():
    # a private estimator whose label set cannot be checked
    class Bare(PrivateLinearClassifier):
        def __init__(self, epsilon=1.0, alpha=1e-2, random_state=None):
            super().__init__(epsilon=epsilon, alpha=alpha, random_state=random_state,
                             classes=[-1, 1])

        def get_params(self, deep=True):
            return {"epsilon": self.epsilon, "alpha": self.alpha, "random_state": self.random_state}

    X, y = _linear_data(120, 3)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        private_tuning(Bare(), X, y, [{"alpha": 1e-2}], epsilon=1.0, random_state=0)


def test_clone_of_result_estimator():
    X, y = _linear_data(120, 4)
    res = private_tuning(_clf(), X, y, ({"alpha": 1e-2}, {"alpha": 1e-1}), epsilon=1.0,
                         random_state=1)
    c = clone(res.best_estimator_)
    assert c.get_params()["alpha"] == res.best_params_["alpha"]


def test_parameter_grid_object_accepted():
    X, y = _linear_data(120, 5)
    grid = ParameterGrid([{"alpha": [1e-2, 1e-1]}, {"alpha": [1e-3], "loss": ["huber"]}])
    res = private_tuning(_clf(), X, y, grid, epsilon=1.0, random_state=2)
    assert res.params == list(grid) and res.n_candidates == 3


@pytest.mark.parametrize("perturbation", ["objective", "output", "amp"])
def test_gaussian_models_charge_epsilon_and_delta(perturbation):
    """(epsilon, delta) models: the procedure is (epsilon, max delta)-DP, recorded on the
    result and charged to the accountant as one (epsilon, delta) event."""
    from dperm import ApproxEvent, BudgetAccountant

    X, y = _linear_data(600, 3)
    acc = BudgetAccountant(epsilon=2.0, delta=1e-3)
    grid = [{"alpha": 1e-2, "delta": 1e-6}, {"alpha": 1e-1, "delta": 1e-5}]
    res = private_tuning(_clf(perturbation=perturbation, delta=1e-6, accountant=acc), X, y,
                         grid, epsilon=0.8)
    assert res.delta == 1e-5
    assert res.best_estimator_.privacy_["delta"] in (1e-6, 1e-5)
    assert [event for _, event in acc.history] == [ApproxEvent(0.8, 1e-5)]
    assert 0.7 < acc.spent <= 0.8      # the composed bound at the budget's delta
    # pure models stay pure
    acc2 = BudgetAccountant(epsilon=2.0)
    res2 = private_tuning(_clf(accountant=acc2), X, y, {"alpha": [1e-2, 1e-1]}, epsilon=0.8)
    assert res2.delta == 0.0 and acc2.spent_delta == 0.0


def test_gaussian_models_over_the_delta_budget_are_refused_before_any_fit():
    from dperm import BudgetAccountant
    from dperm.exceptions import BudgetExceededError

    X, y = _linear_data(300, 4)
    acc = BudgetAccountant(epsilon=2.0, delta=1e-7)
    with pytest.raises(BudgetExceededError):
        private_tuning(_clf(delta=1e-6, accountant=acc), X, y, {"alpha": [1e-2, 1e-1]},
                       epsilon=0.5)
    assert acc.spent == 0.0


def test_add_remove_models_are_refused():
    X, y = _linear_data(300, 5)
    with pytest.raises(ValueError, match="neighbouring.*replace_one"):
        private_tuning(_clf(delta=1e-6, neighbouring="add_remove", n_public=300), X, y,
                       {"alpha": [1e-2, 1e-1]}, epsilon=0.5)
    with pytest.raises(ValueError, match="neighbouring"):
        private_tuning(_clf(delta=1e-6), X, y,
                       [{"alpha": 1e-2}, {"alpha": 1e-1, "neighbouring": "add_remove"}],
                       epsilon=0.5)
