"""The constant of PrivateLinearRegression's alpha="auto" rule, measured.

The rule (dperm.privacy.regularization, loss "pseudo_huber") is Lambda = C R^2 (h / B) / (n eps),
then raised by the public safeguards.  For each data set, epsilon and mechanism this
script sweeps Lambda over a grid (held-out R^2, averaged over noise draws), reports the
best Lambda in hindsight as C_best = Lambda_best n eps / (R^2 h / B), and the held-out
R^2 of alpha="auto" beside the best one.

    python benchmarks/regression_alpha.py [--reps 3] [--quick]

Data sets: a synthetic linear model (d = 20, Gaussian noise) and Adult with the target
hours-per-week (public bound 99 hours, centred at the public midpoint), features encoded
by public bounds and category lists (dperm.datasets.load_adult(preprocess="public")).
"""
import argparse
import warnings

import numpy as np

from dperm import PrivateLinearRegression
from dperm.exceptions import ClippingWarning, NoiseDominatedWarning, PrivacyLeakWarning


def synthetic(n=40000, d=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.sqrt(d) * 2.0                       # public scale: most norms well below 1
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.normal(size=d)
    w *= 1.5 / np.linalg.norm(w)
    y = X @ w + 0.1 + 0.2 * rng.normal(size=n)
    return "synthetic d=20", X, np.clip(y, -1, 1), 1.0


def adult():
    from dperm.datasets import load_adult

    X, _, names = load_adult(preprocess="public", return_feature_names=True)
    names = list(names)
    j = names.index("hours-per-week")
    scale = np.sqrt(14.0)                        # the public row scaling
    y = X[:, j] * scale - 0.5                    # hours / 99, centred: |y| <= 0.5
    X = np.delete(X, j, axis=1)
    return "adult hours-per-week", np.ascontiguousarray(X), y, 0.5


def split(X, y, seed=0):
    rng = np.random.default_rng(seed)
    idx = rng.permutation(X.shape[0])
    k = int(0.8 * X.shape[0])
    return X[idx[:k]], y[idx[:k]], X[idx[k:]], y[idx[k:]]


def r2(est, X, y):
    return float(est.score(X, y))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one data set, epsilon 1 only")
    args = ap.parse_args()
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    warnings.simplefilter("ignore", ClippingWarning)
    warnings.simplefilter("ignore", NoiseDominatedWarning)   # the grid goes low on purpose
    sets = [synthetic()] + ([] if args.quick else [adult()])
    epsilons = [1.0] if args.quick else [0.1, 1.0, 10.0]
    print("| data set | n | eps | method | C_best | R^2 best | R^2 auto | alpha auto |")
    print("|---|---|---|---|---|---|---|---|")
    for name, X, y, B in sets:
        Xtr, ytr, Xte, yte = split(X, y)
        n, d = Xtr.shape
        base = 1.0 * 1.0 / n                    # R^2 (h / B) / n with h = B, R = 1
        for eps in epsilons:
            for method in ("objective", "output"):
                grid = base / eps * np.geomspace(0.1, 1e4, 16)
                scores = []
                for a in grid:
                    s = [r2(PrivateLinearRegression(method=method, epsilon=eps, alpha=a,
                                                    label_bound=B, random_state=r,
                                                    n_threads=1).fit(Xtr, ytr), Xte, yte)
                         for r in range(args.reps)]
                    scores.append(np.mean(s))
                best = int(np.argmax(scores))
                auto = [PrivateLinearRegression(method=method, epsilon=eps, label_bound=B,
                                                random_state=r, n_threads=1).fit(Xtr, ytr)
                        for r in range(args.reps)]
                print(f"| {name} | {n} | {eps:g} | {method} | "
                      f"{grid[best] * n * eps:.3g} | {scores[best]:.4f} | "
                      f"{np.mean([r2(e, Xte, yte) for e in auto]):.4f} | "
                      f"{auto[0].alpha_:.3g} |", flush=True)


if __name__ == "__main__":
    main()
