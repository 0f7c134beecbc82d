"""One adapter per solver the comparison scripts time: dperm itself, scikit-learn's
lbfgs and liblinear -s 0, fitting the same problem

    min_w (1/n) sum_i log(1 + exp(-y_i w.x_i)) + (alpha / 2) ||w||^2     (C = 1/(n alpha)),

and the yardstick every script evaluates their solutions with (`logistic_objective`).
Each adapter returns (coef as float64, a dict of solver diagnostics).  dask-ml and
diffprivlib are driven by dask_compare.py and multiclass_compare.py (the latter in its own
interpreter).
"""
import time
import warnings

import numpy as np
import scipy.sparse as sp

__all__ = ["logistic_objective", "Dperm", "sklearn_fit", "liblinear_available",
           "liblinear_problem", "liblinear_fit"]


def logistic_objective(X, y, w, alpha):
    """f(w) and its gradient in float64 (X: float64 CSR or dense)."""
    z = y * np.asarray(X @ w, dtype=np.float64)
    f = np.mean(np.logaddexp(0.0, -z)) + 0.5 * alpha * float(w @ w)
    s = -y * np.exp(-np.logaddexp(0.0, z))  # d/dz log(1+e^{-z}) = -sigmoid(-z)
    g = np.asarray(X.T @ s, dtype=np.float64) / X.shape[0] + alpha * w
    return float(f), g


class Dperm:
    def __init__(self, densify):
        from dperm.optim import erm
        self.erm = erm
        self.densify = densify

    def prepare(self, X):
        return X.toarray() if self.densify and sp.issparse(X) else X

    def fit(self, X, y, alpha, tol, n_threads=1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = self.erm.minimize(X, y, loss="logistic", alpha=alpha, tol=tol, n_threads=n_threads)
        return np.asarray(r.coef, dtype=np.float64), {"n_iter": int(r.n_iter),
                                                     "grad_norm": float(r.grad_norm),
                                                     "converged": bool(r.converged)}


def liblinear_available():
    try:
        import liblinear.liblinearutil  # noqa: F401
        return True
    except ImportError:
        return False


def liblinear_problem(X, y):
    from liblinear.liblinearutil import problem
    Xm = sp.csr_matrix(X, dtype=np.float64)  # liblinear's reader wants a csr_matrix
    t0 = time.perf_counter()
    prob = problem(y, Xm)
    return prob, time.perf_counter() - t0


def liblinear_fit(prob, n, alpha, eps):
    from liblinear.liblinearutil import parameter, train
    C = 1.0 / (n * alpha)
    m = train(prob, parameter(f"-s 0 -c {C!r} -B -1 -e {eps:g} -q"))
    w = np.array(m.get_decfun()[0], dtype=np.float64)
    if m.get_labels()[0] == -1:  # liblinear's w scores its first label
        w = -w
    return w, {}


def sklearn_fit(X, y, alpha, tol, n_threads=1):
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits
    clf = LogisticRegression(solver="lbfgs", C=1.0 / (X.shape[0] * alpha), fit_intercept=False,
                             tol=tol, max_iter=100_000)
    with threadpool_limits(n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    return clf.coef_[0].astype(np.float64), {"n_iter": int(clf.n_iter_[0])}
