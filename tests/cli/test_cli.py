"""The `dperm` command line, driven as a user would: `python -m dperm ...` in a
temporary directory (plus a few in-process calls of `main` for argument parsing
and the reproduce path, with the slow runners replaced by stubs)."""
import csv
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import dperm
from dperm import cli

SCHEMA = {
    "numeric": {"a": [0, 10], "b": [-5, 5]},
    "categorical": {"color": ["red", "green", "blue"]},
    "label": {"column": "y", "classes": ["no", "yes"]},
}


def run(tmp_path, *args):
    env = dict(os.environ)
    env.pop("DPERM_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "dperm", *map(str, args)], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)


def write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def toy_rows(n=1500, seed=0):
    """Separable toy data: label yes iff (a - 5)/5 + 0.5 [red] - 0.5 [blue] > 0."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 10, n)
    b = rng.uniform(-5, 5, n)
    color = rng.choice(["red", "green", "blue"], n)
    s = (a - 5) / 5 + 0.5 * (color == "red") - 0.5 * (color == "blue")
    y = np.where(s > 0, "yes", "no")
    return [[f"{a[i]:.4f}", f"{b[i]:.4f}", color[i], y[i], "ignored"] for i in range(n)]


@pytest.fixture
def toy(tmp_path):
    write_csv(tmp_path / "train.csv", ["a", "b", "color", "y", "note"], toy_rows())
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    return tmp_path


def assert_clean_error(res, *words):
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    msg = res.stderr.strip()
    assert msg.startswith("dperm"), msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


# ----------------------------------------------------------------------------- fit / predict
def test_fit_with_schema_then_predict(toy):
    res = run(toy, "fit", "train.csv", "--schema", "schema.json", "--epsilon", "20",
              "--alpha", "1e-4", "--seed", "3", "-o", "model.json")
    assert res.returncode == 0, res.stderr
    # the privacy parameters are reported, training accuracy is not; the solver's
    # diagnostics are shown to the analyst, apart from the privacy block
    privacy_block, _, diagnostics = res.stdout.partition("analyst-only diagnostics")
    for word in ("epsilon", "epsilon'", "Delta", "beta", "Lambda"):
        assert word in privacy_block
    for word in ("final |grad|", "converged"):
        assert word not in privacy_block and word in diagnostics
    assert "accuracy" not in res.stdout.lower()
    # the seed warns (a seeded fit is not private), but nothing was read from the data
    assert "read from the private data" not in res.stderr
    assert "note" in res.stderr  # the column outside the schema is reported as ignored

    text = (toy / "model.json").read_text()
    assert "pickle" not in text
    model = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert model["format"] == "dperm.linear-model" and model["format_version"] == 2
    assert model["dperm_version"] == dperm.__version__
    assert model["classes"] == ["no", "yes"] and model["label"] == "y"
    assert model["feature_names"] == ["a", "b", "color=red", "color=green", "color=blue"]
    assert len(model["coef"]) == 5 and isinstance(model["intercept"], float)
    assert model["schema"] == {
        "numeric": {"a": [0.0, 10.0], "b": [-5.0, 5.0]},
        "categorical": {"color": ["red", "green", "blue"]},
        "label": {"column": "y", "classes": ["no", "yes"]},
    }
    assert math.isclose(model["preprocessing"]["row_divisor"], math.sqrt(3))
    assert model["schema_from_data"] is False and model["read_from_data"] == []
    priv = model["privacy"]
    assert priv["mechanism"] == "objective" and priv["epsilon"] == 20.0
    assert priv["alpha"] == 1e-4 and priv["n_samples"] == 1500 and priv["beta"] > 0
    # data-dependent solver diagnostics, the seed and the timing are not in the model file
    for key in ("grad_norm", "converged", "seed", "seconds", "n_iter", "rows_clipped"):
        assert key not in priv
    assert "grad_norm" not in text
    assert model["estimator"]["loss"] == "logistic" and model["estimator"]["fit_intercept"]
    coef = dict(zip(model["feature_names"], model["coef"]))
    assert coef["a"] > 0 and coef["color=red"] > coef["color=blue"]

    res = run(toy, "predict", "model.json", "train.csv", "-o", "pred.csv")
    assert res.returncode == 0, res.stderr
    with open(toy / "pred.csv", newline="") as fh:
        pred = list(csv.DictReader(fh))
    with open(toy / "train.csv", newline="") as fh:
        truth = [r["y"] for r in csv.DictReader(fh)]
    assert list(pred[0]) == ["prediction", "score", "probability"]
    assert len(pred) == len(truth)
    acc = np.mean([p["prediction"] == t for p, t in zip(pred, truth)])
    assert acc > 0.93, acc
    for p in pred[:50]:
        s, q = float(p["score"]), float(p["probability"])
        assert (p["prediction"] == "yes") == (s > 0)
        assert math.isclose(q, 1 / (1 + math.exp(-s)), rel_tol=1e-9)

    # to stdout; an unknown category at predict time is an error, as in the Python
    # pipeline (naming the row, line, column and value), or with --unknown zero an
    # all-zero group
    write_csv(toy / "new.csv", ["color", "b", "a"], [["purple", "0", "9.5"], ["red", "0", "1"]])
    res = run(toy, "predict", "model.json", "new.csv")
    assert_clean_error(res, "unknown category 'purple'", "column 'color'", "row 1, line 2",
                       "--unknown zero")
    res = run(toy, "predict", "model.json", "new.csv", "--unknown", "zero")
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(res.stdout.splitlines()))
    x0 = np.array([0.95, 0.5, 0, 0, 0]) / math.sqrt(3)
    s0 = x0 @ np.array(model["coef"]) + model["intercept"]
    assert math.isclose(float(rows[0]["score"]), s0, rel_tol=1e-9, abs_tol=1e-12)
    assert len(rows) == 2


def test_fit_huber_output_no_probability(toy):
    res = run(toy, "fit", "train.csv", "--schema", "schema.json", "--loss", "huber",
              "--perturbation", "output", "--no-intercept", "--positive", "no", "-o", "m.json")
    assert res.returncode == 0, res.stderr
    model = json.loads((toy / "m.json").read_text())
    assert model["classes"] == ["yes", "no"] and model["intercept"] == 0.0
    assert model["privacy"]["mechanism"] == "output"
    res = run(toy, "predict", "m.json", "train.csv")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == "prediction,score"


def test_fit_without_schema_warns_and_records_it(toy):
    res = run(toy, "fit", "train.csv", "--label", "y", "-o", "m.json", "--save-schema", "s.json")
    assert res.returncode == 0, res.stderr
    assert "PrivacyLeakWarning" in res.stderr
    model = json.loads((toy / "m.json").read_text())
    assert model["schema_from_data"] is True
    assert set(model["read_from_data"]) == {"numeric bounds", "categories", "classes"}
    assert set(model["schema"]["numeric"]) == {"a", "b"}
    assert model["schema"]["categorical"]["color"] == ["blue", "green", "red"]
    assert model["schema"]["categorical"]["note"] == ["ignored"]
    assert model["classes"] == ["no", "yes"]
    # the saved schema is a valid --schema file
    saved = json.loads((toy / "s.json").read_text())
    assert saved["label"] == {"column": "y", "classes": ["no", "yes"]}
    res = run(toy, "fit", "train.csv", "--schema", "s.json", "-o", "m2.json")
    assert res.returncode == 0 and "PrivacyLeakWarning" not in res.stderr, res.stderr


def test_fit_on_shipped_adult(tmp_path):
    res = run(tmp_path, "fit", "--epsilon", "0.05", "--seed", "0", "-o", "adult.json")
    assert res.returncode == 0, res.stderr
    assert "read from the private data" not in res.stderr  # (the seed itself warns)
    model = json.loads((tmp_path / "adult.json").read_text())
    assert model["label"] == "income" and model["classes"] == ["<=50K", ">50K"]
    assert model["privacy"]["n_samples"] == 45222 and model["privacy"]["epsilon"] == 0.05
    assert len(model["coef"]) == 105 and model["schema_from_data"] is False
    assert model["schema"]["numeric"]["age"] == [0.0, 100.0]


# ----------------------------------------------------------------------------- bad files
BAD_FIT = {
    "empty": ("", ["empty"]),
    "header_only": ("a,b,color,y\n", ["no data rows"]),
    "no_label": ("a,b,color\n1,2,red\n3,4,blue\n", ["label column 'y'", "not found"]),
    "non_numeric": ("a,b,color,y\n1,2,red,yes\n1,abc,red,no\n", ["non-numeric", "'abc'", "'b'", "row 2"]),
    "missing_number": ("a,b,color,y\n1,,red,yes\n1,2,red,no\n", ["missing value", "'b'", "row 1"]),
    "unknown_category": ("a,b,color,y\n1,2,red,yes\n1,2,purple,no\n",
                         ["unknown category 'purple'", "column 'color'", "row 2"]),
    "bad_label": ("a,b,color,y\n1,2,red,yes\n1,2,red,maybe\n", ["'maybe'", "classes", "row 2"]),
    "ragged": ("a,b,color,y\n1,2,red,yes\n1,2,red\n", ["row 2", "3 fields"]),
    "missing_column": ("b,color,y\n2,red,yes\n", ["'a'", "missing"]),
    "no_header": ("1,2,3,4\n5,6,7,8\n", ["header"]),
}


@pytest.mark.parametrize("case", sorted(BAD_FIT))
def test_fit_bad_file(toy, case):
    content, words = BAD_FIT[case]
    (toy / "bad.csv").write_text(content)
    res = run(toy, "fit", "bad.csv", "--schema", "schema.json", "-o", "m.json")
    assert_clean_error(res, *words)
    assert not (toy / "m.json").exists()


def test_fit_missing_file_and_bad_schema(toy):
    assert_clean_error(run(toy, "fit", "nope.csv", "--label", "y", "-o", "m.json"), "nope.csv", "not found")
    (toy / "bad_schema.json").write_text('{"numeric": {"a": [10, 0]}}')
    assert_clean_error(run(toy, "fit", "train.csv", "--label", "y", "--schema", "bad_schema.json",
                           "-o", "m.json"), "low < high")
    (toy / "bad_schema.json").write_text('{"numeric": ')
    assert_clean_error(run(toy, "fit", "train.csv", "--label", "y", "--schema", "bad_schema.json",
                           "-o", "m.json"), "invalid JSON")


def test_predict_bad_inputs(toy):
    assert run(toy, "fit", "train.csv", "--schema", "schema.json", "-o", "m.json").returncode == 0
    (toy / "broken.json").write_text('{"format": "dperm.linear-model", "coef": [1, 2')
    assert_clean_error(run(toy, "predict", "broken.json", "train.csv"), "broken.json", "invalid JSON")
    model = json.loads((toy / "m.json").read_text())
    model["coef"] = model["coef"][:-1]
    (toy / "short.json").write_text(json.dumps(model))
    assert_clean_error(run(toy, "predict", "short.json", "train.csv"), "not a valid dperm model")
    assert_clean_error(run(toy, "predict", "schema.json", "train.csv"), "not a valid dperm model")
    assert_clean_error(run(toy, "predict", "missing.json", "train.csv"), "not found")
    (toy / "bad.csv").write_text("a,b,color\n1,x,red\n")
    assert_clean_error(run(toy, "predict", "m.json", "bad.csv"), "non-numeric", "'x'", "row 1")
    (toy / "empty.csv").write_text("")
    assert_clean_error(run(toy, "predict", "m.json", "empty.csv"), "empty")


# ----------------------------------------------------------------------------- in process
def test_help_version_info_and_usage(capsys):
    assert cli.main(["--version"]) == 0
    assert dperm.__version__ in capsys.readouterr().out
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "version" in out and "openmp" in out
    assert cli.main(["fit", "--help"]) == 0
    out = capsys.readouterr().out
    assert '"categorical"' in out and "PrivacyLeakWarning" in out  # the schema format is documented
    assert cli.main(["reproduce", "--help"]) == 0
    out = capsys.readouterr().out
    for word in ("table1", "figure2", "tuning", "--quick", "--out", "--seed", "--threads",
                 "--no-progress"):
        assert word in out
    assert cli.main(["reproduce", "table9"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert cli.main(["fit", "x.csv", "--epsilon", "0", "-o", "m.json"]) == 2
    assert cli.main([]) == 2
    assert cli.main(["fit", "--label", "y"]) == 2  # no -o
    assert "required" in capsys.readouterr().err


def test_reproduce_calls_the_runners(monkeypatch, tmp_path, capsys):
    from dperm import experiments

    calls = {}

    def fake_table1(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0):
        calls["table1"] = dict(out=out, quick=quick, progress=progress, n_threads=n_threads, seed=seed)
        path = os.path.join(out, "table1.csv")
        os.makedirs(out, exist_ok=True)
        open(path, "w").write("x\n")
        return {}, "THE TABLE", path

    def fake_figure2(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0):
        calls["figure2"] = dict(out=out, quick=quick, n_threads=n_threads)
        path = os.path.join(out, "figure2.csv")
        os.makedirs(out, exist_ok=True)
        open(path, "w").write("loss,epsilon,error\nlogistic,0.1,0.2\n")
        return {}, path, None

    def fake_tuning(out="dperm-results", quick=False, progress=True, seed=0):
        calls["tuning"] = dict(out=out, quick=quick, seed=seed)
        return {}, os.path.join(out, "tuning.csv"), os.path.join(out, "tuning.png")

    monkeypatch.setattr(experiments, "reproduce_table1", fake_table1)
    monkeypatch.setattr(experiments, "reproduce_figure2", fake_figure2)
    monkeypatch.setattr(experiments, "reproduce_tuning", fake_tuning)
    out = str(tmp_path / "res")
    assert cli.main(["reproduce", "table1", "--quick", "--out", out, "--seed", "7",
                     "--threads", "2", "--no-progress"]) == 0
    # the runner writes into a staging folder inside --out, renamed into place at the end
    staged = calls["table1"].pop("out")
    assert os.path.dirname(staged) == out and os.path.basename(staged).startswith(".dperm-")
    assert calls["table1"] == dict(quick=True, progress=False, n_threads=2, seed=7)
    assert os.listdir(out) == ["table1.csv"] and open(os.path.join(out, "table1.csv")).read() == "x\n"
    text = capsys.readouterr().out
    assert "THE TABLE" in text and f"CSV: {os.path.join(out, 'table1.csv')}" in text
    assert ".dperm-" not in text and "wall time" in text
    assert "Reproducing Table 1 on Adult (quick, seed 7)" in text

    assert cli.main(["reproduce", "figure2", "--out", out]) == 0
    assert os.path.dirname(calls["figure2"].pop("out")) == out
    assert calls["figure2"] == dict(quick=False, n_threads=None)
    text = capsys.readouterr().out
    assert "figure2.csv" in text and "logistic" in text and "plot" in text

    assert cli.main(["reproduce", "tuning", "--quick", "--threads", "3", "--out", out]) == 0
    assert os.path.dirname(calls["tuning"].pop("out")) == out
    assert calls["tuning"] == dict(quick=True, seed=0)
    captured = capsys.readouterr()
    assert "tuning.png" in captured.out and "--threads" in captured.err

    (tmp_path / "afile").write_text("")
    assert cli.main(["reproduce", "table1", "--out", str(tmp_path / "afile")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_main_in_process_fit_predict_roundtrip(toy, capsys, monkeypatch):
    monkeypatch.chdir(toy)
    assert cli.main(["fit", "train.csv", "--schema", "schema.json", "--perturbation", "none",
                     "-o", "np.json"]) == 0
    captured = capsys.readouterr()
    assert "NON-PRIVATE" in captured.out and "without privacy" in captured.err.lower()
    model = json.loads((toy / "np.json").read_text())  # strict JSON: inf written as "inf"
    assert model["privacy"]["epsilon"] == "inf"
    assert cli.main(["predict", "np.json", "train.csv", "-o", "p.csv"]) == 0
    assert cli.main(["predict", "np.json", "nope.csv"]) == 2
    assert "not found" in capsys.readouterr().err


# ----------------------------------------------------------------------------- missing values, delimiters
def _fit(tmp_path, capsys, *args):
    """`dperm fit` in process: (exit status, stdout, stderr)."""
    code = cli.main(["fit", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def holes(tmp_path, monkeypatch):
    """The toy data with one blank cell in the numeric column b (row 5, line 6)."""
    rows = toy_rows(400, seed=1)
    rows[4][1] = ""
    write_csv(tmp_path / "blank.csv", ["a", "b", "color", "y", "note"], rows)
    monkeypatch.chdir(tmp_path)
    return tmp_path, rows


def test_numeric_column_with_a_blank_cell_is_an_error_naming_it(holes, capsys):
    tmp_path, _ = holes
    code, _, err = _fit(tmp_path, capsys, "blank.csv", "--label", "y", "-o", "m.json")
    assert code == 2 and "Traceback" not in err
    assert "missing value in column 'b' (row 5, line 6)" in err and "--missing drop" in err
    assert not (tmp_path / "m.json").exists()
    # before: the column silently became categorical with one group per distinct value
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    code, _, err = _fit(tmp_path, capsys, "blank.csv", "--schema", "schema.json", "-o", "m.json")
    assert code == 2 and "missing value in column 'b' (row 5, line 6)" in err


def test_missing_drop_fits_and_reports_rows_dropped(holes, capsys):
    tmp_path, rows = holes
    code, out, err = _fit(tmp_path, capsys, "blank.csv", "--label", "y", "--missing", "drop",
                          "-o", "m.json")
    assert code == 0, err
    assert "dropped 1 of 400" in err and "399 remain" in err
    assert "dropped" not in out  # a count about the private data: stderr, for the analyst
    model = json.loads((tmp_path / "m.json").read_text())
    # normalised by the PUBLIC count of rows read, not the 399 left (a row with a
    # missing cell may not change the release; docs/privacy_analysis.md, section 15)
    assert model["privacy"]["n_samples"] == model["training"]["n_samples"] == 400
    assert set(model["schema"]["numeric"]) == {"a", "b"}  # b stays numeric
    assert model["feature_names"][:2] == ["a", "b"] and len(model["coef"]) == 6
    # a missing label is a missing value of a used column too
    rows[9][3] = "NA"
    write_csv(tmp_path / "blank2.csv", ["a", "b", "color", "y", "note"], rows)
    code, _, err = _fit(tmp_path, capsys, "blank2.csv", "--label", "y", "-o", "m2.json")
    assert code == 2 and "column 'b' (row 5" in err  # the first row with a missing value
    code, _, err = _fit(tmp_path, capsys, "blank2.csv", "--label", "y", "--missing", "drop",
                        "-o", "m2.json")
    assert code == 0 and "dropped 2 of 400" in err, err
    assert json.loads((tmp_path / "m2.json").read_text())["classes"] == ["no", "yes"]


def test_schema_fill_replaces_missing_cells_when_fitting_and_predicting(holes, capsys):
    tmp_path, rows = holes
    schema = dict(SCHEMA, fill={"b": 0, "color": "green"})
    (tmp_path / "fill.json").write_text(json.dumps(schema))
    code, out, err = _fit(tmp_path, capsys, "blank.csv", "--schema", "fill.json", "-o", "m.json")
    assert code == 0, err
    assert "dropped" not in err and "read from the private data" not in err
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["privacy"]["n_samples"] == 400
    assert model["schema"]["fill"] == {"b": 0.0, "color": "green"}
    # predict: the cell takes the public fill value, one output row per input row
    write_csv(tmp_path / "new.csv", ["a", "b", "color"], [["5", "", "?"], ["5", "0", "green"]])
    assert cli.main(["predict", "m.json", "new.csv"]) == 0
    pred = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert len(pred) == 2 and pred[0]["score"] == pred[1]["score"]


def test_predict_missing_cell_without_fill_is_an_error(toy, capsys, monkeypatch):
    monkeypatch.chdir(toy)
    assert cli.main(["fit", "train.csv", "--schema", "schema.json", "-o", "m.json"]) == 0
    capsys.readouterr()
    write_csv(toy / "new.csv", ["a", "b", "color"], [["1", "2", "red"], ["3", "NaN", "red"]])
    assert cli.main(["predict", "m.json", "new.csv", "-o", "p.csv"]) == 2
    err = capsys.readouterr().err
    assert "missing value in column 'b' (row 2, line 3)" in err and "fill" in err
    assert not (toy / "p.csv").exists()


def test_bad_cell_in_a_numeric_column_is_an_error_naming_it(holes, capsys):
    tmp_path, rows = holes
    rows[4][1] = "1.5"
    rows[7][1] = "abc"
    write_csv(tmp_path / "bad.csv", ["a", "b", "color", "y", "note"], rows)
    code, _, err = _fit(tmp_path, capsys, "bad.csv", "--label", "y", "-o", "m.json")
    assert code == 2 and "Traceback" not in err
    for word in ("non-numeric value 'abc'", "column 'b'", "row 8, line 9"):
        assert word in err, err
    # corrected, the column is numeric; a column of words stays categorical
    rows[7][1] = "2"
    write_csv(tmp_path / "ok.csv", ["a", "b", "color", "y", "note"], rows)
    code, _, err = _fit(tmp_path, capsys, "ok.csv", "--label", "y", "-o", "m.json")
    assert code == 0, err
    schema = json.loads((tmp_path / "m.json").read_text())["schema"]
    assert set(schema["numeric"]) == {"a", "b"} and set(schema["categorical"]) == {"color", "note"}


def test_semicolon_file_needs_delimiter(holes, capsys):
    tmp_path, rows = holes
    rows[4][1] = "0.5"
    with open(tmp_path / "semi.csv", "w", newline="") as fh:
        w = csv.writer(fh, delimiter=";")
        w.writerow(["a", "b", "color", "y", "note"])
        w.writerows(rows)
    code, _, err = _fit(tmp_path, capsys, "semi.csv", "--label", "y", "-o", "m.json")
    assert code == 2
    assert ("the header has one column" in err and "is the file delimited by ';'? use "
            "--delimiter ';'" in err), err
    code, _, err = _fit(tmp_path, capsys, "semi.csv", "--label", "y", "--delimiter", ";",
                        "-o", "m.json")
    assert code == 0, err
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["feature_names"][:2] == ["a", "b"] and model["privacy"]["n_samples"] == 400
    # predict reads it with the same option; tabs by name
    assert cli.main(["predict", "m.json", "semi.csv"]) == 2
    assert "--delimiter ';'" in capsys.readouterr().err
    assert cli.main(["predict", "m.json", "semi.csv", "--delimiter", ";", "-o", "p.csv"]) == 0
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 401
    (tmp_path / "t.tsv").write_text("a\tb\tcolor\tnote\n1\t2\tred\tignored\n3\t4\tblue\tignored\n")
    assert cli.main(["predict", "m.json", "t.tsv"]) == 2
    assert "--delimiter tab" in capsys.readouterr().err
    assert cli.main(["predict", "m.json", "t.tsv", "--delimiter", "tab"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert cli.main(["fit", "semi.csv", "--label", "y", "--delimiter", "ab", "-o", "m.json"]) == 2
    assert "one character" in capsys.readouterr().err


def test_fit_help_documents_fill_missing_and_delimiter(capsys):
    assert cli.main(["fit", "--help"]) == 0
    out = capsys.readouterr().out
    for word in ('"fill"', "--missing", "drop", "--delimiter", "NA"):
        assert word in out, word
    assert cli.main(["predict", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--delimiter" in out and "fill" in out


# ------------------------------------------------------------------- (epsilon, delta), model format 2
PUBLIC_PRIVACY_KEYS = {"mechanism", "noise", "loss", "neighbouring", "epsilon", "delta",
                       "epsilon_prime", "extra_l2", "beta", "sigma", "sigma_output", "grid",
                       "alpha", "data_norm", "h", "n_samples", "curvature", "n_classes",
                       "multiclass", "epsilon_total", "delta_total"}


def test_gaussian_fit_records_delta_sigma_and_neighbouring(toy, capsys, monkeypatch):
    monkeypatch.chdir(toy)
    code, out, err = _fit(toy, capsys, "train.csv", "--schema", "schema.json", "--epsilon", "2",
                          "--delta", "1e-6", "--neighbouring", "add_remove", "--n-public", "1500",
                          "-o", "g.json")
    assert code == 0, err
    block, _, diagnostics = out.partition("analyst-only diagnostics")
    for word in ("delta", "1e-06", "add_remove", "Gaussian", "sigma", "Delta", "Lambda"):
        assert word in block, word
    assert "final |grad|" not in block and "final |grad|" in diagnostics
    assert "n-public" not in err  # a public count was given: no warning about it
    text = (toy / "g.json").read_text()
    model = json.loads(text)
    assert model["format_version"] == 2
    est = model["estimator"]
    assert est["delta"] == 1e-6 and est["neighbouring"] == "add_remove" and est["n_public"] == 1500
    priv = model["privacy"]
    # exactly the public record: no solver diagnostics, seed or timing
    assert set(priv) == PUBLIC_PRIVACY_KEYS
    for word in ("grad_norm", "converged", "n_iter", "rows_clipped", "seed", "seconds"):
        assert word not in text
    assert priv["delta"] == 1e-6 and priv["delta_total"] == 1e-6 and priv["epsilon"] == 2.0
    assert priv["noise"] == "gaussian" and priv["sigma"] > 0 and priv["beta"] is None
    assert priv["neighbouring"] == "add_remove" and priv["n_samples"] == 1500
    assert priv["mechanism"] == "objective" and priv["extra_l2"] is not None
    assert priv["n_classes"] == 2 and priv["multiclass"] is None
    assert len(model["coef"]) == 5 and isinstance(model["intercept"], float)
    assert cli.main(["predict", "g.json", "train.csv", "-o", "p.csv"]) == 0


def test_pure_fit_prints_the_pure_guarantee(toy, capsys, monkeypatch):
    monkeypatch.chdir(toy)
    code, out, err = _fit(toy, capsys, "train.csv", "--schema", "schema.json", "-o", "p.json")
    assert code == 0, err
    block = out.partition("analyst-only diagnostics")[0]
    for word in ("pure epsilon-DP", "replace_one", "Laplace-type", "beta", "Delta"):
        assert word in block, word
    priv = json.loads((toy / "p.json").read_text())["privacy"]
    assert priv["delta"] == 0 and priv["noise"] == "l2_laplace" and priv["sigma"] is None
    assert priv["neighbouring"] == "replace_one" and priv["extra_l2"] == 0


def test_add_remove_without_n_public_warns_naming_the_flag(toy, capsys, monkeypatch):
    monkeypatch.chdir(toy)
    code, out, err = _fit(toy, capsys, "train.csv", "--schema", "schema.json",
                          "--neighbouring", "add_remove", "-o", "a.json")
    assert code == 0, err
    assert "PrivacyLeakWarning" in err and "--n-public" in err
    assert "n_public: not given" not in err  # the library's wording is replaced, not repeated


def test_amp_fit_records_the_output_noise_and_grid(toy, capsys, monkeypatch):
    monkeypatch.chdir(toy)
    code, out, err = _fit(toy, capsys, "train.csv", "--schema", "schema.json", "--delta", "1e-5",
                          "--perturbation", "amp", "-o", "amp.json")
    assert code == 0, err
    block = out.partition("analyst-only diagnostics")[0]
    assert "AMP" in block and "sigma (output)" in block and "grid" in block
    priv = json.loads((toy / "amp.json").read_text())["privacy"]
    assert priv["mechanism"] == "amp" and priv["sigma_output"] > 0 and priv["grid"] > 0


@pytest.mark.parametrize("value", ["1", "1.5", "-0.1", "nan", "abc"])
def test_delta_out_of_range_names_the_flag(toy, capsys, monkeypatch, value):
    monkeypatch.chdir(toy)
    code, out, err = _fit(toy, capsys, "train.csv", "--schema", "schema.json", "--delta", value,
                          "-o", "m.json")
    assert code == 2 and "--delta" in err and "Traceback" not in err
    assert not (toy / "m.json").exists()


def test_amp_without_delta_and_n_public_without_add_remove_are_errors(toy, capsys, monkeypatch):
    monkeypatch.chdir(toy)
    code, _, err = _fit(toy, capsys, "train.csv", "--schema", "schema.json",
                        "--perturbation", "amp", "-o", "m.json")
    assert code == 2 and "--perturbation amp" in err and "--delta" in err
    code, _, err = _fit(toy, capsys, "train.csv", "--schema", "schema.json", "--n-public", "100",
                        "-o", "m.json")
    assert code == 2 and "--n-public" in err and "add_remove" in err
    code, _, err = _fit(toy, capsys, "train.csv", "--schema", "schema.json", "--neighbouring",
                        "sideways", "-o", "m.json")
    assert code == 2 and "--neighbouring" in err
    assert not (toy / "m.json").exists()


def _v1_model(toy):
    """A model file in the layout of format version 1 (written by dperm before (epsilon,
    delta)): its privacy record's "delta" is the paper's Delta, there is no noise,
    neighbouring, sigma, ...; the estimator has no delta."""
    return {
        "format": "dperm.linear-model", "format_version": 1, "dperm_version": "0.1.0",
        "estimator": {"class": "PrivateLinearClassifier", "loss": "logistic",
                      "perturbation": "objective", "epsilon": 1.0, "alpha": "auto", "h": 0.5,
                      "fit_intercept": True, "data_norm": 1.0},
        "label": "y", "classes": ["no", "yes"],
        "feature_names": ["a", "b", "color=red", "color=green", "color=blue"],
        "coef": [3.0, 0.0, 1.0, 0.0, -1.0], "intercept": -1.5,
        "schema": SCHEMA,
        "preprocessing": {"row_divisor": math.sqrt(3), "row_norm_bound": 1.0},
        "schema_from_data": False, "read_from_data": [],
        "privacy": {"mechanism": "objective", "loss": "logistic", "epsilon": 1.0,
                    "epsilon_prime": 0.5, "delta": 0.25, "beta": 0.25, "alpha": 0.001,
                    "data_norm": 1.0, "h": 0.5, "n_samples": 1500, "curvature": 0.25},
        "training": {"data": "train.csv", "n_samples": 1500, "n_features": 5},
    }


def test_version_1_model_still_loads_and_predicts(toy, capsys, monkeypatch):
    from dperm.cli._io import load_model

    monkeypatch.chdir(toy)
    (toy / "v1.json").write_text(json.dumps(_v1_model(toy)))
    model = load_model(str(toy / "v1.json"))
    priv = model["privacy"]
    # the old "delta" (the extra regulariser Delta) is read as extra_l2
    assert priv["extra_l2"] == 0.25 and priv["delta"] == 0.0
    assert priv["neighbouring"] == "replace_one" and priv["noise"] == "l2_laplace"
    assert priv["epsilon_prime"] == 0.5 and priv["beta"] == 0.25 and priv["n_classes"] == 2
    assert model["estimator"]["delta"] == 0.0
    assert model["estimator"]["neighbouring"] == "replace_one"
    assert cli.main(["predict", "v1.json", "train.csv", "-o", "p.csv"]) == 0
    with open(toy / "p.csv", newline="") as fh:
        pred = list(csv.DictReader(fh))
    with open(toy / "train.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(pred) == len(rows)
    # score = x.coef + intercept on the encoded row: a = 10, color red -> (3 + 1)/sqrt(3) - 1.5
    for p, r in zip(pred[:20], rows):
        a, red, blue = float(r["a"]) / 10, r["color"] == "red", r["color"] == "blue"
        s = (3 * a + red - blue) / math.sqrt(3) - 1.5
        assert math.isclose(float(p["score"]), s, rel_tol=1e-9, abs_tol=1e-12)
        assert p["prediction"] == ("yes" if s > 0 else "no")


def test_other_format_versions_are_refused(toy, capsys, monkeypatch):
    monkeypatch.chdir(toy)
    for version in (5, 0, "2", True, None):
        model = _v1_model(toy)
        model["format_version"] = version
        (toy / "vx.json").write_text(json.dumps(model))
        assert cli.main(["predict", "vx.json", "train.csv"]) == 2
        err = capsys.readouterr().err
        assert "unsupported format_version" in err and "versions 1, 2, 3, 4" in err, err
    # version 3 is a regression model's: a classifier's file with it is refused
    model = _v1_model(toy)
    model["format_version"] = 3
    (toy / "vx.json").write_text(json.dumps(model))
    assert cli.main(["predict", "vx.json", "train.csv"]) == 2
    assert "'task'" in capsys.readouterr().err
    # a version 1 file cannot hold more than two classes
    model = _v1_model(toy)
    model["classes"] = ["no", "yes", "maybe"]
    (toy / "v1k.json").write_text(json.dumps(model))
    assert cli.main(["predict", "v1k.json", "train.csv"]) == 2
    assert "not a valid dperm model" in capsys.readouterr().err


# ----------------------------------------------------------------------------- K > 2 classes
SCHEMA3 = {
    "numeric": {"a": [0, 10], "b": [-5, 5]},
    "categorical": {"color": ["red", "green", "blue"]},
    "label": {"column": "y", "classes": ["lo", "mid", "hi"]},
}


def three_class_rows(n=1500, seed=0):
    """lo / mid / hi by thirds of a (b and color are noise)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 10, n)
    b = rng.uniform(-5, 5, n)
    color = rng.choice(["red", "green", "blue"], n)
    y = np.where(a < 10 / 3, "lo", np.where(a < 20 / 3, "mid", "hi"))
    return [[f"{a[i]:.4f}", f"{b[i]:.4f}", color[i], y[i]] for i in range(n)]


@pytest.fixture
def three(tmp_path, monkeypatch):
    write_csv(tmp_path / "train3.csv", ["a", "b", "color", "y"], three_class_rows())
    write_csv(tmp_path / "test3.csv", ["a", "b", "color", "y"], three_class_rows(600, seed=1))
    (tmp_path / "schema3.json").write_text(json.dumps(SCHEMA3))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _predictions(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("opts, multiclass", [
    (("--delta", "1e-6"), "multinomial"),               # logistic, delta > 0: softmax
    ((), "ovr"),                                         # pure: one-vs-rest, epsilon/K each
    (("--loss", "huber", "--delta", "1e-6"), "ovr"),     # not logistic: one-vs-rest
])
def test_three_class_fit_predict_round_trip(three, capsys, opts, multiclass):
    code, out, err = _fit(three, capsys, "train3.csv", "--schema", "schema3.json",
                          "--epsilon", "6", *opts, "--holdout", "test3.csv", "-o", "m3.json")
    assert code == 0, err
    block, _, diagnostics = out.partition("analyst-only diagnostics")
    assert "3: one-vs-rest" in block if multiclass == "ovr" else "multinomial" in block
    if multiclass == "ovr":
        assert "each with epsilon = 2" in block and "total epsilon = 6" in block
    holdout = float(diagnostics.split("holdout accuracy:")[1].split()[0])
    model = json.loads((three / "m3.json").read_text())
    assert model["format_version"] == 2 and model["classes"] == ["lo", "mid", "hi"]
    assert model["schema"]["label"] == {"column": "y", "classes": ["lo", "mid", "hi"]}
    # K lists of d coefficients and K intercepts
    assert len(model["coef"]) == 3 and all(len(r) == 5 for r in model["coef"])
    assert len(model["intercept"]) == 3 and all(isinstance(v, float) for v in model["intercept"])
    priv = model["privacy"]
    assert set(priv) == PUBLIC_PRIVACY_KEYS
    assert priv["n_classes"] == 3 and priv["multiclass"] == multiclass
    assert priv["epsilon_total"] == 6.0
    assert priv["epsilon"] == (2.0 if multiclass == "ovr" else 6.0)
    # the class with the largest coefficient on a is hi, the smallest lo
    wa = [r[0] for r in model["coef"]]
    assert wa[2] > wa[1] or wa[2] > wa[0]

    assert cli.main(["predict", "m3.json", "test3.csv", "-o", "p3.csv"]) == 0, \
        capsys.readouterr().err
    pred = _predictions(three / "p3.csv")
    truth = [r["y"] for r in _predictions(three / "test3.csv")]
    logistic = "huber" not in opts
    assert list(pred[0]) == (["prediction", "score:lo", "score:mid", "score:hi"]
                             + (["probability:lo", "probability:mid", "probability:hi"]
                                if logistic else []))
    for p in pred:
        scores = [float(p[f"score:{c}"]) for c in ("lo", "mid", "hi")]
        assert p["prediction"] == ("lo", "mid", "hi")[int(np.argmax(scores))]
        if logistic:
            probs = [float(p[f"probability:{c}"]) for c in ("lo", "mid", "hi")]
            assert math.isclose(sum(probs), 1.0, rel_tol=1e-9)
            assert int(np.argmax(probs)) == int(np.argmax(scores)) or multiclass == "ovr"
    acc = np.mean([p["prediction"] == t for p, t in zip(pred, truth)])
    assert acc > 0.5, acc                     # chance is 1/3
    assert math.isclose(acc, holdout, abs_tol=5e-5)   # holdout uses the same argmax


def test_three_class_model_matches_the_estimator(three, capsys):
    """The model file's scores are the estimator's decision_function on the encoded rows."""
    from dperm import PrivateLinearClassifier
    from dperm.cli._io import encode_rows, label_codes, load_model, read_csv

    code, _, err = _fit(three, capsys, "train3.csv", "--schema", "schema3.json", "--seed", "5",
                        "--delta", "1e-6", "-o", "m3.json")
    assert code == 0, err
    model = load_model(str(three / "m3.json"))
    assert model["coef"].shape == (3, 5) and model["intercept"].shape == (3,)
    table = read_csv(str(three / "train3.csv"))
    X, _ = encode_rows(table, model["schema"])
    y = label_codes(table, "y", model["classes"])
    assert sorted(set(y.tolist())) == [0, 1, 2]
    clf = PrivateLinearClassifier(epsilon=1.0, delta=1e-6, classes=[0, 1, 2], random_state=5)
    with pytest.warns(dperm.exceptions.PrivacyLeakWarning):   # the seed
        clf.fit(X, y)
    assert clf.privacy_["multiclass"] == "multinomial"
    np.testing.assert_allclose(model["coef"], clf.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(model["intercept"], clf.intercept_, rtol=1e-7, atol=1e-9)


def test_three_class_errors(three, capsys):
    code, _, err = _fit(three, capsys, "train3.csv", "--schema", "schema3.json",
                        "--positive", "hi", "-o", "m.json")
    assert code == 2 and "--positive" in err and "two classes" in err
    bad = dict(SCHEMA3, label={"column": "y", "classes": ["lo", "mid", "lo"]})
    (three / "bad3.json").write_text(json.dumps(bad))
    code, _, err = _fit(three, capsys, "train3.csv", "--schema", "bad3.json", "-o", "m.json")
    assert code == 2 and "'lo'" in err and "more than once" in err
    # a label outside the public list is an error naming the row
    two = dict(SCHEMA3, label={"column": "y", "classes": ["lo", "mid", "top"]})
    (three / "two.json").write_text(json.dumps(two))
    code, _, err = _fit(three, capsys, "train3.csv", "--schema", "two.json", "-o", "m.json")
    assert code == 2 and "'hi'" in err and "not one of the classes" in err
    assert not (three / "m.json").exists()
    # a K-class model file whose coef is not K rows of d numbers is refused
    assert _fit(three, capsys, "train3.csv", "--schema", "schema3.json", "-o", "m3.json")[0] == 0
    model = json.loads((three / "m3.json").read_text())
    for key, value in (("coef", model["coef"][:2]), ("coef", [r[:-1] for r in model["coef"]]),
                       ("intercept", model["intercept"][0]), ("intercept", model["intercept"][:2])):
        (three / "broken.json").write_text(json.dumps(dict(model, **{key: value})))
        assert cli.main(["predict", "broken.json", "test3.csv"]) == 2
        err = capsys.readouterr().err
        assert "not a valid dperm model" in err and f"'{key}'" in err, err


# ----------------------------------------------------------------------------- no header row
@pytest.mark.parametrize("first", [
    ["39", "State-gov", "77516", "Bachelors", "13", "Never-married", "0", "0", "40", "<=50K"],
    ["1", "0", "1", "1", "0"],
])
def test_a_file_without_header_row_says_so(tmp_path, capsys, first):
    """A public file distributed without a header (its first line repeats values) used to
    fail with "column name '0' appears twice"."""
    path = tmp_path / "noheader.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(first)
        w.writerow(first)
    code, _, err = _fit(tmp_path, capsys, path, "--label", first[-1], "-o", tmp_path / "m.json")
    assert code == 2 and "Traceback" not in err
    assert "seems to have no header" in err and "Add a first line naming the columns" in err
    assert "appears twice in the header" not in err


def test_a_repeated_name_in_a_real_header_is_still_named(tmp_path, capsys):
    path = write_csv(tmp_path / "dup.csv", ["a", "b", "a", "y"], [["1", "2", "3", "yes"]] * 3)
    code, _, err = _fit(tmp_path, capsys, path, "--label", "y", "-o", tmp_path / "m.json")
    assert code == 2 and "column name 'a' appears twice in the header row" in err


def test_positive_class_without_schema_is_explained(toy, capsys, monkeypatch):
    """Without a schema the positive class is the larger label in sort order: the note says
    so and how to choose (for a label 'late' with values ontime/late, 'ontime' is picked)."""
    monkeypatch.chdir(toy)
    rows = [[r[0], r[1], r[2], "late" if r[3] == "yes" else "ontime", r[4]] for r in toy_rows(300)]
    write_csv(toy / "late.csv", ["a", "b", "color", "late", "note"], rows)
    code, _, err = _fit(toy, capsys, "late.csv", "--label", "late", "--epsilon", "1",
                        "--perturbation", "none", "-o", "m.json")
    assert code == 0
    assert "positive class: 'ontime', the larger of the two labels in sort order" in err
    assert "--positive LABEL" in err and "label.classes" in err


def test_schema_copied_from_pandas_values_with_spaces_fits_like_the_clean_one(toy, capsys,
                                                                             monkeypatch):
    """pd.read_csv without skipinitialspace keeps ' red'; a schema copied from those values
    used to fail on the command line (cells were stripped, schema strings were not). Both are
    normalised by one rule now: the two schemas give the same model."""
    monkeypatch.chdir(toy)
    padded = dict(SCHEMA, categorical={"color": [" red", "green ", " blue "]})
    (toy / "padded.json").write_text(json.dumps(padded))
    models = []
    for schema in ("schema.json", "padded.json"):
        code, _, err = _fit(toy, capsys, "train.csv", "--schema", schema, "--epsilon", "1",
                            "--seed", "3", "-o", f"m_{schema}")
        assert code == 0, err
        models.append(json.loads((toy / f"m_{schema}").read_text())["coef"])
    assert models[0] == models[1]
