"""Fits on a busy machine: the default threads against one thread and the old default.

    python benchmarks/under_load.py [--busy N] [--rounds 5] [--n 100000] [--d 50]
                                    [--fits 4] [--json OUT.json]

Needs numpy and dperm only.  Starts N busy background processes (each a Python loop
spinning on one core; default: as many as this process may use, i.e. a load of about
2x the cores counting the fits), waits --settle seconds for the 1-minute load average to
see them, then times a workload in a fresh child process per configuration, the
configurations interleaved round by round (A B C D, A B C D, ...) so that a change of the
machine's load during the run falls on all of them alike:

* ``old default``: n_threads=None, every pass runs all its parts at once (one thread per
  core) and idle team mates spin as the OpenMP runtime does by default
  (``DPERM_OMP_WAIT_POLICY=default``): dperm before issue 29, item 7;
* ``threads 1``: n_threads=1;
* ``load-aware``: the old default with ``DPERM_LOAD_AWARE=1`` (the team is at most the
  free cores: the cores minus the load average, less this process's own share;
  dperm.data.validation.free_cores): issue 29's first default;
* ``load-aware passive``: both the smaller team and sleeping team mates;
* ``new default``: n_threads=None: all cores, and team mates that finished their part
  sleep at the barrier (OMP_WAIT_POLICY=PASSIVE, set by dperm._core while the OpenMP
  runtime loads).

The workload: --fits non-private logistic fits (``dperm.erm.minimize``, tol 1e-8) of a
dense n x d float64 problem, alpha 1e-4, in one child process (its import and data set-up
not timed).  Reported: the median over rounds of the workload's wall time, each
configuration's ratio to the old default, and the team the load-aware one chose.  Run it
with --busy 0 too: the idle machine must keep its speed.  The results depend on the
machine and on whatever else runs on it; compare configurations only within one run.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import numpy as np
import dperm
from dperm.data.validation import team_limit
n, d, fits, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
nt = None if threads == "default" else int(threads)
rng = np.random.default_rng(0)
X = rng.standard_normal((n, d)) / np.sqrt(d)
y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
dperm.erm.minimize(X[:2000], y[:2000], alpha=1e-4, n_threads=nt)      # warm the kernels
t0 = time.perf_counter()
for k in range(fits):
    dperm.erm.minimize(X, y, alpha=1e-4 * (1 + k), tol=1e-8, n_threads=nt)
wall = time.perf_counter() - t0
print(json.dumps({"wall": wall, "team": team_limit()}))
"""

CONFIGS = {
    "old default": ("default", {"DPERM_OMP_WAIT_POLICY": "default"}),
    "threads 1": ("1", {}),
    "load-aware": ("default", {"DPERM_LOAD_AWARE": "1", "DPERM_OMP_WAIT_POLICY": "default"}),
    "load-aware passive": ("default", {"DPERM_LOAD_AWARE": "1"}),
    "new default": ("default", {}),
}


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def start_busy(k):
    spin = "import time\nwhile True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(k)]


def run(config, args):
    threads, extra = CONFIGS[config]
    env = dict(os.environ)
    for key in ("DPERM_LOAD_AWARE", "DPERM_OMP_WAIT_POLICY", "OMP_WAIT_POLICY",
                "GOMP_SPINCOUNT"):
        env.pop(key, None)
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", CHILD, str(args.n), str(args.d),
                          str(args.fits), threads], env=env, capture_output=True, text=True,
                         check=True, timeout=args.timeout)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--busy", type=int, default=None,
                    help="busy background processes (default: one per core)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--fits", type=int, default=4)
    ap.add_argument("--settle", type=float, default=20.0,
                    help="seconds between starting the busy processes and the first run")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    busy = cores() if args.busy is None else args.busy
    procs = start_busy(busy)
    try:
        time.sleep(args.settle if busy else 0.0)
        times = {c: [] for c in configs}
        teams = []
        for r in range(args.rounds):
            for c in configs:
                res = run(c, args)
                times[c].append(res["wall"])
                if c == "load-aware":
                    teams.append(res["team"])
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{c} {times[c][-1]:.2f} s" for c in configs), flush=True)
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
    base = statistics.median(times[configs[0]])
    print(f"\n{cores()} cores, {busy} busy processes, load average "
          f"{os.getloadavg()[0]:.1f} at the end; workload: {args.fits} fits of "
          f"{args.n} x {args.d}; median of {args.rounds} interleaved rounds\n")
    print(f"| configuration | median wall (s) | ratio to {configs[0]} |")
    print("|---|---:|---:|")
    for c in configs:
        m = statistics.median(times[c])
        print(f"| {c} | {m:.2f} | {m / base:.2f} |")
    if teams:
        print(f"\nload-aware: team limit {sorted(set(teams))} (of {cores()} cores)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "cores": cores(), "busy": busy,
                       "args": vars(args), "times": times, "teams": teams}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
