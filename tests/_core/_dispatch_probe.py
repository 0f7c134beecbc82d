"""Run by tests/test_dispatch.py in a subprocess with DPERM_SIMD set: computes every
kernel's outputs on fixed data and saves them (npz) for comparison across levels."""
import sys

import numpy as np
import scipy.sparse as sp

import dperm._core
from dperm.data.design import DesignRows, WithInterceptColumn
from dperm.optim import erm
from dperm.optim.softmax import minimize_multinomial, multinomial_value_grad


def data(seed=0, n=2003, d=37):   # odd sizes: remainders of every vector width
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.6] = 0.0
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    W = 3.0 * rng.standard_normal((5, d))
    V = rng.standard_normal((5, d))
    B = rng.standard_normal((5, d))
    return X, y, W, V, B


def main(out):
    X, y, W, V, B = data()
    forms = {"dense64": X, "dense32": X.astype(np.float32), "csr64": sp.csr_matrix(X),
             "csr32": sp.csr_matrix(X.astype(np.float32))}
    res = {"level": np.array(dperm._core.level),
           "width": np.array(dperm._core._objective.vector_width())}
    alpha = np.array([1e-4, 1e-3, 1e-2, 1e-1, 1.0])
    for fname, Xf in forms.items():
        for loss in ("logistic", "huber", "smooth_hinge"):
            for nt in (1, 2):
                key = f"{fname}-{loss}-t{nt}"
                F, G = erm.objective(Xf, y, W, loss=loss, alpha=alpha, linear=B, n_threads=nt)
                res[key + "-F"], res[key + "-G"] = F, G
                res[key + "-Hv"] = erm.hessian_vector(Xf, y, W, V, loss=loss, alpha=alpha,
                                                      n_threads=nt)
            Xa = WithInterceptColumn(DesignRows(Xf), 1.0)
            F, G = erm.objective(Xa, y, np.hstack([W, W[:, :1]]), loss=loss, alpha=alpha,
                                 n_threads=1)
            res[f"{fname}-{loss}-intercept-F"], res[f"{fname}-{loss}-intercept-G"] = F, G
            fit = erm.minimize(Xf, y, loss=loss, alpha=alpha, linear=B, tol=1e-12,
                               n_threads=1)
            res[f"{fname}-{loss}-fit"] = fit.coef
        yk = (np.arange(X.shape[0]) % 4).astype(np.int64)
        Wk = np.random.default_rng(1).standard_normal((2, 4, X.shape[1]))
        F, G = multinomial_value_grad(Xf, yk, Wk, alpha=np.array([1e-3, 1e-1]), n_threads=1)
        res[f"{fname}-multinomial-F"], res[f"{fname}-multinomial-G"] = F, G
        fitk = minimize_multinomial(Xf, yk, 4, alpha=1e-2, tol=1e-12, n_threads=1)
        res[f"{fname}-multinomial-fit"] = np.asarray(fitk.coef)
    np.savez(out, **res)


if __name__ == "__main__":
    main(sys.argv[1])
