"""The multinomial (softmax) fit on a Dask array against the same fit on the local array.

    python benchmarks/dask_softmax.py [--n 200000] [--d 50] [--K 5] [--alpha 1e-3]
                                      [--chunks 8] [--workers 2] [--threads 2] [--reps 4]

`dperm.optim.softmax.minimize_multinomial` on the rows in memory (the compiled pass with
--threads threads) and on the same rows as a persisted Dask array of --chunks row chunks
on an in-process LocalCluster of --workers single-threaded workers (the same pass per
chunk, the sums added through the chunk tree), the two runs interleaved (local, Dask,
local, Dask, ...) in one process.  Prints each pair's times, iterations and the largest
coefficient difference, and the ratio Dask / local of the median times.
"""
import argparse
import os
import time
import warnings

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--K", type=int, default=5)
    ap.add_argument("--alpha", type=float, default=1e-3)
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()

    import dask.array as da
    import distributed

    from dperm.optim.softmax import minimize_multinomial

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n, d, K = args.n, args.d, args.K
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.argmax(3.0 * X @ rng.normal(size=(K, d)).T + rng.normal(size=(n, K)), axis=1)
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=False, dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        Xd = da.from_array(X, chunks=(-(-n // args.chunks), -1)).persist()
        t_local, t_dask = [], []
        for r in range(args.reps):
            t = time.perf_counter()
            a = minimize_multinomial(X, y, K, alpha=args.alpha, n_threads=args.threads)
            t_local.append(time.perf_counter() - t)
            t = time.perf_counter()
            b = minimize_multinomial(Xd, y, K, alpha=args.alpha)
            t_dask.append(time.perf_counter() - t)
            print(f"pair {r}: local {t_local[-1]:.2f} s ({a.n_iter[0]} iterations), Dask "
                  f"{t_dask[-1]:.2f} s ({b.n_iter[0]}), max |coef difference| "
                  f"{np.abs(a.coef - b.coef).max():.1e}", flush=True)
    ratios = [round(tb / ta, 2) for ta, tb in zip(t_local, t_dask)]
    print(f"median local {np.median(t_local):.2f} s, Dask {np.median(t_dask):.2f} s: "
          f"Dask / local {np.median(t_dask) / np.median(t_local):.2f} (per pair {ratios}); "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
