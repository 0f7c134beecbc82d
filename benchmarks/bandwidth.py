"""Read bandwidth of this machine, and the compiled passes in ns per stored entry against it.

    python benchmarks/bandwidth.py [--n N] [--reps R] [--threads T] [--json PATH]

1. The probe (STREAM-like, read only): the best of R timings of numpy's ``a.sum()``
   over a 400 MB float64 array (far beyond the last-level cache of the machines in
   BENCHMARKS.md), on one thread and on T threads at once (each thread sums its own
   contiguous slice; numpy releases the GIL in the reduction).  Bytes read / seconds.
2. One value-and-gradient pass (``dperm._core._objective.value_grad``, logistic) at
   one thread over
     * CSR: ``make_onehot_classification(N, 400, 30)``, float64 and float32 values,
       int32 indices, k = 1 and k = 64 weight vectors;
     * dense: N x 100 float64, k = 1 and 64.
   Reported: milliseconds per pass, ns per stored entry (per problem for k = 64),
   and the bandwidth bound -- the bytes of X (values + indices + indptr) read once at
   the one-thread probe rate -- with the ratio pass / bound.  Best of R, wall clock.

The bound counts ONE read of X per pass; the CSR pass reads each row's non-zeros twice
(margins, then the scatter into the gradient), the second time from cache (rows go in
blocks sized to stay in L2; see dperm/_core/_csr.h).
"""
import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def best(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def read_bandwidth(reps=5, threads=1, nbytes=400 * 2**20):
    """Bytes per second of summing a float64 array of nbytes on `threads` threads."""
    a = np.ones(nbytes // 8)
    a.sum()
    if threads <= 1:
        return a.nbytes / best(a.sum, reps)
    parts = np.array_split(a, threads)
    with ThreadPoolExecutor(threads) as ex:
        def go():
            list(ex.map(np.sum, parts))
        go()
        return a.nbytes / best(go, reps)


def onehot(n, dtype):
    from dperm.datasets import make_onehot_classification

    X, y = make_onehot_classification(n, 400, 30, dtype=dtype, random_state=0)
    return X, np.where(y > 0, 1.0, -1.0)


def x_bytes(X):
    if hasattr(X, "indptr"):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


def pass_time(X, s, k, reps, threads=1):
    from dperm._core import _objective as ob

    D = ob.Data(X, s)
    d = X.shape[1]
    rng = np.random.default_rng(0)
    W = np.ascontiguousarray(rng.normal(scale=0.1, size=(k, d)))
    l2 = np.full(k, 1e-4)
    ob.value_grad(D, W, l2, None, 0, 0.0, threads)
    return best(lambda: ob.value_grad(D, W, l2, None, 0, 0.0, threads), reps)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    bw1 = read_bandwidth(args.reps, 1)
    bwt = read_bandwidth(args.reps, args.threads)
    print(f"read bandwidth: {bw1 / 1e9:.1f} GB/s one thread, "
          f"{bwt / 1e9:.1f} GB/s on {args.threads} threads")
    rows = []
    cases = []
    for dt in (np.float64, np.float32):
        X, s = onehot(args.n, dt)
        for k in (1, 64):
            cases.append((f"CSR {np.dtype(dt).name}", X, s, k))
    Xd = np.random.default_rng(1).normal(size=(args.n, 100))
    sd = np.where(np.random.default_rng(2).random(args.n) < 0.5, -1.0, 1.0)
    for k in (1, 64):
        cases.append(("dense float64 d=100", Xd, sd, k))
    print()
    print("| X | k | entries | MB of X | pass (ms) | ns / entry / problem | "
          "bound (ms) | pass / bound (per problem) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, X, s, k in cases:
        nnz = X.nnz if hasattr(X, "nnz") else X.size
        t = pass_time(X, s, k, args.reps if k == 1 else max(2, args.reps // 2))
        bound = x_bytes(X) / bw1
        row = {"X": name, "k": k, "entries": int(nnz), "bytes": int(x_bytes(X)),
               "pass_s": t, "ns_per_entry_per_problem": t / nnz / k * 1e9,
               "bound_s": bound, "ratio_per_problem": t / k / bound}
        rows.append(row)
        print(f"| {name} | {k} | {nnz:,} | {x_bytes(X) / 1e6:.0f} | {t * 1e3:.2f} | "
              f"{row['ns_per_entry_per_problem']:.3f} | {bound * 1e3:.2f} | "
              f"{row['ratio_per_problem']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"read_bw_1": bw1, "read_bw_threads": bwt, "threads": args.threads,
                       "rows": rows, "python": sys.version}, f, indent=1)


if __name__ == "__main__":
    main()
