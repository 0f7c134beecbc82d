"""One-vs-rest on a Dask array against the same fit on the local array.

    python benchmarks/dask_ovr.py [--n 200000] [--d 50] [--K 5] [--epsilon 1.0]
                                  [--perturbation objective] [--chunks 8] [--workers 2]
                                  [--threads 2] [--reps 4]

`dperm.PrivateLinearClassifier(epsilon, classes=range(K))` (pure epsilon: K one-vs-rest
models at epsilon / K, alpha "auto", one seed) fitted on the rows in memory (the compiled
passes with --threads threads) and on the same rows as a persisted Dask array of --chunks
row chunks on an in-process LocalCluster of --workers single-threaded workers (the labels
sent as a Dask array and mapped to class indices there, each class's +-1 labels made
there), the two runs interleaved (local, Dask, local, Dask, ...) in one process.  Prints
each pair's times and the largest coefficient difference, and the ratio Dask / local of
the median times.
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
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--perturbation", default="objective")
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()

    import dask.array as da
    import distributed

    import dperm

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n, d, K = args.n, args.d, args.K
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.argmax(3.0 * X @ rng.normal(size=(K, d)).T + rng.normal(size=(n, K)), axis=1)
    kw = dict(epsilon=args.epsilon, perturbation=args.perturbation, classes=list(range(K)),
              random_state=1)
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=False, dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        rows = -(-n // args.chunks)
        Xd = da.from_array(X, chunks=(rows, -1)).persist()
        yd = da.from_array(y, chunks=rows).persist()
        t_local, t_dask = [], []
        for r in range(args.reps):
            t = time.perf_counter()
            a = dperm.PrivateLinearClassifier(n_threads=args.threads, **kw).fit(X, y)
            t_local.append(time.perf_counter() - t)
            t = time.perf_counter()
            b = dperm.PrivateLinearClassifier(**kw).fit(Xd, yd)
            t_dask.append(time.perf_counter() - t)
            assert a.privacy_["multiclass"] == "ovr" and a.privacy_ == b.privacy_
            print(f"pair {r}: local {t_local[-1]:.2f} s, Dask {t_dask[-1]:.2f} s "
                  f"(largest n_iter {a.fit_diagnostics_['n_iter']}, "
                  f"{b.fit_diagnostics_['n_iter']}), max |coef difference| "
                  f"{np.abs(a.coef_ - b.coef_).max():.1e}", flush=True)
    ratios = [round(tb / ta, 2) for ta, tb in zip(t_local, t_dask)]
    print(f"median local {np.median(t_local):.2f} s, Dask {np.median(t_dask):.2f} s: "
          f"Dask / local {np.median(t_dask) / np.median(t_local):.2f} (per pair {ratios}); "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
