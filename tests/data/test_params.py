"""Declared parameter constraints (dperm.data.validation.check_params / validate_params):
every public entry point checks its parameters once, at the boundary, and the warning
about a private count is given once, by the entry point that holds the user's choice."""
import inspect
import pathlib
import re
import warnings

import numpy as np
import pytest

import dperm
from dperm.data import validation
from dperm.data.validation import (
    BOOLEAN,
    N_THREADS,
    NONE,
    POSITIVE,
    RANDOM_STATE,
    Each,
    InstanceOf,
    Interval,
    Options,
    Satisfies,
    check_params,
    validate_params,
)
from dperm.sklearn import _base

ROOT = pathlib.Path(dperm.__file__).parent


def _problem(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, np.where(X[:, 0] > 0, 1, -1)


# ------------------------------------------------------------------ the constraints
@pytest.mark.parametrize("constraint, good, bad", [
    (POSITIVE, [1, 0.5, np.float32(2.0), np.int64(3)], [0, -1.0, np.nan, np.inf, True, "1", None]),
    (Interval(0, 1, closed="left"), [0, 0.0, 0.999], [1, 1.0, -1e-300, np.nan]),
    (Interval(1, None, closed="left", integer=True), [1, np.int32(5)], [0, 1.0, 2.5, True]),
    (Interval(1, None, closed="left", integer="valued"), [1, 2.0, 1e6], [0.5, 0, np.inf]),
    (Options({"a", "b"}), ["a", "b"], ["c", None, 1, ["a"]]),
    (BOOLEAN, [True, False, np.bool_(True)], [0, 1, "True", None]),
    (NONE, [None], [0, "", False]),
    (Each(POSITIVE), [1.0, [0.1, 2], np.array([1e-3, 1.0]), np.float64(1)],
     [[], [1.0, 0.0], [[1.0]], "1", [1.0, np.nan], True]),
    (InstanceOf(np.random.Generator), [np.random.default_rng(0)], [0, None]),
])
def test_constraints_accept_exactly_their_values(constraint, good, bad):
    for v in good:
        assert constraint.accepts(v), v
    for v in bad:
        assert not constraint.accepts(v), v


def test_error_messages_name_the_parameter_and_what_it_may_be():
    with pytest.raises(ValueError, match=r"^tol: must be None or a positive finite number, got -1$"):
        check_params({"tol": [NONE, POSITIVE]}, {"tol": -1})
    with pytest.raises(ValueError, match=r"^solver='x' is not valid; choose one of \['a', 'b'\]$"):
        check_params({"solver": [Options({"b", "a"})]}, {"solver": "x"})
    with pytest.raises(TypeError, match=r"^accountant: expected None or a .*BudgetAccountant, got int$"):
        check_params(_base.COMMON_PARAMETERS, {"accountant": 3})
    with pytest.raises(ValueError, match=r"^n_threads: must be None or -1 or an integer >= 1"):
        check_params({"n_threads": N_THREADS}, {"n_threads": 0})
    with pytest.raises(ValueError, match=r"^random_state: must be None or an int seed >= 0"):
        check_params({"random_state": RANDOM_STATE}, {"random_state": -1})
    # a Satisfies constraint's own, more specific message
    with pytest.raises(ValueError, match=r"^data_norm: .* too large"):
        check_params(_base.COMMON_PARAMETERS, {"data_norm": 1e200})
    # names missing from the values are not checked (a parameter that does not apply)
    check_params({"epsilon": [POSITIVE]}, {})


def test_satisfies_runs_its_check_only_on_values_of_its_kind():
    calls = []

    def check(v, name):
        calls.append((v, name))
        if v > 10:
            raise ValueError(f"{name}: above 10")

    table = {"k": [NONE, Satisfies(check, "a number <= 10", kind=POSITIVE.accepts)]}
    check_params(table, {"k": None})
    check_params(table, {"k": 3})
    with pytest.raises(ValueError, match="^k: above 10$"):
        check_params(table, {"k": 11})
    with pytest.raises(ValueError, match="^k: must be None or a number <= 10, got -1$"):
        check_params(table, {"k": -1})
    assert calls == [(3, "k"), (11, "k")]


def test_validate_params_checks_bound_arguments_and_refuses_unknown_names():
    @validate_params({"a": [POSITIVE], "b": [NONE, POSITIVE]})
    def f(x, a=1.0, *, b=None):
        return x, a, b

    assert f(0, 2.0, b=3.0) == (0, 2.0, 3.0)
    with pytest.raises(ValueError, match="^a: "):
        f(0, -1)                        # positional
    with pytest.raises(ValueError, match="^b: "):
        f(0, b=0)
    with pytest.raises(TypeError, match="unknown parameters"):
        validate_params({"c": [POSITIVE]})(f.__wrapped__)


# ------------------------------------------------------------------ the declarations
@pytest.mark.parametrize("est", [dperm.PrivateLinearClassifier, dperm.PrivateLinearRegression,
                                 dperm.PublicBoundsTransformer])
def test_every_estimator_parameter_is_declared(est):
    """A new __init__ parameter must get a declaration."""
    params = set(inspect.signature(est.__init__).parameters) - {"self"}
    assert set(est._parameter_constraints) == params


def test_alpha_is_declared_once_for_both_estimators():
    for est in (dperm.PrivateLinearClassifier, dperm.PrivateLinearRegression):
        assert est._parameter_constraints["alpha"] is _base.ALPHA
    assert _base.ALPHA[0].options == frozenset(_base.ALPHA_OPTIONS)


@pytest.mark.parametrize("fn", [dperm.objective_perturbation, dperm.output_perturbation,
                                dperm.erm.minimize, dperm.erm.objective, dperm.erm.hessian,
                                dperm.erm.hessian_vector])
def test_public_functions_declare_their_parameters(fn):
    table = fn.parameter_constraints
    assert set(table) <= set(inspect.signature(fn).parameters)
    assert "alpha" in table


# ------------------------------------------------------------------ checked once
def _count_checks(monkeypatch):
    seen = []
    real = validation.check_params

    def spy(table, values):
        seen.append(sorted(k for k in table if k in values))
        return real(table, values)

    monkeypatch.setattr(validation, "check_params", spy)   # validate_params' wrapper
    monkeypatch.setattr(_base, "check_params", spy)        # the estimators' _check_params
    return seen


@pytest.mark.parametrize("make, labels", [
    (lambda: dperm.PrivateLinearClassifier(classes=[-1, 1],
                                           random_state=np.random.default_rng(0)), "pm1"),
    (lambda: dperm.PrivateLinearClassifier(classes=[0, 1, 2],
                                           random_state=np.random.default_rng(0)), "three"),
    (lambda: dperm.PrivateLinearClassifier(classes=[0, 1, 2], delta=1e-5,
                                           random_state=np.random.default_rng(0)), "three"),
    (lambda: dperm.PrivateLinearClassifier(classes=[-1, 1], perturbation="output", delta=1e-5,
                                           random_state=np.random.default_rng(0)), "pm1"),
    (lambda: dperm.PrivateLinearClassifier(classes=[-1, 1], perturbation="none"), "pm1"),
    (lambda: dperm.PrivateLinearRegression(random_state=np.random.default_rng(0)), "real"),
    (lambda: dperm.PrivateLinearRegression(method="output",
                                           random_state=np.random.default_rng(0)), "real"),
])
def test_an_estimator_fit_checks_its_parameters_once(monkeypatch, make, labels):
    X, y = _problem()
    y = {"pm1": y, "three": np.digitize(X[:, 0], [-0.3, 0.3]), "real": 0.5 * X[:, 0]}[labels]
    est = make()
    seen = _count_checks(monkeypatch)
    est.fit(X, y)
    assert len(seen) == 1, seen                 # the estimator's table, once; no inner check
    assert {"alpha", "delta"} <= set(seen[0])


@pytest.mark.parametrize("fn", [dperm.objective_perturbation, dperm.output_perturbation])
def test_a_mechanism_call_checks_its_parameters_once(monkeypatch, fn):
    X, y = _problem()
    seen = _count_checks(monkeypatch)
    fn(X, y, alpha=[0.01, 0.1], epsilon=1.0, random_state=np.random.default_rng(0))
    assert len(seen) == 1 and {"alpha", "epsilon", "delta"} <= set(seen[0])


def test_a_failed_check_names_the_parameter_before_the_data_are_read():
    X = np.full((3, 2), np.nan)            # invalid rows: never reached
    with pytest.raises(ValueError, match="^alpha: must be 'auto' or 'select' or a single positive number"):
        dperm.PrivateLinearClassifier(alpha=[0.1, 1.0], classes=[-1, 1]).fit(X, [1, -1, 1])
    with pytest.raises(ValueError, match="^alpha: must be a positive finite number or"):
        dperm.objective_perturbation(X, [1, -1, 1], alpha="auto", epsilon=1.0)
    with pytest.raises(ValueError, match=r"^delta: must be a number in \[0, 1\)"):
        dperm.PrivateLinearRegression(delta=1.0).fit(X, [0.0, 0.1, 0.2])
    with pytest.raises(ValueError, match="^max_iter: must be None or an integer >= 0"):
        dperm.erm.minimize(X, [1, -1, 1], max_iter=-1)


# ------------------------------------------------------------------ the count warning
def _count_warnings(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [w for w in caught if "n_public: not given" in str(w.message)]


@pytest.mark.parametrize("fit", [
    lambda X, y: dperm.PrivateLinearClassifier(neighbouring="add_remove", classes=[-1, 1],
                                               random_state=np.random.default_rng(0)).fit(X, y),
    lambda X, y: dperm.PrivateLinearClassifier(neighbouring="add_remove", classes=[0, 1, 2],
                                               random_state=np.random.default_rng(0)
                                               ).fit(X, np.digitize(X[:, 0], [-0.3, 0.3])),
    lambda X, y: dperm.PrivateLinearRegression(neighbouring="add_remove",
                                               random_state=np.random.default_rng(0)).fit(X, 0.5 * X[:, 0]),
    lambda X, y: dperm.objective_perturbation(X, y, alpha=0.1, epsilon=1.0, neighbouring="add_remove",
                                              random_state=np.random.default_rng(0)),
    lambda X, y: dperm.output_perturbation(X, y, alpha=0.1, epsilon=1.0, neighbouring="add_remove",
                                           random_state=np.random.default_rng(0)),
])
def test_the_count_warning_is_given_once_per_fit(fit):
    X, y = _problem()
    caught = _count_warnings(lambda: fit(X, y))
    assert len(caught) == 1
    assert caught[0].filename == __file__       # it points at the user's call


def test_no_count_warning_with_a_public_count_or_for_adassp():
    X, y = _problem()
    assert not _count_warnings(lambda: dperm.PrivateLinearClassifier(
        neighbouring="add_remove", n_public=300, classes=[-1, 1]).fit(X, y))
    assert not _count_warnings(lambda: dperm.PrivateLinearRegression(
        neighbouring="add_remove", method="adassp", delta=1e-5).fit(X, 0.5 * X[:, 0]))


def test_no_warning_is_silenced_by_its_text_for_the_count():
    """The count warning is given where the choice is known; nothing filters it by text."""
    pattern = re.compile(r"filterwarnings\([^)]*message=[\"']n_public")
    hits = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if pattern.search(p.read_text())]
    assert hits == []
