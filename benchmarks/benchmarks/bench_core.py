"""Benchmarks of the kernel (one fused objective + gradient pass) and the solver.

time_* report wall time, peakmem_* the peak resident memory of the process
(which includes the data made in setup: the kernel itself allocates only
O(threads * k * d) scratch, so the two should stay close to the data size).
"""
import warnings

import numpy as np

from dperm.optim import erm


def _data(n, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1).max()
    y = np.where(X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return np.ascontiguousarray(X, dtype=dtype), y


class ObjectiveKernel:
    """dperm.optim.erm.objective: value and gradient of k problems in one pass over X."""

    params = ([20, 100, 500], ["float64", "float32"], [1, 64])
    param_names = ["d", "dtype", "k"]
    n = 100_000

    def setup(self, d, dtype, k):
        self.X, self.y = _data(self.n, d, dtype)
        self.W = np.random.default_rng(1).standard_normal((k, d)) * 0.1
        self.alpha = np.full(k, 1e-3)

    def time_objective(self, d, dtype, k):
        erm.objective(self.X, self.y, self.W, alpha=self.alpha)

    def time_objective_one_thread(self, d, dtype, k):
        erm.objective(self.X, self.y, self.W, alpha=self.alpha, n_threads=1)

    def peakmem_objective(self, d, dtype, k):
        erm.objective(self.X, self.y, self.W, alpha=self.alpha)


class HessianVector:
    """dperm.optim.erm.hessian_vector for k directions in one pass."""

    params = ([100], [1, 16])
    param_names = ["d", "k"]

    def setup(self, d, k):
        self.X, self.y = _data(100_000, d, "float64")
        rng = np.random.default_rng(2)
        self.W = rng.standard_normal((k, d)) * 0.1
        self.V = rng.standard_normal((k, d))

    def time_hessian_vector(self, d, k):
        erm.hessian_vector(self.X, self.y, self.W, self.V, alpha=1e-3)


class Solver:
    """dperm.optim.erm.minimize to the default tight tolerance (synthetic data)."""

    params = (["logistic", "huber", "smooth_hinge"], [(20_000, 20), (50_000, 100)], [1, 8])
    param_names = ["loss", "n_d", "k"]

    def setup(self, loss, n_d, k):
        n, d = n_d
        self.X, self.y = _data(n, d, "float64", seed=3)
        self.alpha = np.logspace(-2, -4, k) if k > 1 else 1e-3

    def time_minimize(self, loss, n_d, k):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            erm.minimize(self.X, self.y, loss=loss, alpha=self.alpha)

    def peakmem_minimize(self, loss, n_d, k):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            erm.minimize(self.X, self.y, loss=loss, alpha=self.alpha)


class SolverAdult:
    """Non-private logistic regression on UCI Adult (paper preprocessing, 45222 x 104)."""

    params = ([1e-4, 1e-6], [1, 8])
    param_names = ["alpha", "k"]
    timeout = 300

    def setup(self, alpha, k):
        try:
            from dperm.datasets import load_adult
        except ImportError as exc:  # the data loader is optional for the core
            raise NotImplementedError(f"dperm.datasets.load_adult unavailable: {exc}") from exc
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X, y = load_adult(preprocess="paper")
        self.X, self.y = np.ascontiguousarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        self.alpha = alpha * np.logspace(0, 1, k) if k > 1 else alpha

    def time_minimize(self, alpha, k):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            erm.minimize(self.X, self.y, alpha=self.alpha)
