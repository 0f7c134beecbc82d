"""Thread scaling of the compiled passes and of whole fits, with the read bandwidth beside.

    python benchmarks/thread_scaling.py OUT.json [--threads 1,2,4,8,16] [--n 200000] [--reps 5]

Needs numpy, scipy, scikit-learn (for dperm.datasets) and dperm only; about a minute
on a 16-core machine.  For each thread count T (those above the cores this process
may use are skipped):

* read bandwidth: numpy ``a.sum()`` over 400 MB, on T threads each summing its own
  slice (benchmarks/bandwidth.py), GB/s;
* one value-and-gradient pass (logistic, ``dperm._core._objective.value_grad``,
  ``n_threads=T``), best of --reps, wall clock:
    - dense n x 100 float64, k = 1 and k = 64 weight vectors,
    - CSR ``make_onehot_classification(n, 400, 30)`` float64, k = 1 and k = 64;
* whole fits (``dperm.optim.erm.minimize(..., n_threads=T)``, non-private logistic,
  tol 1e-10), best of 2: CSR alpha = 1e-4 (k = 1), dense alpha = 1e-3 (k = 1),
  and the 64-problem dense batch (alpha = 1e-3, a random linear term per problem,
  objective perturbation's shape; benchmarks/batch_fit.py's set-up).

dperm's thread count is the ``n_threads`` argument (dperm/_config.py reports the
default, every core the process may use).  The Markdown table gives times and the
speed-up over one thread; the JSON file holds every number and the machine.
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np
from bandwidth import read_bandwidth

import dperm
from dperm import erm
from dperm._core import _objective as ob
from dperm.datasets import make_onehot_classification


def best(fn, reps):
    out, ts = None, []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return min(ts), out


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="where to write the results (JSON)")
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    ncore = cores()
    threads = [t for t in (int(x) for x in args.threads.split(",")) if 1 <= t <= ncore]
    rng = np.random.default_rng(0)

    Xs, ys = make_onehot_classification(args.n, 400, 30, random_state=0)
    Xd = rng.normal(size=(args.n, 100))
    yd = np.where(Xd @ rng.normal(size=100) + rng.normal(size=args.n) > 0, 1.0, -1.0)
    k = 64
    B = rng.normal(size=(k, 100))
    cases = {"dense": (Xd, yd), "CSR": (Xs, np.asarray(ys, dtype=np.float64))}
    data = {name: ob.Data(X, y) for name, (X, y) in cases.items()}
    W = {(name, m): np.ascontiguousarray(rng.normal(scale=0.1, size=(m, X.shape[1])))
         for name, (X, _) in cases.items() for m in (1, k)}

    rows = []
    for T in threads:
        r = {"threads": T, "read_GBps": read_bandwidth(args.reps, T) / 1e9}
        for name in cases:
            for m in (1, k):
                l2 = np.full(m, 1e-4)
                reps = args.reps if m == 1 else max(2, args.reps // 2)
                ob.value_grad(data[name], W[name, m], l2, None, 0, 0.0, T)
                r[f"pass {name} k={m}"], _ = best(
                    lambda: ob.value_grad(data[name], W[name, m], l2, None, 0, 0.0, T), reps)
        t, res = best(lambda: erm.minimize(Xs, ys, alpha=1e-4, tol=1e-10, n_threads=T), 2)
        r["fit CSR k=1"], r["iters CSR k=1"] = t, int(res.n_iter)
        t, res = best(lambda: erm.minimize(Xd, yd, alpha=1e-3, tol=1e-10, n_threads=T), 2)
        r["fit dense k=1"], r["iters dense k=1"] = t, int(res.n_iter)
        t, res = best(lambda: erm.minimize(Xd, yd, alpha=np.full(k, 1e-3), linear=B, tol=1e-10,
                                           n_threads=T), 1 if T == 1 else 2)
        r["fit dense k=64"], r["iters dense k=64"] = t, int(np.max(res.n_iter))
        rows.append(r)
        print(f"  {T} threads done", file=sys.stderr, flush=True)

    timed = [c for c in rows[0] if c.startswith(("pass", "fit"))]
    print(f"\n{platform.processor() or platform.machine()}, {ncore} cores usable; "
          f"n = {args.n:,}; dperm {dperm.__version__}, SIMD {dperm.get_config()['simd']}\n")
    print("| threads | read GB/s | " + " | ".join(f"{c} (ms)" for c in timed) + " |")
    print("|---:|---:|" + "---:|" * len(timed))
    for r in rows:
        cells = [f"{r[c] * 1e3:.1f} ({rows[0][c] / r[c]:.1f}x)" for c in timed]
        print(f"| {r['threads']} | {r['read_GBps']:.1f} | " + " | ".join(cells) + " |")
    print("\n(in brackets: time at 1 thread / time at T threads)")
    info = {"machine": platform.platform(), "processor": platform.processor(), "cores": ncore,
            "n": args.n, "config": dperm.get_config(), "rows": rows,
            "nnz_csr": int(Xs.nnz)}
    with open(args.json, "w") as f:
        json.dump(info, f, indent=1, default=str)


if __name__ == "__main__":
    main()
