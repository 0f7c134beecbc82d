"""BudgetAccountant: sequential composition of epsilon across fits."""
import copy
import pickle
import threading

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import dperm
from dperm import BudgetAccountant, BudgetExceededError


def make_data(n=100, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (X[:, 0] > 0).astype(int)
    return X, y


def PLC(**kwargs):
    kwargs.setdefault("classes", [0, 1])
    kwargs.setdefault("n_threads", 1)
    return dperm.PrivateLinearClassifier(**kwargs)


def test_records_each_fit():
    X, y = make_data()
    acc = BudgetAccountant(2.0)
    assert acc.spent == 0 and acc.remaining == 2.0 and acc.history == []
    PLC(epsilon=0.5, accountant=acc).fit(X, y)
    PLC(epsilon=0.25, perturbation="output", accountant=acc).fit(X, y)
    assert acc.spent == pytest.approx(0.75)
    assert acc.remaining == pytest.approx(1.25)
    assert [eps for _, eps in acc.history] == [0.5, 0.25]
    assert all(isinstance(label, str) for label, _ in acc.history)
    assert "spent=0.75" in repr(acc)


def test_direct_spend_and_check():
    acc = BudgetAccountant(1.0)
    acc.spend(0.4, label="a")
    assert acc.check(0.6) == 0.6
    with pytest.raises(BudgetExceededError, match="exceed"):
        acc.check(0.61)
    with pytest.raises(BudgetExceededError):
        acc.spend(0.7)
    assert acc.spent == pytest.approx(0.4) and acc.history == [("a", 0.4)]


def test_refuses_before_a_fit_that_would_exceed(monkeypatch):
    X, y = make_data()
    acc = BudgetAccountant(1.0)
    est = PLC(epsilon=0.6, accountant=acc).fit(X, y)
    coef, intercept, privacy = est.coef_, est.intercept_, est.privacy_
    coef_values = coef.copy()

    # the refusal comes before the data is touched: no mechanism may run
    def must_not_run(*args, **kwargs):
        raise AssertionError("a mechanism ran although the budget was exceeded")

    import dperm.estimators as est_mod

    monkeypatch.setattr(est_mod, "objective_perturbation", must_not_run)
    monkeypatch.setattr(est_mod, "output_perturbation", must_not_run)
    monkeypatch.setattr(est_mod.erm, "minimize", must_not_run)
    with pytest.raises(BudgetExceededError, match="exceed the budget"):
        est.fit(X, y)
    with pytest.raises(BudgetExceededError):
        est.set_params(perturbation="output").fit(X, y)
    # nothing spent, estimator unchanged
    assert acc.spent == pytest.approx(0.6) and len(acc.history) == 1
    assert est.coef_ is coef and est.intercept_ is intercept and est.privacy_ is privacy
    np.testing.assert_array_equal(est.coef_, coef_values)
    # a fit that does fit in what is left still works
    monkeypatch.undo()
    est.set_params(epsilon=0.4).fit(X, y)
    assert acc.spent == pytest.approx(1.0)
    assert acc.remaining == pytest.approx(0.0, abs=1e-12)


def test_ten_fits_of_a_tenth():
    X, y = make_data()
    acc = BudgetAccountant(1.0)
    est = PLC(epsilon=0.1, accountant=acc)
    for _ in range(10):
        est.fit(X, y)
    assert len(acc.history) == 10
    assert acc.spent == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert len(acc.history) == 10


def test_failed_fit_spends_nothing():
    X, y = make_data()
    acc = BudgetAccountant(1.0)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="^X"):
        PLC(epsilon=0.5, accountant=acc).fit(Xn, y)
    with pytest.raises(ValueError, match="^y"):
        PLC(epsilon=0.5, accountant=acc).fit(X, y + 5)
    with pytest.raises(ValueError, match="^epsilon"):
        PLC(epsilon=-0.5, accountant=acc).fit(X, y)
    assert acc.spent == 0 and acc.history == []


def test_non_private_fit_cannot_be_charged():
    X, y = make_data()
    acc = BudgetAccountant(1.0)
    with pytest.raises(BudgetExceededError, match="perturbation='none'"):
        PLC(perturbation="none", accountant=acc).fit(X, y)
    assert acc.spent == 0 and acc.history == []
    # without an accountant the baseline fits
    PLC(perturbation="none").fit(X, y)


@pytest.mark.parametrize("epsilon", [0, 0.0, -1.0, np.nan, np.inf, -np.inf, "1", None, True])
def test_bad_budget(epsilon):
    with pytest.raises(ValueError, match="^epsilon"):
        BudgetAccountant(epsilon)


@pytest.mark.parametrize("epsilon", [0.0, -0.1, np.nan, np.inf])
def test_bad_spend(epsilon):
    acc = BudgetAccountant(1.0)
    with pytest.raises(ValueError, match="^epsilon"):
        acc.spend(epsilon)
    with pytest.raises(ValueError, match="^epsilon"):
        acc.check(epsilon)
    assert acc.spent == 0


def test_accountant_is_shared_not_copied():
    """clone() deep-copies parameters; a copied ledger would let each clone spend the
    whole budget again."""
    acc = BudgetAccountant(1.0)
    assert copy.copy(acc) is acc and copy.deepcopy(acc) is acc
    est = PLC(epsilon=0.3, accountant=acc)
    assert clone(est).accountant is acc
    X, y = make_data()
    clone(est).fit(X, y)
    assert acc.spent == pytest.approx(0.3)


def test_grid_search_spends_every_fit():
    X, y = make_data(n=120)
    acc = BudgetAccountant(10.0)
    gs = GridSearchCV(PLC(epsilon=0.5, accountant=acc),
                      {"alpha": [1e-2, 1e-1]}, cv=3)
    gs.fit(X, y)
    assert len(acc.history) == 2 * 3 + 1  # every fold of every candidate, plus the refit
    assert acc.spent == pytest.approx(3.5)
    # a search the budget cannot pay for stops
    small = BudgetAccountant(1.0)
    gs = GridSearchCV(PLC(epsilon=0.5, accountant=small),
                      {"alpha": [1e-2, 1e-1]}, cv=3, error_score="raise")
    with pytest.raises(BudgetExceededError):
        gs.fit(X, y)
    assert small.spent <= 1.0 + 1e-12


def test_pickle_roundtrip():
    acc = BudgetAccountant(1.0)
    acc.spend(0.25, label="x")
    acc2 = pickle.loads(pickle.dumps(acc))
    assert acc2 is not acc
    assert acc2.epsilon == 1.0 and acc2.spent == 0.25 and acc2.history == [("x", 0.25)]
    acc2.spend(0.75)
    with pytest.raises(BudgetExceededError):
        acc2.spend(0.01)


def test_concurrent_spending_never_overspends():
    acc = BudgetAccountant(1.0)
    refused = []

    def worker():
        for _ in range(50):
            try:
                acc.spend(0.01)
            except BudgetExceededError:
                refused.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(acc.history) == 100 and len(refused) == 300
    assert acc.spent == pytest.approx(1.0)
