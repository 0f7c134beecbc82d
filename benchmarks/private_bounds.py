"""Private bounds on Adult (BENCHMARKS.md, "Private bounds").

1. Accuracy of ``dperm.estimate_bounds`` on Adult's six numeric columns (the 45,222 kept
   rows of adult.data + adult.test): for each column, the error of the private 1 % and
   99 % bounds relative to the true 1 %-99 % width, |private - true| / (true_99 - true_1),
   over repeated draws (mean, median, and the fraction of draws within 5 %), at the
   default public range (+-1e9) and at several epsilons.
2. A classifier pipeline at total epsilon 1: private bounds at epsilon_b on the training
   rows (adult.data), then PrivateLinearClassifier (alpha="auto", objective perturbation)
   at 1 - epsilon_b on the rows scaled by them, against the same classifier at epsilon 1
   on the rows scaled by the documented public bounds [0, ADULT_PUBLIC_BOUNDS] (what
   load_adult(preprocess="public") uses); test accuracy on adult.test, mean over runs.
   Both pipelines use the public category lists of adult.names and one encoding
   (PublicSchema, unknown categories as all-zero groups).

    python benchmarks/private_bounds.py                 # the table of BENCHMARKS.md
    python benchmarks/private_bounds.py --draws 20 --runs 3     # quicker
"""
import argparse
import time
import warnings

import numpy as np

import dperm
from dperm.datasets._adult import (
    ADULT_NUMERIC_COLUMNS,
    ADULT_PUBLIC_BOUNDS,
    ADULT_PUBLIC_CATEGORIES,
)


def load():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = dperm.datasets.load_adult("public", return_frame=True)
    f = b.frame
    cols = {c: f[c] for c in f.dtype.names if c != "income"}
    return cols, f["income"], np.asarray(b.is_test)


def bounds_accuracy(cols, epsilons, draws, seed):
    X = {c: cols[c] for c in ADULT_NUMERIC_COLUMNS}
    true = {c: np.quantile(X[c], [0.01, 0.99]) for c in X}
    rng = np.random.default_rng(seed)
    print("\n1. width-relative error of the private 1 % / 99 % bounds "
          f"(default range +-1e9, {draws} draws, {next(iter(X.values())).size} rows)")
    print(f"{'epsilon':>7}  {'column':16} {'true (1%, 99%)':>22}  {'low: mean':>10} {'median':>8} "
          f"{'<=5%':>5}  {'high: mean':>10} {'median':>8} {'<=5%':>5}")
    summary = {}
    for eps in epsilons:
        errs = {c: [] for c in X}
        for _ in range(draws):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", dperm.PrivacyLeakWarning)
                b = dperm.estimate_bounds(X, eps, random_state=rng)
            for c in X:
                w = true[c][1] - true[c][0]
                errs[c].append(np.abs(np.asarray(b[c]) - true[c]) / w)
        rows = []
        for c in X:
            e = np.asarray(errs[c])
            rows.append(e)
            print(f"{eps:7g}  {c:16} {f'({true[c][0]:.6g}, {true[c][1]:.6g})':>22}  "
                  f"{e[:, 0].mean():10.3g} {np.median(e[:, 0]):8.3g} {np.mean(e[:, 0] <= 0.05):5.2f}  "
                  f"{e[:, 1].mean():10.3g} {np.median(e[:, 1]):8.3g} {np.mean(e[:, 1] <= 0.05):5.2f}")
        e = np.concatenate(rows)
        summary[eps] = (np.median(e), np.mean(e <= 0.05))
        print(f"{eps:7g}  {'all columns':16} {'':>22}  median {np.median(e):.3g}, "
              f"within 5 %: {np.mean(e <= 0.05):.2f} of the bounds")
    return summary


def pipeline(cols, y, is_test, splits, runs, seed):
    train = ~is_test
    cats = dict(ADULT_PUBLIC_CATEGORIES)
    ytr, yte = y[train], y[is_test]
    tr = {c: v[train] for c, v in cols.items()}
    te = {c: v[is_test] for c, v in cols.items()}

    def fit_score(schema, eps, rng):
        Xtr = schema.encode(tr, unknown="ignore")
        Xte = schema.encode(te, unknown="ignore")
        clf = dperm.PrivateLinearClassifier(epsilon=eps, classes=[-1, 1], random_state=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dperm.PrivacyLeakWarning)
            clf.fit(Xtr, ytr)
        return float(np.mean(clf.predict(Xte) == yte))

    rng = np.random.default_rng(seed)
    public = dperm.PublicSchema({c: (0.0, float(ADULT_PUBLIC_BOUNDS[c]))
                                 for c in ADULT_NUMERIC_COLUMNS}, cats)
    base = [fit_score(public, 1.0, rng) for _ in range(runs)]
    print(f"\n2. test accuracy at total epsilon 1 ({runs} runs; train adult.data "
          f"{int(train.sum())} rows, test adult.test {int(is_test.sum())} rows)")
    print(f"   public bounds [0, ADULT_PUBLIC_BOUNDS], classifier epsilon 1: "
          f"{np.mean(base):.4f} (sd {np.std(base):.4f})")
    out = {"public": np.mean(base)}
    for eps_b in splits:
        acc = []
        for _ in range(runs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", dperm.PrivacyLeakWarning)
                b = dperm.estimate_bounds({c: tr[c] for c in ADULT_NUMERIC_COLUMNS}, eps_b,
                                          random_state=rng)
            acc.append(fit_score(dperm.PublicSchema(b, cats), 1.0 - eps_b, rng))
        out[eps_b] = np.mean(acc)
        print(f"   private bounds at epsilon {eps_b:g} + classifier at {1 - eps_b:g}: "
              f"{np.mean(acc):.4f} (sd {np.std(acc):.4f}); difference "
              f"{np.mean(acc) - np.mean(base):+.4f}")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--epsilons", default="0.1,0.5,1,2")
    p.add_argument("--splits", default="0.1,0.3,0.5")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    t = time.perf_counter()
    cols, y, is_test = load()
    bounds_accuracy(cols, [float(e) for e in a.epsilons.split(",")], a.draws, a.seed)
    pipeline(cols, y, is_test, [float(e) for e in a.splits.split(",")], a.runs, a.seed)
    print(f"\n({time.perf_counter() - t:.0f} s; seeded: a benchmark, not a release)")


if __name__ == "__main__":
    main()
