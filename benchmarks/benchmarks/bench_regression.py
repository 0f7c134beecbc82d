"""Benchmarks of private linear regression and private bounds (issue 22).

The pseudo-Huber pass of the compiled kernels against the logistic pass on the same rows
(one value + gradient pass), whole PrivateLinearRegression fits per method, and
estimate_bounds on six columns.  Synthetic rows of norm <= 1 (d = 50) with a linear
target clipped to |y| <= 1; pure epsilon = 1 (AdaSSP: delta = 1 / n^2).
"""
import warnings

import numpy as np

import dperm
from dperm.optim import erm


def _rows(n, d=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ rng.standard_normal(d) / 3 + 0.1 * rng.standard_normal(n), -1.0, 1.0)
    return X, y


class RegressionPass:
    """One value + gradient pass for k weight vectors: pseudo-Huber (real labels) or
    logistic (the same rows, labels their signs)."""

    params = (["pseudo_huber", "logistic"], [1, 64])
    param_names = ["loss", "k"]

    def setup(self, loss, k):
        X, y = _rows(200_000)
        self.X = X
        self.y = y if loss == "pseudo_huber" else np.where(y >= 0, 1.0, -1.0)
        self.W = np.random.default_rng(1).standard_normal((k, X.shape[1])) * 0.1
        self.alpha = np.full(k, 1e-4)

    def time_objective(self, loss, k):
        erm.objective(self.X, self.y, self.W, loss=loss, alpha=self.alpha, h=1.0)


class RegressionFit:
    """PrivateLinearRegression.fit (alpha="auto", intercept), n = 100,000, d = 50."""

    params = (["objective", "output", "adassp"],)
    param_names = ["method"]
    timeout = 300

    def setup(self, method):
        self.X, self.y = _rows(100_000)

    def time_fit(self, method):
        delta = 1e-10 if method == "adassp" else 0.0
        est = dperm.PrivateLinearRegression(method=method, epsilon=1.0, delta=delta,
                                            label_bound=1.0, n_threads=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(self.X, self.y)


class PrivateBounds:
    """estimate_bounds on 6 columns of 100,000 rows (1 % / 99 % quantiles, default grid)."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.columns = {f"c{j}": rng.lognormal(j, 1.0, 100_000) for j in range(6)}

    def time_estimate_bounds(self):
        dperm.estimate_bounds(self.columns, epsilon=1.0)
