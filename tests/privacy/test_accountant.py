"""BudgetAccountant: sequential composition of epsilon across fits."""
import copy
import math
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import dperm
from dperm import BudgetAccountant, BudgetExceededError
from dperm.privacy.accountant import (
    RDP_ORDERS,
    ApproxEvent,
    GaussianEvent,
    ObjectiveGaussianEvent,
    PureEvent,
    compose,
)

# small budgets per fit on purpose (the warning is asserted in tests/sklearn/test_estimators.py)
pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning")]


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
    coef, intercept, privacy = est.coef_, est.intercept_, est.release_record_
    coef_values = coef.copy()

    # the refusal comes before the data is touched: no mechanism may run
    def must_not_run(*args, **kwargs):
        raise AssertionError("a mechanism ran although the budget was exceeded")

    import dperm.sklearn.classifier as est_mod

    # (the mechanisms and the solver as the estimator calls them: its parameters were
    # checked in fit, so it calls their unchecked forms)
    monkeypatch.setattr(est_mod, "_objective", must_not_run)
    monkeypatch.setattr(est_mod, "_output", must_not_run)
    monkeypatch.setattr(est_mod.erm, "_minimize", must_not_run)
    with pytest.raises(BudgetExceededError, match="exceed the budget"):
        est.fit(X, y)
    with pytest.raises(BudgetExceededError):
        est.set_params(perturbation="output").fit(X, y)
    # nothing spent, estimator unchanged
    assert acc.spent == pytest.approx(0.6) and len(acc.history) == 1
    assert est.coef_ is coef and est.intercept_ is intercept and est.release_record_ is privacy
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


# ---------------------------------------------------------------------------------------
# (epsilon, delta) budgets: privacy events composed by basic composition, RDP and PLD
# ---------------------------------------------------------------------------------------


def gauss_eps(noise_multiplier, delta):
    """The exact epsilon of a Gaussian mechanism (analytic Gaussian, Balle & Wang 2018)."""
    import dp_accounting
    return dp_accounting.get_epsilon_gaussian(noise_multiplier, delta)


def gaussian(nm, delta=1e-6):
    """A Gaussian event stating its own exact guarantee (slightly rounded up)."""
    return GaussianEvent(nm, gauss_eps(nm, delta) * (1 + 1e-9) + 1e-12, delta)


def dp_accounting_rdp_eps(nms, delta):
    """dp_accounting's own RdpAccountant on the same orders, one GaussianDpEvent each."""
    import dp_accounting
    acc = dp_accounting.rdp.RdpAccountant(orders=list(RDP_ORDERS))
    for nm in nms:
        acc.compose(dp_accounting.GaussianDpEvent(nm))
    return acc.get_epsilon(delta)


def rdp_to_dp_by_hand(rdp, delta):
    """The RDP -> (epsilon, delta) conversion of Canonne, Kamath & Steinke 2020
    (Prop. 12 of arXiv:2004.00010 v4), written out independently of dp_accounting."""
    a = np.asarray(RDP_ORDERS)
    eps = rdp + np.log1p(-1 / a) - np.log(delta * a) / (a - 1)
    return max(0.0, float(np.min(eps)))


def test_rdp_orders_are_dp_accountings_defaults():
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS
    assert RDP_ORDERS == tuple(float(a) for a in DEFAULT_RDP_ORDERS)
    assert BudgetAccountant.RDP_ORDERS is RDP_ORDERS


def test_import_dperm_does_not_import_dp_accounting():
    code = "import sys, dperm; assert 'dp_accounting' not in sys.modules"
    # run in tests/: in the checkout's root `import dperm` would find the source tree
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=os.path.dirname(os.path.abspath(__file__)))


def test_pure_events_sum_exactly_even_with_a_delta_budget():
    acc = BudgetAccountant(1.0, delta=1e-5)
    steps = [0.1, PureEvent(0.2), 0.3, PureEvent(0.15)]
    expected = 0.0
    for s in steps:
        acc.spend(s, label=repr(s))
        expected += s if isinstance(s, float) else s.epsilon
        assert acc.spent == expected          # exactly, the old left-to-right sum
        assert acc.spent_epsilon_delta() == (expected, 0.0)
    assert acc.composition.method == "pure"
    # a float is recorded as the float, an event as the event
    assert [ev for _, ev in acc.history] == steps
    assert acc.check(0.25) == 0.25 and isinstance(acc.check(0.25), float)
    assert acc.check(PureEvent(0.25)) == PureEvent(0.25)
    with pytest.raises(BudgetExceededError, match="exceed the budget"):
        acc.check(PureEvent(0.26))
    assert compose([0.5, 0.25], 0.0).epsilon == 0.75


def test_a_delta_free_budget_refuses_approximate_events():
    acc = BudgetAccountant(10.0)
    assert acc.delta == 0.0
    for event in (gaussian(2.0), ApproxEvent(0.1, 1e-9),
                  ObjectiveGaussianEvent(1.0, 1e-6, RDP_ORDERS, [0.01] * len(RDP_ORDERS))):
        with pytest.raises(BudgetExceededError, match="delta=0"):
            acc.spend(event)
    assert acc.spent == 0 and acc.spent_delta == 0 and acc.history == []
    # ApproxEvent with delta = 0 is pure epsilon-DP and fits
    acc.spend(ApproxEvent(0.5, 0.0))
    assert acc.spent_epsilon_delta() == (0.5, 0.0)


@pytest.mark.parametrize("nm", [0.7, 2.0, 6.0])
@pytest.mark.parametrize("k", [1, 3, 10])
def test_gaussian_rdp_total_is_dp_accountings(nm, k):
    delta = 1e-5
    events = [gaussian(nm)] * k
    comp = compose(events, delta)
    rdp_eps, rdp_delta = comp.candidates["rdp"]
    assert rdp_delta == delta
    # the same numbers as dp_accounting's RdpAccountant on k GaussianDpEvents ...
    assert rdp_eps == pytest.approx(dp_accounting_rdp_eps([nm] * k, delta), rel=1e-12)
    # ... and as the conversion written out by hand from the curve k alpha / (2 nm^2)
    curve = k * np.asarray(RDP_ORDERS) / (2 * nm ** 2)
    assert rdp_eps == pytest.approx(rdp_to_dp_by_hand(curve, delta), rel=1e-12)
    # Gaussian events only: the exact composition, one Gaussian of nm / sqrt(k);
    # dp_accounting's PLD accountant agrees
    import dp_accounting
    exact = gauss_eps(nm / math.sqrt(k), delta)
    pld = dp_accounting.pld.PLDAccountant()
    pld.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(nm), k))
    assert comp.method == "gaussian"
    assert comp.epsilon == pytest.approx(exact, rel=1e-8) and comp.epsilon >= exact
    assert comp.epsilon == pytest.approx(pld.get_epsilon(delta), rel=1e-3)
    assert comp.epsilon <= rdp_eps
    # the ledger reports that total
    acc = BudgetAccountant(1e3, delta=delta)
    for e in events:
        acc.spend(e)
    assert acc.spent_epsilon_delta() == (comp.epsilon, delta)


def test_gaussian_curve_is_dp_accountings():
    rdp_mod = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    ref = getattr(rdp_mod, "_compute_rdp_poisson_subsampled_gaussian", None)
    if ref is None:  # pragma: no cover - a private helper of dp_accounting
        pytest.skip("dp_accounting has no _compute_rdp_poisson_subsampled_gaussian")
    for nm in (0.5, 1.3, 8.0):
        np.testing.assert_allclose(gaussian(nm).rdp(), ref(1.0, nm, RDP_ORDERS), rtol=1e-15)


def test_ten_gaussians_beat_basic_composition_and_exceed_one():
    delta_each, k = 1e-7, 10
    g = gaussian(3.0, delta_each)
    budget_delta = k * delta_each          # so that basic composition is valid too
    comp = compose([g] * k, budget_delta)
    basic_eps, basic_delta = comp.candidates["basic"]
    assert basic_eps == pytest.approx(k * g.epsilon) and basic_delta == pytest.approx(budget_delta)
    assert comp.candidates["rdp"][0] < 0.6 * basic_eps     # RDP: ~ sqrt(k), not k
    assert comp.epsilon < comp.candidates["rdp"][0]
    one = compose([g], budget_delta)
    assert comp.epsilon > 2 * one.epsilon and comp.candidates["rdp"][0] > 2 * one.candidates["rdp"][0]


def skip_conversion(events, delta):
    """A deliberately wrong composition: the RDP sum read at one order as if it
    were epsilon (the RDP -> (epsilon, delta) conversion skipped)."""
    rdp = sum(e.rdp() for e in events)
    return float(np.min(rdp))


def forget_approx_delta(events, delta):
    """A deliberately wrong composition: RDP converted at the whole delta budget,
    although the ApproxEvents' deltas were spent from it."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
    rdp = sum(e.rdp() for e in events if not isinstance(e, ApproxEvent))
    eps = compute_epsilon(list(RDP_ORDERS), list(rdp), delta)[0]
    return eps + sum(e.epsilon for e in events if isinstance(e, ApproxEvent))


def lower_bound_violated(total, events, delta):
    """Any valid total is at least the exact epsilon of the Gaussian events alone."""
    inv = sum(1 / e.noise_multiplier ** 2 for e in events if isinstance(e, GaussianEvent))
    return total < gauss_eps(1 / math.sqrt(inv), delta) * (1 - 1e-9)


@pytest.mark.parametrize("k", [1, 5, 20])
def test_every_bound_respects_the_exact_gaussian_lower_bound_and_a_wrong_one_does_not(k):
    delta = 1e-5
    events = [gaussian(1.5)] * k + [PureEvent(0.05)]
    comp = compose(events, delta)
    for name, (eps, _) in comp.candidates.items():
        assert not lower_bound_violated(eps, events, delta), name
    # power: the same check catches the conversion skipped
    assert lower_bound_violated(skip_conversion(events, delta), events, delta)


def test_approx_events_delta_is_taken_from_the_rdp_conversion():
    delta = 1e-5
    events = [gaussian(1.0), ApproxEvent(0.1, 9e-6)]
    rdp_eps, rdp_delta = compose(events, delta).candidates["rdp"]
    assert rdp_delta == delta
    by_hand = rdp_to_dp_by_hand(gaussian(1.0).rdp(), delta - 9e-6) + 0.1
    assert rdp_eps == pytest.approx(by_hand, rel=1e-12)
    # power: converting at the whole budget gives a (wrong) smaller epsilon
    assert forget_approx_delta(events, delta) < rdp_eps - 0.1
    # an ApproxEvent using up the delta leaves nothing for RDP / PLD
    comp = compose([gaussian(1.0), ApproxEvent(0.1, 1e-5)], 1e-5)
    assert comp.candidates["rdp"][0] == math.inf and comp.epsilon == math.inf


def mixed_events():
    nm = 2.0
    curve = 1.3 * np.asarray(RDP_ORDERS) / (2 * nm ** 2)   # a custom curve, as data
    return [
        PureEvent(0.3),
        gaussian(nm, 1e-7),
        ObjectiveGaussianEvent(3.5, 1e-7, RDP_ORDERS, curve),
        ApproxEvent(0.2, 1e-7),
        0.1,
        gaussian(4.0, 1e-7),
    ]


def test_mixed_sequence_bounds():
    delta = 1e-5
    events = mixed_events()
    comp = compose(events, delta)
    assert set(comp.candidates) == {"basic", "rdp", "pld"}
    basic_eps = sum(e if isinstance(e, float) else e.epsilon for e in events)
    assert comp.candidates["basic"][0] == pytest.approx(basic_eps)
    assert comp.epsilon <= basic_eps and comp.epsilon == min(c[0] for c in comp.candidates.values())
    assert comp.delta <= delta
    # at least each event alone, and at least the Gaussians' exact composition
    for e in events:
        assert comp.epsilon >= compose([e], delta).epsilon
    assert not lower_bound_violated(comp.epsilon, [e for e in events if not isinstance(e, float)], delta)
    # prefixes: the total grows with every event (for every bound)
    prev = None
    for i in range(1, len(events) + 1):
        c = compose(events[:i], delta)
        if prev is not None and prev.method != "pure":
            assert c.epsilon >= prev.epsilon
            for name in ("basic", "rdp"):
                assert c.candidates[name][0] >= prev.candidates[name][0]
        prev = c


def test_custom_curve_like_a_gaussian_composes_like_a_gaussian():
    delta = 1e-5
    g = gaussian(2.0)
    as_curve = ObjectiveGaussianEvent(g.epsilon, g.delta, RDP_ORDERS, g.rdp())
    rdp_g = compose([g, g, PureEvent(0.1)], delta).candidates["rdp"][0]
    rdp_c = compose([g, as_curve, PureEvent(0.1)], delta).candidates["rdp"][0]
    assert rdp_c == pytest.approx(rdp_g, rel=1e-12)


def test_pure_rdp_curve():
    e = PureEvent(0.5)
    a = np.asarray(RDP_ORDERS)
    np.testing.assert_allclose(e.rdp(), np.minimum(0.5, a * 0.125))
    assert e.rdp()[0] == pytest.approx(1.1 * 0.125) and e.rdp()[-1] == 0.5


def test_custom_curve_on_other_orders_is_evaluated_conservatively():
    ev = ObjectiveGaussianEvent(1.0, 1e-6, [2.0, 8.0, 32.0], [0.1, 0.5, 2.0])
    curve = ev.rdp()
    a = np.asarray(RDP_ORDERS)
    np.testing.assert_array_equal(curve[a <= 2], 0.1)
    np.testing.assert_array_equal(curve[(a > 2) & (a <= 8)], 0.5)
    np.testing.assert_array_equal(curve[(a > 8) & (a <= 32)], 2.0)
    assert np.all(np.isinf(curve[a > 32]))
    # the same curve on a coarser grid never gives a smaller total
    full = ObjectiveGaussianEvent(1.0, 1e-6, RDP_ORDERS, 0.05 * a)
    coarse = ObjectiveGaussianEvent(1.0, 1e-6, RDP_ORDERS[::7], (0.05 * a)[::7])
    r_full = compose([full, 0.1], 1e-5).candidates["rdp"][0]
    r_coarse = compose([coarse, 0.1], 1e-5).candidates["rdp"][0]
    assert r_coarse >= r_full


def test_budget_refuses_the_event_that_would_exceed_it():
    acc = BudgetAccountant(3.0, delta=1e-5)
    g = gaussian(2.0)
    spent = []
    with pytest.raises(BudgetExceededError) as info:
        for i in range(100):
            acc.spend(g, label=f"fit {i}")
            spent.append(acc.spent_epsilon_delta())
    n = len(acc.history)
    assert 1 < n < 100 and len(spent) == n
    before = acc.spent_epsilon_delta()
    assert before[0] <= 3.0 and before[1] <= 1e-5
    # the refused one: the total with it would be over; nothing spent
    assert compose([g] * (n + 1), 1e-5).epsilon > 3.0
    assert acc.spent_epsilon_delta() == before and len(acc.history) == n
    msg = str(info.value)
    for word in ("exceed the budget", "epsilon=3", "delta=1e-05", "spent", "total after it"):
        assert word in msg
    # check() refuses the same, spends nothing; a small pure fit still fits
    with pytest.raises(BudgetExceededError):
        acc.check(g)
    acc.spend(PureEvent(1e-3))
    assert acc.spent >= before[0] and len(acc.history) == n + 1
    # the reported totals never decreased
    assert all(b[0] >= a[0] for a, b in zip(spent, spent[1:]))


def test_delta_budget_refuses_basic_composition_past_it():
    acc = BudgetAccountant(10.0, delta=1e-6)
    acc.spend(ApproxEvent(0.1, 6e-7))
    # (0.1, 6e-7) or, spending the rest of the delta, a hair less epsilon (PLD)
    eps, dlt = acc.spent_epsilon_delta()
    assert 0.099 < eps <= 0.1 and 6e-7 <= dlt <= 1e-6
    with pytest.raises(BudgetExceededError, match="delta"):
        acc.spend(ApproxEvent(0.1, 6e-7))
    assert acc.spent_epsilon_delta() == (eps, dlt) and len(acc.history) == 1


def test_total_never_decreases_after_pure_fits():
    acc = BudgetAccountant(10.0, delta=1e-5)
    for _ in range(20):
        acc.spend(0.1)
    assert acc.spent == pytest.approx(2.0)
    acc.spend(gaussian(20.0))
    # a bound on the mixed sequence may come out below 2.0; the ledger keeps 2.0
    assert acc.spent >= 2.0 and acc.spent_delta <= 1e-5


def test_spent_and_repr_with_delta():
    acc = BudgetAccountant(5.0, delta=1e-5)
    acc.spend(gaussian(2.0), label="g")
    eps, dlt = acc.spent_epsilon_delta()
    assert acc.spent == eps and acc.spent_delta == dlt == 1e-5
    assert acc.remaining == pytest.approx(5.0 - eps) and acc.remaining_delta == 0.0
    r = repr(acc)
    assert "epsilon=5" in r and "delta=1e-05" in r and f"spent={eps:g}" in r and "spent_delta=1e-05" in r
    assert acc.history == [("g", gaussian(2.0))]


def test_events_pickle_and_ledger_with_events_pickles():
    acc = BudgetAccountant(5.0, delta=1e-5)
    for e in mixed_events():
        acc.spend(e)
    acc2 = pickle.loads(pickle.dumps(acc))
    assert acc2.history == acc.history and acc2.spent_epsilon_delta() == acc.spent_epsilon_delta()
    assert copy.deepcopy(acc) is acc
    acc2.spend(0.01)
    assert acc2.spent >= acc.spent and len(acc.history) == len(mixed_events())


def test_concurrent_gaussian_spending_never_overspends():
    acc = BudgetAccountant(4.0, delta=1e-5)
    g = gaussian(3.0)
    n_fit = 0
    while compose([g] * (n_fit + 1), 1e-5).epsilon <= 4.0:
        n_fit += 1

    def worker():
        for _ in range(n_fit):
            try:
                acc.spend(g)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(acc.history) == n_fit and acc.spent <= 4.0


@pytest.mark.parametrize("delta", [-0.1, 1.0, 1.5, np.nan, "0", None, True])
def test_bad_delta_budget(delta):
    with pytest.raises(ValueError, match="^delta"):
        BudgetAccountant(1.0, delta=delta)


@pytest.mark.parametrize("make, param", [
    (lambda: PureEvent(0.0), "epsilon"),
    (lambda: PureEvent(np.inf), "epsilon"),
    (lambda: GaussianEvent(0.0, 1.0, 1e-5), "noise_multiplier"),
    (lambda: GaussianEvent(-1.0, 1.0, 1e-5), "noise_multiplier"),
    (lambda: GaussianEvent(np.inf, 1.0, 1e-5), "noise_multiplier"),
    (lambda: GaussianEvent(True, 1.0, 1e-5), "noise_multiplier"),
    (lambda: GaussianEvent(2.0, -1.0, 1e-5), "epsilon"),
    (lambda: GaussianEvent(2.0, 3.0, 0.0), "delta"),
    (lambda: GaussianEvent(2.0, 3.0, 1.0), "delta"),
    # a claim the noise does not give: nm = 1 is not (1, 1e-5)-DP
    (lambda: GaussianEvent(1.0, 1.0, 1e-5), "epsilon"),
    (lambda: ApproxEvent(0.0, 1e-5), "epsilon"),
    (lambda: ApproxEvent(1.0, -1e-5), "delta"),
    (lambda: ApproxEvent(1.0, 1.0), "delta"),
    (lambda: ObjectiveGaussianEvent(0.0, 1e-5, [2.0], [0.1]), "epsilon"),
    (lambda: ObjectiveGaussianEvent(1.0, 1.0, [2.0], [0.1]), "delta"),
    (lambda: ObjectiveGaussianEvent(1.0, 1e-5, [], []), "rdp_orders"),
    (lambda: ObjectiveGaussianEvent(1.0, 1e-5, [1.0, 2.0], [0.1, 0.2]), "rdp_orders"),
    (lambda: ObjectiveGaussianEvent(1.0, 1e-5, [3.0, 2.0], [0.1, 0.2]), "rdp_orders"),
    (lambda: ObjectiveGaussianEvent(1.0, 1e-5, [2.0, np.inf], [0.1, 0.2]), "rdp_orders"),
    (lambda: ObjectiveGaussianEvent(1.0, 1e-5, [2.0, 3.0], [0.1]), "rdp_values"),
    (lambda: ObjectiveGaussianEvent(1.0, 1e-5, [2.0, 3.0], [0.1, -0.2]), "rdp_values"),
    (lambda: ObjectiveGaussianEvent(1.0, 1e-5, [2.0, 3.0], [0.1, np.nan]), "rdp_values"),
])
def test_events_validate_their_parameters(make, param):
    with pytest.raises(ValueError, match=f"^{param}"):
        make()


def test_events_are_frozen_and_hashable():
    g = gaussian(2.0)
    with pytest.raises(dataclasses_frozen_error()):
        g.noise_multiplier = 1.0
    o = ObjectiveGaussianEvent(1.0, 1e-6, [2.0, 4.0], np.array([0.1, 0.2]))
    assert o.rdp_orders == (2.0, 4.0) and hash(o) == hash(
        ObjectiveGaussianEvent(1.0, 1e-6, (2.0, 4.0), (0.1, 0.2)))
    assert PureEvent(0.5).delta == 0.0


def dataclasses_frozen_error():
    import dataclasses
    return dataclasses.FrozenInstanceError


def test_spend_rejects_what_is_not_an_event():
    acc = BudgetAccountant(1.0, delta=1e-5)
    for bad in ("0.5", None, (0.5, 1e-6)):
        with pytest.raises(ValueError, match="^epsilon"):
            acc.spend(bad)
    assert acc.history == []


def test_a_bound_dp_accounting_cannot_build_is_skipped():
    # exp(800) overflows in the PLD of a pure epsilon = 800 event: the PLD bound is
    # left out, the others stand
    g = gaussian(20.0)
    comp = compose([g, PureEvent(800.0)], 1e-5)
    assert "pld" not in comp.candidates and comp.method in ("basic", "rdp")
    assert 800.0 <= comp.epsilon <= 800.0 + g.epsilon


def test_gaussian_event_claim_is_checked_exactly():
    """A claimed delta even 1e-9 relative below the true one is refused (it had 1e-6 of
    room); the true delta, or a sigma from dperm's own calibrator, is accepted."""
    from dperm.privacy.calibration import analytic_gaussian_sigma, gaussian_delta

    for nm, eps in ((0.8, 1.0), (3.0, 0.5), (20.0, 0.05)):
        true = gaussian_delta(eps, 1.0, nm)
        GaussianEvent(nm, eps, true)
        GaussianEvent(nm, eps, min(true * (1 + 1e-9), 0.999))
        with pytest.raises(ValueError, match="is not"):
            GaussianEvent(nm, eps, true * (1 - 1e-9))
    for eps, delta in ((1.0, 1e-6), (0.3, 1e-9), (4.0, 1e-5)):
        GaussianEvent(analytic_gaussian_sigma(eps, delta, 1.0), eps, delta)
