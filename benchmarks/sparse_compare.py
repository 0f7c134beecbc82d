"""dperm on sparse (CSR) one-hot data against liblinear and scikit-learn, in one run.

    python benchmarks/sparse_compare.py [--quick] [--reps N] [--json PATH] [--clock wall|cpu]

Non-private L2-regularized logistic regression without intercept,

    f(w) = (1/n) sum_i log(1 + exp(-y_i w.x_i)) + (alpha/2) ||w||^2,  alpha = 1e-4,

on (i) dperm.datasets.make_onehot_classification (200,000 x 400, ~30
non-zeros per row, shaped like a one-hot census extract) and (ii) KDDCup99
(dperm.datasets.load_kddcup99, public preprocessing, 494,021 x 122, one-hot
groups; returned dense and converted to CSR here).

Solvers, each on ONE thread (OMP_NUM_THREADS=1, BLAS limited by threadpoolctl):
  * dperm.optim.erm.minimize(X_csr, y, alpha, n_threads=1) at its default tol 1e-10
    (gradient norm; the tolerance the privacy proofs need) and at the loosest
    tol of a ladder that reaches the target gap ("matched");
  * liblinear-official ``-s 0 -c C -B -1 -e eps`` (trust-region Newton,
    single-threaded), C = 1 / (n alpha); the time excludes building the
    liblinear problem from CSR (reported separately);
  * scikit-learn LogisticRegression(solver="lbfgs", C=1/(n alpha),
    fit_intercept=False, tol=...), BLAS limited to one thread.

Matched objective: every solution is scored by the same float64 numpy/scipy
objective f above (cross-checked against dperm.optim.erm.objective), and each
solver's relative gap (f - f_best) / f_best to the best value found by any
solver is reported. Each peer gets the LOOSEST tolerance of its ladder whose
gap is <= 1e-8 (--target-gap); its time is the median at that tolerance.
Also: dperm at n_threads=1 and 2 (scaling), dperm on float32 vs float64 CSR,
and dense vs sparse dperm coefficients on the same data (relative max
difference max|w_sparse - w_dense| / max|w_dense|).

Speedups are peer time / dperm time (>1: dperm faster), against dperm at
matched tolerance and at its default 1e-10.

--quick: n = 20,000 synthetic rows and a random 50,000-row KDDCup99 subset.
--densify-dperm: development fallback for a dperm that refuses sparse input:
pass X.toarray() to dperm (the table says so); the real benchmark passes CSR.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy/scipy/sklearn load their pools

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from _timing import timed  # noqa: E402

DPERM_LADDER = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
LIBLINEAR_LADDER = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
SKLEARN_LADDER = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)


# --------------------------------------------------------------------------- helpers
CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = [time.perf_counter]


def median_time(fn, reps):
    """Median time of reps calls (wall clock, or CPU time of this process with
    --clock cpu: every solver timed on one thread), and the last result."""
    return timed(fn, reps, stat="median", clock=_clock[0])


from compare import machine  # noqa: E402  (benchmarks/compare.py, beside this file)
from peers import (  # noqa: E402
    Dperm,
    liblinear_available,
    liblinear_fit,
    liblinear_problem,
    logistic_objective,
    sklearn_fit,
)


def rel_max_diff(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# --------------------------------------------------------------------------- one data set
def run_dataset(name, X, y, alpha, reps, target, dperm, log):
    """X: float64 CSR.  Returns a dict of results."""
    n, d = X.shape
    res = {"name": name, "n": n, "d": d, "nnz": int(X.nnz), "nnz_per_row": X.nnz / n,
           "alpha": alpha, "rows": {}, "dperm_input": "dense (fallback)" if dperm.densify else "CSR"}
    Xd = dperm.prepare(X)

    def score(w):
        return logistic_objective(X, y, w, alpha)[0]

    # reference: dperm at its default 1e-10 (f - f* <= ||g||^2 / (2 alpha) ~ 5e-17)
    dperm.fit(Xd, y, alpha, 1e-10)  # warm-up
    t, (w_ref, info) = median_time(lambda: dperm.fit(Xd, y, alpha, 1e-10), reps)
    f_ref = score(w_ref)
    sols = {"dperm tol=1e-10, 1 thr": (t, w_ref, info, 1e-10)}
    f_dp, g_dp = dperm.optim.erm.objective(Xd, y, w_ref, alpha=alpha, n_threads=1)
    res["objective_crosscheck_rel"] = abs(float(f_dp) - f_ref) / abs(f_ref)
    log(f"  dperm 1e-10: {t:.3f} s, {info['n_iter']} it, f = {f_ref:.15g} "
        f"(dperm.optim.erm.objective agrees to {res['objective_crosscheck_rel']:.1e})")

    def ladder(label, ladder_tols, fit_once):
        """Loosest tol reaching the target gap against f_ref; returns (tol, w, info)."""
        tried = []
        for tol in ladder_tols:
            w, info = fit_once(tol)
            gap = (score(w) - f_ref) / abs(f_ref)
            tried.append((tol, gap))
            if gap <= target:
                log(f"  {label}: ladder {', '.join(f'{a:g}->{b:.1e}' for a, b in tried)}")
                return tol, tried
        log(f"  {label}: no tolerance reached {target:g}: {tried}")
        return ladder_tols[-1], tried

    # dperm at the loosest matching tolerance (one thread)
    tol, tried = ladder("dperm", DPERM_LADDER, lambda tol: dperm.fit(Xd, y, alpha, tol))
    t, (w, info) = median_time(lambda: dperm.fit(Xd, y, alpha, tol), reps)
    sols["dperm matched, 1 thr"] = (t, w, info, tol)
    res["ladders"] = {"dperm": tried}

    # thread scaling at tol 1e-10
    t, (w, info) = median_time(lambda: dperm.fit(Xd, y, alpha, 1e-10, n_threads=2), reps)
    sols["dperm tol=1e-10, 2 thr"] = (t, w, info, 1e-10)

    # float32 CSR
    X32 = dperm.prepare(X.astype(np.float32))
    dperm.fit(X32, y, alpha, 1e-10)
    t, (w32, info) = median_time(lambda: dperm.fit(X32, y, alpha, 1e-10), reps)  # noqa: F821
    sols["dperm float32, tol=1e-10, 1 thr"] = (t, w32, info, 1e-10)
    res["float32_vs_float64_coef_rel_max_diff"] = rel_max_diff(w32, w_ref)
    del X32

    # dense vs sparse on the same float64 values
    if not dperm.densify:
        Xdense = X.toarray()
        dperm.fit(Xdense, y, alpha, 1e-10)
        t, (wd, info) = median_time(lambda: dperm.fit(Xdense, y, alpha, 1e-10), reps)
        sols["dperm dense input, tol=1e-10, 1 thr"] = (t, wd, info, 1e-10)
        res["dense_vs_sparse_coef_rel_max_diff"] = rel_max_diff(w_ref, wd)
        del Xdense
    else:
        res["dense_vs_sparse_coef_rel_max_diff"] = None

    # liblinear
    if liblinear_available():
        prob, t_prob = liblinear_problem(X, y)
        res["liblinear_problem_build_s"] = t_prob
        tol, tried = ladder("liblinear", LIBLINEAR_LADDER, lambda e: liblinear_fit(prob, n, alpha, e))
        t, (w, info) = median_time(lambda: liblinear_fit(prob, n, alpha, tol), reps)
        sols["liblinear -s 0 (matched -e)"] = (t, w, info, tol)
        res["ladders"]["liblinear"] = tried
        del prob
    else:
        log("  liblinear-official not installed: skipped (pip install liblinear-official)")

    # scikit-learn lbfgs
    tol, tried = ladder("sklearn", SKLEARN_LADDER, lambda tl: sklearn_fit(X, y, alpha, tl))
    t, (w, info) = median_time(lambda: sklearn_fit(X, y, alpha, tol), reps)
    sols["sklearn lbfgs (matched tol)"] = (t, w, info, tol)
    res["ladders"]["sklearn"] = tried

    # score everything against the best value found
    fs = {k: score(v[1]) for k, v in sols.items()}
    f_best = min(fs.values())
    res["f_best"] = f_best
    for k, (t, w, info, tol) in sols.items():
        gn = float(np.linalg.norm(logistic_objective(X, y, w, alpha)[1]))
        res["rows"][k] = {"time_s": t, "tol": tol, "objective": fs[k],
                          "rel_gap": (fs[k] - f_best) / abs(f_best), "grad_norm": gn, **info}
    t_m = res["rows"]["dperm matched, 1 thr"]["time_s"]
    t_d = res["rows"]["dperm tol=1e-10, 1 thr"]["time_s"]
    res["speedup"] = {}
    for peer in ("liblinear -s 0 (matched -e)", "sklearn lbfgs (matched tol)"):
        if peer in res["rows"]:
            tp = res["rows"][peer]["time_s"]
            res["speedup"][peer] = {"vs dperm matched": tp / t_m, "vs dperm 1e-10": tp / t_d}
    res["thread_scaling_1_over_2"] = t_d / res["rows"]["dperm tol=1e-10, 2 thr"]["time_s"]
    res["float32_speedup"] = t_d / res["rows"]["dperm float32, tol=1e-10, 1 thr"]["time_s"]
    return res


def print_markdown(res):
    print()
    print(f"### {res['name']}: n = {res['n']:,}, d = {res['d']}, "
          f"{res['nnz_per_row']:.1f} non-zeros/row, alpha = {res['alpha']:g}, dperm input: "
          f"{res['dperm_input']}")
    print()
    print("| solver | tol | time (s) | iterations | objective | rel. gap to best | ||grad|| |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k, r in res["rows"].items():
        it = r.get("n_iter", "")
        print(f"| {k} | {r['tol']:g} | {r['time_s']:.3f} | {it} | {r['objective']:.12f} | "
              f"{r['rel_gap']:.1e} | {r['grad_norm']:.1e} |")
    print()
    for peer, s in res["speedup"].items():
        print(f"- speedup {peer.split(' (')[0]} / dperm: {s['vs dperm matched']:.2f}x "
              f"(dperm matched tol), {s['vs dperm 1e-10']:.2f}x (dperm 1e-10)")
    print(f"- dperm thread scaling, time(1 thr) / time(2 thr): {res['thread_scaling_1_over_2']:.2f}x")
    print(f"- dperm float32 CSR: time(float64) / time(float32) = {res['float32_speedup']:.2f}x; "
          f"coef rel. max diff vs float64 {res['float32_vs_float64_coef_rel_max_diff']:.1e}")
    dv = res["dense_vs_sparse_coef_rel_max_diff"]
    print(f"- dense vs sparse dperm coef rel. max diff: "
          f"{'n/a (dense fallback)' if dv is None else f'{dv:.1e}'}")
    if "liblinear_problem_build_s" in res:
        print(f"- liblinear problem construction from CSR (not in its time): "
              f"{res['liblinear_problem_build_s']:.2f} s")
    print(f"- objective cross-check numpy vs dperm.optim.erm.objective: "
          f"{res['objective_crosscheck_rel']:.1e} relative")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small n (20,000 synthetic, 50,000 KDD)")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions (median; default 3)")
    ap.add_argument("--alpha", type=float, default=1e-4)
    ap.add_argument("--target-gap", type=float, default=1e-8,
                    help="relative objective gap a peer's tolerance must reach")
    ap.add_argument("--n", type=int, default=None, help="synthetic rows (overrides --quick)")
    ap.add_argument("--datasets", default="synthetic,kddcup99")
    ap.add_argument("--densify-dperm", action="store_true",
                    help="development fallback: give dperm X.toarray() instead of CSR")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--clock", choices=sorted(CLOCK), default="wall",
                    help="wall (default) or cpu: CPU time of this process, less disturbed "
                         "by other jobs on a shared machine (the 2-thread row then sums both)")
    args = ap.parse_args(argv)
    _clock[0] = CLOCK[args.clock]
    reps = args.reps or 3
    n_syn = args.n or (20_000 if args.quick else 200_000)
    n_kdd = 50_000 if args.quick else None

    dperm = Dperm(args.densify_dperm)
    if not args.densify_dperm:
        Xt = sp.random(50, 4, density=0.5, format="csr", random_state=0)
        try:
            dperm.fit(Xt, np.where(np.arange(50) % 2, 1.0, -1.0), 1.0, 1e-6)
        except TypeError as exc:
            sys.exit(f"dperm refuses sparse input ({exc}); rerun with --densify-dperm")

    model, cores = machine()
    import scipy
    import sklearn

    import dperm as _dp
    meta = {"machine": model, "cores": cores, "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "sklearn": sklearn.__version__,
            "dperm": getattr(_dp, "__version__", "?"), "reps": reps, "alpha": args.alpha,
            "target_gap": args.target_gap, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
            "clock": args.clock}
    try:
        from importlib.metadata import version
        meta["liblinear"] = version("liblinear-official")
    except Exception:
        meta["liblinear"] = None
    print(f"sparse_compare: {model}, {cores} cores available; medians of {reps} runs "
          f"({args.clock} clock); "
          f"alpha = {args.alpha:g}; every solver on one thread unless stated")

    def log(msg):
        print(msg, flush=True)

    results = []
    for ds in args.datasets.split(","):
        if ds == "synthetic":
            from dperm.datasets import make_onehot_classification
            X, y = make_onehot_classification(n_syn, 400, 30, random_state=0)
            name = "make_onehot_classification"
        elif ds == "kddcup99":
            from dperm.datasets import load_kddcup99
            kw = {"n_samples": n_kdd, "random_state": 0} if n_kdd else {}
            Xk, yk = load_kddcup99(**kw)
            X, y = sp.csr_array(Xk), yk
            del Xk
            name = "KDDCup99 (public preprocessing)"
        else:
            sys.exit(f"unknown data set {ds!r}")
        X = sp.csr_array(X, dtype=np.float64)
        X.sum_duplicates()
        y = np.asarray(y, dtype=np.float64)
        log(f"\n{name}: {X.shape[0]:,} x {X.shape[1]}, nnz {X.nnz:,}")
        results.append(run_dataset(name, X, y, args.alpha, reps, args.target_gap, dperm, log))
    for r in results:
        print_markdown(r)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": results}, fh, indent=2)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
