"""Fit time of the regression ERM path against a classification fit of the same size.

Side by side in one process, one thread each (n_threads=1): for the same rows X (n x d),

* estimator: PrivateLinearRegression(method="objective") on a real target against
  PrivateLinearClassifier(perturbation="objective") on a +-1 label (both pure epsilon,
  alpha="auto", the same epsilon), the whole fit() as a user calls it;
* pass: one value-and-gradient pass of the compiled kernels (dperm.optim.erm.objective),
  pseudo-Huber against logistic, at the same point: the per-iteration cost.

Each timing is the median of --repeats runs; the ratio is regression / classification.

    python benchmarks/regression_fit_time.py [--n 100000] [--d 50] [--repeats 5]
"""
import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp

from dperm import PrivateLinearClassifier, PrivateLinearRegression
from dperm._core._objective import vector_width
from dperm.optim import erm


def data(n, d, fmt, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if fmt == "csr":
        X[rng.random((n, d)) < 0.9] = 0.0
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1) * 1.001)[:, None] * 1.001
    w = rng.normal(size=d) / np.sqrt(d) * 3
    score = X @ w
    y_reg = np.clip(score + 0.3 * rng.normal(size=n), -1, 1)
    y_cls = np.where(score + 0.3 * rng.logistic(size=n) > 0, 1.0, -1.0)
    if fmt == "csr":
        X = sp.csr_matrix(X)
    elif fmt == "float32":
        X = X.astype(np.float32)
    return X, y_reg, y_cls


def median_time(fn, repeats):
    out, ts = None, []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--formats", default="dense,float32,csr")
    args = ap.parse_args()
    warnings.simplefilter("ignore")      # seeded fits: a benchmark, not a release
    print(f"n = {args.n}, d = {args.d}, 1 thread, vector width {vector_width()} doubles, "
          f"median of {args.repeats}")
    print("| X | what | regression (s) | classification (s) | ratio | iterations (reg / cls) |")
    print("|---|---|---|---|---|---|")
    for fmt in args.formats.split(","):
        X, y_reg, y_cls = data(args.n, args.d, fmt)

        def reg():
            return PrivateLinearRegression(method="objective", epsilon=1.0, random_state=0,
                                           n_threads=1).fit(X, y_reg)

        def cls():
            return PrivateLinearClassifier(perturbation="objective", epsilon=1.0,
                                           classes=[-1.0, 1.0], random_state=0,
                                           n_threads=1).fit(X, y_cls)
        reg(), cls()                                   # warm up (imports, page faults)
        tr, er = median_time(reg, args.repeats)
        tc, ec = median_time(cls, args.repeats)
        print(f"| {fmt} | fit() | {tr:.4f} | {tc:.4f} | {tr / tc:.2f} | "
              f"{er.fit_diagnostics_['n_iter']} / {ec.fit_diagnostics_['n_iter']} |", flush=True)
        W = np.random.default_rng(1).normal(size=(1, args.d)) * 0.1
        pr, _ = median_time(lambda: erm.objective(X, y_reg, W, loss="pseudo_huber", alpha=1e-3,
                                                  h=1.0, n_threads=1), args.repeats * 4)
        pc, _ = median_time(lambda: erm.objective(X, y_cls, W, loss="logistic", alpha=1e-3,
                                                  n_threads=1), args.repeats * 4)
        print(f"| {fmt} | one pass | {pr:.4f} | {pc:.4f} | {pr / pc:.2f} | |", flush=True)


if __name__ == "__main__":
    main()
