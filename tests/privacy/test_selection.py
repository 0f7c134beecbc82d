"""Lambda selection with every candidate on all rows (dperm/privacy/selection.py).

The guarantee: the best of K runs, each epsilon_run-DP, is 2 epsilon_run-DP for K
logarithmic (Papernot & Steinke 2022, Theorem 2, eta = 0) and 3 epsilon_run-DP for K
geometric (Liu & Talwar 2019, Theorem 3.4).  What the code must get right, each checked
here so that a mutant fails: every fit gets (1 - f) epsilon / 2 (/ 3), every score Laplace
noise of scale 2 / (f epsilon) (3 / ...) on a count of mistakes, the number of runs has
the stated law and mean and with the candidates tried does not read the data, the
accountant is charged epsilon once, and nothing is spent on a refusal.
"""
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin

from dperm import BudgetAccountant, BudgetExceededError, PrivacyLeakWarning, PrivateLinearClassifier
from dperm.privacy import selection as S


class Toy(ClassifierMixin, BaseEstimator):
    """A stand-in private estimator: predicts the constant class `alpha > 1`; records the
    epsilon of every fit (class attribute, cleared by each test)."""

    fits: list = []

    def __init__(self, epsilon=1.0, alpha=1.0, random_state=None, classes=(-1, 1)):
        self.epsilon = epsilon
        self.alpha = alpha
        self.random_state = random_state
        self.classes = classes

    def fit(self, X, y):
        Toy.fits.append(self.epsilon)
        self.classes_ = np.asarray(self.classes)
        return self

    def predict(self, X):
        return np.full(len(X), 1 if self.alpha > 1 else -1)


def _data(n=40, positives=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(np.arange(n) < positives, 1, -1)
    return X, y


def _select(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return S.select_alpha(*args, **kwargs)


@pytest.mark.parametrize("runs, factor", [("logarithmic", 2), ("geometric", 3)])
def test_every_fit_gets_its_share_and_the_accountant_the_total(runs, factor):
    Toy.fits = []
    X, y = _data()
    acc = BudgetAccountant(2.0)
    r = S.select_alpha(Toy(), X, y, 0.6, alphas=[0.5, 2.0], runs=runs, expected_runs=4,
                       accountant=acc)
    assert len(Toy.fits) == r.n_runs >= 1 and r.runs == runs
    assert all(e == pytest.approx(0.9 * 0.6 / factor) for e in Toy.fits)
    assert r.epsilon_model == pytest.approx(0.54 / factor)
    assert r.epsilon_score == pytest.approx(0.06 / factor)
    assert acc.spent == pytest.approx(0.6) and len(acc.history) == 1
    assert r.best_alpha_ in (0.5, 2.0) and r.best_estimator_.alpha == r.best_alpha_
    assert r.best_estimator_.random_state is None          # no generator left behind
    with pytest.raises(BudgetExceededError):
        S.select_alpha(Toy(), X, y, 1.5, alphas=[1.0], accountant=acc)
    assert acc.spent == pytest.approx(0.6)


@pytest.mark.parametrize("runs", ["logarithmic", "geometric"])
def test_runs_and_candidates_do_not_read_the_data(runs):
    """Seeded: two different data sets try the same Lambdas in the same number of runs
    (the stopping coin and the candidate draws come from the parent generator, the fits
    from spawned children)."""
    X1, y1 = _data(positives=5)
    X2, y2 = _data(n=60, positives=50, seed=3)
    for seed in range(5):
        r1 = _select(Toy(), X1, y1, 1.0, alphas=[0.5, 2.0, 3.0], runs=runs, random_state=seed)
        r2 = _select(Toy(), X2, y2, 1.0, alphas=[0.5, 2.0, 3.0], runs=runs, random_state=seed)
        assert r1.n_runs == r2.n_runs
        assert [a for a, _ in r1.fit_diagnostics_["runs"]] == \
            [a for a, _ in r2.fit_diagnostics_["runs"]]


@pytest.mark.parametrize("runs", ["logarithmic", "geometric"])
def test_number_of_runs_has_its_law_and_mean(runs):
    X, y = _data()
    rng = np.random.default_rng(1)
    k = np.array([_select(Toy(), X, y, 1.0, alphas=[2.0], runs=runs, expected_runs=3,
                          random_state=rng).n_runs for _ in range(600)])
    assert k.mean() == pytest.approx(3.0, abs=0.35) and k.min() == 1
    # P(K = 1): gamma = 1/3 for the geometric; (1 - gamma) / log(1 / gamma) for the
    # logarithmic, with gamma = 0.149 (E K = 3)
    p1 = 1 / 3 if runs == "geometric" else (1 - 0.149) / np.log(1 / 0.149)
    assert np.mean(k == 1) == pytest.approx(p1, abs=0.06)
    assert S._logarithmic_gamma(3.0) == pytest.approx(0.149, abs=1e-3)
    assert _select(Toy(), X, y, 1.0, alphas=[2.0], expected_runs=1, random_state=0).n_runs == 1


def test_score_noise_is_laplace_of_the_documented_scale():
    """Scores minus the exact mistakes are Laplace(2 / (f epsilon)): a KS test with power
    against a noise scale off by a factor 2 (e.g. epsilon not divided by 2 or f changed)."""
    X, y = _data(n=40, positives=10)            # alpha 2 predicts 1: 30 mistakes
    noise = []
    rng = np.random.default_rng(2)
    while len(noise) < 3000:
        r = _select(Toy(), X, y, 1.5, alphas=[2.0], expected_runs=5, random_state=rng)
        noise += [s - 30 for _, s in r.fit_diagnostics_["runs"]]
    scale = 2.0 / (0.1 * 1.5)
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(noise, stats.laplace(scale=scale / 2).cdf).pvalue < 1e-6


def test_the_lowest_noisy_score_is_released():
    X, y = _data(n=400, positives=380)          # alpha > 1 predicts the majority
    r = _select(Toy(), X, y, 30.0, alphas=[0.5, 2.0], expected_runs=20, random_state=4)
    runs = r.fit_diagnostics_["runs"]
    assert r.best_alpha_ == min(runs, key=lambda t: t[1])[0] == 2.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(alphas=[]), "alphas"),
    (dict(alphas=[0.0]), "alphas"),
    (dict(alphas="auto"), "alphas"),
    (dict(alphas=[1.0], expected_runs=0.5), "expected_runs"),
    (dict(alphas=[1.0], score_fraction=1.0), "score_fraction"),
    (dict(alphas=[1.0], runs="poisson"), "runs"),
])
def test_bad_parameters_name_the_parameter(kwargs, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        S.select_alpha(Toy(), X, y, 1.0, **kwargs)


def test_refuses_what_the_guarantee_does_not_cover():
    X, y = _data()
    with pytest.raises(ValueError, match="classes"):
        S.select_alpha(PrivateLinearClassifier(epsilon=1.0), X, y, 1.0, alphas=[1e-3])
    with pytest.raises(ValueError, match="delta"):
        S.select_alpha(PrivateLinearClassifier(epsilon=1.0, delta=1e-6, classes=[-1, 1]), X, y,
                       1.0, alphas=[1e-3])
    with pytest.raises(ValueError, match="random_state"):
        S.select_alpha(Toy(), X, y, 1.0, alphas=[1.0], accountant=BudgetAccountant(1.0),
                       random_state=0)


def test_with_the_real_classifier():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5)) / 5
    y = np.where(X @ np.ones(5) + 0.1 * rng.normal(size=2000) > 0, 1, -1)
    r = _select(PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1]), X, y, 3.0,
                alphas=S.alpha_grid(1e-2), expected_runs=3, random_state=1)
    assert r.best_alpha_ in S.alpha_grid(1e-2)
    assert r.best_estimator_.epsilon == pytest.approx(0.9 * 3.0 / 2)
    assert np.mean(r.best_estimator_.predict(X) == y) > 0.8
