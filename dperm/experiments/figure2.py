"""Figures 2 and 3 of the paper: test error against epsilon at each method's best Lambda.

The paper picks, for each method, the Lambda with the lowest error at
epsilon = 0.1 (Table 1 for Adult: Figure 2; Table 2 for KDDCup99: Figure 3)
and plots the error for epsilon in [0.01, 0.2].  We use the best Lambda of the
paper's table by default (Figure 2: 1e-7 non-private, 1e-2 output perturbation,
1e-2.5 objective perturbation; Figure 3: 1e-9, 1e-2, and 1e-2.5 (logistic) /
1e-2 (Huber)), or those of a table run passed in.  One runner,
:func:`run_tradeoff`, does both; the plot's titles and constant-classifier line
come from the data (its name and size, and the measured minority-class fraction).
"""
import csv
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dperm.data.validation import check_random_state
from dperm.experiments._progress import Progress, plural
from dperm.experiments.table1 import (
    METHODS,
    TABLE1,
    TABLE2,
    PaperTable,
    _constant_error,
    _errors,
    fold_indices,
)
from dperm.optim import erm
from dperm.privacy.mechanisms import add_output_noise, objective_perturbation

__all__ = ["EPSILONS", "PAPER_BEST_LAMBDA", "PAPER_BEST_LAMBDA_FIGURE3", "paper_best_lambda",
           "run_tradeoff", "run_figure2", "run_figure3", "write_figure2_csv", "plot_figure2"]

EPSILONS = (0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.125, 0.15, 0.175, 0.2)


def paper_best_lambda(table: PaperTable) -> dict[tuple[str, str], float]:
    """{(loss, method): Lambda} of the paper's best (bold) entries of a PaperTable."""
    return {key: 10.0**table.best(*key)[1] for key in table.errors}


#: Figure 2 (Adult): the best Lambda of Table 1
PAPER_BEST_LAMBDA = paper_best_lambda(TABLE1)
#: Figure 3 (KDDCup99): the best Lambda of Table 2
PAPER_BEST_LAMBDA_FIGURE3 = paper_best_lambda(TABLE2)


def run_figure2(X: np.ndarray, y: np.ndarray, **kwargs: Any) -> dict[str, Any]:
    """Figure 2's protocol on Adult (Table 1's best Lambda); see :func:`run_tradeoff`."""
    kwargs.setdefault("dataset", "Adult")
    return run_tradeoff(X, y, label="figure2", **kwargs)


def run_figure3(X: np.ndarray, y: np.ndarray, **kwargs: Any) -> dict[str, Any]:
    """Figure 3's protocol on KDDCup99 (Table 2's best Lambda); see :func:`run_tradeoff`."""
    kwargs.setdefault("best_lambda", PAPER_BEST_LAMBDA_FIGURE3)
    kwargs.setdefault("dataset", "KDDCup99")
    return run_tradeoff(X, y, label="figure3", **kwargs)


def run_tradeoff(X: np.ndarray, y: np.ndarray, *, epsilons: Sequence[float] = EPSILONS,
                 losses: Sequence[str] = ("logistic", "huber"), h: float = 0.5,
                 best_lambda: Mapping[tuple[str, str], float] | None = None, n_folds: int = 10,
                 folds_to_run: int | None = None, n_runs: int = 50,
                 random_state: int | np.random.Generator | None = 0,
                 n_threads: int | None = None, progress: bool = True, dataset: str = "Adult",
                 label: str = "figure2") -> dict[str, Any]:
    """Errors (len(epsilons),) per (loss, method), averaged over folds and runs.

    best_lambda: {(loss, method): Lambda}, default the paper's Table 1 choices.
    dataset: the data's name in the plot titles (e.g. "KDDCup99 (70,000-row subset)");
    label: the progress bar's.  The result has "constant_error", the better constant
    classifier's error on y (the minority-class fraction), drawn as a line in the plot.

    All epsilons of one fold and loss share one batched solve for objective
    perturbation (len(epsilons) * n_runs problems); output perturbation adds
    noise to one exact minimizer per fold.
    """
    best_lambda = dict(PAPER_BEST_LAMBDA if best_lambda is None else best_lambda)
    rng = check_random_state(random_state)
    folds = fold_indices(X.shape[0], n_folds, rng)
    nf = n_folds if folds_to_run is None else min(int(folds_to_run), n_folds)
    eps = np.asarray(epsilons, dtype=np.float64)
    errors = {(lo, m): np.zeros((eps.size, nf)) for lo in losses for m in METHODS}
    bar = Progress(nf * len(losses) * (eps.size + 1), label, enabled=progress)
    t0 = time.perf_counter()
    for f in range(nf):
        test = folds[f]
        train = np.concatenate([folds[g] for g in range(n_folds) if g != f])
        Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
        n = Xtr.shape[0]
        for lo in losses:
            lam = np.array([best_lambda[(lo, "none")], best_lambda[(lo, "output")]])
            exact = erm.minimize(Xtr, ytr, loss=lo, alpha=lam, h=h, n_threads=n_threads)
            errors[(lo, "none")][:, f] = _errors(exact.coef[0], Xte, yte)
            bar.update(1)
            for i, e in enumerate(eps):
                _, c = add_output_noise(exact.coef[1:], n, lam[1:], e, 1.0, n_runs, rng)
                errors[(lo, "output")][i, f] = _errors(c, Xte, yte).mean()
                obj = objective_perturbation(Xtr, ytr, loss=lo, alpha=best_lambda[(lo, "objective")],
                                             epsilon=float(e), h=h, n_draws=n_runs,
                                             random_state=rng, n_threads=n_threads)
                errors[(lo, "objective")][i, f] = _errors(obj.coef, Xte, yte).mean()
                bar.update(1, note=f"fold {f + 1} {lo} eps={e:g}")
    bar.close()
    return {"errors": errors, "epsilons": eps, "losses": tuple(losses), "best_lambda": best_lambda,
            "folds_run": nf, "n_folds": n_folds, "n_runs": n_runs,
            "seconds": time.perf_counter() - t0, "dataset": dataset, "n": X.shape[0],
            "d": X.shape[1], "constant_error": _constant_error(y),
            "positive_fraction": float(np.mean(np.asarray(y) > 0))}


def write_figure2_csv(result: dict[str, Any], path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["loss", "method", "log10_lambda", "epsilon", "error_mean", "error_fold_std",
                    "folds", "runs_per_fold"])
        for (lo, m), errs in result["errors"].items():
            for i, e in enumerate(result["epsilons"]):
                w.writerow([lo, m, f"{np.log10(result['best_lambda'][(lo, m)]):g}", f"{e:g}",
                            f"{errs[i].mean():.5f}", f"{errs[i].std():.5f}", result["folds_run"],
                            result["n_runs"] if m != "none" else 1])


def plot_figure2(result: dict[str, Any], path: str) -> str:
    """Error against epsilon, one panel per loss (needs matplotlib: pip install dperm[plot])."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'dperm[plot]'") from exc
    losses = result["losses"]
    fig, axes = plt.subplots(1, len(losses), figsize=(5.2 * len(losses), 4), sharey=True, squeeze=False)
    styles = {"none": ("non-private", "k", "--"), "output": ("output perturbation", "tab:red", "-"),
              "objective": ("objective perturbation", "tab:blue", "-")}
    for ax, lo in zip(axes[0], losses):
        for m, (label, color, ls) in styles.items():
            errs = result["errors"][(lo, m)]
            lam = np.log10(result["best_lambda"][(lo, m)])
            ax.errorbar(result["epsilons"], errs.mean(axis=1),
                         yerr=errs.std(axis=1) if errs.shape[1] > 1 else None, color=color,
                         linestyle=ls, marker="o", ms=3, capsize=2, label=f"{label} (Λ=1e{lam:g})")
        const = result.get("constant_error", 0.248)
        pos = result.get("positive_fraction", const)
        ax.axhline(const, color="0.6", lw=0.8, ls=":",
                   label=f"constant classifier ({const:.3f}: the "
                         f"{'positive' if pos <= 0.5 else 'negative'} fraction)")
        ax.set_title(f"{result.get('dataset', 'Adult')}, "
                     f"{'logistic regression' if lo == 'logistic' else 'Huber SVM (h=0.5)'}",
                     fontsize=10)
        ax.set_xlabel("privacy parameter ε")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")  # in each panel: the best Lambda can differ by loss
    axes[0][0].set_ylabel("test error")
    fig.suptitle(f"Privacy-accuracy trade-off ({plural(result['folds_run'], 'fold')}, "
                 f"{plural(result['n_runs'], 'run')} each)",
                 fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
