"""`dperm fit --alpha select`: Lambda chosen privately (dperm.privacy.selection), in memory
and streamed, for both tasks; the model file records the chosen Lambda and the total."""
import csv
import json

import numpy as np
import pytest

from dperm.cli import main
from dperm.privacy.selection import SELECT_FACTORS

pytestmark = pytest.mark.filterwarnings("ignore::dperm.PrivacyLeakWarning")


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    a, b = rng.uniform(0, 10, n), rng.uniform(-5, 5, n)
    t = 0.3 * a - 0.4 * b + 0.3 * rng.normal(size=n)
    y = np.where(t > 1.5, "yes", "no")
    with open(tmp_path / "train.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b", "t", "y"])
        w.writerows([[f"{a[i]:.4f}", f"{b[i]:.4f}", f"{t[i]:.4f}", y[i]] for i in range(n)])
    (tmp_path / "c.json").write_text(json.dumps(
        {"numeric": {"a": [0, 10], "b": [-5, 5]}, "label": {"column": "y",
                                                           "classes": ["no", "yes"]}}))
    (tmp_path / "r.json").write_text(json.dumps(
        {"numeric": {"a": [0, 10], "b": [-5, 5]},
         "label": {"column": "t", "bounds": [-4, 6]}}))
    return tmp_path


def _auto_lambda(d, schema, *extra):
    assert main(["fit", str(d / "train.csv"), "--schema", str(d / schema), "--epsilon",
                 "0.9", "-o", str(d / "auto.json"), *extra]) == 0
    return json.loads((d / "auto.json").read_text())["privacy"]["alpha"]


@pytest.mark.parametrize("task, schema, streamed", [
    ("classification", "c.json", False), ("classification", "c.json", True),
    ("regression", "r.json", False)])
def test_fit_alpha_select(data, capsys, task, schema, streamed):
    extra = ["--task", task] + (["--memory-budget", "64MB"] if streamed else [])
    assert main(["fit", str(data / "train.csv"), "--schema", str(data / schema), "--epsilon",
                 "1", "--alpha", "select", "-o", str(data / "m.json"), *extra]) == 0
    model = json.loads((data / "m.json").read_text())
    assert model["estimator"]["alpha"] == "select"
    assert model["privacy"]["epsilon"] == pytest.approx(0.9)     # the refit (0.1: selection)
    assert model["privacy"]["epsilon_total"] == pytest.approx(1.0)
    auto = _auto_lambda(data, schema, *extra)
    assert any(model["privacy"]["alpha"] == pytest.approx(auto * f) for f in SELECT_FACTORS)


def test_fit_alpha_bad_value_names_the_choices(data, capsys):
    rc = main(["fit", str(data / "train.csv"), "--schema", str(data / "c.json"), "--epsilon",
               "1", "--alpha", "best", "-o", str(data / "m.json")])
    assert rc != 0
    assert "--alpha: 'best' is not a number, 'auto' or 'select'" in capsys.readouterr().err
    assert not (data / "m.json").exists()
