"""The reproduction code on a small slice of Adult (the full protocol is `dperm reproduce`)."""
import csv
import warnings

import numpy as np
import pytest

from dperm.datasets import load_adult
from dperm.experiments.figure2 import plot_figure2, run_figure2, write_figure2_csv
from dperm.experiments.table1 import (LAMBDAS, PAPER_TABLE1, _errors, format_table1,
                                      run_table1, write_table1_csv)
from dperm.experiments.tuning_curve import plot_tuning_curve, run_tuning_curve, write_tuning_csv


@pytest.fixture(scope="module")
def adult_small():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = load_adult(preprocess="paper")
    idx = np.random.default_rng(0).permutation(X.shape[0])[:3000]
    return X[idx], y[idx].astype(np.float64)


def test_errors_counts_sign_mistakes():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([1.0, -1.0, 1.0])
    coef = np.array([[[1.0, -1.0], [-1.0, 1.0]]])
    # first: scores 1, -1, 0 -> the zero score counts as a mistake; second: all wrong
    np.testing.assert_allclose(_errors(coef, X, y), [[1 / 3, 1.0]])


def test_table1_small_run(adult_small, tmp_path):
    X, y = adult_small
    res = run_table1(X, y, lambdas=LAMBDAS[-3:], n_folds=5, folds_to_run=2, n_runs=4,
                     random_state=0, progress=False)
    for key, errs in res["errors"].items():
        assert errs.shape == (3, 2)
        assert np.all((errs >= 0) & (errs <= 1))
    # non-private with moderate Lambda beats the constant classifier on Adult
    assert res["errors"][("logistic", "none")].mean(axis=1).min() < 0.245
    text = format_table1(res)
    assert "paper" in text and "logistic, objective" in text
    path = tmp_path / "t1.csv"
    write_table1_csv(res, str(path))
    rows = list(csv.DictReader(open(path)))
    assert len(rows) == 2 * 3 * 3
    assert {r["method"] for r in rows} == {"none", "output", "objective"}


def test_table1_same_seed_same_numbers(adult_small):
    X, y = adult_small
    kw = dict(lambdas=LAMBDAS[-2:], losses=("huber",), n_folds=4, folds_to_run=1, n_runs=3,
              progress=False)
    a = run_table1(X, y, random_state=3, **kw)["errors"]
    b = run_table1(X, y, random_state=3, **kw)["errors"]
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_paper_table_is_table1():
    assert len(LAMBDAS) == 8 and all(len(v) == 8 for v in PAPER_TABLE1.values())
    assert PAPER_TABLE1[("logistic", "objective")][5] == 0.2161


def test_figure2_small_run_and_plot(adult_small, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    titles = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig",
                        lambda self, *a, **k: (titles.append(self._suptitle.get_text()),
                                               save(self, *a, **k))[1])
    X, y = adult_small
    res = run_figure2(X, y, epsilons=(0.05, 0.2), n_folds=5, folds_to_run=1, n_runs=3,
                      random_state=0, progress=False)
    assert res["errors"][("logistic", "objective")].shape == (2, 1)
    write_figure2_csv(res, str(tmp_path / "f2.csv"))
    png = plot_figure2(res, str(tmp_path / "f2.png"))
    with open(png, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert titles == ["Privacy-accuracy trade-off (1 fold, 3 runs each)"]


def test_tuning_curve_small_run(adult_small, tmp_path):
    pytest.importorskip("matplotlib")
    X, y = adult_small
    res = run_tuning_curve(X, y, epsilons=(1.0,), sizes=(1200,), test_size=1000, n_repeats=1,
                           random_state=0, progress=False)
    assert res["errors"][1.0].shape == (1, 1)
    assert 0 <= res["errors_nonprivate"][0, 0] <= 1
    write_tuning_csv(res, str(tmp_path / "tu.csv"))
    assert plot_tuning_curve(res, str(tmp_path / "tu.png")).endswith(".png")


def test_progress_bar_has_no_nan_before_the_first_step():
    import io

    from dperm.experiments._progress import Progress, plural

    buf = io.StringIO()
    p = Progress(4, label="fits", stream=buf)
    p.update(2)
    p.update(2)
    text = buf.getvalue()
    assert "nan" not in text
    assert "0/4" in text and "time left: estimating" in text and "s left" in text
    assert plural(1, "fold") == "1 fold" and plural(2, "fold") == "2 folds"
