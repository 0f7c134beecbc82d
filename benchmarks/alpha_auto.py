"""How good is alpha="auto"?  Test accuracy at the rule's Lambda against the best Lambda
of the grid 10^-6 ... 10^0 (half-decade steps), per data set, epsilon and mechanism.

The estimator's path is reproduced in batch: rows clipped to R = 1, the public intercept
feature appended (`augment_intercept`), every (Lambda, draw) pair solved as one batched
problem by the mechanism, the released coefficients scored on the held-out fold.  The
rule sees only n (the training fold's size), d (with the intercept), epsilon and R.

    python benchmarks/alpha_auto.py [--folds 5] [--draws 20] [--losses logistic,huber]
                                    [--grid-step 0.5] [--out docs/alpha_auto.json]

Data sets (best Lambda differs by orders of magnitude between them):
  adult        UCI Adult, public preprocessing (load_adult(preprocess="public")), 45,222 rows
  kddcup99     KDD Cup 99 10% sample, public preprocessing, a random 70,000-row subset
               (the paper's Table 2 protocol)
  cancer       scikit-learn's breast cancer, standardised (StandardScaler), 569 rows;
               rows then clipped to R = 1 as the estimator does by default
"""
import argparse
import json
import time
import warnings

import numpy as np

from dperm.data.design import augment_intercept
from dperm.data.validation import apply_norm_bound
from dperm.optim import erm
from dperm.privacy.mechanisms import objective_perturbation, output_perturbation
from dperm.privacy.regularization import auto_alpha

GRID = 10.0 ** np.arange(-6.0, 0.01, 0.5)   # the grid of the comparison (half decades)
CASES = [("adult", 0.1), ("adult", 1.0), ("kddcup99", 0.1), ("kddcup99", 1.0), ("cancer", 1.0)]


def load(name, seed=0):
    if name == "adult":
        from dperm.datasets import load_adult
        X, y = load_adult(preprocess="public")
    elif name == "kddcup99":
        from dperm.datasets import load_kddcup99
        X, y = load_kddcup99(preprocess="public", n_samples=70000, random_state=seed)
    elif name == "cancer":
        from sklearn.datasets import load_breast_cancer
        from sklearn.preprocessing import StandardScaler
        X, y01 = load_breast_cancer(return_X_y=True)
        X = StandardScaler().fit_transform(X)
        y = np.where(y01 == 1, 1, -1)
    else:
        raise ValueError(name)
    X = apply_norm_bound(np.asarray(X, dtype=np.float64), 1.0, "clip")
    return augment_intercept(X, 1.0), np.asarray(y, dtype=np.float64)


def accuracy(coef, X, y):
    """Mean accuracy of coef (..., d) on (X, y), averaged over the leading axes but the first."""
    s = np.einsum("...d,nd->...n", coef, X)
    return ((s > 0) == (y > 0)).mean(axis=-1)


def run_case(name, eps, n_folds, n_draws, seed=0, loss="logistic", grid=GRID):
    X, y = load(name, seed)
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    folds = np.array_split(rng.permutation(n), n_folds)
    out = {m: {"grid": [], "auto": [], "auto_alpha": []} for m in ("objective", "output", "none")}
    for f in range(n_folds):
        te = folds[f]
        tr = np.concatenate([folds[g] for g in range(n_folds) if g != f])
        Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
        ntr, d = Xtr.shape
        for mech in ("objective", "output", "none"):
            a_auto = auto_alpha(ntr, d, eps, perturbation=mech, loss=loss)
            alphas = np.append(grid, a_auto)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if mech == "none":
                    res = erm.minimize(Xtr, ytr, alpha=alphas, loss=loss)
                    acc = accuracy(res.coef, Xte, yte)
                else:
                    fn = objective_perturbation if mech == "objective" else output_perturbation
                    fit = fn(Xtr, ytr, alpha=alphas, epsilon=eps, n_draws=n_draws, random_state=rng,
                             loss=loss)
                    acc = accuracy(fit.coef, Xte, yte).mean(axis=1)
            out[mech]["grid"].append(acc[:-1].tolist())
            out[mech]["auto"].append(float(acc[-1]))
            out[mech]["auto_alpha"].append(a_auto)
    summary = {"data": name, "loss": loss, "epsilon": eps, "n": n, "n_train": int(ntr),
               "d": X.shape[1], "folds": n_folds, "draws": n_draws, "grid": grid.tolist()}
    for mech, r in out.items():
        g = np.mean(r["grid"], axis=0)
        summary[mech] = {"grid_accuracy": g.tolist(), "best_alpha": float(grid[g.argmax()]),
                         "best_accuracy": float(g.max()), "auto_alpha": float(np.mean(r["auto_alpha"])),
                         "auto_accuracy": float(np.mean(r["auto"])),
                         "gap": float(g.max() - np.mean(r["auto"]))}
    return summary


def table(results):
    lines = ["| data | loss | ε | mechanism | best Λ of grid | its accuracy | auto Λ | auto accuracy | gap |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for mech in ("objective", "output", "none"):
            s = r[mech]
            lines.append(f"| {r['data']} (n={r['n']}, d={r['d']}) | {r['loss']} | {r['epsilon']:g} "
                         f"| {mech} | "
                         f"{s['best_alpha']:.0e} | {s['best_accuracy']:.4f} | {s['auto_alpha']:.2e} | "
                         f"{s['auto_accuracy']:.4f} | {s['gap']:+.4f} |")
    return "\n".join(lines)


def calibrate(path):
    """Read curves written by --out (ideally on a fine grid) and print, for each mechanism,
    the worst accuracy gap over the cases against the constant C of Lambda = C / (n eps)
    (accuracy at a Lambda between grid points interpolated in log Lambda)."""
    with open(path) as fh:
        results = json.load(fh)
    for mech in ("objective", "output"):
        print(f"{mech}: best Lambda * n * eps per case, then worst gap against C")
        for r in results:
            nt = r.get("n_train", r["n"] * (r["folds"] - 1) / r["folds"])
            print(f"  {r['data']:>9} {r['loss']:>8} eps={r['epsilon']:<4g} "
                  f"best C = {r[mech]['best_alpha'] * nt * r['epsilon']:8.2f}")
        for C in (2, 3, 4, 6, 8, 10, 12, 16, 20, 25, 30, 40, 60):
            gaps = []
            for r in results:
                nt = r.get("n_train", r["n"] * (r["folds"] - 1) / r["folds"])
                acc = np.asarray(r[mech]["grid_accuracy"])
                lg = np.log10(r["grid"])
                a = np.interp(np.log10(C / (nt * r["epsilon"])), lg, acc)
                gaps.append(acc.max() - a)
            print(f"  C = {C:>3}: worst gap {max(gaps):.4f}  ("
                  + " ".join(f"{g:.3f}" for g in gaps) + ")")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--cases", default=None, help="comma-separated names, e.g. adult,cancer")
    p.add_argument("--losses", default="logistic", help="comma-separated losses (default logistic)")
    p.add_argument("--grid-step", type=float, default=0.5,
                   help="grid step in decades (default 0.5; finer grids for calibration)")
    p.add_argument("--out", default=None, help="write every accuracy curve as JSON")
    p.add_argument("--calibrate", default=None, metavar="JSON",
                   help="only analyse curves written earlier by --out (no fits)")
    args = p.parse_args()
    if args.calibrate:
        calibrate(args.calibrate)
        return
    cases = [c for c in CASES if args.cases is None or c[0] in args.cases.split(",")]
    grid = 10.0 ** np.arange(-6.0, 1e-9, args.grid_step)
    results = []
    for loss in args.losses.split(","):
        for name, eps in cases:
            t0 = time.perf_counter()
            results.append(run_case(name, eps, args.folds, args.draws, loss=loss, grid=grid))
            print(f"{name} {loss} eps={eps:g}: {time.perf_counter() - t0:.1f} s", flush=True)
    print(table(results))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
