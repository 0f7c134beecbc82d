"""The portable (runtime-dispatched) build against a -march=native build, side by side.

    python benchmarks/dispatch_compare.py --native PY_NATIVE --portable PY_PORTABLE [--rounds 5]

PY_NATIVE and PY_PORTABLE are Python interpreters of two environments: one with dperm
built with -Csetup-args=-Dnative_arch=true (one kernel level, -march=native), one with
the portable wheel (tools/build-wheels.sh: baseline, AVX2 and AVX-512 kernels, the best
picked at import).  Each configuration -- native, portable at its automatic level, and
portable forced to every lower level it can run (DPERM_SIMD) -- times the core kernels
in a fresh process, one thread, min over repetitions; the configurations take turns
for --rounds rounds and each kernel keeps its minimum, so load on this shared machine
hits them alike.  Prints a markdown table of seconds and ratios to native.

Kernels: one value + gradient pass (dense 200,000 x 100 float64 and float32, k = 1 and
k = 64 problems batched; CSR one-hot 200,000 x 400, 30 non-zeros a row, k = 1 and 64),
one Hessian-vector pass (dense, k = 1), and whole fits (erm.minimize, logistic,
tol 1e-10: dense Adult at alpha 1e-6, CSR one-hot at alpha 1e-4).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
from _timing import timed


def _best(fn, reps):
    return timed(fn, reps, warmup=1)[0]


def worker(reps):
    """Run in the environment under test: {kernel: seconds} as JSON on stdout."""
    import dperm
    from dperm.datasets import make_onehot_classification
    from dperm.experiments import _adult
    from dperm.optim import erm

    rng = np.random.default_rng(0)
    n, d = 200_000, 100
    X = rng.standard_normal((n, d)) / (1.5 * np.sqrt(d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    Xs, ys = make_onehot_classification(n, 400, 30, dtype=np.float64, random_state=0)
    Xa, ya = _adult()
    out = {}
    for k in (1, 64):
        W = rng.standard_normal((k, d)) * 0.3
        a = np.full(k, 1e-4)
        Ws = rng.standard_normal((k, Xs.shape[1])) * 0.3
        for name, XX, yy, WW in (("dense f64", X, y, W), ("dense f32", X.astype(np.float32), y, W),
                                 ("csr f64", Xs, ys, Ws)):
            out[f"pass {name} k={k}"] = _best(
                lambda: erm.objective(XX, yy, WW, alpha=a, n_threads=1), reps)
    V = rng.standard_normal((1, d))
    W1 = rng.standard_normal((1, d)) * 0.3
    out["Hv dense f64 k=1"] = _best(
        lambda: erm.hessian_vector(X, y, W1, V, alpha=1e-4, n_threads=1), reps)
    out["fit dense Adult"] = _best(
        lambda: erm.minimize(Xa, ya, alpha=1e-6, tol=1e-10, n_threads=1), max(1, reps // 2))
    out["fit csr one-hot"] = _best(
        lambda: erm.minimize(Xs, ys, alpha=1e-4, tol=1e-10, n_threads=1), max(1, reps // 2))
    cfg = dperm.get_config()
    print(json.dumps({"simd": cfg["simd"], "built": cfg["simd_built"], "times": out}))


def _run(python, level, reps):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("DPERM_SIMD", None)
    if level:
        env["DPERM_SIMD"] = level
    # run outside any source checkout, so `import dperm` is the environment's build
    r = subprocess.run([python, os.path.abspath(__file__), "--worker", "--reps", str(reps)],
                       env=env, cwd=os.path.expanduser("~"), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{python} (DPERM_SIMD={level}): {r.stderr.strip()}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--native", help="python of the -march=native build")
    ap.add_argument("--portable", help="python of the portable wheel")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.reps)
    if not (args.native and args.portable):
        ap.error("--native and --portable are both required")
    first = _run(args.portable, None, 1)
    auto = first["simd"]
    levels = [lv for lv in ("avx2", "baseline") if lv in first["built"] and lv != auto]
    configs = [("native", args.native, None), (f"portable ({auto}, auto)", args.portable, None)]
    configs += [(f"portable ({lv}, forced)", args.portable, lv) for lv in levels]
    best = {}
    for r in range(args.rounds):
        for label, py, lv in configs:
            res = _run(py, lv, args.reps)
            for k, t in res["times"].items():
                best.setdefault(label, {})[k] = min(best.get(label, {}).get(k, np.inf), t)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    labels = [c[0] for c in configs]
    kernels = list(best["native"])
    print(f"one thread, min over {args.rounds} rounds x {args.reps} repetitions; "
          f"seconds (ratio to native)\n")
    print("| kernel | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for k in kernels:
        nat = best["native"][k]
        cells = [f"{nat:.4f}"] + [f"{best[lb][k]:.4f} ({best[lb][k] / nat:.3f})"
                                   for lb in labels[1:]]
        print(f"| {k} | " + " | ".join(cells) + " |")
    for lb in labels[1:]:
        r = np.array([best[lb][k] / best["native"][k] for k in kernels])
        print(f"\n{lb}: ratio to native, geometric mean {np.exp(np.log(r).mean()):.3f}, "
              f"worst {r.max():.3f}")


if __name__ == "__main__":
    main()
