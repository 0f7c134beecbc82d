"""Per-pass overhead of the Dask backend against the number of workers and the batch size.

    python benchmarks/dask_overhead.py [--workers 1,2,4,8] [--m 1,64] [--d 100] [--reps 30]

A LocalCluster of P single-threaded worker processes, one tiny row block per worker
(100 rows x d), so that a pass is all overhead: the client sends the batch W (m x d
float64) to each worker's actor, each returns its per-chunk sums (m + m d float64), the
client adds them.  Prints the minimum and median time of one pass (dperm's DaskRows
value_grad) and the bytes each way per worker, the inputs of the cost model in
BENCHMARKS.md.  On a 2-core machine P > 2 oversubscribes the cores: the numbers then
include waiting for a core, i.e. they are upper bounds for the overhead.
"""
import argparse
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--m", default="1,64")
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster

    from dperm.data import dask_rows as _dask

    d = args.d
    print("| workers | m | bytes to each worker | bytes back from each | pass min (ms) | pass median (ms) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for P in [int(v) for v in args.workers.split(",")]:
        with LocalCluster(n_workers=P, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            rng = np.random.default_rng(0)
            X = rng.standard_normal((100 * P, d)) / np.sqrt(d) / 2
            y = np.where(rng.random(100 * P) < 0.5, -1.0, 1.0)
            rows = _dask.as_rows(da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100))
            for m in [int(v) for v in args.m.split(",")]:
                W = rng.standard_normal((m, d)) * 0.01
                l2 = np.full(m, 1e-3)
                rows.value_grad(W, l2, None, 0, 0.5)        # warm up
                ts = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    rows.value_grad(W, l2, None, 0, 0.5)
                    ts.append(time.perf_counter() - t0)
                print(f"| {P} | {m} | {m * d * 8:,} | {(m + m * d) * 8:,} | "
                      f"{min(ts) * 1e3:.2f} | {np.median(ts) * 1e3:.2f} |")


if __name__ == "__main__":
    main()
