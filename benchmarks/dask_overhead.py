"""Per-pass overhead of the Dask backend against the number of workers, the batch size and
the reduction (flat gather at the client, or the shards' message tree).

    python benchmarks/dask_overhead.py [--workers 2,4,8,16] [--mode flat,tree] [--m 1,64]
                                       [--d 100] [--reps 30] [--fan-in 4] [--out results.json]

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
"""
import argparse
import csv
import json
import os
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="2,4,8")
    ap.add_argument("--mode", default="flat,tree")
    ap.add_argument("--m", default="1,64")
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--fan-in", type=int, default=4)
    ap.add_argument("--out", default=None, help="write the rows here (.json or .csv)")
    args = ap.parse_args()

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
                root = rows._state.shards[0][0]._address
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
    if args.out:
        with open(args.out, "w", newline="") as f:
            if args.out.endswith(".csv"):
                w = csv.DictWriter(f, fieldnames=list(rows_out[0]))
                w.writeheader()
                w.writerows(rows_out)
            else:
                json.dump(rows_out, f, indent=1)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
