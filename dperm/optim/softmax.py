"""The multinomial (softmax) logistic objective and its batched minimiser.

For m problems at once over the same rows x_i (i = 1..n) and labels
y_i in {0, ..., K-1}, with W_j of shape (K, d) (one row per class),

    J_j(W_j) = (1/n) sum_i [ logsumexp(W_j x_i) - (W_j x_i)_{y_i} ]
               + ((alpha_j + extra_l2_j) / 2) ||W_j||_F^2  +  <B_j, W_j>_F / n

(the MEAN form, as in dperm.optim.erm: alpha is the regularization Lambda, extra_l2
objective perturbation's Delta, B_j the linear noise term).  J_j is strongly
convex whenever alpha_j + extra_l2_j > 0.

One pass over the rows evaluates every problem: the compiled softmax pass
(dperm._core._objective.softmax_sums) reads each row once for all m problems.  The
solver sees the rows through one interface, `dperm.data.oracle.softmax_oracle`
("the data term over these rows": sums of the losses and of their gradients): local
rows are one compiled pass; rows on the Dask workers or the Spark executors are the
same pass per block, the blocks' sums added in a fixed order where they live.
Class probabilities for prediction are computed in row blocks whose temporaries are
bounded by the block size (about 16 MiB each), never by n.

X may be a dense float32/float64 array (or memory map), a scipy.sparse CSR
matrix, or a `dperm.data.design.DesignRows` (rows [t_i x_i, c] * scale, built block
by block, never materialised), a Dask array (the labels then go to the workers), or
rows already on the workers / executors (dperm.data.dask_rows built with n_classes,
dperm.data.spark_rows with task="multiclass"; y is not read).  Sums are accumulated
in float64.

The minimiser is the package's batched L-BFGS (dperm._core._lbfgs) through its
Python-oracle path; it stops when the Euclidean (Frobenius) norm of each
problem's gradient of J_j is <= tol (default dperm.optim.erm.DEFAULT_TOL).
"""
import numbers
import warnings
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dperm.data.oracle import softmax_oracle, softmax_rows
from dperm.data.validation import check_class_labels, check_n_threads, check_positive
from dperm.exceptions import ConvergenceWarning
from dperm.losses import check_n_classes
from dperm.optim.erm import MinimizeResult
from dperm.optim.status import LBFGS_STATUS

__all__ = ["multinomial_value_grad", "minimize_multinomial", "multinomial_predict_proba",
           "MultinomialResult", "check_class_labels"]

#: per-problem results of `minimize_multinomial` (always batched): erm's result type,
#: with coef (m, K, d) and fun, n_iter, grad_norm, converged, status of shape (m,)
MultinomialResult = MinimizeResult


def _alpha_array(alpha: Any) -> np.ndarray:
    """alpha as a (p,) float64 array of positive finite values (p >= 1)."""
    if isinstance(alpha, str):
        raise ValueError(f"alpha: must be a positive number or a 1-D sequence of them, got {alpha!r}")
    a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"alpha: must be a positive number or a 1-D sequence of them, got {alpha!r}")
    if not (np.all(np.isfinite(a)) and np.all(a > 0)):
        raise ValueError(f"alpha: every value must be positive and finite, got {alpha!r}")
    return a


def _extra_l2_array(extra_l2: Any) -> np.ndarray:
    """extra_l2 (None: 0) as a (p,) float64 array of finite values >= 0 (p >= 1)."""
    e = np.atleast_1d(np.asarray(0.0 if extra_l2 is None else extra_l2, dtype=np.float64))
    if e.ndim != 1 or e.size == 0 or not (np.all(np.isfinite(e)) and np.all(e >= 0)):
        raise ValueError(f"extra_l2: must be >= 0 and finite (scalar or one per problem), "
                         f"got {extra_l2!r}")
    return e


def _linear_array(linear: ArrayLike | None, K: int, d: int) -> np.ndarray | None:
    """The linear term as a (p, K, d) float64 array of finite values, or None."""
    if linear is None:
        return None
    B = np.asarray(linear, dtype=np.float64)
    if B.ndim == 2:
        B = B[None]
    if B.ndim != 3 or B.shape[1:] != (K, d):
        raise ValueError(f"linear: expected shape ({K}, {d}) or (m, {K}, {d}), "
                         f"got {np.shape(linear)}")
    if not np.all(np.isfinite(B)):
        raise ValueError("linear: contains NaN or infinity")
    return B


def _problem_count(sizes: list[int], m: int | None) -> int:
    """m (when not given: the largest size), each of alpha, extra_l2, linear of size 1 or m."""
    if m is None:
        m = max(sizes)
    for nm, s in zip(("alpha", "extra_l2", "linear"), sizes):
        if s not in (1, m):
            raise ValueError(f"{nm}: has {s} entries for {m} problems (give 1 or {m})")
    return m


def _batch_params(alpha: Any, extra_l2: Any, linear: ArrayLike | None, K: int, d: int,
                  m: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """l2 (m,) = alpha + extra_l2 and B (m, K, d) or None, broadcast to m problems
    (m from the arguments when not given: each has size 1 or m)."""
    a = _alpha_array(alpha)
    e = _extra_l2_array(extra_l2)
    B = _linear_array(linear, K, d)
    sizes = [a.size, e.size] + ([B.shape[0]] if B is not None else [])
    m = _problem_count(sizes, m)
    l2 = np.ascontiguousarray(np.broadcast_to(a, (m,)) + np.broadcast_to(e, (m,)))
    if B is not None:
        B = np.ascontiguousarray(np.broadcast_to(B, (m, K, d)))
    return l2, B


def _thread_limit(n_threads: int | None) -> AbstractContextManager[Any]:
    """BLAS threads for the row passes: unchanged for None (all cores), else limited."""
    if n_threads is None or n_threads == -1:
        return nullcontext()
    nt = check_n_threads(n_threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:   # pragma: no cover - threadpoolctl comes with scikit-learn
        return nullcontext()
    return threadpool_limits(limits=nt, user_api="blas")



def _max_last(Z: np.ndarray) -> np.ndarray:
    """Z.max(axis=-1) for a short last axis (the classes): K elementwise maxima of
    strided slices, several times faster than numpy's reduction over a short axis."""
    mx = Z[..., 0].copy()
    for k in range(1, Z.shape[-1]):
        np.maximum(mx, Z[..., k], out=mx)
    return mx


def _objective(oracle: Any, W: np.ndarray, l2: np.ndarray,
               B: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """J_j and its gradient for W (m, K, d), l2 (m,), B (m, K, d) or None: the data
    term's sums from the oracle (`softmax_oracle`: one pass over the rows for all m
    problems, wherever the rows are), then 1/n, the ridge and the linear term here."""
    n = oracle.n
    F, G = oracle.sums(W)
    F = np.array(F, dtype=np.float64)
    G = np.array(G, dtype=np.float64)
    F /= n
    G /= n
    F += 0.5 * l2 * np.einsum("jkd,jkd->j", W, W)
    G += l2[:, None, None] * W
    if B is not None:
        F += np.einsum("jkd,jkd->j", B, W) / n
        G += B / n
    return F, G


# ------------------------------------------------------------------ public API
def multinomial_value_grad(X: Any, y: ArrayLike | None, W: ArrayLike, alpha: Any, extra_l2: Any = None,
                           linear: ArrayLike | None = None, n_threads: int | None = None
                           ) -> tuple[Any, np.ndarray]:
    """The multinomial logistic objective J_j and its gradient at W, in one pass over X.

    Parameters
    ----------
    X : array (n, d) float32/float64 (or memory map), scipy.sparse CSR, DesignRows, or a Dask array
        The rows x_i (already within the public norm bound; nothing is clipped here).
    y : array (n,) of int
        Class labels in {0, ..., K-1}.
    W : array (m, K, d) or (K, d)
        Coefficients, one row per class, for each of m problems.
    alpha : float or array (m,)
        Regularization Lambda > 0 (per problem).
    extra_l2 : None, float or array (m,)
        Extra ridge Delta >= 0 added to alpha.
    linear : None, array (K, d) or (m, K, d)
        Linear term B; J gains <B, W>_F / n.
    n_threads : None or int
        BLAS threads for the products (None: as configured, all cores by default).

    Returns
    -------
    values (m,) and gradients (m, K, d) (float64), or a float and (K, d) for W (K, d).
    Values are in nats per row (mean cross-entropy plus the penalty terms).
    """
    W = np.asarray(W, dtype=np.float64)
    single = W.ndim == 2
    if single:
        W = W[None]
    K = W.shape[1] if W.ndim == 3 else 0
    oracle = softmax_oracle(X, y, max(K, 2), n_threads=n_threads, worker_threads=n_threads)
    if W.ndim != 3 or W.shape[2] != oracle.d or W.shape[1] < 2:
        raise ValueError(f"W: expected shape (K, {oracle.d}) or (m, K, {oracle.d}) with K >= 2, "
                         f"got {np.shape(W)}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W: contains NaN or infinity")
    m, K, d = W.shape
    l2, B = _batch_params(alpha, extra_l2, linear, K, d, m)
    with _thread_limit(n_threads):
        F, G = _objective(oracle, np.ascontiguousarray(W), l2, B)
    return (float(F[0]), G[0]) if single else (F, G)


def minimize_multinomial(X: Any, y: ArrayLike | None, n_classes: int, *, alpha: Any, extra_l2: Any = None,
                         linear: ArrayLike | None = None, tol: float | None = None,
                         max_iter: int | None = None, n_threads: int | None = None,
                         memory: int | None = None, coef_init: ArrayLike | None = None,
                         warn: bool = True) -> MinimizeResult:
    """Minimize the multinomial logistic objective for m problems at once.

    Every L-BFGS iteration is one pass over X for all still-active problems
    (the batched solver of dperm._core._lbfgs, through its Python-oracle path).

    Parameters
    ----------
    X : array (n, d) float32/float64 (or memory map), scipy.sparse CSR, DesignRows, or distributed rows
        A Dask array, or rows on the Dask workers or the Spark executors (their
        labels are there).
    y : array (n,) of int in {0, ..., n_classes - 1} (not read for rows already on the
        workers / executors: their labels are there)
    n_classes : int >= 2
        K, public (not read from y).
    alpha : float or array (m,)
        Regularization Lambda > 0.
    extra_l2 : None, float or array (m,)
        Extra ridge Delta >= 0 (objective perturbation).
    linear : None, array (K, d) or (m, K, d)
        Linear term B (objective perturbation's noise); J gains <B, W>_F / n.
        m is the common size of alpha, extra_l2 and linear's first axis (each 1 or m).
    tol : float
        Stop when the Frobenius norm of the gradient of J_j is <= tol
        (default dperm.optim.erm.DEFAULT_TOL = 1e-10: the privacy proofs assume the
        exact minimizer).
    max_iter : int
        Iteration cap per problem (default dperm.optim.erm.DEFAULT_MAX_ITER).
    n_threads : None or int
        BLAS threads for the row passes.
    memory : None or int
        L-BFGS history length (default as dperm.optim.erm.minimize, with K d variables).
    coef_init : None, array (K, d) or (m, K, d)
        Starting point (default zero).
    warn : bool
        Issue a ConvergenceWarning if a problem did not reach tol.

    Returns
    -------
    MultinomialResult with coef (m, K, d), fun (m,), n_iter (m,), grad_norm (m,),
    converged (m,), status (m strings).
    """
    from dperm._core._lbfgs import lbfgs
    from dperm.optim.erm import DEFAULT_MAX_ITER, DEFAULT_TOL

    K = check_n_classes(n_classes)
    nt = check_n_threads(n_threads)
    rows = softmax_oracle(X, y, K, n_threads=nt, worker_threads=n_threads)
    d = rows.d
    l2, B = _batch_params(alpha, extra_l2, linear, K, d)
    m = l2.size
    tol = DEFAULT_TOL if tol is None else check_positive(tol, "tol")
    if max_iter is None:
        max_iter = DEFAULT_MAX_ITER
    if isinstance(max_iter, bool) or not isinstance(max_iter, (numbers.Integral, np.integer)) \
            or max_iter < 0:
        raise ValueError(f"max_iter: must be an integer >= 0, got {max_iter!r}")
    D = K * d
    if memory is None:
        memory = int(min(100, max(10, 2**28 // (16 * m * D))))
    if isinstance(memory, bool) or not isinstance(memory, (numbers.Integral, np.integer)) \
            or memory < 1:
        raise ValueError(f"memory: must be an integer >= 1, got {memory!r}")
    W0 = np.zeros((m, K, d))
    if coef_init is not None:
        c0 = np.asarray(coef_init, dtype=np.float64)
        try:
            W0[:] = c0
        except ValueError:
            raise ValueError(f"coef_init: expected shape ({K}, {d}) or ({m}, {K}, {d}), "
                             f"got {c0.shape}") from None
        if not np.all(np.isfinite(W0)):
            raise ValueError("coef_init: contains NaN or infinity")

    def oracle(Wflat: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Wflat (a, K d): the active problems idx (a,); returns F (a,), G (a, K d)
        F, G = _objective(rows, Wflat.reshape(-1, K, d), l2[idx],
                          None if B is None else B[idx])
        return F, G.reshape(len(idx), D)

    with _thread_limit(n_threads):
        # loss id, h, l2 and B are ignored on the oracle path (the oracle is the whole J)
        W, fun, n_iter, gnorm, status = lbfgs(oracle, 0, 0.5, W0.reshape(m, D), l2, None,
                                              tol, int(max_iter), int(memory), nt)
    converged = status == 1
    if warn and not converged.all():
        warnings.warn(
            f"minimize_multinomial: the solver stopped before the gradient norm reached "
            f"tol={tol:g}. The privacy guarantee assumes the exact minimizer: raise max_iter, "
            "raise alpha, or check the data (the per-problem grad_norm and status are in the "
            "result, for the analyst only).", ConvergenceWarning, stacklevel=2)
    return MultinomialResult(coef=np.ascontiguousarray(W).reshape(m, K, d), fun=np.asarray(fun),
                             n_iter=np.asarray(n_iter), grad_norm=np.asarray(gnorm),
                             converged=converged, status=[LBFGS_STATUS[int(s)] for s in status])


def multinomial_predict_proba(X: Any, W: ArrayLike, intercept: ArrayLike | None = None) -> np.ndarray:
    """Class probabilities softmax(W x_i + intercept), computed stably.

    X : array (n, d), CSR or DesignRows; W : array (K, d); intercept : None or (K,).
    Returns an (n, K) float64 array whose rows sum to 1.
    """
    rows = softmax_rows(X)
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[1] != rows.d or W.shape[0] < 2:
        raise ValueError(f"W: expected shape (K, {rows.d}) with K >= 2, got {np.shape(W)}")
    K = W.shape[0]
    b = None
    if intercept is not None:
        b = np.asarray(intercept, dtype=np.float64).reshape(-1)
        if b.shape != (K,):
            raise ValueError(f"intercept: expected shape ({K},), got {np.shape(intercept)}")
    has_c = rows.const is not None
    Wx = np.ascontiguousarray(W[:, :rows.d_raw]) if has_c else np.ascontiguousarray(W)
    wc = W[:, -1].copy() if has_c else None
    out = np.empty((rows.n, K))
    for i0, i1, Xb, rs in rows.blocks(K):
        Z = rows.margins(Xb, rs, Wx, wc)
        if b is not None:
            Z += b
        Z -= _max_last(Z)[:, None]
        np.exp(Z, out=Z)
        Z /= Z.sum(axis=1, keepdims=True)
        out[i0:i1] = Z
    return out
