"""Estimate what the Table 1 protocol would cost with scipy, one problem at a time.

dperm solves each fold's 8 non-private problems and 8 x 50 objective-perturbation
problems as two batched solves.  A user of scipy (or of scikit-learn, whose lbfgs
solver is scipy's) fits them one by one.  This script times a sample of those
single fits with scipy.optimize.minimize(method="L-BFGS-B") on the same objective
(numpy loss and gradient, one fold's training set, gtol matched to dperm's 1e-10
gradient norm), and extrapolates to the full protocol:

    10 folds x 2 losses x 8 Lambda x (1 non-private + 50 objective perturbation)

Output perturbation costs one non-private fit plus noise, so it adds nothing.

    python benchmarks/table1_peers.py [--draws 3]
"""
import argparse
import time
import warnings

import numpy as np
from scipy.optimize import minimize

from dperm.datasets import load_adult
from dperm.experiments.table1 import LAMBDAS
from dperm.losses import get_loss
from dperm.privacy import noise
from dperm.privacy.mechanisms import objective_perturbation_constants


def objective(X, y, loss, l2, b):
    lo = get_loss(loss)
    n = X.shape[0]

    def fun(w):
        z = y * (X @ w)
        v, d1, _ = lo.per_sample(z, 0.5)
        f = v.mean() + 0.5 * l2 * (w @ w) + (b @ w) / n
        g = X.T @ (d1 * y) / n + l2 * w + b / n
        return f, g
    return fun


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=2, help="objective-perturbation draws timed per Lambda")
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = load_adult(preprocess="paper")
    y = y.astype(np.float64)
    rng = np.random.default_rng(0)
    train = rng.permutation(X.shape[0])[: (X.shape[0] * 9) // 10]
    X, y = X[train], y[train]
    n, d = X.shape
    total = 0.0
    print(f"scipy L-BFGS-B, one problem at a time, on one fold's training set (n={n}, d={d})")
    for loss in ("logistic", "huber"):
        c = get_loss(loss).curvature(0.5, 1.0)
        eps_p, delta, beta = objective_perturbation_constants(n, np.array(LAMBDAS), 0.1, c, 1.0)
        for i, lam in enumerate(LAMBDAS):
            t0 = time.perf_counter()
            minimize(objective(X, y, loss, lam, np.zeros(d)), np.zeros(d), jac=True,
                     method="L-BFGS-B", options=dict(gtol=1e-10 / np.sqrt(d), ftol=0, maxiter=2000))
            t_np = time.perf_counter() - t0
            ts = []
            for _ in range(args.draws):
                b = noise.sample_l2_laplace(beta[i], d, random_state=rng)
                t0 = time.perf_counter()
                minimize(objective(X, y, loss, lam + delta[i], b), np.zeros(d), jac=True,
                         method="L-BFGS-B", options=dict(gtol=1e-10 / np.sqrt(d), ftol=0, maxiter=2000))
                ts.append(time.perf_counter() - t0)
            per_fold = t_np + args.runs * float(np.mean(ts))
            total += args.folds * per_fold
            print(f"  {loss:9s} Lambda=1e{np.log10(lam):5.1f}: non-private {t_np:6.2f} s, "
                  f"objective {np.mean(ts):6.2f} s per draw -> {per_fold:7.1f} s per fold")
    print(f"estimated scipy time for the full protocol: {total:.0f} s ({total / 60:.1f} min)")
    return total


if __name__ == "__main__":
    main()
