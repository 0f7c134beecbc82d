"""`dperm fit --task regression` and `dperm predict` on a regression model file."""
import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dperm.cli._io import MODEL_FORMAT_VERSION, MODEL_FORMAT_VERSION_REGRESSION, load_model

SCHEMA = {"numeric": {"a": [0, 10], "b": [-5, 5]},
          "categorical": {"color": ["red", "green", "blue"]}, "label": {"column": "t"}}


def run(tmp_path, *args):
    env = dict(os.environ)
    env.pop("DPERM_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "dperm", *map(str, args)], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def reg(tmp_path):
    rng = np.random.default_rng(0)
    n = 2000
    a, b = rng.uniform(0, 10, n), rng.uniform(-5, 5, n)
    color = rng.choice(["red", "green", "blue"], n)
    t = 0.3 * a - 0.4 * b + 1.0 * (color == "red") - 1.5 + 0.3 * rng.normal(size=n)
    with open(tmp_path / "train.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b", "color", "t"])
        w.writerows([[f"{a[i]:.4f}", f"{b[i]:.4f}", color[i], f"{t[i]:.4f}"] for i in range(n)])
    with open(tmp_path / "test.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b", "color"])
        w.writerows([["5", "0", "red"], ["0", "5", "blue"], ["10", "-5", "green"]])
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    return tmp_path


def test_fit_then_predict_real_values(reg):
    res = run(reg, "fit", "train.csv", "--task", "regression", "--schema", "schema.json",
              "--label-bound", "6", "--epsilon", "5", "-o", "m.json")
    assert res.returncode == 0, res.stderr
    assert "pseudo_huber" in res.stdout and "label bound" in res.stdout
    model = json.loads((reg / "m.json").read_text())
    assert model["task"] == "regression" and model["format_version"] == MODEL_FORMAT_VERSION_REGRESSION
    assert model["privacy"]["label_bound"] == 6 and model["privacy"]["h"] == 6
    assert "seed" not in json.dumps(model) and "labels_clipped" not in json.dumps(model)
    loaded = load_model(str(reg / "m.json"))
    assert loaded["coef"].shape == (5,) and isinstance(loaded["intercept"], float)
    res = run(reg, "predict", "m.json", "test.csv")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[0] == "prediction" and len(lines) == 4
    pred = np.array([float(v) for v in lines[1:]])
    truth = np.array([0.3 * 5 + 1.0 - 1.5, -0.4 * 5 - 1.5, 0.3 * 10 + 0.4 * 5 - 1.5])
    assert np.all(np.abs(pred - truth) < 1.5), (pred, truth)
    # the classifier's files keep their version (older readers are unaffected)
    assert MODEL_FORMAT_VERSION == 2


@pytest.mark.parametrize("args,words", [
    (("--label-bound", "0"), ["label-bound"]),
    ((), ["--label-bound"]),
    (("--label-bound", "5", "--perturbation", "amp", "--delta", "1e-6"), ["amp"]),
    # --memory-budget streams (tests/cli/test_cli_stream.py); a kept binary is for classification
    (("--label-bound", "5", "--keep-binary", "kb"), ["--keep-binary and --from-binary"]),
])
def test_bad_regression_options(reg, args, words):
    res = run(reg, "fit", "train.csv", "--task", "regression", "--schema", "schema.json",
              *args, "-o", "m.json")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    for w in words:
        assert w in res.stderr
    assert not (reg / "m.json").exists()


def test_non_numeric_label_refused(reg):
    text = (reg / "train.csv").read_text().splitlines()
    text[5] = text[5].rsplit(",", 1)[0] + ",high"
    (reg / "bad.csv").write_text("\n".join(text) + "\n")
    res = run(reg, "fit", "bad.csv", "--task", "regression", "--schema", "schema.json",
              "--label-bound", "5", "-o", "m.json")
    assert res.returncode == 2 and "numeric label" in res.stderr and "Traceback" not in res.stderr
    assert "'high' (row 5, line 6)" in res.stderr
    assert not (reg / "m.json").exists()


def test_non_finite_label_refused(reg):
    text = (reg / "train.csv").read_text().splitlines()
    text[3] = text[3].rsplit(",", 1)[0] + ",inf"
    (reg / "bad.csv").write_text("\n".join(text) + "\n")
    res = run(reg, "fit", "bad.csv", "--task", "regression", "--schema", "schema.json",
              "--label-bound", "5", "-o", "m.json")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "non-finite value 'inf' (row 3, line 4)" in res.stderr
    assert not (reg / "m.json").exists()


def test_label_bound_only_for_regression(reg):
    res = run(reg, "fit", "train.csv", "--schema", "schema.json", "--label-bound", "5",
              "-o", "m.json")
    assert res.returncode == 2 and "--label-bound" in res.stderr


def test_adassp_and_auto_from_the_cli(reg):
    res = run(reg, "fit", "train.csv", "--task", "regression", "--schema", "schema.json",
              "--label-bound", "6", "--perturbation", "adassp", "--delta", "1e-7", "-o", "a.json")
    assert res.returncode == 0, res.stderr
    model = json.loads((reg / "a.json").read_text())
    assert model["privacy"]["mechanism"] == "adassp"
    res = run(reg, "fit", "train.csv", "--schema", "schema.json", "--perturbation", "adassp",
              "--delta", "1e-7", "-o", "c.json")
    assert res.returncode == 2 and "--task regression" in res.stderr
