"""Fixtures shared across the test folders (which mirror dperm/: tests/optim/ tests
dperm/optim/, and so on).

Helpers that only one folder needs live in that folder (tests/privacy/_privacy_audit.py,
tests/optim/softmax_reference.py); a helper two folders need is a fixture here.
"""
import numpy as np
import pytest


@pytest.fixture(scope="session")
def linear_problem():
    """Factory ``(n, d, seed=0, dtype=float64) -> (X, y)``: Gaussian features scaled so
    that every row has norm <= 1 (the largest exactly 1), labels in {-1, +1} from a
    noisy linear model."""
    def make(n, d, seed=0, dtype=np.float64):
        rng = np.random.default_rng(seed)
        w_true = rng.standard_normal(d)
        X = rng.standard_normal((n, d))
        X /= np.linalg.norm(X, axis=1).max()          # rows of norm <= 1
        y = np.where(X @ w_true + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
        return X.astype(dtype), y
    return make


@pytest.fixture(scope="module")
def dask_client():
    """A Dask client on an in-process LocalCluster (two workers, one thread each)."""
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c
