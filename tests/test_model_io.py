"""dperm.save_model / dperm.load_model: the library's model files (issue 29, item 4).

A model written by `dperm fit` or by save_model loads with dperm.load_model and predicts
exactly as `dperm predict` does (the same numbers, bit for bit, on the same CSV); older
files still load; the file holds only what may be published.  A fitted PublicSchema and
PublicBoundsTransformer pickle, joblib-dump and deep-copy (a pickle carries the
estimator's fit_diagnostics_, a model file never does)."""
import copy
import csv
import io
import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import make_pipeline

import dperm
from dperm import (
    PrivateLinearClassifier,
    PrivateLinearRegression,
    PublicBoundsTransformer,
    PublicSchema,
    load_model,
    save_model,
)
from dperm.cli import main as cli_main

pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning"),
              pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning")]

SCHEMA = {"numeric": {"a": [0, 10], "b": [-5, 5]},
          "categorical": {"color": ["red", "green", "blue"]},
          "label": {"column": "y", "classes": ["no", "yes"]}}


def _frame(n=400, seed=0, classes=("no", "yes"), regression=False):
    """Rows of SCHEMA's columns; seed > 0 (data to predict) has a few "purple" cells, a
    category the schema does not list (an all-zero group when predicting)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 11, n)            # a few values outside the public range: clipped
    b = rng.uniform(-5, 5, n)
    color = rng.choice(["red", "green", "blue", "purple"], n,
                       p=[0.3, 0.3, 0.3, 0.1] if seed else [0.4, 0.3, 0.3, 0.0])
    s = (a - 5) / 5 + 0.5 * (color == "red") - 0.5 * (color == "blue") + 0.1 * b
    if regression:
        y = np.clip(s, -2, 2)
    elif len(classes) == 2:
        y = np.where(s > 0, classes[1], classes[0])
    else:
        y = np.asarray(classes)[np.digitize(s, [-0.5, 0.5])]
    return pd.DataFrame({"a": a, "b": b, "color": color, "y": y})


def _write(frame, path):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(frame.columns))
        for row in frame.itertuples(index=False):
            w.writerow([repr(float(v)) if isinstance(v, float) else v for v in row])
    return path


def _cli_predictions(model_path, csv_path, out_path):
    assert cli_main(["predict", str(model_path), str(csv_path), "-o", str(out_path)]) == 0
    with open(out_path, newline="") as fh:
        return list(csv.DictReader(fh))


def _same_as_cli(model, rows, frame, classes):
    """Bit for bit: dperm predict's scores and probabilities are repr() of floats."""
    s = model.decision_function(frame)
    pred = model.predict(frame)
    if model.task == "regression":
        assert [r["prediction"] for r in rows] == [repr(float(v)) for v in s]
        return
    if s.ndim == 1:
        assert [r["score"] for r in rows] == [repr(float(v)) for v in s]
        if "probability" in rows[0]:
            p = model.predict_proba(frame)[:, 1]
            assert [r["probability"] for r in rows] == [repr(float(v)) for v in p]
    else:
        for k, c in enumerate(classes):
            assert [r[f"score:{c}"] for r in rows] == [repr(float(v)) for v in s[:, k]]
            if f"probability:{c}" in rows[0]:
                p = model.predict_proba(frame)[:, k]
                assert [r[f"probability:{c}"] for r in rows] == [repr(float(v)) for v in p]
    assert [r["prediction"] for r in rows] == [str(v) for v in pred]


@pytest.mark.parametrize("task, extra", [
    ("binary", ()), ("binary", ("--perturbation", "output", "--loss", "huber")),
    ("three", ("--delta", "1e-6")), ("three", ()),
    ("regression", ("--task", "regression", "--label-bound", "2")),
    ("regression", ("--task", "regression", "--label-bound", "2", "--perturbation", "adassp",
                    "--delta", "1e-6")),
])
def test_cli_model_loads_and_predicts_as_dperm_predict(tmp_path, capsys, task, extra):
    classes = ("lo", "mid", "hi") if task == "three" else ("no", "yes")
    train = _frame(classes=classes, regression=task == "regression")
    test = _frame(n=150, seed=1, classes=classes, regression=task == "regression")
    schema = dict(SCHEMA, label={"column": "y", "classes": list(classes)}
                  if task != "regression" else {"column": "y"})
    (tmp_path / "s.json").write_text(json.dumps(schema))
    _write(train, tmp_path / "train.csv")
    _write(test, tmp_path / "test.csv")
    assert cli_main(["fit", str(tmp_path / "train.csv"), "--schema", str(tmp_path / "s.json"),
                     "--epsilon", "2", *extra, "-o", str(tmp_path / "m.json")]) == 0
    rows = _cli_predictions(tmp_path / "m.json", tmp_path / "test.csv", tmp_path / "p.csv")
    capsys.readouterr()
    model = load_model(tmp_path / "m.json")
    _same_as_cli(model, rows, test, classes)
    # the record read back is the one the file holds
    assert model.privacy_ == json.loads((tmp_path / "m.json").read_text())["privacy"]


def _pipeline(kind, **kw):
    s = PublicSchema.from_dict(SCHEMA)
    t = PublicBoundsTransformer.from_schema(s, unknown="ignore", **kw)
    if kind == "regression":
        return make_pipeline(t, PrivateLinearRegression(label_bound=2.0, epsilon=2.0))
    if kind == "three":
        return make_pipeline(t, PrivateLinearClassifier(classes=["lo", "mid", "hi"],
                                                        epsilon=2.0, delta=1e-6))
    return make_pipeline(t, PrivateLinearClassifier(classes=["no", "yes"], epsilon=2.0))


@pytest.mark.parametrize("kind", ["binary", "three", "regression"])
def test_saved_pipeline_predicts_like_the_pipeline_and_like_dperm_predict(tmp_path, capsys,
                                                                          kind):
    classes = ("lo", "mid", "hi") if kind == "three" else ("no", "yes")
    train = _frame(classes=classes, regression=kind == "regression")
    test = _frame(n=150, seed=1, classes=classes, regression=kind == "regression")
    pipe = _pipeline(kind).fit(train[["a", "b", "color"]], train["y"])
    save_model(pipe, tmp_path / "m.json")
    model = load_model(tmp_path / "m.json")
    X = test[["a", "b", "color"]]
    if kind == "regression":
        np.testing.assert_allclose(model.predict(X), pipe.predict(X), rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(model.decision_function(X), pipe.decision_function(X),
                                   rtol=1e-12, atol=1e-12)
        assert (model.predict(X) == pipe.predict(X)).all()
        np.testing.assert_allclose(model.predict_proba(X), pipe.predict_proba(X), rtol=1e-9)
    est = pipe[-1]
    assert model.privacy_ == est.privacy_
    assert model.release_record_ == est.release_record_
    text = (tmp_path / "m.json").read_text()
    for word in ("grad_norm", "converged", "n_iter", "rows_clipped", "seed", "random_state"):
        assert word not in text
    # the same file through the command line: the same numbers, bit for bit
    _write(test, tmp_path / "test.csv")
    rows = _cli_predictions(tmp_path / "m.json", tmp_path / "test.csv", tmp_path / "p.csv")
    capsys.readouterr()
    _same_as_cli(model, rows, test, classes)


def test_transformer_data_norm_scales_the_saved_coefficients(tmp_path):
    train = _frame()
    pipe = make_pipeline(PublicBoundsTransformer.from_schema(PublicSchema.from_dict(SCHEMA),
                                                             unknown="ignore", data_norm=2.0),
                         PrivateLinearClassifier(classes=["no", "yes"], data_norm=3.0))
    pipe.fit(train[["a", "b", "color"]], train["y"])
    save_model(pipe, tmp_path / "m.json")
    X = _frame(n=100, seed=2)[["a", "b", "color"]]
    np.testing.assert_allclose(load_model(tmp_path / "m.json").decision_function(X),
                               pipe.decision_function(X), rtol=1e-12, atol=1e-12)
    # a transformer bound above the estimator's: the estimator would clip again
    pipe.set_params(privatelinearclassifier__data_norm=1.0).fit(train[["a", "b", "color"]],
                                                                 train["y"])
    with pytest.raises(ValueError, match="data_norm"):
        save_model(pipe, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_bare_estimator_is_saved_without_a_schema(tmp_path, capsys, kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) / 2
    if kind == "classifier":
        est = PrivateLinearClassifier(classes=[0, 1]).fit(X, (X[:, 0] > 0).astype(int))
    else:
        est = PrivateLinearRegression().fit(X, np.clip(X[:, 0], -1, 1))
    save_model(est, tmp_path / "m.json")
    obj = json.loads((tmp_path / "m.json").read_text())
    assert obj["format_version"] == 4 and obj["schema"] is None
    model = load_model(tmp_path / "m.json")
    Z = rng.normal(size=(50, 4))                  # rows beyond data_norm: shrunk alike
    if kind == "classifier":
        np.testing.assert_allclose(model.decision_function(Z), est.decision_function(Z),
                                   rtol=1e-12, atol=1e-12)
        assert (model.predict(Z) == est.predict(Z)).all()
        assert model.classes_.tolist() == [0, 1]
    else:
        np.testing.assert_allclose(model.predict(Z), est.predict(Z), rtol=1e-12, atol=1e-12)
    # dperm predict reads CSV cells through a schema: refused, with what to do
    _write(pd.DataFrame(Z, columns=[f"x{j}" for j in range(4)]), tmp_path / "d.csv")
    assert cli_main(["predict", str(tmp_path / "m.json"), str(tmp_path / "d.csv")]) == 2
    assert "dperm.load_model" in capsys.readouterr().err


def _v1_model():
    return {
        "format": "dperm.linear-model", "format_version": 1, "dperm_version": "0.1.0",
        "estimator": {"class": "PrivateLinearClassifier", "loss": "logistic",
                      "perturbation": "objective", "epsilon": 1.0, "alpha": "auto", "h": 0.5,
                      "fit_intercept": True, "data_norm": 1.0},
        "label": "y", "classes": ["no", "yes"],
        "feature_names": ["a", "b", "color=red", "color=green", "color=blue"],
        "coef": [3.0, 0.0, 1.0, 0.0, -1.0], "intercept": -1.5, "schema": SCHEMA,
        "preprocessing": {"row_divisor": math.sqrt(3), "row_norm_bound": 1.0},
        "schema_from_data": False, "read_from_data": [],
        "privacy": {"mechanism": "objective", "loss": "logistic", "epsilon": 1.0,
                    "epsilon_prime": 0.5, "delta": 0.25, "beta": 0.25, "alpha": 0.001,
                    "data_norm": 1.0, "h": 0.5, "n_samples": 1500, "curvature": 0.25},
        "training": {"data": "train.csv", "n_samples": 1500, "n_features": 5},
    }


def test_older_model_files_still_load(tmp_path, capsys):
    (tmp_path / "v1.json").write_text(json.dumps(_v1_model()))
    model = load_model(tmp_path / "v1.json")
    assert model.privacy_["extra_l2"] == 0.25 and model.privacy_["delta"] == 0.0
    X = pd.DataFrame({"a": [10.0, 0.0], "b": [0.0, 0.0], "color": ["red", "blue"]})
    np.testing.assert_allclose(model.decision_function(X),
                               [(3 + 1) / math.sqrt(3) - 1.5, -1 / math.sqrt(3) - 1.5])
    assert model.predict(X).tolist() == ["yes", "no"]
    _write(X.assign(y="no"), tmp_path / "x.csv")
    rows = _cli_predictions(tmp_path / "v1.json", tmp_path / "x.csv", tmp_path / "p.csv")
    capsys.readouterr()
    _same_as_cli(model, rows, X, ["no", "yes"])


@pytest.mark.parametrize("mutate, words", [
    (lambda m: m.update(format="other"), "'format' must be"),
    (lambda m: m.update(format_version=9), "unsupported format_version 9"),
    (lambda m: m.update(coef=[1.0, 2.0]), "'coef' has 2 entries"),
    (lambda m: m.pop("schema"), "missing key 'schema'"),
])
def test_bad_model_files_name_the_problem(tmp_path, mutate, words):
    m = _v1_model()
    mutate(m)
    (tmp_path / "m.json").write_text(json.dumps(m))
    with pytest.raises(dperm.model_io.ModelFormatError, match=words) as err:
        load_model(tmp_path / "m.json")
    assert str(tmp_path / "m.json") in str(err.value)
    assert isinstance(err.value, ValueError)


def test_save_model_refuses_what_it_cannot_write(tmp_path):
    from sklearn.preprocessing import StandardScaler

    with pytest.raises(TypeError, match="PrivateLinearClassifier"):
        save_model(StandardScaler(), tmp_path / "m.json")
    with pytest.raises(Exception, match="not fitted"):
        save_model(PrivateLinearClassifier(), tmp_path / "m.json")
    X = np.random.default_rng(0).normal(size=(100, 2)) / 2
    pipe = make_pipeline(StandardScaler(), PrivateLinearClassifier(classes=[0, 1]))
    pipe.fit(X, (X[:, 0] > 0).astype(int))
    with pytest.raises(TypeError, match="PublicBoundsTransformer"):
        save_model(pipe, tmp_path / "m.json")
    with pytest.raises(OSError):
        save_model(pipe[-1], tmp_path / "no" / "such" / "dir.json")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- pickling
def _roundtrips(obj):
    import joblib

    buf = io.BytesIO()
    joblib.dump(obj, buf)
    buf.seek(0)
    return {"pickle": pickle.loads(pickle.dumps(obj)), "deepcopy": copy.deepcopy(obj),
            "copy": copy.copy(obj), "joblib": joblib.load(buf)}


def test_public_schema_pickles_and_copies():
    s = PublicSchema(numeric={"a": (0, 10)}, categorical={"c": ["x", "y", "z"], "k": [1, 2]},
                     label="l", classes=["n", "p"], fill={"a": 5.0, "c": "y"})
    cells = {"a": [1.0, None], "c": ["x", None], "k": [2, 1]}
    for how, t in _roundtrips(s).items():
        assert t == s and repr(t) == repr(s), how
        assert t.encode(cells).tolist() == s.encode(cells).tolist()


def test_fitted_transformer_and_pipeline_pickle_and_predict_the_same():
    train, test = _frame(), _frame(n=100, seed=3)
    X, Xt = train[["a", "b", "color"]], test[["a", "b", "color"]]
    pipe = _pipeline("binary").fit(X, train["y"])
    t = pipe[0]
    for how, u in _roundtrips(t).items():
        np.testing.assert_array_equal(u.transform(Xt), t.transform(Xt), err_msg=how)
        assert u.schema_ == t.schema_
    for how, p in _roundtrips(pipe).items():
        np.testing.assert_array_equal(p.decision_function(Xt), pipe.decision_function(Xt),
                                      err_msg=how)
        # a pickle is the analyst's copy: it carries the diagnostics and the record
        assert p[-1].fit_diagnostics_ == pipe[-1].fit_diagnostics_
        assert p[-1].privacy_ == pipe[-1].privacy_
