"""What a new user of the command line hit (issue 29, items 6 and 9): an abort at exit
after the right error, an unseen category predicted silently, labels of one class, no
majority baseline beside the holdout accuracy, help texts that said "classifier" for
regression and fit's text under `bounds --help`, a headerless file reported as a missing
column, scikit-learn imported by every command, and a bug in dperm reported as the
user's error."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from dperm import cli

SCHEMA = {"numeric": {"a": [0, 10]}, "categorical": {"color": ["red", "blue"]},
          "label": {"column": "y", "classes": ["no", "yes"]}}


def _rows(n=60):
    return "".join(f"{i % 10},{'red' if i % 3 else 'blue'},{'yes' if i % 10 > 4 else 'no'}\n"
                   for i in range(n))


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.csv").write_text("a,color,y\n" + _rows())
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    return tmp_path


def _env():
    env = dict(os.environ)
    env.pop("DPERM_DEBUG", None)
    return env


# ----------------------------------------------------------------------------- 6: the abort
def test_no_python_callback_is_handed_to_arrows_threads(files, monkeypatch):
    """The abort: pyarrow runs a ParseOptions.invalid_row_handler on its thread pool and
    releases it there (taking the GIL); when that happened while the interpreter was
    exiting, the process died with "terminate called without an active exception". A
    threaded read must carry no Python callback; the callback is used only by a serial
    read (a file with a line of spaces or a ragged row)."""
    from dperm.cli import _io

    calls = []
    real = _io.pacsv.open_csv

    def spy(src, read_options=None, parse_options=None, convert_options=None):
        calls.append((read_options.use_threads, parse_options.invalid_row_handler))
        return real(src, read_options=read_options, parse_options=parse_options,
                    convert_options=convert_options)
    monkeypatch.setattr(_io.pacsv, "open_csv", spy)
    (files / "blank.csv").write_text("a,color,y\n1,red,no\n   \n2,blue,yes\n")
    (files / "ragged.csv").write_text("a,color,y\n1,red,no\n2,blue\n")
    assert _io.read_csv(str(files / "train.csv")).n_rows == 60
    t = _io.read_csv(str(files / "blank.csv"))
    assert t.n_rows == 2 and t.columns["a"].to_pylist() == ["1", "2"]
    with pytest.raises(_io.CLIError, match="row 2 .line 3. has 2 fields"):
        _io.read_csv(str(files / "ragged.csv"))
    assert calls and all(not (threads and handler is not None) for threads, handler in calls)
    assert any(handler is not None for _, handler in calls)      # the serial fallback ran


def test_fallback_read_keeps_every_row_once(tmp_path):
    """A line of spaces after many rows: the threaded pass yields the rows before it, the
    serial pass skips those and goes on; every row once, in order, numbered as before."""
    from dperm.cli._io import CSVReader, read_csv

    lines = [f"{i},{i % 7}\n" for i in range(120_000)]
    (tmp_path / "plain.csv").write_text("a,b\n" + "".join(lines))
    (tmp_path / "gap.csv").write_text("a,b\n" + "".join(lines[:100_000]) + "  \t \n"
                                      + "".join(lines[100_000:]))
    a, b = read_csv(str(tmp_path / "plain.csv")), read_csv(str(tmp_path / "gap.csv"))
    assert a.n_rows == b.n_rows == 120_000
    assert a.columns["a"].equals(b.columns["a"]) and a.columns["b"].equals(b.columns["b"])
    with CSVReader(str(tmp_path / "gap.csv")) as r:
        sizes = [t.n_rows for t in r.chunks(25_000)]
    assert sizes == [25_000] * 4 + [20_000]


def _bad_fit_runs(files, n):
    (files / "bad.csv").write_text("a,color,y\n" + _rows(3000) + "oops,red,no\n")
    codes, errs = [], []
    for _ in range(n):
        r = subprocess.run([sys.executable, "-m", "dperm", "fit", "bad.csv", "--schema",
                            "s.json", "-o", "m.json"], cwd=files, capture_output=True,
                           text=True, env=_env(), timeout=300)
        codes.append(r.returncode)
        errs.append(r.stderr)
    assert all("terminate called" not in e for e in errs), [e for e in errs if "terminate" in e]
    assert codes == [2] * n, codes
    assert all(e.strip().endswith("(row 3001, line 3002)") or "row 3001" in e for e in errs)
    assert not (files / "m.json").exists()


def test_a_bad_input_fit_exits_2_every_time(files):
    _bad_fit_runs(files, 5)


@pytest.mark.slow
def test_a_bad_input_fit_exits_2_every_time_30_runs(files):
    _bad_fit_runs(files, 30)


# ----------------------------------------------------------------------------- unseen categories
def test_predict_refuses_an_unseen_category_naming_it(files, capsys):
    assert cli.main(["fit", "train.csv", "--schema", "s.json", "--seed", "0", "-o", "m.json"]) == 0
    (files / "new.csv").write_text("a,color\n1,red\n2,green\n")
    capsys.readouterr()
    assert cli.main(["predict", "m.json", "new.csv", "-o", "p.csv"]) == 2
    err = capsys.readouterr().err
    for word in ("unknown category 'green'", "column 'color'", "row 2, line 3",
                 "--unknown zero", "new.csv"):
        assert word in err, err
    assert "in Python" not in err and not (files / "p.csv").exists()
    # the explicit option: an all-zero group for that column, as before
    assert cli.main(["predict", "m.json", "new.csv", "--unknown", "zero", "-o", "p.csv"]) == 0
    assert len((files / "p.csv").read_text().splitlines()) == 3


def test_predict_unknown_category_agrees_with_the_python_pipeline(files):
    from dperm import PublicSchema

    schema = PublicSchema.from_dict(SCHEMA)
    with pytest.raises(ValueError, match="unknown category 'green'"):
        schema.encode({"a": np.array([1.0]), "color": np.array(["green"], dtype=object)})


# ----------------------------------------------------------------------------- one class, baseline
def test_labels_of_one_class_are_fitted_with_a_notice():
    from dperm import PrivateLinearClassifier

    X = np.random.default_rng(0).uniform(size=(40, 3)) / 2
    with pytest.warns(UserWarning, match=r"every label is 1: none of the other classes \[0\]"):
        PrivateLinearClassifier(classes=[0, 1], random_state=0).fit(X, np.ones(40))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        PrivateLinearClassifier(classes=[0, 1], random_state=0).fit(X, np.arange(40) % 2)
    assert not [w for w in rec if "every label" in str(w.message)]
    with pytest.warns(UserWarning, match="every label is 'b'"):
        PrivateLinearClassifier(classes=["a", "b", "c"], random_state=0).fit(
            X, np.array(["b"] * 40))


def test_cli_fit_of_one_class_warns(files, capsys):
    (files / "one.csv").write_text("a,color,y\n" + "".join(f"{i % 10},red,no\n"
                                                           for i in range(30)))
    assert cli.main(["fit", "one.csv", "--schema", "s.json", "--seed", "0", "-o", "m.json"]) == 0
    err = capsys.readouterr().err
    assert "every label of one.csv is 'no'" in err and "['yes']" in err and "label is 0" not in err


def test_holdout_prints_the_majority_baseline(files, capsys):
    (files / "hold.csv").write_text("a,color,y\n1,red,no\n2,red,no\n3,blue,no\n9,red,yes\n")
    assert cli.main(["fit", "train.csv", "--schema", "s.json", "--seed", "0", "--holdout",
                     "hold.csv", "-o", "m.json"]) == 0
    out = capsys.readouterr().out
    assert "holdout accuracy:" in out
    assert "majority-class baseline: 0.7500 (always predicting 'no'" in out


# ----------------------------------------------------------------------------- help texts
def test_help_texts_say_what_each_command_does(capsys):
    assert cli.main(["--help"]) == 0
    top = capsys.readouterr().out
    assert "train a private linear classifier" not in top and "regression" in top
    assert cli.main(["fit", "--help"]) == 0
    fit = capsys.readouterr().out
    assert "PrivateLinearRegression" in fit and "streaming" in fit
    assert cli.main(["bounds", "--help"]) == 0
    bounds = capsys.readouterr().out
    assert "schema file" in bounds and "estimate_bounds" in bounds
    for fit_only in ("--memory-budget", "model file", "--holdout", "Without DATA.csv",
                     "--perturbation", "keep-binary"):
        assert fit_only not in bounds, fit_only
    assert cli.main(["reproduce", "--help"]) == 0
    assert "experiments:" in capsys.readouterr().out       # the registry's list, on demand


# ----------------------------------------------------------------------------- no header row
def test_a_headerless_file_with_words_and_numbers_says_the_first_row_is_data(files, capsys):
    (files / "flights.csv").write_text("8,7,-1.0,2475,UA,1\n9,3,4.0,1000,AA,0\n")
    assert cli.main(["fit", "flights.csv", "--label", "late", "-o", "m.json"]) == 2
    err = capsys.readouterr().err
    assert "label column 'late' not found" in err
    assert "looks like data, not a header row" in err and "naming the columns" in err
    # a real header with one numeric-looking name is not blamed for a typo elsewhere
    (files / "ok.csv").write_text("a,2020,y\n1,2,no\n")
    assert cli.main(["fit", "ok.csv", "--label", "z", "-o", "m.json"]) == 2
    assert "not found" in capsys.readouterr().err
    (files / "words.csv").write_text("a,b,y\n1,2,no\n")
    assert cli.main(["fit", "words.csv", "--label", "z", "-o", "m.json"]) == 2
    assert "looks like data" not in capsys.readouterr().err


# ----------------------------------------------------------------------------- start time
def _modules_after(code):
    r = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(sorted({m.split('.')[0] "
                        "for m in sys.modules} & {'sklearn', 'pandas', 'pyarrow', 'scipy'}))"],
                       capture_output=True, text=True, env=_env(), timeout=300,
                       cwd=os.path.dirname(os.path.abspath(__file__)))   # not the source root
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


def test_the_command_line_starts_without_scikit_learn():
    """sys.modules, not a timing: `import dperm`, `import dperm.cli`, `dperm info` and
    `dperm --help` import none of scikit-learn, pandas, pyarrow or SciPy (their import
    took ~2.3 s of every command)."""
    assert _modules_after("import dperm") == "[]"
    assert _modules_after("import dperm.cli") == "[]"
    assert _modules_after("from dperm.cli.main import main\nmain(['info'])") == "[]"
    assert _modules_after("from dperm.cli.main import main\n"
                          "try:\n    main(['fit', '--help'])\nexcept SystemExit:\n    pass") == "[]"


def test_lazy_names_of_the_package():
    import dperm
    from dperm.experiments import REPRODUCTIONS

    for name in dperm.__all__:
        assert getattr(dperm, name) is not None and name in dir(dperm)
    assert dperm.erm is sys.modules["dperm.optim.erm"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        dperm.nope  # noqa: B018
    from dperm.cli.parser import NEIGHBOURING
    from dperm.cli.reproduce import REPRODUCTION_NAMES
    from dperm.privacy import neighbouring
    assert REPRODUCTION_NAMES == tuple(REPRODUCTIONS)
    assert NEIGHBOURING == neighbouring.NEIGHBOURING


# ----------------------------------------------------------------------------- internal errors
def test_a_bug_in_dperm_is_an_internal_error_not_the_users(files, capsys, monkeypatch):
    from dperm.cli import _io

    def buggy(*args, **kwargs):
        raise ValueError("boom")        # a ValueError raised by dperm's own code
    monkeypatch.setattr(_io, "load_model", buggy)
    monkeypatch.delenv("DPERM_DEBUG", raising=False)
    assert cli.main(["predict", "m.json", "train.csv"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dperm: error: internal error: ValueError: boom at ")
    # where: the innermost frame inside dperm (here the caller of the patched function)
    assert "at dperm/cli/predict.py:" in err and "in cmd_predict()" in err
    assert "bug in dperm" in err and "report it" in err and "DPERM_DEBUG=1" in err
    monkeypatch.setattr(_io, "load_model", lambda *a: (_ for _ in ()).throw(TypeError("t")))
    assert cli.main(["predict", "m.json", "train.csv"]) == 1
    assert "internal error: TypeError: t" in capsys.readouterr().err
    main_module = sys.modules["dperm.cli.main"]   # (dperm.cli.main is also the function)

    def numpy_bug(*args, **kwargs):   # an error numpy raises inside dperm: a bug, too
        return np.ones(2) + np.ones(3)
    monkeypatch.setattr(_io, "load_model", numpy_bug)
    assert cli.main(["predict", "m.json", "train.csv"]) == 1
    assert "internal error: ValueError: operands could not be broadcast" in \
        capsys.readouterr().err
    # the library's own validation (raised by dperm, worded as such) is the user's error
    try:
        from dperm.privacy.quantiles import estimate_bounds
        estimate_bounds({"a": np.arange(5.0)}, 1.0, quantiles=(0.9, 0.1))
    except ValueError as exc:
        assert main_module.is_input_error(exc)
    monkeypatch.setenv("DPERM_DEBUG", "1")
    with pytest.raises(ValueError, match="broadcast"):
        cli.main(["predict", "m.json", "train.csv"])


def test_user_errors_still_exit_2(files, capsys):
    assert cli.main(["predict", "nope.json", "train.csv"]) == 2          # CLIError
    assert "not found" in capsys.readouterr().err
    assert cli.main(["fit", "train.csv", "--schema", "s.json"]) == 2    # usage error
    assert "-o/--output" in capsys.readouterr().err
    assert cli.main(["fit", "train.csv", "--epsilon", "-1", "-o", "m.json"]) == 2   # argparse
    assert cli.main(["fit", "train.csv", "--schema", "s.json", "--alpha", "1e-300",
                     "-o", "m.json"]) in (0, 2)
    assert "internal error" not in capsys.readouterr().err


def test_a_fit_that_stopped_early_is_a_clear_error_not_an_internal_one(tmp_path, capsys,
                                                                       monkeypatch):
    """The refusal of a non-converged private fit (dperm.NotConvergedError) is reported
    as the user's error (exit 2, its message naming what to change), not as a bug."""
    import dperm.sklearn.classifier as clf_mod
    from dperm.cli import main as cli_main

    real = clf_mod.PrivateLinearClassifier

    class OneIteration(real):
        def fit(self, X, y, **kw):
            self.max_iter = 1
            return super().fit(X, y, **kw)

    monkeypatch.setattr(clf_mod, "PrivateLinearClassifier", OneIteration)
    rng = np.random.default_rng(0)
    rows = ["a,b,y"] + [f"{a:.3f},{b:.3f},{'yes' if a + b > 1 else 'no'}"
                        for a, b in rng.uniform(0, 1, size=(300, 2))]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "s.json").write_text(json.dumps({"numeric": {"a": [0, 1], "b": [0, 1]},
                                                 "label": {"column": "y",
                                                           "classes": ["no", "yes"]}}))
    code = cli_main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"),
                     "--alpha", "1e-7", "-o", str(tmp_path / "m.json")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "nothing is released" in err and "internal error" not in err
    assert not (tmp_path / "m.json").exists()
