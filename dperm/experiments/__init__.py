"""Reproductions of the paper's experiments (used by `dperm reproduce`).

:data:`REPRODUCTIONS` is the registry the command line reads: name ->
``Reproduction(run, title, dataset)``.  Adding an experiment is one line there.
A runner takes ``out, quick, progress, seed`` (and ``n_threads`` if it uses
threads) and returns either ``(result, text, csv_path)`` for a table (the CLI
prints ``text``) or ``(result, csv_path, png_path_or_None)`` for a figure (the
CLI prints the CSV).  The first paragraph of the runner's docstring goes into
``dperm reproduce --help``: say there what the full protocol and --quick do.
"""
import os
import warnings
from typing import Any, Callable, NamedTuple

import numpy as np

from dperm.experiments.figure2 import plot_figure2, run_figure2, run_figure3, write_figure2_csv
from dperm.experiments.table1 import (
    format_table,
    format_table1,
    run_table1,
    run_table2,
    write_table1_csv,
    write_table_csv,
)
from dperm.experiments.tuning_curve import plot_tuning_curve, run_tuning_curve, write_tuning_csv

__all__ = ["REPRODUCTIONS", "Reproduction", "get_runner", "reproduce_table1",
           "reproduce_figure2", "reproduce_table2", "reproduce_figure3", "reproduce_tuning",
           "reproduce_learning_curves", "reproduce_nips2008", "reproduce_gaussian",
           "reproduce_all",
           "run_table1", "run_table2", "run_figure2", "run_figure3", "run_tuning_curve"]

#: the paper's KDDCup99 protocol: a random subset of this many rows
KDD_N_SAMPLES = 70000
#: --quick on KDDCup99: a smaller random subset
KDD_N_SAMPLES_QUICK = 20000


def _adult() -> tuple[np.ndarray, np.ndarray]:
    from dperm.datasets import load_adult
    from dperm.exceptions import PrivacyLeakWarning

    with warnings.catch_warnings():
        # the paper's preprocessing reads scales from the data; this is reproduction
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return load_adult(preprocess="paper")


def _kddcup99(n_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """A random n_samples-row subset (paper preprocessing) and an independent run seed.

    The subset and the run (folds, noise) draw from two children of
    SeedSequence(seed), so neither depends on the other's draws.
    """
    from dperm.datasets import load_kddcup99
    from dperm.exceptions import PrivacyLeakWarning

    subset_seed, run_seed = np.random.SeedSequence(seed).spawn(2)
    with warnings.catch_warnings():
        # the paper's preprocessing reads categories and scales from the data
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        X, y = load_kddcup99(preprocess="paper", n_samples=n_samples,
                             random_state=np.random.default_rng(subset_seed))
    return X, y.astype(np.float64), np.random.default_rng(run_seed)


def _kdd_name(n: int) -> str:
    return f"KDDCup99 ({n:,}-row subset)"


def _write(res: dict[str, Any], out: str, name: str, write_csv: Callable[[dict[str, Any], str], Any],
           plot: Callable[[dict[str, Any], str], str | None]) -> tuple[dict[str, Any], str, str | None]:
    """CSV always; PNG when matplotlib is installed (None otherwise)."""
    csv_path = os.path.join(out, name + ".csv")
    write_csv(res, csv_path)
    try:
        png = plot(res, os.path.join(out, name + ".png"))
    except ImportError:
        png = None
    return res, csv_path, png


def reproduce_table1(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                     n_threads: int | None = None, seed: int = 0
                     ) -> tuple[dict[str, Any], str, str]:
    """Full: all 45,222 rows, 10-fold CV x 50 runs; --quick: 2 of the 10 folds x 10 runs.

    Table 1 at epsilon = 0.1, 8 Lambdas. Returns (result, text, csv path).
    """
    X, y = _adult()
    kw = dict(folds_to_run=2, n_runs=10) if quick else {}
    res = run_table1(X, y, random_state=seed, progress=progress, n_threads=n_threads, **kw)
    text = format_table1(res)
    path = os.path.join(out, "table1.csv")
    write_table1_csv(res, path)
    return res, text, path


def reproduce_figure2(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                      n_threads: int | None = None, seed: int = 0
                      ) -> tuple[dict[str, Any], str, str | None]:
    """Full: 10 folds x 20 runs, 10 epsilons; --quick: 1 fold x 5 runs, 4 epsilons.

    Figure 2: error against epsilon at Table 1's best Lambda. Returns (result, csv path,
    png path or None).
    """
    X, y = _adult()
    kw = dict(folds_to_run=1, n_runs=5, epsilons=(0.01, 0.05, 0.1, 0.2)) if quick else \
        dict(folds_to_run=10, n_runs=20)
    res = run_figure2(X, y, random_state=seed, progress=progress, n_threads=n_threads, **kw)
    return _write(res, out, "figure2", write_figure2_csv, plot_figure2)


def reproduce_table2(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                     n_threads: int | None = None, seed: int = 0
                     ) -> tuple[dict[str, Any], str, str]:
    """Full: a 70,000-row subset, 10-fold CV x 50 runs; --quick: 20,000 rows, 1 of 10
    folds x 5 runs.

    Table 2 at epsilon = 0.1, 8 Lambdas, on a random subset of the 10% sample
    (paper preprocessing, d = 118). Returns (result, text, csv path).
    """
    n = KDD_N_SAMPLES_QUICK if quick else KDD_N_SAMPLES
    X, y, rng = _kddcup99(n, seed)
    kw = dict(folds_to_run=1, n_runs=5) if quick else {}
    res = run_table2(X, y, random_state=rng, progress=progress, n_threads=n_threads,
                     dataset=_kdd_name(n), **kw)
    text = format_table(res)
    path = os.path.join(out, "table2.csv")
    write_table_csv(res, path)
    return res, text, path


def reproduce_figure3(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                      n_threads: int | None = None, seed: int = 0
                      ) -> tuple[dict[str, Any], str, str | None]:
    """Full: a 70,000-row subset, 10 folds x 20 runs, 10 epsilons; --quick: 20,000 rows,
    1 fold x 5 runs, 4 epsilons.

    Figure 3: error against epsilon at Table 2's best Lambda. Returns (result, csv path,
    png path or None).
    """
    n = KDD_N_SAMPLES_QUICK if quick else KDD_N_SAMPLES
    X, y, rng = _kddcup99(n, seed)
    kw = dict(folds_to_run=1, n_runs=5, epsilons=(0.01, 0.05, 0.1, 0.2)) if quick else \
        dict(folds_to_run=10, n_runs=20)
    res = run_figure3(X, y, random_state=rng, progress=progress, n_threads=n_threads,
                      dataset=_kdd_name(n), **kw)
    return _write(res, out, "figure3", write_figure2_csv, plot_figure2)


def reproduce_tuning(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                     seed: int = 0) -> tuple[dict[str, Any], str, str | None]:
    """Full: 4 sizes x 3 epsilons x 3 repeats; --quick: 2 sizes x 2 epsilons x 1 repeat.

    Learning curve of the end-to-end private pipeline (Algorithm 4). Returns (result,
    csv path, png path or None).
    """
    X, y = _adult()
    kw: dict[str, Any] = dict(sizes=(6000, 30000), n_repeats=1, epsilons=(0.1, 1.0)) if quick else {}
    res = run_tuning_curve(X, y, random_state=seed, progress=progress, **kw)
    return _write(res, out, "tuning", write_tuning_csv, plot_tuning_curve)


def reproduce_nips2008(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                       n_threads: int | None = None, seed: int = 0,
                       pima: str | None = None) -> tuple[Any, ...]:
    """Full: both versions of the NIPS 2008 paper (Figures 1-4 and the table: 5 folds x 10
    restarts; the earlier version: 17,500 points, 5 folds x 200 restarts); --quick: 2 folds,
    a few restarts.

    Chaudhuri & Monteleoni (NIPS 2008), logistic loss, under both readings of its noise
    law, beside the paper's printed numbers. Pima needs its CSV (pima=PATH, --pima or
    $DPERM_PIMA). Returns (result, text, [csv and png paths])."""
    from dperm.experiments import nips2008

    return nips2008.reproduce_nips2008(out=out, quick=quick, progress=progress,
                                       n_threads=n_threads, seed=seed, pima=pima)


def reproduce_learning_curves(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                              n_threads: int | None = None, seed: int = 0) -> tuple[Any, ...]:
    """Full: private parts of 60,000-88,000 rows (Algorithm 4 over 5 Lambdas), non-private
    300,000 rows to all, 5 permutations x 50 runs; --quick: 10,000/20,000 and 50,000/100,000
    rows, 1 permutation x 20 runs.

    Figures 4 and 5 (logistic and Huber) at epsilon = 0.01 and 0.05 on the whole 10% sample.
    Returns (result, text, csv path, [png paths])."""
    from dperm.experiments import learning_curves

    return learning_curves.reproduce_learning_curves(out=out, quick=quick, progress=progress,
                                                     n_threads=n_threads, seed=seed)


def reproduce_gaussian(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                       n_threads: int | None = None, seed: int = 0
                       ) -> tuple[dict[str, Any], str, str]:
    """Full: 5 folds x 10 draws, logistic and Huber, epsilon 0.1 and 1, Lambda 10^-6 ...
    10^-1.5 in quarter decades; --quick: 5 folds x 3 draws, logistic only, Lambda 10^-5 ...
    10^-1.5 in half decades.

    (epsilon, delta = 1/n^2) objective perturbation (both neighbouring relations) beside
    the pure mechanism and the Kifer et al. (2012) calibration: issue 12's targets.
    Returns (result, text, csv path)."""
    from dperm.experiments.gaussian_adult import (
        format_gaussian_adult,
        run_gaussian_adult,
        write_gaussian_adult_csv,
    )

    X, y = _adult()
    # quick: half-decade Lambdas from 1e-5 (the smallest Lambdas are the slow solves)
    kw = dict(n_draws=3, losses=("logistic",),
              lambdas=tuple(10.0 ** np.arange(-5.0, -1.49, 0.5))) if quick else {}
    res = run_gaussian_adult(X, y, random_state=seed, progress=progress, n_threads=n_threads,
                             **kw)
    os.makedirs(out, exist_ok=True)
    path = write_gaussian_adult_csv(res, os.path.join(out, "gaussian.csv"))
    return res, format_gaussian_adult(res), path


def reproduce_all(out: str = "dperm-results", quick: bool = False, progress: bool = True,
                  n_threads: int | None = None, seed: int = 0
                  ) -> tuple[list[dict[str, Any]], str, list[str]]:
    """Every experiment above, each into its own folder, then report.md and report.html.

    Returns (sections, summary text, [report.md, report.html])."""
    from dperm.experiments.report import run_all, write_report

    sections = run_all(out=out, quick=quick, progress=progress, n_threads=n_threads, seed=seed)
    paths = write_report(sections, out, quick, seed)
    width = max(len(s["title"]) + len(s["dataset"]) for s in sections) + 4
    lines = [f"{s['title'] + ' (' + s['dataset'] + ')':<{width}} {s['seconds']:7.1f} s"
             for s in sections]
    lines.append(f"{'total':<{width}} {sum(s['seconds'] for s in sections):7.1f} s")
    return sections, "\n".join(lines), list(paths)


class Reproduction(NamedTuple):
    """An entry of :data:`REPRODUCTIONS`."""
    run: Callable   # reproduce_*(out, quick, progress, seed[, n_threads])
    title: str      # "Table 1": what `dperm reproduce` says it reproduces
    dataset: str    # "Adult": the data set it runs on


#: `dperm reproduce NAME`: name -> Reproduction(run, title, dataset), in the paper's order
REPRODUCTIONS = {
    "table1": Reproduction(reproduce_table1, "Table 1", "Adult"),
    "figure2": Reproduction(reproduce_figure2, "Figure 2", "Adult"),
    "table2": Reproduction(reproduce_table2, "Table 2", "KDDCup99"),
    "figure3": Reproduction(reproduce_figure3, "Figure 3", "KDDCup99"),
    "tuning": Reproduction(reproduce_tuning, "the private-tuning learning curve", "Adult"),
    "learning-curves": Reproduction(reproduce_learning_curves, "Figures 4 and 5 (learning "
                                    "curves with private tuning)", "KDDCup99"),
    "nips2008": Reproduction(reproduce_nips2008, "the NIPS 2008 experiments",
                             "synthetic data, Pima and Breast Cancer"),
    "gaussian": Reproduction(reproduce_gaussian, "(epsilon, delta) objective perturbation "
                             "against the published anchors", "Adult"),
    "all": Reproduction(reproduce_all, "every experiment, with one report",
                        "Adult, KDDCup99, synthetic data, Pima, Breast Cancer"),
}


def get_runner(name: str) -> Callable[..., Any]:
    """The runner of REPRODUCTIONS[name], looked up by its name in this module first, so
    that replacing the module attribute (a test stub, a patched runner) takes effect."""
    run = REPRODUCTIONS[name].run
    return globals().get(getattr(run, "__name__", ""), run)
