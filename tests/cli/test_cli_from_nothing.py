"""`dperm fit DATA.csv --bounds-share S`: from nothing in one command (the numeric bounds,
and a regression label's range, released from the same --epsilon by
dperm.private_pipeline's rule), equal to `dperm bounds` then `dperm fit`."""
import csv
import json

import numpy as np
import pytest

from dperm.cli.main import main

pytestmark = [pytest.mark.filterwarnings("ignore::dperm.exceptions.NoiseDominatedWarning"),
              pytest.mark.filterwarnings("ignore::dperm.exceptions.ClippingWarning"),
              pytest.mark.filterwarnings("ignore::dperm.exceptions.PrivacyLeakWarning")]

CATS = {"color": ["red", "blue"]}


def _data(path, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 100, n)
    b = rng.normal(10, 2, n)
    color = rng.choice(["red", "blue"], n)
    y = np.where(a + 10 * (color == "red") > 55, "yes", "no")
    w = 0.3 * a + b + rng.normal(size=n)
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["a", "b", "color", "y", "w"])
        for i in range(n):
            out.writerow([f"{a[i]:.3f}", "" if i == 7 else f"{b[i]:.3f}", color[i], y[i],
                          f"{w[i]:.3f}"])
    return path


def _frame_without(path, column, out):
    with open(path) as src, open(out, "w", newline="") as dst:
        rows = list(csv.reader(src))
        j = rows[0].index(column)
        csv.writer(dst).writerows([r[:j] + r[j + 1:] for r in rows])
    return out


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_one_command_equals_bounds_then_fit(tmp_path, capsys, task):
    """The same split and seed give the same model file as the two commands (--seed N:
    bounds from N, the fit from N + 1), plus the split's record ("budget")."""
    full = _data(tmp_path / "full.csv")
    label, drop = ("y", "w") if task == "classification" else ("w", "y")
    data = str(_frame_without(full, drop, tmp_path / "d.csv"))
    base = {"categorical": CATS, "fill": {"color": "red"}}
    if task == "classification":
        base["label"] = {"column": "y", "classes": ["no", "yes"]}
    (tmp_path / "base.json").write_text(json.dumps(base))
    schema = str(tmp_path / "base.json")
    one = tmp_path / "one.json"
    assert main(["fit", data, "--label", label, "--task", task, "--epsilon", "1",
                 "--bounds-share", "0.2", "--schema", schema, "--seed", "11",
                 "--missing", "drop", "-o", str(one)]) == 0
    printed = capsys.readouterr().out
    assert "budget: epsilon 1 = 0.2 on the bounds" in printed and "+ 0.8 on the fit" in printed
    released = str(tmp_path / "s.json")
    extra = ["--task", "regression"] if task == "regression" else []
    assert main(["bounds", data, "--epsilon", "0.2", "--columns", "a,b", "--label", label,
                 "--schema", schema, "--seed", "11", "-o", released, *extra]) == 0
    two = tmp_path / "two.json"
    assert main(["fit", data, "--task", task, "--schema", released, "--epsilon", "0.8",
                 "--seed", "12", "--missing", "drop", "-o", str(two)]) == 0
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    budget = a.pop("budget")
    assert "budget" not in b
    assert a == b
    assert budget == {"mechanism": "basic_composition", "epsilon": 1.0, "delta": 0.0,
                      "task": task, "label": label, "bounds_share": 0.2,
                      "epsilon_bounds": pytest.approx(0.2),
                      "columns": ["a", "b"] + (["w"] if task == "regression" else []),
                      "epsilon_per_column": pytest.approx(0.2 / (2 + (task == "regression"))),
                      "epsilon_fit": pytest.approx(0.8)}
    assert budget["epsilon_fit"] == a["privacy"]["epsilon_total"]
    if task == "regression":
        assert a["schema"]["label"]["bounds"] == json.loads(open(released).read())["label"][
            "bounds"]


def test_explicit_lists_equal_a_schemas(tmp_path):
    data = str(_frame_without(_data(tmp_path / "full.csv"), "w", tmp_path / "d.csv"))
    (tmp_path / "base.json").write_text(json.dumps(
        {"categorical": CATS, "label": {"column": "y", "classes": ["no", "yes"]}}))
    common = ["fit", data, "--label", "y", "--bounds-share", "0.1", "--missing", "drop",
              "--seed", "3"]
    assert main([*common, "--schema", str(tmp_path / "base.json"),
                 "-o", str(tmp_path / "a.json")]) == 0
    assert main([*common, "--categorical", "color=red,blue", "--categorical", "y=no,yes",
                 "-o", str(tmp_path / "b.json")]) == 0
    a = json.loads((tmp_path / "a.json").read_text())
    assert a == json.loads((tmp_path / "b.json").read_text())
    assert a["schema_from_data"] is False and a["budget"]["columns"] == ["a", "b"]


def test_unseeded_model_predicts(tmp_path):
    import dperm

    data = str(_frame_without(_data(tmp_path / "full.csv"), "w", tmp_path / "d.csv"))
    assert main(["fit", data, "--label", "y", "--bounds-share", "0.1", "--epsilon", "2",
                 "--categorical", "color=red,blue", "--categorical", "y=no,yes",
                 "--missing", "drop", "-o", str(tmp_path / "m.json")]) == 0
    loaded = dperm.load_model(tmp_path / "m.json")
    assert loaded.budget_["epsilon_bounds"] == pytest.approx(0.2)
    assert loaded.privacy_["epsilon"] == pytest.approx(1.8)


@pytest.mark.parametrize("args, words", [
    ([], ["no PUBLIC category list for ['y']", "--categorical y=V1,V2"]),
    (["--categorical", "y=no,yes"], ["non-numeric value", "'color'",
                                     "--categorical color=V1,V2"]),
    (["--categorical", "color", "--categorical", "y=no,yes"], ["no PUBLIC category list for ['color']",
                                           "--categories-from-data"]),
    (["--categorical", "shade=a,b", "--categorical", "y=no,yes"], ["no column(s) ['shade']"]),
    (["--categorical", "y=no,yes", "--categorical", "color=red,blue", "--label-bound", "1"],
     ["--bounds-share cannot be combined with --label-bound"]),
    (["--categorical", "y=no,yes", "--categorical", "color=red,blue", "--memory-budget",
      "1M"], ["--bounds-share cannot be combined with --memory-budget"]),
    (["--categorical", "y=no,yes", "--categorical", "color=red,blue", "--schema", "NUMERIC"],
     ["--bounds-share releases the numeric bounds", "drop --bounds-share"]),
])
def test_errors_name_the_option_and_the_fix(tmp_path, capsys, args, words):
    data = str(_frame_without(_data(tmp_path / "full.csv", n=50), "w", tmp_path / "d.csv"))
    (tmp_path / "num.json").write_text(json.dumps({"numeric": {"a": [0, 100]}}))
    args = [str(tmp_path / "num.json") if a == "NUMERIC" else a for a in args]
    rc = main(["fit", data, "--label", "y", "--bounds-share", "0.1", *args,
               "-o", str(tmp_path / "m.json")])
    err = capsys.readouterr().err
    assert rc != 0 and not (tmp_path / "m.json").exists()
    for w in words:
        assert w in err


def test_categories_from_data_is_explicit_and_warned(tmp_path, capsys):
    data = str(_frame_without(_data(tmp_path / "full.csv", n=300), "w", tmp_path / "d.csv"))
    assert main(["fit", data, "--label", "y", "--categories-from-data",
                 "-o", str(tmp_path / "m.json")]) != 0
    assert "--categories-from-data is for --bounds-share" in capsys.readouterr().err
    rc = main(["fit", data, "--label", "y", "--bounds-share", "0.1", "--missing", "drop",
               "--categorical", "color,y", "--categories-from-data",
               "-o", str(tmp_path / "m.json")])
    assert rc == 0
    assert "PrivacyLeakWarning: category lists were read from the private data" in \
        capsys.readouterr().err
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["schema"]["categorical"] == {"color": ["blue", "red"]}
    assert model["classes"] == ["no", "yes"]
    assert model["schema_from_data"] is True and model["read_from_data"] == ["category lists"]


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_neighbouring_files_differ_only_in_noisy_outputs(tmp_path, task):
    """One row replaced by an extreme one: the one command's model files (unseeded) are
    identical but for the coefficients, the released bounds and their public functions;
    the "budget" record is compared too."""
    full = _data(tmp_path / "full.csv", n=1500)
    label, drop = ("y", "w") if task == "classification" else ("w", "y")
    data = _frame_without(full, drop, tmp_path / "d.csv")
    rows = data.read_text().splitlines()
    header = rows[0].split(",")
    cells = rows[1].split(",")
    for c, v in (("a", "1e6"), ("b", "-1e6"), ("color", "blue"),
                 (label, "-1e6" if task == "regression" else
                  ("yes" if cells[header.index("y")] == "no" else "no"))):
        cells[header.index(c)] = v
    (tmp_path / "n.csv").write_text("\n".join([rows[0], ",".join(cells), *rows[2:]]) + "\n")
    out = []
    for name in ("d.csv", "n.csv"):
        model = tmp_path / f"{name}.json"
        assert main(["fit", str(tmp_path / name), "--label", label, "--task", task,
                     "--epsilon", "1", "--bounds-share", "0.2", "--missing", "drop",
                     "--categorical", "color=red,blue",
                     *(["--categorical", "y=no,yes"] if task == "classification" else []),
                     "-o", str(model)]) == 0
        obj = json.loads(model.read_text())
        noisy = [obj.pop("coef"), obj.pop("intercept"), obj["schema"].pop("numeric")]
        if task == "regression":
            noisy.append(obj["schema"].pop("label"))
            for k in ("label_bound", "label_centre", "h", "gradient_bound", "alpha", "beta",
                      "epsilon_prime", "extra_l2"):
                noisy.append(obj["privacy"].pop(k))
            for k in ("label_bounds", "h", "label_bound"):
                obj["estimator"].pop(k, None)
            noisy.append(obj["preprocessing"].pop("label_centre", None))
        obj["training"].pop("data")
        out.append((obj, noisy))
    assert out[0][0] == out[1][0]
    assert out[0][0]["budget"]["epsilon_bounds"] == pytest.approx(0.2)
    assert out[0][1][0] != out[1][1][0]
