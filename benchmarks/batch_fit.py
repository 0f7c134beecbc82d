"""Whole-fit cost per problem of a 64-problem batch, against one problem alone.

    python benchmarks/batch_fit.py [--reps N] [--k 64] [--solver lbfgs|newton]

Dense (200,000 x 100 float64, Gaussian rows) and CSR (make_onehot_classification,
200,000 x 400, ~30 non-zeros per row): non-private logistic, alpha = 1e-3, every
problem with its own linear term (objective perturbation's shape: 64 noise
draws), tol 1e-10, one thread.  Reports per-problem cost = time(k problems) /
(k * time(1 problem)) for the whole fit and for one pass
(dperm._core._objective.value_grad), and the dense pass's floor: 2 n d k
multiply-adds at the single-thread dgemm rate this machine measures
(numpy/OpenBLAS, 2000^3).  Times are CPU seconds of this process (less
disturbed by other jobs than wall time), best of --reps.
"""
import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _timing import timed  # noqa: E402


def best(fn, reps):
    """CPU time of this process (min over reps) and the result."""
    return timed(fn, reps, clock=time.process_time)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--solver", default="lbfgs")
    args = ap.parse_args()

    from dperm._core._objective import value_grad
    from dperm.data.oracle import binary_oracle
    from dperm.datasets import make_onehot_classification
    from dperm.optim.erm import minimize

    rng = np.random.default_rng(0)
    n, k = 200_000, args.k
    Xd = rng.standard_normal((n, 100)) / 15.0
    yd = np.where(Xd @ rng.standard_normal(100) * 3 + rng.standard_normal(n) > 0, 1.0, -1.0)
    Xs, ys = make_onehot_classification(n, random_state=0)
    A = rng.random((2000, 2000))
    t_gemm, _ = best(lambda: A @ A, 3)
    gemm_rate = 2000**3 / t_gemm
    print(f"single-thread dgemm: {gemm_rate / 1e9:.1f} G multiply-adds/s")
    print("| data | pass k=1 (ms) | pass k=64 per problem | fit k=1 (s) | fit k=64 (s) | "
          "fit per problem | iterations k=1 / k=64 (min-max) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, X, y in (("dense 200,000 x 100", Xd, yd), ("CSR 200,000 x 400, 30/row", Xs, ys)):
        d = X.shape[1]
        B = np.random.default_rng(2).standard_normal((k, d)) * 0.5
        D = binary_oracle(X, y, n_threads=1).data   # the compiled rows
        W1, Wk = B[:1] * 0.01, B * 0.01
        p1, _ = best(lambda: value_grad(D, W1, np.full(1, 1e-3), None, 0, 0.5, 1), args.reps * 3)
        pk, _ = best(lambda: value_grad(D, Wk, np.full(k, 1e-3), None, 0, 0.5, 1), args.reps)
        f1, r1 = best(lambda: minimize(X, y, alpha=np.full(1, 1e-3), linear=B[:1], n_threads=1,
                                       solver=args.solver), args.reps)
        fk, rk = best(lambda: minimize(X, y, alpha=np.full(k, 1e-3), linear=B, n_threads=1,
                                       solver=args.solver), args.reps)
        print(f"| {name} | {p1 * 1e3:.1f} | {pk / k / p1:.3f} | {f1:.3f} | {fk:.3f} | "
              f"{fk / k / f1:.3f} | {int(r1.n_iter[0])} / {rk.n_iter.min()}-{rk.n_iter.max()} |")
        if name.startswith("dense"):
            floor = 2 * n * d * k / gemm_rate
            print(f"|  dense pass floor at dgemm rate: {floor * 1e3:.0f} ms for k={k}, "
                  f"i.e. {floor / k / p1:.3f} per problem |||||||")


if __name__ == "__main__":
    main()
