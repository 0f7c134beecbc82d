"""Reproductions of the paper's experiments on Adult (used by `dperm reproduce`)."""
import os
import warnings

from dperm.experiments.figure2 import plot_figure2, run_figure2, write_figure2_csv
from dperm.experiments.table1 import format_table1, run_table1, write_table1_csv
from dperm.experiments.tuning_curve import plot_tuning_curve, run_tuning_curve, write_tuning_csv

__all__ = ["reproduce_table1", "reproduce_figure2", "reproduce_tuning", "run_table1",
           "run_figure2", "run_tuning_curve"]


def _adult():
    from dperm.datasets import load_adult
    from dperm.exceptions import PrivacyLeakWarning

    with warnings.catch_warnings():
        # the paper's preprocessing reads scales from the data; this is reproduction
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return load_adult(preprocess="paper")


def _write(res, out, name, write_csv, plot):
    """CSV always; PNG when matplotlib is installed (None otherwise)."""
    csv_path = os.path.join(out, name + ".csv")
    write_csv(res, csv_path)
    try:
        png = plot(res, os.path.join(out, name + ".png"))
    except ImportError:
        png = None
    return res, csv_path, png


def reproduce_table1(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0):
    """Table 1 (full protocol, or --quick: 2 of 10 folds, 10 runs). Returns (result, text, csv)."""
    X, y = _adult()
    kw = dict(folds_to_run=2, n_runs=10) if quick else {}
    res = run_table1(X, y, random_state=seed, progress=progress, n_threads=n_threads, **kw)
    text = format_table1(res)
    path = os.path.join(out, "table1.csv")
    write_table1_csv(res, path)
    return res, text, path


def reproduce_figure2(out="dperm-results", quick=False, progress=True, n_threads=None, seed=0):
    """Figure 2 (error vs epsilon at the best Lambda). Returns (result, csv, png or None)."""
    X, y = _adult()
    kw = dict(folds_to_run=1, n_runs=5, epsilons=(0.01, 0.05, 0.1, 0.2)) if quick else \
        dict(folds_to_run=10, n_runs=20)
    res = run_figure2(X, y, random_state=seed, progress=progress, n_threads=n_threads, **kw)
    return _write(res, out, "figure2", write_figure2_csv, plot_figure2)


def reproduce_tuning(out="dperm-results", quick=False, progress=True, seed=0):
    """Learning curve of the end-to-end private pipeline. Returns (result, csv, png or None)."""
    X, y = _adult()
    kw = dict(sizes=(6000, 30000), n_repeats=1, epsilons=(0.1, 1.0)) if quick else {}
    res = run_tuning_curve(X, y, random_state=seed, progress=progress, **kw)
    return _write(res, out, "tuning", write_tuning_csv, plot_tuning_curve)
