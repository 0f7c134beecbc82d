"""Cost of an (epsilon, delta) Gaussian fit beside a pure-epsilon fit of the same size.

Both mechanisms run the same batched solver; they differ in the noise and its
calibration (dperm.privacy.calibration, a bisection on public numbers).  This times
PrivateLinearClassifier.fit (CPU seconds, one thread) for each mechanism on the same
data and Lambda, --reps noise draws each (seeds 0..reps-1, the same for every
mechanism), and prints the mean CPU time, the mean iterations and the time per
iteration, with ratios to the pure mechanism, side by side in one run.  Iteration
counts differ because each mechanism's noise makes a different problem; the time per
iteration is the cost of the machinery itself.

    python benchmarks/gaussian_cost.py [--reps 5] [--n 200000 --d 100]
"""
import argparse
import time
import warnings

import numpy as np

from dperm import PrivateLinearClassifier
from dperm.exceptions import NoiseDominatedWarning, PrivacyLeakWarning


def _data(name, n, d, seed=0):
    if name == "adult":
        from dperm.experiments import _adult

        X, y = _adult()
        return X, (y > 0).astype(int)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    w = rng.standard_normal(d)
    y = (X @ w + 0.1 * rng.standard_normal(n) > 0).astype(int)
    return X, y


CONFIGS = {
    "pure objective": dict(perturbation="objective"),
    "gaussian objective": dict(perturbation="objective", delta="1/n^2"),
    "gaussian objective, add_remove": dict(perturbation="objective", delta="1/n^2",
                                           neighbouring="add_remove"),
    "amp": dict(perturbation="amp", delta="1/n^2"),
    "pure output": dict(perturbation="output"),
    "gaussian output": dict(perturbation="output", delta="1/n^2"),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--alpha", type=float, default=1e-3)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", PrivacyLeakWarning)     # seeded on purpose
    warnings.simplefilter("ignore", NoiseDominatedWarning)  # one Lambda for all mechanisms
    for name in ("adult", "synthetic"):
        X, y = _data(name, args.n, args.d)
        n = X.shape[0]
        times = {}
        for label, cfg in CONFIGS.items():
            cfg = dict(cfg)
            if cfg.get("delta") == "1/n^2":
                cfg["delta"] = 1.0 / n ** 2
            if cfg.get("neighbouring") == "add_remove":
                cfg["n_public"] = n
            cpu, its = [], []
            for r in range(args.reps):
                est = PrivateLinearClassifier(epsilon=0.1, alpha=args.alpha, classes=[0, 1],
                                              n_threads=1, random_state=r, **cfg)
                t0 = time.process_time()
                est.fit(X, y)
                cpu.append(time.process_time() - t0)
                its.append(est.fit_diagnostics_["n_iter"])
            times[label] = (np.mean(cpu), np.mean(its), np.sum(cpu) / np.sum(its))
        base, base_it = times["pure objective"][0], times["pure objective"][2]
        print(f"\n{name}: n = {n}, d = {X.shape[1]}, alpha = {args.alpha:g}, epsilon = 0.1, "
              f"delta = 1/n^2, 1 thread, mean over {args.reps} noise draws")
        print("| mechanism | CPU s | / pure | iterations | CPU ms per iteration | / pure |")
        print("|---|---|---|---|---|---|")
        for label, (t, it, per) in times.items():
            print(f"| {label} | {t:.3f} | {t / base:.2f} | {it:.1f} | {1e3 * per:.2f} | "
                  f"{per / base_it:.2f} |")


if __name__ == "__main__":
    main()
