"""dperm's compiled core side by side with its yardsticks, in one run.

    python benchmarks/compare.py [--quick] [--reps N]

(a) one fused loss + gradient pass divided by one streaming read of X (X.sum()),
    d in {20, 100, 500}, n = 200,000, float64 / float32, 1 thread / all threads;
(b) a full non-private logistic fit on Adult (paper preprocessing) against
    scikit-learn's LogisticRegression(solver="lbfgs") at matched tolerance;
(c) per-problem cost of one batched pass for k in {1, 8, 64};
(d) liblinear (-s 0) on the same Adult problem, if `liblinear-official` is installed.
Targets: (a) <= 1.5 at d >= 100 on one thread; (b) >= 3x faster than
scikit-learn; (c) per-problem cost at k = 64 <= 1/10 of k = 1.

Timings are medians of several repetitions (time.perf_counter).  The kernel is
timed through dperm._core._objective.value_grad, the compiled pass that
dperm.optim.erm.objective and the solver call; erm.objective adds an O(n d) input
check (finite values) per call, shown separately in (a) for reference.
"""
import argparse
import os
import platform
import subprocess
import sys
import warnings

import numpy as np
from _timing import timed
from peers import liblinear_available, liblinear_fit, liblinear_problem, logistic_objective, sklearn_fit


def median_time(fn, reps, warmup=1):
    return timed(fn, reps, warmup=warmup, stat="median")[0]


def machine():
    model = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return model, len(os.sched_getaffinity(0))


def data(n, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d), dtype=np.float64)
    X /= np.sqrt(d) * 1.5
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return np.ascontiguousarray(X, dtype=dtype), y


def section(title):
    print()
    print(title)
    print("-" * len(title))


def part_a(reps, n, all_threads):
    from dperm._core._objective import Data, value_grad
    from dperm.optim import erm

    section(f"(a) one fused loss+gradient pass / one X.sum()   (n = {n:,}, k = 1, logistic)")
    print(f"{'d':>5} {'dtype':>8} {'threads':>7} {'X.sum ms':>9} {'pass ms':>8} "
          f"{'ratio':>6} {'erm.objective ratio':>20}")
    rows = []
    for d in (20, 100, 500):
        for dtype in (np.float64, np.float32):
            X, y = data(n, d, dtype)
            W = np.random.default_rng(1).standard_normal((1, d)) * 0.3
            l2 = np.array([1e-4])
            t_sum = median_time(X.sum, reps)
            for nt in sorted({1, all_threads}):
                t_pass = median_time(lambda: value_grad(Data(X, y), W, l2, None, 0, 0.5, nt),  # noqa: F821
                                     reps)
                t_api = median_time(lambda: erm.objective(X, y, W[0], alpha=1e-4,  # noqa: F821
                                                          n_threads=nt),
                                    max(3, reps // 2))
                r = t_pass / t_sum
                rows.append((d, np.dtype(dtype).name, nt, r))
                print(f"{d:>5} {np.dtype(dtype).name:>8} {nt:>7} {t_sum * 1e3:>9.2f} "
                      f"{t_pass * 1e3:>8.2f} {r:>6.2f} {t_api / t_sum:>20.2f}")
            del X
    worst = max(r for d, _, nt, r in rows if d >= 100 and nt == 1)
    print(f"target (a): ratio <= 1.5 at d >= 100, one thread: worst {worst:.2f} -> "
          f"{'MET' if worst <= 1.5 else 'MISSED'}")
    return rows


def part_c(reps, n, all_threads):
    from dperm._core._objective import Data, value_grad

    d = 100
    section(f"(c) per-problem cost of one batched pass   (n = {n:,}, d = {d}, float64, logistic)")
    X, y = data(n, d, np.float64)
    rng = np.random.default_rng(2)
    print(f"{'threads':>7} {'k':>4} {'pass ms':>9} {'per problem ms':>15} {'vs k=1':>7}")
    res = {}
    for nt in sorted({1, all_threads}):
        base = None
        for k in (1, 8, 64):
            W = rng.standard_normal((k, d)) * 0.3
            l2 = np.full(k, 1e-4)
            t = median_time(lambda: value_grad(Data(X, y), W, l2, None, 0, 0.5, nt),
                            reps if k < 64 else max(3, reps // 2))
            per = t / k
            base = per if k == 1 else base
            res[(nt, k)] = per / base
            print(f"{nt:>7} {k:>4} {t * 1e3:>9.2f} {per * 1e3:>15.3f} {per / base:>7.3f}")
    r = res[(1, 64)]
    ra = res[(all_threads, 64)]
    print(f"target (c): per-problem at k = 64 <= 0.1 of k = 1: {r:.3f} (one thread), "
          f"{ra:.3f} ({all_threads} threads) -> {'MET' if max(r, ra) <= 0.1 else 'MISSED'}")
    return res


def part_b_d(reps, all_threads, alpha, tol):
    from dperm.optim import erm

    try:
        from dperm.datasets import load_adult
    except ImportError as exc:
        section("(b) Adult")
        print(f"skipped: dperm.datasets.load_adult not available ({exc})")
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # PrivacyLeakWarning: paper preprocessing
        X, y = load_adult(preprocess="paper")
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    section(f"(b) non-private logistic regression on Adult (paper preprocessing, {n} x {d}), "
            f"alpha = {alpha:g}, C = 1/(n alpha)")
    print(f"dperm: erm.minimize(tol={tol:g}) stops at ||grad||_2 <= tol; scikit-learn lbfgs "
          f"(tol={tol:g}) at max|grad| <= tol;\nboth objectives and gradients below are "
          f"evaluated by the same numpy function.")

    def fit_dperm(nt):
        return erm.minimize(X, y, alpha=alpha, tol=tol, n_threads=nt).coef

    out = {}
    print(f"{'solver':<34} {'threads':>7} {'time ms':>9} {'objective':>22} "
          f"{'||grad||_2':>11} {'speed-up':>9}")
    for nt in sorted({1, all_threads}, reverse=True):
        t_sk = median_time(lambda: sklearn_fit(X, y, alpha, tol, n_threads=nt), reps, warmup=1)
        w_sk = sklearn_fit(X, y, alpha, tol, n_threads=nt)[0]
        t_dp = median_time(lambda: fit_dperm(nt), reps, warmup=1)
        w_dp = fit_dperm(nt)
        f_sk, g_sk = logistic_objective(X, y, w_sk, alpha)
        f_dp, g_dp = logistic_objective(X, y, w_dp, alpha)
        print(f"{'scikit-learn LogisticRegression':<34} {nt:>7} {t_sk * 1e3:>9.1f} "
              f"{f_sk:>22.16f} {np.linalg.norm(g_sk):>11.2e} {'':>9}")
        print(f"{'dperm.optim.erm.minimize':<34} {nt:>7} {t_dp * 1e3:>9.1f} {f_dp:>22.16f} "
              f"{np.linalg.norm(g_dp):>11.2e} {t_sk / t_dp:>8.2f}x")
        print(f"{'':<34} {'':>7} {'':>9} |diff| = {abs(f_sk - f_dp):.1e}, "
              f"max|coef diff| = {np.abs(w_sk - w_dp).max():.1e}")
        out[nt] = t_sk / t_dp
    s = min(out.values())
    per = ', '.join(f'{v:.2f}x ({k} thr)' for k, v in sorted(out.items()))
    print(f"target (b): >= 3x faster than scikit-learn: {per}"
          f" -> {'MET' if s >= 3 else ('MET with all threads' if out[max(out)] >= 3 else 'MISSED')}")

    section("(d) liblinear -s 0 (primal trust-region Newton, sparse input) on the same problem")
    if not liblinear_available():
        print("skipped: liblinear-official is not installed (pip install liblinear-official)")
        return out
    prob, t_prob = liblinear_problem(X, y)
    print(f"(problem construction from CSR, not timed below: {t_prob * 1e3:.0f} ms; "
          f"liblinear is single-threaded)")
    print(f"{'solver':<34} {'-e':>7} {'time ms':>9} {'objective':>22} {'||grad||_2':>11}")
    t_dp = median_time(lambda: fit_dperm(1), reps)
    for eps in (0.01, 1e-4, 1e-6):
        t_ll = median_time(lambda: liblinear_fit(prob, n, alpha, eps), reps)
        w = liblinear_fit(prob, n, alpha, eps)[0]
        f, g = logistic_objective(X, y, w, alpha)
        print(f"{'liblinear':<34} {eps:>7g} {t_ll * 1e3:>9.1f} {f:>22.16f} "
              f"{np.linalg.norm(g):>11.2e}")
    w_dp = fit_dperm(1)
    f, g = logistic_objective(X, y, w_dp, alpha)
    print(f"{'dperm.optim.erm.minimize (1 thread)':<34} {'':>7} {t_dp * 1e3:>9.1f} {f:>22.16f} "
          f"{np.linalg.norm(g):>11.2e}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=9, help="repetitions per timing (median)")
    ap.add_argument("--quick", action="store_true", help="n = 50,000 in (a)/(c), 3 reps")
    ap.add_argument("--alpha", type=float, default=1e-4, help="Lambda for (b)/(d)")
    ap.add_argument("--tol", type=float, default=1e-8, help="gradient tolerance for (b)")
    args = ap.parse_args(argv)
    reps = 3 if args.quick else args.reps
    n = 50_000 if args.quick else 200_000

    import dperm

    cfg = dperm.get_config()
    model, ncpu = machine()
    all_threads = cfg["default_n_threads"]
    print(f"dperm {cfg['version']}  python {platform.python_version()}  numpy {np.__version__}")
    print(f"machine: {model}, {ncpu} cores available; OpenMP {cfg['openmp']} "
          f"(all threads = {all_threads})")
    print(f"command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}")
    part_a(reps, n, all_threads)
    part_b_d(max(3, reps // 2), all_threads, args.alpha, args.tol)
    part_c(reps, n, all_threads)


if __name__ == "__main__":
    main()
