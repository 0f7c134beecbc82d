"""Figure 2 of the paper: test error against epsilon on Adult, at each method's best Lambda.

The paper picks, for each method, the Lambda with the lowest error at
epsilon = 0.1 (Table 1) and plots the error for epsilon in [0.01, 0.2].
We use the best Lambda of the paper's Table 1 by default (1e-2 for output
perturbation, 1e-2.5 for objective perturbation, 1e-7 non-private), or those
of a Table 1 run passed in.
"""
import csv
import os
import time

import numpy as np

from dperm import erm
from dperm._validation import check_random_state
from dperm.experiments._progress import Progress, plural
from dperm.experiments.table1 import _errors, fold_indices
from dperm.mechanisms import add_output_noise, objective_perturbation

__all__ = ["EPSILONS", "PAPER_BEST_LAMBDA", "run_figure2", "write_figure2_csv", "plot_figure2"]

EPSILONS = (0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.125, 0.15, 0.175, 0.2)
PAPER_BEST_LAMBDA = {
    ("logistic", "none"): 1e-7, ("logistic", "output"): 1e-2, ("logistic", "objective"): 10**-2.5,
    ("huber", "none"): 1e-7, ("huber", "output"): 1e-2, ("huber", "objective"): 10**-2.5,
}


def run_figure2(X, y, *, epsilons=EPSILONS, losses=("logistic", "huber"), h=0.5,
                best_lambda=None, n_folds=10, folds_to_run=None, n_runs=50, random_state=0,
                n_threads=None, progress=True):
    """Errors (len(epsilons),) per (loss, method), averaged over folds and runs.

    All epsilons of one fold and loss share one batched solve for objective
    perturbation (len(epsilons) * n_runs problems); output perturbation adds
    noise to one exact minimizer per fold.
    """
    best_lambda = dict(PAPER_BEST_LAMBDA if best_lambda is None else best_lambda)
    rng = check_random_state(random_state)
    folds = fold_indices(X.shape[0], n_folds, rng)
    nf = n_folds if folds_to_run is None else min(int(folds_to_run), n_folds)
    eps = np.asarray(epsilons, dtype=np.float64)
    errors = {(lo, m): np.zeros((eps.size, nf)) for lo in losses for m in ("none", "output", "objective")}
    bar = Progress(nf * len(losses) * (eps.size + 1), "figure2", enabled=progress)
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
            "seconds": time.perf_counter() - t0}


def write_figure2_csv(result, path):
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


def plot_figure2(result, path):
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
        ax.axhline(0.248, color="0.6", lw=0.8, ls=":", label="constant classifier (≈0.248)")
        ax.set_title(f"Adult, {'logistic regression' if lo == 'logistic' else 'Huber SVM (h=0.5)'}")
        ax.set_xlabel("privacy parameter ε")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("test error")
    axes[0][-1].legend(fontsize=8, loc="upper right")
    fig.suptitle(f"Privacy-accuracy trade-off ({plural(result['folds_run'], 'fold')}, "
                 f"{plural(result['n_runs'], 'run')} each)",
                 fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
