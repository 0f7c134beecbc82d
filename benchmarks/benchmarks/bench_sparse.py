"""Benchmarks of sparse (CSR) input and memory-mapped input.

Sparse benchmarks use dperm.datasets.make_onehot_classification (one-hot
census-like data, ~30 non-zeros per row, rows norm <= 1) at a modest n so an
asv run stays short; they are skipped (NotImplementedError in setup) when the
installed dperm refuses sparse input. The memmap benchmark fits from a
200,000 x 100 float32 .npy opened with np.load(mmap_mode="r").
"""
import os
import warnings

import numpy as np

from dperm.optim import erm


def _require_sparse():
    """Raise NotImplementedError (asv: skip) if dperm refuses CSR input."""
    try:
        import scipy.sparse as sp

        from dperm.datasets import make_onehot_classification  # noqa: F401
    except ImportError as exc:
        raise NotImplementedError(f"sparse benchmarks need scipy and the generator: {exc}") from exc
    X = sp.random(20, 3, density=0.5, format="csr", random_state=0)
    y = np.where(np.arange(20) % 2, 1.0, -1.0)
    try:
        erm.objective(X, y, np.zeros(3), alpha=1.0)
    except TypeError as exc:
        raise NotImplementedError(f"dperm refuses sparse input: {exc}") from exc


def _onehot(n, dtype):
    from dperm.datasets import make_onehot_classification

    return make_onehot_classification(n, 400, 30, dtype=np.dtype(dtype), random_state=0)


class SparseSolver:
    """dperm.optim.erm.minimize on CSR one-hot data (n = 50,000, d = 400, ~30 nnz/row), tol 1e-10."""

    params = (["float64", "float32"], [1, None])
    param_names = ["dtype", "n_threads"]
    timeout = 300

    def setup(self, dtype, n_threads):
        _require_sparse()
        self.X, self.y = _onehot(50_000, dtype)

    def time_minimize(self, dtype, n_threads):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            erm.minimize(self.X, self.y, alpha=1e-4, n_threads=n_threads)

    def peakmem_minimize(self, dtype, n_threads):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            erm.minimize(self.X, self.y, alpha=1e-4, n_threads=n_threads)


class SparseObjective:
    """One value + gradient pass (dperm.optim.erm.objective) over CSR data for k problems at once."""

    params = ([1, 64], ["float64", "float32"])
    param_names = ["k", "dtype"]
    n = 200_000

    def setup(self, k, dtype):
        _require_sparse()
        self.X, self.y = _onehot(self.n, dtype)
        self.W = np.random.default_rng(1).standard_normal((k, self.X.shape[1])) * 0.3
        self.alpha = np.full(k, 1e-4)

    def time_objective(self, k, dtype):
        erm.objective(self.X, self.y, self.W, alpha=self.alpha)

    def time_objective_one_thread(self, k, dtype):
        erm.objective(self.X, self.y, self.W, alpha=self.alpha, n_threads=1)


class MemmapSolver:
    """dperm.optim.erm.minimize from a 200,000 x 100 float32 np.load(mmap_mode="r") map vs in RAM."""

    params = (["memmap", "ram"],)
    param_names = ["input"]
    rows, cols = 200_000, 100
    timeout = 300

    def setup_cache(self):
        # asv runs this once, in a temporary directory it removes afterwards
        rng = np.random.default_rng(0)
        path = os.path.abspath("X_memmap_bench.npy")
        X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                      shape=(self.rows, self.cols))
        B = rng.standard_normal((self.rows, self.cols), dtype=np.float32)
        B *= np.float32(0.8 / np.sqrt(self.cols))
        norms = np.linalg.norm(B, axis=1)
        B[norms > 0.999] *= (0.999 / norms[norms > 0.999])[:, None]
        X[:] = B
        X.flush()
        del X
        w = rng.standard_normal(self.cols)
        m = B.astype(np.float64) @ w * 4.0
        y = np.where(rng.random(self.rows) < 1.0 / (1.0 + np.exp(-m)), 1.0, -1.0)
        return path, y

    def setup(self, cache, input):
        path, y = cache
        self.y = y
        X = np.load(path, mmap_mode="r")
        self.X = np.array(X) if input == "ram" else X

    def time_minimize(self, cache, input):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            erm.minimize(self.X, self.y, alpha=1e-4)

    def peakmem_minimize(self, cache, input):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            erm.minimize(self.X, self.y, alpha=1e-4)


class BatchFit:
    """Whole batched fit, k problems (own linear terms, as objective perturbation's draws):
    the per-problem cost at k = 64 over k = 1 is the issue's batch target
    (benchmarks/batch_fit.py prints the ratio)."""
    params = (["dense", "csr"], [1, 64])
    param_names = ["input", "k"]
    timeout = 300

    def setup(self, input, k):
        from dperm.datasets import make_onehot_classification

        n = 50_000
        rng = np.random.default_rng(0)
        if input == "dense":
            self.X = rng.standard_normal((n, 100)) / 15.0
            self.y = np.where(self.X @ rng.standard_normal(100) > 0, 1.0, -1.0)
        else:
            self.X, self.y = make_onehot_classification(n, random_state=0)
        self.B = rng.standard_normal((k, self.X.shape[1])) * 0.5
        self.alpha = np.full(k, 1e-3)

    def time_fit(self, input, k):
        from dperm.optim.erm import minimize

        minimize(self.X, self.y, alpha=self.alpha, linear=self.B, n_threads=1)
