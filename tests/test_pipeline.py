"""dperm.private_pipeline (dperm/pipeline.py): one call from a DataFrame, a total epsilon
and the public category lists to a fitted, saved model."""
import warnings

import numpy as np
import pandas as pd
import pytest

import dperm
from dperm import BudgetAccountant, BudgetExceededError

pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning"),
              pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning")]


def _frame(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    f = pd.DataFrame({"age": rng.integers(18, 80, n).astype(float),
                      "hours": rng.integers(0, 60, n).astype(float),
                      "colour": rng.choice(["red", "blue", "green"], n)})
    s = (f["age"] - 45) / 20 + (f["colour"] == "red") - 0.3
    f["y"] = np.where(s + 0.3 * rng.normal(size=n) > 0, "yes", "no")
    f["w"] = 20.0 + 0.5 * f["age"] + 0.2 * f["hours"] + 3 * (f["colour"] == "red") \
        + rng.normal(size=n)
    return f


CATS = {"colour": ["red", "blue", "green"]}


def test_classification_spends_the_documented_split_and_saves(tmp_path):
    f = _frame().drop(columns=["w"])
    acc = BudgetAccountant(2.0)
    model = dperm.private_pipeline(f, label="y", epsilon=1.0, accountant=acc,
                                   categories=dict(CATS, y=["no", "yes"]),
                                   path=tmp_path / "m.json")
    eps = [e.epsilon if hasattr(e, "epsilon") else e for _, e in acc.history]
    assert eps == pytest.approx([0.1, 0.9]) and acc.spent == pytest.approx(1.0)
    X = f.drop(columns=["y"])
    loaded = dperm.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.privacy_ == model[-1].privacy_
    # the whole release's cost, public values only: total, the bounds' part, the fit's
    assert loaded.budget_ == model.budget_
    assert dict(model.budget_) == {
        "mechanism": "basic_composition", "epsilon": 1.0, "delta": 0.0,
        "task": "classification", "label": "y", "bounds_share": 0.1,
        "epsilon_bounds": pytest.approx(0.1), "columns": ["age", "hours"],
        "epsilon_per_column": pytest.approx(0.05), "epsilon_fit": pytest.approx(0.9)}
    assert set(loaded.schema.numeric) == {"age", "hours"}
    assert list(loaded.schema.categorical) == ["colour"]
    with pytest.raises(BudgetExceededError):        # checked before any data are read
        dperm.private_pipeline(f, label="y", epsilon=1.5, accountant=acc,
                               categories=dict(CATS, y=["no", "yes"]))
    assert acc.spent == pytest.approx(1.0)


def test_regression_releases_the_label_range_in_the_same_split():
    f = _frame().drop(columns=["y"])
    acc = BudgetAccountant(1.0)
    model = dperm.private_pipeline(f, label="w", epsilon=1.0, task="regression",
                                   categories=CATS, accountant=acc)
    reg = model[-1]
    assert [e.epsilon for _, e in acc.history[:1]] == pytest.approx([0.1])
    assert acc.spent == pytest.approx(1.0)
    lo, hi = reg.label_bounds
    assert reg.privacy_["label_centre"] == pytest.approx((lo + hi) / 2)
    assert reg.privacy_["label_bound"] == pytest.approx((hi - lo) / 2)


def test_quality_seeded():
    """Seeded (a test of accuracy, not a release): the released label range is near the
    label's 1 %-99 % quantiles, and both models are useful."""
    f = _frame(n=20_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dperm.PrivacyLeakWarning)
        reg = dperm.private_pipeline(f.drop(columns=["y"]), label="w", epsilon=1.0,
                                     task="regression", categories=CATS, random_state=0)
        clf = dperm.private_pipeline(f.drop(columns=["w"]), label="y", epsilon=1.0,
                                     categories=dict(CATS, y=["no", "yes"]), random_state=1)
    lo, hi = reg[-1].label_bounds
    q = np.quantile(f["w"], [0.01, 0.99])
    # epsilon 0.1 over four columns at n = 20,000: a bound lands within a few per cent of
    # the rows of its quantile, up to the data's end (this seed's upper bound: 0.38 of the
    # width past the 99 % quantile, near the maximum)
    width = q[1] - q[0]
    assert abs(lo - q[0]) < 0.5 * width and abs(hi - q[1]) < 0.5 * width
    assert f["w"].min() - 0.5 * width <= lo < hi <= f["w"].max() + 0.5 * width
    assert reg.score(f.drop(columns=["w", "y"]), f["w"]) > 0.5
    assert np.mean(clf.predict(f.drop(columns=["w", "y"])) == f["y"]) > 0.8


def test_all_categorical_gives_the_fit_everything():
    f = _frame()[["colour", "y"]]
    acc = BudgetAccountant(1.0)
    dperm.private_pipeline(f, label="y", epsilon=1.0, accountant=acc,
                           categories=dict(CATS, y=["no", "yes"]))
    assert len(acc.history) == 1 and acc.spent == pytest.approx(1.0)


def test_alpha_select_within_the_fit_share():
    f = _frame().drop(columns=["w"])
    acc = BudgetAccountant(1.0)
    model = dperm.private_pipeline(f, label="y", epsilon=1.0, accountant=acc, alpha="select",
                                   categories=dict(CATS, y=["no", "yes"]))
    assert acc.spent == pytest.approx(1.0)
    assert model[-1].privacy_["epsilon_total"] == pytest.approx(0.9)


def test_default_accountant_and_seeded_runs():
    f = _frame(n=600).drop(columns=["w"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = dperm.private_pipeline(f, label="y", epsilon=1.0, random_state=3,
                                   categories=dict(CATS, y=["no", "yes"]))
        b = dperm.private_pipeline(f, label="y", epsilon=1.0, random_state=3,
                                   categories=dict(CATS, y=["no", "yes"]))
    assert any(issubclass(x.category, dperm.PrivacyLeakWarning) for x in w)
    np.testing.assert_array_equal(a[-1].coef_, b[-1].coef_)
    assert a[0].schema_.numeric == b[0].schema_.numeric
    with pytest.raises(ValueError, match="random_state"):
        dperm.private_pipeline(f, label="y", epsilon=1.0, random_state=3,
                               accountant=BudgetAccountant(1.0),
                               categories=dict(CATS, y=["no", "yes"]))


@pytest.mark.parametrize("kwargs, match", [
    (dict(label="y", categories=CATS), "label's PUBLIC classes"),
    (dict(label="nope", categories=CATS), "label: no column 'nope'"),
    (dict(label="y", categories=dict(CATS, y=["no", "yes"], shade=["a"])), "shade"),
    (dict(label="w", task="regression", categories=dict(CATS, w=[1, 2])), "regression"),
    (dict(label="y", categories=dict(CATS, y=["no", "yes"]), task="ranking"), "task"),
    (dict(label="y", categories=dict(CATS, y=["no", "yes"]), bounds_share=1.0), "bounds_share"),
    (dict(label="y", categories=dict(CATS, y=["no", "yes"]),
          estimator_params={"epsilon": 2.0}), "estimator_params"),
])
def test_bad_arguments_name_the_argument(kwargs, match):
    f = _frame(n=200)
    acc = BudgetAccountant(1.0)
    with pytest.raises(ValueError, match=match):
        dperm.private_pipeline(f, epsilon=1.0, accountant=acc, **kwargs)
    assert acc.spent == 0


def test_not_a_frame():
    with pytest.raises(TypeError, match="DataFrame"):
        dperm.private_pipeline(np.zeros((3, 2)), label="y", epsilon=1.0)
