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
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone

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


# ------------------------------------------------------------------ alpha="select"
class ToyRegressor(RegressorMixin, BaseEstimator):
    """A stand-in private regressor predicting the constant `alpha`, with the public label
    interval [centre - bound, centre + bound] in its record."""

    def __init__(self, epsilon=1.0, alpha=1.0, random_state=None, bound=1.0, centre=0.0):
        self.epsilon = epsilon
        self.alpha = alpha
        self.random_state = random_state
        self.bound = bound
        self.centre = centre

    def fit(self, X, y):
        self.privacy_ = {"label_bound": self.bound, "label_centre": self.centre}
        return self

    def predict(self, X):
        return np.full(len(X), float(self.alpha))


def _neighbours_regression(y, B, c):
    """Every neighbour of y (replace, add, remove one value) with values at the edges
    and far outside [c - B, c + B]."""
    extremes = [c - B, c + B, c - 100 * B, c + 100 * B, c]
    out = [np.delete(y, i) for i in range(len(y))]
    out += [np.append(y, v) for v in extremes]
    out += [np.concatenate([y[:i], [v], y[i + 1:]]) for i in range(len(y)) for v in extremes]
    return out


def _largest_change(score, model, y, B, c):
    base = score(model, np.zeros((len(y), 1)), y)[0]
    return max(abs(score(model, np.zeros((len(z), 1)), z)[0] - base)
               for z in _neighbours_regression(y, B, c))


@pytest.mark.parametrize("pred", [-50.0, 2.0, 3.0, 60.0])
def test_regression_score_sensitivity_is_exact(pred):
    """White-box: over every neighbour (replace, add, remove; values at the interval's
    edges and far beyond it) the clipped absolute error moves by at most the sensitivity
    it declares, 2 B, with equality for a prediction at an edge (so 2 B cannot be
    lowered); the Laplace noise of scale 2 B / eps_score then gives a log density ratio
    <= eps_score.  A deliberately broken scorer (y not clipped) fails the same check."""
    B, c = 1.5, 2.0
    y = np.array([0.0, 2.5, 3.4, -9.0, 12.0, 2.0])
    model = ToyRegressor(alpha=pred, bound=B, centre=c).fit(None, None)
    sens = S._score(model, np.zeros((len(y), 1)), y)[1]
    assert sens == 2 * B
    change = _largest_change(S._score, model, y, B, c)
    assert change <= sens + 1e-12
    if pred <= c - B or pred >= c + B:
        assert change == pytest.approx(sens)
    eps_score = 0.3
    assert change / (sens / eps_score) <= eps_score + 1e-12

    def broken(est, X, yy):         # the raw label: one row moves the score without bound
        p = np.clip(est.predict(X), c - B, c + B)
        return float(np.sum(np.abs(p - yy))), 2 * B
    assert _largest_change(broken, model, y, B, c) > 2 * B


def test_regression_score_noise_is_laplace_of_the_documented_scale():
    """Black-box: the regression scores minus the exact clipped error are Laplace of scale
    2 B x 2 / (f epsilon); a KS test with power against half that scale."""
    B = 2.0
    X = np.zeros((30, 1))
    y = np.linspace(-1, 1, 30)
    exact = S._score(ToyRegressor(alpha=0.5, bound=B).fit(X, y), X, y)[0]
    noise = []
    rng = np.random.default_rng(5)
    while len(noise) < 3000:
        r = _select(ToyRegressor(bound=B), X, y, 1.5, alphas=[0.5], expected_runs=5,
                    random_state=rng)
        noise += [s - exact for _, s in r.fit_diagnostics_["runs"]]
    scale = 2 * B * 2.0 / (0.1 * 1.5)
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(noise, stats.laplace(scale=scale / 2).cdf).pvalue < 1e-6


def _lin(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) / 4
    s = X @ np.array([1.0, -1.0, 0.5, 0.0])
    return X, np.where(s + 0.1 * rng.normal(size=n) > 0, 1, -1), 3.0 + s


@pytest.mark.parametrize("regression", [False, True])
def test_alpha_select_on_the_estimators(regression):
    """alpha="select" (the rule: SELECT_REFIT_SHARE = 0.1): the accountant is charged
    the selection's 0.1 epsilon and the refit's 0.9 epsilon (checked before any data are
    read: a refused fit spends nothing), the released model is the refit (epsilon 0.9,
    epsilon_total the total), its Lambda auto's at 0.9 epsilon x one of SELECT_FACTORS,
    and the estimator keeps alpha="select"."""
    assert S.SELECT_REFIT_SHARE == 0.1
    from dperm import PrivateLinearRegression

    X, yc, yr = _lin()
    acc = BudgetAccountant(1.5)
    if regression:
        est = PrivateLinearRegression(epsilon=1.0, alpha="select", label_bounds=(1.0, 5.0),
                                      accountant=acc)
        y = yr
    else:
        est = PrivateLinearClassifier(epsilon=1.0, alpha="select", classes=[-1, 1],
                                      accountant=acc)
        y = yc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
        auto = clone(est).set_params(alpha="auto", epsilon=0.9, accountant=None).fit(X, y)
    assert acc.spent == pytest.approx(1.0) and len(acc.history) == 2
    assert acc.history[0][1].epsilon == pytest.approx(0.1)
    assert est.alpha == "select"
    assert est.privacy_["epsilon"] == pytest.approx(0.9)
    assert est.privacy_["epsilon_total"] == pytest.approx(1.0)
    assert est.privacy_["alpha"] == est.alpha_
    assert any(est.alpha_ == pytest.approx(auto.alpha_ * f) for f in S.SELECT_FACTORS)
    score = est.score(X, y)
    assert score > (0.8 if not regression else 0.5)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert acc.spent == pytest.approx(1.0)


def test_alpha_select_refuses_what_it_cannot_cover():
    from dperm import PrivateLinearRegression

    X, yc, yr = _lin(n=200)
    with pytest.raises(ValueError, match="delta=0"):
        PrivateLinearClassifier(alpha="select", delta=1e-6, classes=[-1, 1]).fit(X, yc)
    with pytest.raises(ValueError, match="perturbation='none'"):
        PrivateLinearClassifier(alpha="select", perturbation="none", classes=[-1, 1]).fit(X, yc)
    with pytest.raises(ValueError, match="classes"):
        PrivateLinearClassifier(alpha="select").fit(X, yc)
    with pytest.raises(ValueError, match="random_state"):
        PrivateLinearClassifier(alpha="select", classes=[-1, 1], random_state=0,
                                accountant=BudgetAccountant(5.0)).fit(X, yc)
    with pytest.raises(ValueError, match="'auto' or 'select'"):
        PrivateLinearRegression(alpha="best", label_bound=5.0).fit(X, yr)


def test_alpha_select_refit_share():
    """The variant with a refit (SELECT_REFIT_SHARE = s): selection s epsilon, the chosen
    factor refitted at (1 - s) epsilon; two events summing to epsilon."""
    X, yc, _ = _lin()
    acc = BudgetAccountant(1.0)
    old = S.SELECT_REFIT_SHARE
    S.SELECT_REFIT_SHARE = 0.25
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = PrivateLinearClassifier(epsilon=1.0, alpha="select", classes=[-1, 1],
                                          accountant=acc).fit(X, yc)
    finally:
        S.SELECT_REFIT_SHARE = old
    assert acc.spent == pytest.approx(1.0) and len(acc.history) == 2
    assert acc.history[0][1].epsilon == pytest.approx(0.25)
    assert est.privacy_["epsilon"] == pytest.approx(0.75)
    assert est.privacy_["epsilon_total"] == pytest.approx(1.0)


def test_alpha_select_refit_leaves_no_attribute_of_an_earlier_fit():
    import pandas as pd

    X, yc, _ = _lin(n=600)
    est = PrivateLinearClassifier(epsilon=1.0, alpha="select", classes=[-1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(pd.DataFrame(X, columns=list("abcd")), yc)
        assert list(est.feature_names_in_) == list("abcd")
        est.fit(X, yc)
    assert not hasattr(est, "feature_names_in_")
    assert est.n_features_in_ == 4 and est.alpha == "select"


# ------------------------------------------------------------------ auto's Lambda, planned
def _auto_cases():
    from dperm import PrivateLinearRegression

    C, R = PrivateLinearClassifier, PrivateLinearRegression
    return [
        (C(epsilon=0.3, classes=[-1, 1]), "binary"),
        (C(epsilon=0.3, perturbation="output", classes=[-1, 1], data_norm=2.0), "binary"),
        (C(epsilon=2.0, classes=[0, 1, 2], loss="huber", h=0.2), "ovr"),
        (C(epsilon=2.0, delta=1e-5, classes=[0, 1, 2]), "ovr"),            # multinomial
        (C(epsilon=1.0, delta=1e-5, perturbation="amp", classes=[-1, 1]), "binary"),
        (C(epsilon=0.5, neighbouring="add_remove", classes=[-1, 1]), "binary"),
        (C(epsilon=0.5, neighbouring="add_remove", n_public=5000, classes=[-1, 1],
           fit_intercept=False), "binary"),
        (C(epsilon=0.5, n_public=4000, classes=[-1, 1]), "binary"),
        (R(epsilon=0.7, label_bounds=(1.0, 5.0)), "regression"),
        (R(epsilon=0.7, method="output", label_bound=4.0, h=0.5), "regression"),
        (R(epsilon=0.7, delta=1e-5, label_bound=4.0, n_public=3500), "regression"),
        (R(epsilon=0.7, neighbouring="add_remove", label_bound=4.0,
           fit_intercept=False), "regression"),
    ]


@pytest.mark.parametrize("i", range(len(_auto_cases())))
def test_auto_alpha_is_the_fits_lambda_without_a_fit(i):
    """The estimators' ``_auto_alpha(epsilon, n_rows, n_features)`` is the ``alpha_`` of an
    alpha="auto" fit at that epsilon (binary, one-vs-rest, multinomial, regression; pure
    and Gaussian; replace_one and add_remove; with and without n_public and the
    intercept), computed from the shape alone: the data never enter."""
    est, task = _auto_cases()[i]
    X, yc, yr = _lin(n=3000, seed=2)
    y = {"binary": yc, "regression": yr,
         "ovr": np.digitize(X @ np.array([1.0, -1.0, 0.5, 0.0]), [-0.1, 0.1])}[task]
    est.set_params(alpha=0.123, random_state=0)         # alpha and the seed are not read
    planned = est._auto_alpha(est.epsilon / 2, 3000, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = clone(est).set_params(alpha="auto", epsilon=est.epsilon / 2).fit(X, y).alpha_
    assert planned == fitted
    assert est.alpha == 0.123 and not hasattr(est, "alpha_")
    # the count is the public one: n_public when given, the rows' count otherwise
    other = est._auto_alpha(est.epsilon / 2, 7000, 4)
    assert (other == planned) == (est.n_public is not None)


def test_auto_alpha_needs_the_public_label_set_and_a_lambda():
    from dperm import PrivateLinearRegression

    with pytest.raises(ValueError, match="classes"):
        PrivateLinearClassifier()._auto_alpha(1.0, 100, 3)
    with pytest.raises(ValueError, match="AdaSSP"):
        PrivateLinearRegression(method="adassp", delta=1e-5)._auto_alpha(1.0, 100, 3)
    with pytest.raises(ValueError, match="data_norm"):
        PrivateLinearClassifier(classes=[0, 1], data_norm=-1.0)._auto_alpha(1.0, 100, 3)


@pytest.mark.parametrize("regression", [False, True])
def test_alpha_select_fits_only_the_runs_and_the_released_model(regression, monkeypatch):
    """No throw-away fit: one alpha="select" fit calls the mechanism (``_fit_private``)
    once per selection run and once for the released model, nothing else."""
    from dperm import PrivateLinearRegression

    X, yc, yr = _lin(n=800)
    cls = PrivateLinearRegression if regression else PrivateLinearClassifier
    calls, runs = [], []
    fit_private, select = cls._fit_private, S.select_alpha

    def counted(self, *args, **kwargs):
        calls.append(self.alpha)
        return fit_private(self, *args, **kwargs)

    def recorded(*args, **kwargs):
        res = select(*args, **kwargs)
        runs.append(res.n_runs)
        return res

    monkeypatch.setattr(cls, "_fit_private", counted)
    monkeypatch.setattr(S, "select_alpha", recorded)
    est = (PrivateLinearRegression(epsilon=2.0, alpha="select", label_bounds=(1.0, 5.0))
           if regression else
           PrivateLinearClassifier(epsilon=2.0, alpha="select", classes=[-1, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, yr if regression else yc)
    assert len(runs) == 1 and runs[0] >= 1
    assert len(calls) == runs[0] + 1
    assert calls[-1] == est.alpha_                # the last one is the released model
    assert all(not isinstance(a, str) for a in calls)   # no alpha="auto" fit among them


def test_alpha_select_refuses_fit_params_before_spending():
    X, yc, _ = _lin(n=300)
    acc = BudgetAccountant(5.0)
    est = PrivateLinearClassifier(epsilon=1.0, alpha="select", classes=[-1, 1], accountant=acc)
    with pytest.raises(TypeError, match="sample_weight"):
        est.fit(X, yc, sample_weight=np.ones(len(yc)))
    assert acc.spent == 0 and not acc.history
