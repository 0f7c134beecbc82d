"""What dperm.private_pipeline and alpha="select" release: on neighbouring data (one row
replaced by an extreme one, or one cell missing with a public fill), everything but the
noisy outputs (coefficients, the released bounds and, for alpha="select", the chosen
Lambda) and the public functions of them is identical (the pattern of test_release.py)."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import dperm
from dperm import BudgetAccountant, PrivateLinearClassifier, PrivateLinearRegression
from dperm.privacy import selection as S

pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning"),
              pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning")]

CATS = {"colour": ["red", "blue"]}
#: a regression record's fields that are public functions of the released label range
LABEL_DERIVED = ("label_bound", "label_centre", "h", "gradient_bound", "alpha", "beta",
                 "epsilon_prime", "extra_l2")


def _frames(relation, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    f = pd.DataFrame({"age": rng.uniform(20, 70, n), "colour": rng.choice(["red", "blue"], n)})
    f["y"] = np.where(f["age"] + 10 * (f["colour"] == "red") > 50, "yes", "no")
    f["w"] = 0.3 * f["age"] + rng.normal(size=n)
    g = f.copy()
    if relation == "replace":
        g.loc[0, ["age", "colour", "y", "w"]] = [1e6, "blue", "yes" if f.y[0] == "no" else "no",
                                                  -1e6]
    else:
        g.loc[0, "age"] = np.nan
    return f, g


def _release(frame, task, path):
    acc = BudgetAccountant(1.0)
    label = "y" if task == "classification" else "w"
    cats = dict(CATS, y=["no", "yes"]) if task == "classification" else dict(CATS)
    model = dperm.private_pipeline(frame.drop(columns=["w" if label == "y" else "y"]),
                                   label=label, epsilon=1.0, categories=cats, task=task,
                                   fill={"age": 45.0}, accountant=acc, path=path)
    obj = json.loads(path.read_text())
    noisy = {"coef": obj.pop("coef"), "intercept": obj.pop("intercept"),
             "bounds": obj["schema"].pop("numeric")}
    if task == "regression":
        noisy["label"] = obj["schema"].pop("label")
        for k in LABEL_DERIVED:
            noisy[k] = obj["privacy"].pop(k)
        for k in ("label_bounds", "h", "label_bound"):
            obj["estimator"].pop(k, None)
        noisy["preprocessing label_centre"] = obj["preprocessing"].pop("label_centre", None)
        lo, hi = model[-1].label_bounds
        # the popped values are public functions of the released range
        assert noisy["label_centre"] == pytest.approx((lo + hi) / 2)
        assert noisy["label_bound"] == pytest.approx((hi - lo) / 2)
    _check_whole_cost(obj, acc, task)
    released = {"model file": obj, "events": [(lbl.split("(")[0], e if isinstance(e, float)
                                                else e.epsilon) for lbl, e in acc.history],
                "params": {k: v for k, v in model[-1].get_params().items()
                           if k not in ("accountant", "label_bounds")}}
    return released, noisy


def _check_whole_cost(obj, acc, task):
    """The model file says what the whole release cost: its "budget" holds the total, the
    bounds' epsilon (the accountant's first charge), the fit's (the file's own record)
    and the columns bounded privately (a regression's label last)."""
    budget = obj["budget"]
    events = [e if isinstance(e, float) else e.epsilon for _, e in acc.history]
    assert budget["epsilon"] == pytest.approx(acc.spent) == pytest.approx(1.0)
    assert budget["epsilon_bounds"] == pytest.approx(events[0]) == pytest.approx(0.1)
    assert budget["epsilon_fit"] == pytest.approx(obj["privacy"]["epsilon_total"])
    assert budget["epsilon_bounds"] + budget["epsilon_fit"] == pytest.approx(budget["epsilon"])
    assert budget["columns"] == (["age"] if task == "classification" else ["age", "w"])
    assert budget["bounds_share"] == 0.1 and budget["task"] == task


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("relation", ["replace", "missing"])
def test_pipeline_releases_the_same_on_neighbours(tmp_path, task, relation):
    f, g = _frames(relation)
    a, na = _release(f, task, tmp_path / "a.json")
    b, nb = _release(g, task, tmp_path / "b.json")
    assert a == b
    assert na["coef"] != nb["coef"]        # power: two fits of different data


def test_pipeline_comparison_catches_a_leak(tmp_path):
    """A deliberately broken release (the data's largest age beside the model, as a
    min/max range would be) fails the comparison."""
    f, g = _frames("replace")
    a, _ = _release(f, "classification", tmp_path / "a.json")
    b, _ = _release(g, "classification", tmp_path / "b.json")
    a["model file"]["range"], b["model file"]["range"] = f.age.max(), g.age.max()
    assert a != b


@pytest.mark.parametrize("broken", ["epsilon_bounds", "record"])
def test_whole_cost_check_catches_a_missing_bounds_epsilon(tmp_path, monkeypatch, broken):
    """Deliberately broken variants (the bounds' epsilon left out of the record, or no
    record in the file: only the fit's cost published) fail the check."""
    import dperm.model_io as M
    import dperm.pipeline as P

    real = P.budget_record
    if broken == "epsilon_bounds":
        monkeypatch.setattr(P, "budget_record",
                            lambda **kw: real(**kw).replace(epsilon_bounds=None))
    else:
        monkeypatch.setattr(M, "model_file", _without_budget(M.model_file))
    f, _ = _frames("replace")
    with pytest.raises((AssertionError, KeyError, TypeError)):
        _release(f, "classification", tmp_path / "a.json")


def _without_budget(model_file):
    def broken(**kw):
        kw["budget"] = None
        return model_file(**kw)
    return broken


def test_loaded_model_reads_the_budget(tmp_path):
    f, _ = _frames("replace")
    acc = BudgetAccountant(1.0)
    model = dperm.private_pipeline(f.drop(columns=["w"]), label="y", epsilon=1.0,
                                   categories=dict(CATS, y=["no", "yes"]), accountant=acc,
                                   bounds_share=0.25, path=tmp_path / "m.json")
    loaded = dperm.load_model(tmp_path / "m.json")
    assert loaded.budget_ == model.budget_
    assert loaded.budget_["epsilon_bounds"] == pytest.approx(0.25)
    assert loaded.budget_["epsilon_fit"] == pytest.approx(0.75)
    plain = PrivateLinearClassifier(classes=["no", "yes"], epsilon=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain.fit(np.c_[f["age"].to_numpy() / 100], f["y"])
    dperm.save_model(plain, tmp_path / "p.json")         # no split: no "budget" key
    assert "budget" not in json.loads((tmp_path / "p.json").read_text())
    assert dperm.load_model(tmp_path / "p.json").budget_ is None


@pytest.mark.parametrize("regression", [False, True])
def test_alpha_select_releases_the_same_on_neighbours(tmp_path, monkeypatch, regression):
    """With a one-point grid the chosen Lambda is public, so the whole release but the
    coefficients must be identical on neighbours (replace one row)."""
    monkeypatch.setattr(S, "SELECT_FACTORS", (1.0,))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(800, 3)) / 3
    y = np.where(X[:, 0] > 0, 1, -1) if not regression else np.clip(X[:, 0], -1, 1)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = -X[0] / np.linalg.norm(X[0]), -y[0]
    out = []
    for A, b, name in ((X, y, "a"), (X2, y2, "b")):
        acc = BudgetAccountant(1.0)
        est = (PrivateLinearRegression(label_bound=1.0, alpha="select", accountant=acc)
               if regression else
               PrivateLinearClassifier(classes=[-1, 1], alpha="select", accountant=acc))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(A, b)
        dperm.save_model(est, tmp_path / f"{name}.json")
        obj = json.loads((tmp_path / f"{name}.json").read_text())
        coef = (obj.pop("coef"), obj.pop("intercept"))
        out.append(({"file": obj, "privacy_": est.privacy_, "alpha_": est.alpha_,
                     "events": [getattr(e, "epsilon", e) for _, e in acc.history]}, coef))
    assert out[0][0] == out[1][0]
    assert out[0][1] != out[1][1]
