"""Per-pass overhead of the Dask backend against the number of workers, the batch size and
the reduction (flat gather at the client, or the shards' message tree).

    python benchmarks/dask_overhead.py [--workers 1,2,4,5,8,16] [--mode flat,tree] [--m 1,64]
                                       [--d 100] [--reps 30] [--fan-in 4] [--out results.json]
    python benchmarks/dask_overhead.py --model a.json,b.json [--fit-max-workers 5]   # refit only

A LocalCluster of P single-threaded worker processes, one tiny row block per worker
(100 rows x d), so that a pass is all overhead.  "flat": the client sends the batch W
(m x d float64) to every worker's actor (all calls in flight together) and folds the P
answers itself; "tree": the client sends W to one shard, which forwards it down a tree of
fan-in --fan-in, and receives one answer (partial sums folded on the way up).  Both add
in the same chunk-tree order: the script checks that they return the same bits.  Prints
a Markdown table (minimum and median wall time of --reps passes of dperm's DaskRows
value_grad, the modes alternating pass by pass, and the client process's CPU time per
pass, which a busy machine inflates less than wall time; then, each mode apart, the CPU
time per pass of the root shard's worker process and of the busiest one) and writes
every row to --out (JSON, or CSV if the name ends in .csv).  On a machine with
fewer cores than P + 2 the worker processes wait for a core, so the numbers are upper
bounds of the overhead and say little about its growth with P.

With --baseline OLD.py (a copy of dperm/data/dask_rows.py from another commit), the
same passes run through both implementations on the same cluster and rows, alternating
pass by pass (tree mode, or --mode), and the table compares them: minimum and median
wall time per pass and client CPU per pass of each, the ratio new / old of the medians,
and a check that both return the same bits:

    git show HEAD~1:dperm/data/dask_rows.py > /tmp/old_dask_rows.py
    python benchmarks/dask_overhead.py --baseline /tmp/old_dask_rows.py --workers 1,2,4,8

With --tasks, a pass of the regression loss (pseudo-Huber, real targets on the workers)
against a pass of the classification loss (logistic, labels in {-1, +1}) over the same
rows, alternating pass by pass, --rows rows per worker (100: overhead; 100000: compute):

    python benchmarks/dask_overhead.py --tasks --workers 2 --rows 100,100000 --m 1,8

The cost model fitted (non-negative least squares) to the minimum wall times, per m, the
minimum over the runs given: flat, a + b (P - 1) (the client
handles P answers in turn); tree, a + L levels(P) + c children(P), along the slowest path
of the message tree (a hop per level, each shard handling its children's messages in
turn).  It is printed for 4, 16, 64, 256 and 1024 workers beside the compute of a pass
over 100 M rows x 100 spread evenly (4 ms per 100,000 rows per core).  The tree's fit
needs at least three worker counts, the flat one two.
"""
import argparse
import csv
import json
import os
import time

import numpy as np

#: the compute side of the model: the compiled pass costs about 4 ms per 100,000 rows
#: per core at d = 100 (BENCHMARKS.md, "Beyond one machine"), N rows spread evenly
MS_PER_ROW = 4.0 / 100_000
N_ROWS = 100_000_000


def critical_path(P, k):
    """(levels, children) along the slowest path of the message tree over P shards with
    fan-in k (shard s forwards to s k + 1 .. s k + k): a shard with c children costs
    one hop plus c messages handled in turn, then waits for its slowest child."""
    def walk(s):
        kids = list(range(s * k + 1, min(P, (s + 1) * k + 1)))
        if not kids:
            return (0, 0)
        return max(((1 + lv, len(kids) + ch) for lv, ch in map(walk, kids)))
    return walk(0)


def fit_model(rows, fan_in, max_workers=None):
    """Non-negative least-squares fits of the per-pass minimum wall time, per m (the
    minimum over repeated runs of a setting; settings over max_workers left out):
    flat: a + b (P - 1); tree: a + L levels(P) + c children(P)."""
    from scipy.optimize import nnls

    best = {}
    for r in rows:
        if max_workers is None or r["workers"] <= max_workers:
            key = (r["m"], r["mode"], r["workers"])
            best[key] = min(best.get(key, np.inf), r["min_ms"])
    out = {}
    for m in sorted({k[0] for k in best}):
        fl = [(P, t) for (mm, mode, P), t in best.items() if mm == m and mode == "flat"]
        tr = [(P, t) for (mm, mode, P), t in best.items() if mm == m and mode == "tree"]
        model = {}
        if len(fl) >= 2:
            A = np.array([[1.0, P - 1] for P, _ in fl])
            model["flat"] = nnls(A, np.array([t for _, t in fl]))[0]
        if len(tr) >= 3:
            A = np.array([[1.0, *critical_path(P, fan_in)] for P, _ in tr])
            model["tree"] = nnls(A, np.array([t for _, t in tr]))[0]
        out[m] = model
    return out


def print_model(rows, fan_in, max_workers=None, sizes=(4, 16, 64, 256, 1024)):
    for m, model in fit_model(rows, fan_in, max_workers).items():
        print(f"\nmodel, m = {m}:", ", ".join(
            f"{k}: " + ("a = %.2f ms, b = %.2f ms per worker" % tuple(v) if k == "flat" else
                        "a = %.2f ms, L = %.2f ms per level, c = %.2f ms per child" % tuple(v))
            for k, v in model.items()))
        print("| workers P | compute per pass (100 M rows) | flat | tree (fan-in %d: levels, "
              "children on the slowest path) |" % fan_in)
        print("|---:|---:|---:|---:|")
        for P in sizes:
            comp = N_ROWS * MS_PER_ROW / P
            flat = model.get("flat")
            tree = model.get("tree")
            lv, ch = critical_path(P, fan_in)
            f = "-" if flat is None else f"{flat[0] + flat[1] * (P - 1):.1f} ms"
            t = "-" if tree is None else f"{tree[0] + tree[1] * lv + tree[2] * ch:.1f} ms ({lv}, {ch})"
            print(f"| {P} | {comp:.1f} ms | {f} | {t} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4,5,8")
    ap.add_argument("--mode", default="flat,tree")
    ap.add_argument("--m", default="1,64")
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--fan-in", type=int, default=4)
    ap.add_argument("--out", default=None, help="write the rows here (.json or .csv)")
    ap.add_argument("--model", default=None,
                    help="only fit the cost model to the rows of these JSON files (a,b,...)")
    ap.add_argument("--fit-max-workers", type=int, default=None,
                    help="fit the model to the settings with at most this many workers")
    ap.add_argument("--baseline", default=None,
                    help="compare with this copy of dask_rows.py, passes interleaved")
    ap.add_argument("--tasks", action="store_true",
                    help="compare a regression pass with a classification pass")
    ap.add_argument("--rows", default="100", help="--tasks: rows per worker (a,b,...)")
    args = ap.parse_args()
    if args.baseline:
        return compare(args)
    if args.tasks:
        return compare_tasks(args)
    if args.model:
        rows = []
        for name in args.model.split(","):
            with open(name) as f:
                rows += json.load(f)
        print_model(rows, rows[0]["fan_in"], args.fit_max_workers)
        return

    import dask.array as da
    from distributed import Client, LocalCluster

    from dperm.data import dask_rows as _dask

    _dask.TREE_FAN_IN = args.fan_in
    d = args.d
    modes = args.mode.split(",")
    for mode in modes:
        if mode not in ("flat", "tree"):
            raise SystemExit(f"--mode: expected flat and/or tree, got {mode!r}")
    rows_out = []
    print(f"cores: {os.cpu_count()}, fan-in {args.fan_in}")
    print("| workers | m | mode | bytes to each worker | bytes back per chunk | pass min (ms) "
          "| pass median (ms) | client CPU per pass (ms) | root worker CPU (ms) "
          "| busiest worker CPU (ms) |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for P in [int(v) for v in args.workers.split(",")]:
        with LocalCluster(n_workers=P, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.wait_for_workers(P)
            rng = np.random.default_rng(0)
            X = rng.standard_normal((100 * P, d)) / np.sqrt(d) / 2
            y = np.where(rng.random(100 * P) < 0.5, -1.0, 1.0)
            # block i on worker i (scattered there), its labels beside it
            workers = sorted(client.scheduler_info()["workers"])
            xs = [client.scatter(X[100 * i:100 * (i + 1)], workers=[w]) for i, w in enumerate(workers)]
            ys = [client.scatter(y[100 * i:100 * (i + 1)], workers=[w]) for i, w in enumerate(workers)]
            Xd = da.concatenate([da.from_delayed(f, shape=(100, d), dtype=X.dtype) for f in xs])
            yd = da.concatenate([da.from_delayed(f, shape=(100,), dtype=y.dtype) for f in ys])
            rows = _dask.as_rows(Xd, yd)
            n_shards = len(rows._state.shards)
            for m in [int(v) for v in args.m.split(",")]:
                W = rng.standard_normal((m, d)) * 0.01
                l2 = np.full(m, 1e-3)
                answers = {}
                for mode in modes:
                    _dask.REDUCTION = mode
                    answers[mode] = rows.value_grad(W, l2, None, 0, 0.5)   # warm up
                # the modes alternate pass by pass, so that both see the same load
                ts = {mode: [] for mode in modes}
                cpu = {mode: 0.0 for mode in modes}
                for _ in range(args.reps):
                    for mode in modes:
                        _dask.REDUCTION = mode
                        c0, t0 = time.process_time(), time.perf_counter()
                        rows.value_grad(W, l2, None, 0, 0.5)
                        ts[mode].append(time.perf_counter() - t0)
                        cpu[mode] += time.process_time() - c0
                # CPU time of the worker processes per pass, each mode on its own
                root = rows._state.shards[0][3]
                wcpu = {}
                for mode in modes:
                    _dask.REDUCTION = mode
                    c0 = client.run(time.process_time)
                    for _ in range(args.reps):
                        rows.value_grad(W, l2, None, 0, 0.5)
                    c1 = client.run(time.process_time)
                    per = {w: (c1[w] - c0[w]) / args.reps * 1e3 for w in c0}
                    wcpu[mode] = (per[root], max(per.values()))
                for mode in modes:
                    row = {"workers": P, "shards": n_shards, "m": m, "d": d, "mode": mode,
                           "fan_in": args.fan_in, "cores": os.cpu_count(),
                           "bytes_out": m * d * 8, "bytes_back_per_chunk": (m + m * d) * 8,
                           "min_ms": min(ts[mode]) * 1e3,
                           "median_ms": float(np.median(ts[mode])) * 1e3,
                           "client_cpu_ms": cpu[mode] / args.reps * 1e3,
                           "root_worker_cpu_ms": wcpu[mode][0],
                           "busiest_worker_cpu_ms": wcpu[mode][1], "reps": args.reps}
                    rows_out.append(row)
                    print(f"| {P} | {m} | {mode} | {row['bytes_out']:,} | "
                          f"{row['bytes_back_per_chunk']:,} | {row['min_ms']:.2f} | "
                          f"{row['median_ms']:.2f} | {row['client_cpu_ms']:.2f} | "
                          f"{row['root_worker_cpu_ms']:.2f} | {row['busiest_worker_cpu_ms']:.2f} |",
                          flush=True)
                vals = list(answers.values())
                same = all(a[0].tobytes() == vals[0][0].tobytes()
                           and a[1].tobytes() == vals[0][1].tobytes() for a in vals)
                if not same:
                    raise SystemExit(f"flat and tree passes differ at P={P}, m={m}")
            _dask.REDUCTION = "tree"
    print_model(rows_out, args.fan_in, args.fit_max_workers)
    if args.out:
        with open(args.out, "w", newline="") as f:
            if args.out.endswith(".csv"):
                w = csv.DictWriter(f, fieldnames=list(rows_out[0]))
                w.writeheader()
                w.writerows(rows_out)
            else:
                json.dump(rows_out, f, indent=1)
        print(f"wrote {args.out}")


def _add_path(path):
    import sys

    if path not in sys.path:
        sys.path.insert(0, path)


def _scattered_rows(client, mod, P, d, rng):
    """Rows of P blocks of 100 x d, block i scattered to worker i, as mod's DaskRows."""
    import dask.array as da

    X = rng.standard_normal((100 * P, d)) / np.sqrt(d) / 2
    y = np.where(rng.random(100 * P) < 0.5, -1.0, 1.0)
    workers = sorted(client.scheduler_info()["workers"])
    xs = [client.scatter(X[100 * i:100 * (i + 1)], workers=[w]) for i, w in enumerate(workers)]
    ys = [client.scatter(y[100 * i:100 * (i + 1)], workers=[w]) for i, w in enumerate(workers)]
    Xd = da.concatenate([da.from_delayed(f, shape=(100, d), dtype=X.dtype) for f in xs])
    yd = da.concatenate([da.from_delayed(f, shape=(100,), dtype=y.dtype) for f in ys])
    return mod.as_rows(Xd, yd)


def compare_tasks(args):
    """--tasks: regression (pseudo-Huber) against classification (logistic) passes."""
    import dask.array as da
    from distributed import Client, LocalCluster

    from dperm.data import dask_rows as _dask
    from dperm.losses import get_loss

    ids = {"classification": get_loss("logistic").kernel_id,
           "regression": get_loss("pseudo_huber").kernel_id}
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}, d = {args.d}")
    print("| workers | rows per worker | m | classification median (ms) | regression median "
          "(ms) | regression / classification, medians | minima (ms) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    out = []
    for P in [int(v) for v in args.workers.split(",")]:
        with LocalCluster(n_workers=P, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.wait_for_workers(P)
            for r in [int(v) for v in args.rows.split(",")]:
                rng = np.random.default_rng(0)
                X = rng.standard_normal((r * P, args.d)) / np.sqrt(args.d) / 2
                t = X @ rng.standard_normal(args.d)
                Xd = da.from_array(X, chunks=(r, -1))
                rows = {"classification": _dask.as_rows(Xd, np.where(t > 0, 1.0, -1.0)),
                        "regression": _dask.as_rows(Xd, t, regression=True)}
                for m in [int(v) for v in args.m.split(",")]:
                    W = rng.standard_normal((m, args.d)) * 0.01
                    l2 = np.full(m, 1e-3)
                    for k, rw in rows.items():      # warm up (the shards' Data)
                        rw.value_grad(W, l2, None, ids[k], 0.5)
                    ts = {k: [] for k in rows}
                    for rep in range(args.reps):
                        order = list(rows) if rep % 2 == 0 else list(rows)[::-1]
                        for k in order:
                            t0 = time.perf_counter()
                            rows[k].value_grad(W, l2, None, ids[k], 0.5)
                            ts[k].append(time.perf_counter() - t0)
                    med = {k: float(np.median(v)) * 1e3 for k, v in ts.items()}
                    mins = {k: min(v) * 1e3 for k, v in ts.items()}
                    row = {"workers": P, "rows_per_worker": r, "m": m, "d": args.d,
                           "reps": args.reps, "median_ms": med, "min_ms": mins,
                           "ratio_median": med["regression"] / med["classification"]}
                    out.append(row)
                    print(f"| {P} | {r} | {m} | {med['classification']:.2f} | "
                          f"{med['regression']:.2f} | {row['ratio_median']:.2f} | "
                          f"{mins['classification']:.2f} / {mins['regression']:.2f} |",
                          flush=True)
                del rows
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.out}")


def compare(args):
    """--baseline: this checkout's dask_rows against another copy, interleaved."""
    import importlib
    import sys

    from distributed import Client, LocalCluster

    from dperm.data import dask_rows as new

    path = os.path.abspath(args.baseline)
    folder, name = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    _add_path(folder)
    old = importlib.import_module(name)
    mode = args.mode.split(",")[0] if args.mode != "flat,tree" else "tree"
    print(f"cores: {os.cpu_count()}, fan-in {args.fan_in}, mode {mode}, load average "
          f"{os.getloadavg()[0]:.1f}; new = this checkout, old = {args.baseline}")
    print("| workers | m | old min (ms) | new min (ms) | old median (ms) | new median (ms) "
          "| new / old, medians | client CPU old / new (ms) | same bits |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    out = []
    for P in [int(v) for v in args.workers.split(",")]:
        with LocalCluster(n_workers=P, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.wait_for_workers(P)
            client.run(_add_path, folder)
            impls = {}
            for label, mod in (("old", old), ("new", new)):
                mod.TREE_FAN_IN = args.fan_in
                mod.REDUCTION = mode
                impls[label] = (mod, _scattered_rows(client, mod, P, args.d,
                                                     np.random.default_rng(0)))
            for m in [int(v) for v in args.m.split(",")]:
                rng = np.random.default_rng(1)
                W = rng.standard_normal((m, args.d)) * 0.01
                l2 = np.full(m, 1e-3)
                ans = {k: r.value_grad(W, l2, None, 0, 0.5) for k, (_, r) in impls.items()}
                same = all(a.tobytes() == b.tobytes() for a, b in zip(ans["old"], ans["new"]))
                ts = {k: [] for k in impls}
                cpu = {k: 0.0 for k in impls}
                for rep in range(args.reps):
                    order = ("old", "new") if rep % 2 == 0 else ("new", "old")
                    for k in order:
                        rows = impls[k][1]
                        c0, t0 = time.process_time(), time.perf_counter()
                        rows.value_grad(W, l2, None, 0, 0.5)
                        ts[k].append(time.perf_counter() - t0)
                        cpu[k] += time.process_time() - c0
                med = {k: float(np.median(v)) * 1e3 for k, v in ts.items()}
                row = {"workers": P, "m": m, "d": args.d, "mode": mode, "reps": args.reps,
                       "old_min_ms": min(ts["old"]) * 1e3, "new_min_ms": min(ts["new"]) * 1e3,
                       "old_median_ms": med["old"], "new_median_ms": med["new"],
                       "ratio_median": med["new"] / med["old"],
                       "old_client_cpu_ms": cpu["old"] / args.reps * 1e3,
                       "new_client_cpu_ms": cpu["new"] / args.reps * 1e3, "same_bits": same}
                out.append(row)
                print(f"| {P} | {m} | {row['old_min_ms']:.2f} | {row['new_min_ms']:.2f} | "
                      f"{med['old']:.2f} | {med['new']:.2f} | {row['ratio_median']:.2f} | "
                      f"{row['old_client_cpu_ms']:.2f} / {row['new_client_cpu_ms']:.2f} | "
                      f"{'yes' if same else 'NO'} |", flush=True)
            del impls
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.out}")
    if not all(r["same_bits"] for r in out):
        sys.exit("the two implementations returned different bits")


if __name__ == "__main__":
    main()
