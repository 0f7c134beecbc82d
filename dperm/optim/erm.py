"""minimize(): the Python face of the batched, compiled L-BFGS solver.

Solves, for every k at once,

    min_w  (1/n) sum_i phi(y_i w.x_i) + ((alpha_k + extra_l2_k) / 2) ||w||^2 + linear_k.w / n

(or, for a regression loss, rho(w.x_i - y_i) in place of phi(y_i w.x_i))

with one pass over X per iteration for all still-active problems.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dperm.data import oracle as _oracle
from dperm.data.validation import (
    N_THREADS,
    NONE,
    POSITIVE,
    Each,
    Interval,
    Options,
    ParameterTable,
    Satisfies,
    resolve_n_threads,
    validate_params,
)
from dperm.exceptions import ConvergenceWarning
from dperm.losses import Loss, get_loss
from dperm.optim.status import LBFGS_STATUS, NEWTON_STATUS

__all__ = ["minimize", "MinimizeResult", "objective", "hessian", "hessian_vector",
           "DEFAULT_TOL", "DEFAULT_MAX_ITER"]

#: gradient-norm tolerance: tight, because the privacy proofs assume the exact minimizer
DEFAULT_TOL = 1e-10
DEFAULT_MAX_ITER = 2000

@dataclass
class MinimizeResult:
    """Per-problem results of :func:`minimize`.

    Parameters
    ----------
    coef : ndarray of shape (d,) or (k, d)
        The minimisers, one row per problem (k problems).
    fun : float or ndarray of shape (k,)
        The objective at each minimiser.
    n_iter : int or ndarray of shape (k,)
        Iterations used.
    grad_norm : float or ndarray of shape (k,)
        The final gradient's L2 norm.
    converged : bool or ndarray of shape (k,)
        Whether each problem met the tolerance.
    status : list
        Per-problem status messages of the solver.
    """

    coef: np.ndarray
    fun: np.ndarray | float
    n_iter: np.ndarray | int
    grad_norm: np.ndarray | float
    converged: np.ndarray | bool
    status: list[str] | str = field(default_factory=list)


def _check_loss(value: Any, name: str) -> None:
    get_loss(value)


SOLVERS = ("auto", "lbfgs", "newton")

#: what the functions of this module share (alpha and extra_l2: one value, or one per
#: problem of the batch), declared once and checked at each public function's call
_SHARED_PARAMETERS: ParameterTable = {
    "loss": [Satisfies(_check_loss, "a loss name")],
    "alpha": [Each(POSITIVE)],
    "h": [POSITIVE],
    "extra_l2": [Each(Interval(0.0, None, closed="left"))],
    "n_threads": N_THREADS,
}
#: minimize's parameters
MINIMIZE_PARAMETERS: ParameterTable = {
    **_SHARED_PARAMETERS,
    "tol": [NONE, POSITIVE],
    "max_iter": [NONE, Interval(0, None, closed="left", integer=True)],
    "memory": [NONE, Interval(1, None, closed="left", integer=True)],
    "solver": [Options(SOLVERS)],
}


def _prepare(X: Any, y: Any, loss: str, alpha: float | ArrayLike, h: float,
             extra_l2: float | ArrayLike, linear: ArrayLike | None,
             n_threads: int | None) -> tuple[Any, Any, Loss, float, np.ndarray,
                                             np.ndarray | None, bool, int]:
    """The rows checked (the data path) and the checked parameters as the solver takes
    them: l2 = alpha + extra_l2 per problem, the linear terms (k, d), the thread count."""
    # a Dask collection: rows and labels stay on the workers (validated there); n and d
    # are public
    lo = get_loss(loss)
    X, y = _oracle.check_rows(X, y, regression=lo.regression)
    d = X.shape[1]
    scalar = np.ndim(alpha) == 0
    alpha_arr = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    k = alpha_arr.size
    try:
        extra = np.broadcast_to(np.asarray(extra_l2, dtype=np.float64), (k,))
    except ValueError:
        raise ValueError(f"extra_l2: expected a scalar or one value per alpha ({k}), got "
                         f"shape {np.shape(extra_l2)}") from None
    B = None
    if linear is not None:
        B = np.asarray(linear, dtype=np.float64)
        if B.ndim == 1:
            B = B[None, :]
        if B.shape[1] != d or B.shape[0] not in (1, k):
            raise ValueError(f"linear: expected shape ({d},) or ({k}, {d}), got {np.shape(linear)}")
        if not np.all(np.isfinite(B)):
            raise ValueError("linear: contains NaN or infinity")
        B = np.ascontiguousarray(np.broadcast_to(B, (k, d)))
        scalar = scalar and np.ndim(linear) == 1
    l2 = np.ascontiguousarray(alpha_arr + extra)
    return X, y, lo, float(h), l2, B, scalar, resolve_n_threads(n_threads)


@validate_params(MINIMIZE_PARAMETERS)
def minimize(X: ArrayLike, y: ArrayLike, loss: str = "logistic", alpha: float | ArrayLike = 1.0,
             h: float = 0.5, linear: ArrayLike | None = None,
             extra_l2: float | ArrayLike = 0.0, tol: float | None = None,
             max_iter: int | None = None, n_threads: int | None = None,
             memory: int | None = None, coef_init: ArrayLike | None = None, warn: bool = True,
             solver: str = "auto") -> MinimizeResult:
    """Minimize regularized empirical risk for one or many problems at once.

    Parameters
    ----------
    X : array (n, d), scipy.sparse matrix, memory map, or dask.array
        Features. float32 and float64 are read as they are (float32 halves memory
        traffic; sums are accumulated in float64); other dtypes and non-C layouts are
        converted to C-contiguous float64. CSR is read in place (other sparse formats
        are converted once); a C-ordered float32/float64 memory map is read block by
        block, never copied. Must be finite. A dask.array (chunked by rows only; dense
        or CSR chunks) is fitted on the workers of the distributed client in scope
        (see dperm.data.dask_rows): the solver runs here, each pass is a sum over the workers.
    y : array (n,)
        Labels in {-1, +1} (with a dask X: a numpy array or a dask array); real, finite
        targets for the regression loss "pseudo_huber" (local X only).
    loss : {"logistic", "huber", "smooth_hinge", "pseudo_huber"}
        A margin loss phi(y w.x), or "pseudo_huber", the regression loss
        h^2 (sqrt(1 + (r/h)^2) - 1) of the residual r = w.x - y.
    alpha : float or array (k,)
        Regularization strength Lambda > 0; an array solves k problems in one batch.
    h : float
        Width of the Huber / smoothed-hinge transition (> 0); ignored for logistic.
    linear : None, array (d,) or (k, d)
        Linear term b; the objective gains b.w / n (objective perturbation's hook).
    extra_l2 : float or array (k,)
        Extra ridge term Delta >= 0 added to alpha (objective perturbation's Delta).
    tol : float
        Stop when the Euclidean norm of the gradient is <= tol (default 1e-10).
    max_iter : int
        Iteration cap per problem (default 2000).
    n_threads : int or None
        OpenMP threads for the pass over X (None: all available cores).
    memory : int or None
        L-BFGS history length. None: up to 100 pairs, fewer when the history of all
        k problems would exceed 256 MiB. A long history costs O(memory d) per
        iteration, small next to a pass over X, and cuts the iterations on
        ill-conditioned problems (tiny alpha) several-fold: 383 instead of over 3000
        at alpha = 1e-10 on Adult.
    coef_init : None or array (d,) / (k, d)
        Starting point (default zero).
    warn : bool
        Issue a ConvergenceWarning for problems that did not reach tol.
    solver : {"auto", "lbfgs", "newton"}
        "lbfgs": batched L-BFGS, one pass over X per iteration (value and gradient).
        "newton": batched trust-region Newton-CG (liblinear's method), one pass per
        Hessian-vector product and per trial point; fewer passes when the problem is
        ill-conditioned (tiny alpha). "auto" is L-BFGS (measured in BENCHMARKS.md:
        no property of X known before the fit predicts when Newton-CG wins).
        Every solver stops at the same gradient-norm tolerance.

    Returns
    -------
    MinimizeResult with coef (d,) or (k, d), fun, n_iter, grad_norm, converged and
    a status string per problem; scalars where alpha (and linear) were scalar.
    """
    return _minimize(X, y, loss=loss, alpha=alpha, h=h, linear=linear, extra_l2=extra_l2,
                     tol=tol, max_iter=max_iter, n_threads=n_threads, memory=memory,
                     coef_init=coef_init, warn=warn, solver=solver,
                     stacklevel=4)   # the ConvergenceWarning points at the caller


def _minimize(X: Any, y: Any, *, loss: str, alpha: float | ArrayLike, h: float,
              linear: ArrayLike | None = None, extra_l2: float | ArrayLike = 0.0,
              tol: float | None = None, max_iter: int | None = None,
              n_threads: int | None = None, memory: int | None = None,
              coef_init: ArrayLike | None = None, warn: bool = True,
              solver: str = "auto", stacklevel: int = 2) -> MinimizeResult:
    """`minimize` on checked parameters (the mechanisms' solves call this)."""
    X, y, lo, h, l2, B, scalar, nt = _prepare(X, y, loss, alpha, h, extra_l2, linear, n_threads)
    tol = DEFAULT_TOL if tol is None else float(tol)
    max_iter = DEFAULT_MAX_ITER if max_iter is None else int(max_iter)
    k, d = l2.size, X.shape[1]
    if memory is None:
        memory = int(min(100, max(10, 2**28 // (16 * k * d))))
    W0 = _start_point(coef_init, k, d)
    solver = "lbfgs" if solver == "auto" else solver
    oracle = _oracle.binary_oracle(X, y, n_threads=nt,
                                   worker_threads=n_threads if n_threads is None else nt,
                                   regression=lo.regression)
    if solver == "newton":
        coef, fun, n_iter, gnorm, status = _newton(oracle, lo.kernel_id, h, W0, l2, B, tol,
                                                   max_iter)
    else:
        coef, fun, n_iter, gnorm, status = _lbfgs(oracle, lo.kernel_id, h, W0, l2, B, tol,
                                                  max_iter, int(memory), nt)
    converged = status == 1
    if warn and not converged.all():
        # no data-dependent numbers in the text: warnings end up in logs beside released models
        warnings.warn(
            f"minimize: the solver stopped before the gradient norm reached tol={tol:g}. The "
            "privacy guarantee assumes the exact minimizer: raise max_iter, raise alpha, or check "
            "the data (the per-problem grad_norm and status are in the result, for the analyst "
            "only).", ConvergenceWarning, stacklevel=stacklevel)
    msgs = NEWTON_STATUS if solver == "newton" else LBFGS_STATUS
    return _result(coef, fun, n_iter, gnorm, converged, [msgs[int(s)] for s in status], scalar)


def _result(coef: np.ndarray, fun: np.ndarray, n_iter: np.ndarray, gnorm: np.ndarray,
            converged: np.ndarray, status: list[str], scalar: bool) -> MinimizeResult:
    """The per-problem arrays as a MinimizeResult; scalars for a single problem."""
    if scalar:
        return MinimizeResult(coef=coef[0], fun=fun[0], n_iter=int(n_iter[0]),
                              grad_norm=gnorm[0], converged=bool(converged[0]), status=status[0])
    return MinimizeResult(coef=coef, fun=fun, n_iter=n_iter, grad_norm=gnorm,
                          converged=converged, status=status)


def _start_point(coef_init: ArrayLike | None, k: int, d: int) -> np.ndarray:
    """The (k, d) starting points: zero, or coef_init broadcast to every problem."""
    W0 = np.zeros((k, d))
    if coef_init is not None:
        c0 = np.asarray(coef_init, dtype=np.float64)
        try:
            W0[:] = c0
        except ValueError:
            raise ValueError(f"coef_init: expected shape ({d},) or ({k}, {d}), got {c0.shape}") from None
        if not np.all(np.isfinite(W0)):
            raise ValueError("coef_init: contains NaN or infinity")
    return W0


def _lbfgs(oracle: Any, loss: int, h: float, W0: np.ndarray, l2: np.ndarray,
           B: np.ndarray | None, tol: float, max_iter: int, memory: int,
           n_threads: int) -> tuple[np.ndarray, ...]:
    """The compiled batched L-BFGS on the oracle's passes."""
    from dperm._core._lbfgs import lbfgs

    out = lbfgs(oracle.solver_view(l2, B, loss, h), loss, h, W0, l2, B, tol, max_iter, memory,
                n_threads)
    return (np.ascontiguousarray(out[0]),) + tuple(np.asarray(a) for a in out[1:])


#: memory the Newton solver may spend on cached curvatures (CACHED_POINTS vectors of n
#: per problem)
CURVATURE_CACHE_BYTES = 512 * 2**20
CACHED_POINTS = 3


def _newton(oracle: Any, loss: int, h: float, W0: np.ndarray, l2: np.ndarray,
            B: np.ndarray | None, tol: float, max_iter: int) -> tuple[np.ndarray, ...]:
    """Trust-region Newton-CG on the oracle's passes (the solver sees value_grad /
    hess_vec of row blocks of W, never X)."""
    from dperm.optim.newton import trust_region_newton

    n, k = oracle.shape[0], W0.shape[0]
    # phi'' at the last points each problem evaluated: a Hessian-vector pass at a point
    # whose curvature is cached skips the margins and the loss (a rejected trial point
    # pushes an entry in; after several rejections in a row a pass recomputes)
    cache: list[list[tuple[np.ndarray, np.ndarray]]] | None = \
        [[] for _ in range(k)] if oracle.caches_curvature \
        and CACHED_POINTS * k * n * 8 <= CURVATURE_CACHE_BYTES else None

    if oracle.keeps_curvature:
        # rows on the workers: they keep phi'' beside the rows (never sent to the client)
        def vg_kept(W, idx):
            return oracle.value_grad(W, np.ascontiguousarray(l2[idx]),
                                     None if B is None else np.ascontiguousarray(B[idx]), loss,
                                     h, keep_curvature=True)

        def hv_kept(W, V, idx):
            return oracle.hess_vec(W, V, np.ascontiguousarray(l2[idx]), loss, h,
                                   keep_curvature=True)

        W, F, n_iter, gnorm, status = trust_region_newton(vg_kept, hv_kept, W0, tol, max_iter)
        return (np.ascontiguousarray(W), np.asarray(F), np.asarray(n_iter), np.asarray(gnorm),
                np.asarray(status))

    def vg(W, idx):
        curv = None if cache is None else np.empty((len(idx), n))
        out = oracle.value_grad(W, np.ascontiguousarray(l2[idx]),
                                None if B is None else np.ascontiguousarray(B[idx]), loss, h,
                                curv)
        if cache is not None:
            for j, kk in enumerate(idx):
                cache[kk] = [(W[j].copy(), curv[j])] + cache[kk][:CACHED_POINTS - 1]
        return out

    def hv(W, V, idx):
        curv = None
        if cache is not None:
            rows = [next((c for w, c in cache[kk] if np.array_equal(w, W[j])), None)
                    for j, kk in enumerate(idx)]
            if all(r is not None for r in rows):
                curv = np.stack(rows)
        return oracle.hess_vec(W, V, np.ascontiguousarray(l2[idx]), loss, h, curv)

    W, F, n_iter, gnorm, status = trust_region_newton(vg, hv, W0, tol, max_iter)
    return (np.ascontiguousarray(W), np.asarray(F), np.asarray(n_iter), np.asarray(gnorm),
            np.asarray(status))


def _as_block(W: ArrayLike, d: int, name: str) -> tuple[np.ndarray, bool]:
    W = np.asarray(W, dtype=np.float64)
    single = W.ndim == 1
    W = np.ascontiguousarray(np.atleast_2d(W))
    if W.ndim != 2 or W.shape[1] != d:
        raise ValueError(f"{name}: expected shape ({d},) or (k, {d}), got {np.shape(W)}")
    return W, single


@validate_params(_SHARED_PARAMETERS)
def objective(X: ArrayLike, y: ArrayLike, W: ArrayLike, loss: str = "logistic",
              alpha: float | ArrayLike = 1.0, h: float = 0.5, linear: ArrayLike | None = None,
              extra_l2: float | ArrayLike = 0.0,
              n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Objective values and gradients at W in one pass over X.

    Parameters
    ----------
    X : array (n, d), scipy.sparse matrix, memory map, or dask.array
        Features, as in `minimize`.
    y : array (n,)
        Labels in {-1, +1}, or real targets for "pseudo_huber", as in `minimize`.
    W : array (d,) or (k, d)
        The points (k of them in one pass).
    loss : {"logistic", "huber", "smooth_hinge", "pseudo_huber"}, default "logistic"
        The loss, as in `minimize`.
    alpha : float or array (k,), default 1.0
        Regularization strength Lambda > 0, one per row of W.
    h : float, default 0.5
        Width of the Huber / smoothed-hinge / pseudo-Huber transition (> 0).
    linear : None, array (d,) or (k, d), optional
        Linear term b; the objective gains b.w / n.
    extra_l2 : float or array (k,), default 0.0
        Extra ridge term Delta >= 0 added to alpha, one per row of W.
    n_threads : int or None, optional
        OpenMP threads for the pass over X (None: all available cores).

    Returns
    -------
    value : float array of shape () or (k,)
        The objective at each point.
    gradient : array (d,) or (k, d)
        Its gradient at each point.
    """
    X, y, lo, h, l2, B, _, nt = _prepare(X, y, loss, alpha, h, extra_l2, linear, n_threads)
    W, single = _as_block(W, X.shape[1], "W")
    l2 = np.ascontiguousarray(np.broadcast_to(l2, (W.shape[0],)))
    if B is not None:
        B = np.ascontiguousarray(np.broadcast_to(B, W.shape))
    oracle = _oracle.binary_oracle(X, y, n_threads=nt, worker_threads=n_threads,
                                   regression=lo.regression)
    F, G = oracle.value_grad(W, l2, B, lo.kernel_id, h)
    return (F[0], G[0]) if single else (F, G)


@validate_params(_SHARED_PARAMETERS)
def hessian_vector(X: ArrayLike, y: ArrayLike, W: ArrayLike, V: ArrayLike, loss: str = "logistic",
                   alpha: float | ArrayLike = 1.0, h: float = 0.5,
                   extra_l2: float | ArrayLike = 0.0, n_threads: int | None = None) -> np.ndarray:
    """Hessian-vector products H(W_k) V_k, one pass over X for all k.

    Parameters
    ----------
    X : array (n, d), scipy.sparse matrix, memory map, or dask.array
        Features, as in `minimize`.
    y : array (n,)
        Labels in {-1, +1}, or real targets for "pseudo_huber", as in `minimize`.
    W : array (d,) or (k, d)
        The points.
    V : array of the shape of W
        The directions, one per point.
    loss : {"logistic", "huber", "smooth_hinge", "pseudo_huber"}, default "logistic"
        The loss, as in `minimize`.
    alpha : float or array (k,), default 1.0
        Regularization strength Lambda > 0, one per row of W.
    h : float, default 0.5
        Width of the Huber / smoothed-hinge / pseudo-Huber transition (> 0).
    extra_l2 : float or array (k,), default 0.0
        Extra ridge term Delta >= 0 added to alpha, one per row of W.
    n_threads : int or None, optional
        OpenMP threads for the pass over X (None: all available cores).

    Returns
    -------
    numpy.ndarray
        H(W_k) V_k, of the shape of W.
    """
    X, y, lo, h, l2, _, _, nt = _prepare(X, y, loss, alpha, h, extra_l2, None, n_threads)
    W, single = _as_block(W, X.shape[1], "W")
    V, _ = _as_block(V, X.shape[1], "V")
    if V.shape != W.shape:
        raise ValueError(f"V: expected the shape of W {W.shape}, got {V.shape}")
    l2 = np.ascontiguousarray(np.broadcast_to(l2, (W.shape[0],)))
    oracle = _oracle.binary_oracle(X, y, n_threads=nt, worker_threads=n_threads,
                                   regression=lo.regression)
    out = oracle.hess_vec(W, V, l2, lo.kernel_id, h)
    return out[0] if single else out


@validate_params(_SHARED_PARAMETERS)
def hessian(X: ArrayLike, y: ArrayLike, W: ArrayLike, loss: str = "logistic",
            alpha: float | ArrayLike = 1.0, h: float = 0.5, extra_l2: float | ArrayLike = 0.0,
            n_threads: int | None = None) -> np.ndarray:
    """Full Hessian(s) of the objective; O(n d^2), for small d (not for a Dask array).

    Parameters
    ----------
    X : array (n, d), scipy.sparse matrix, memory map, or dask.array
        Features, as in `minimize`.
    y : array (n,)
        Labels in {-1, +1}, or real targets for "pseudo_huber", as in `minimize`.
    W : array (d,) or (k, d)
        The points.
    loss : {"logistic", "huber", "smooth_hinge", "pseudo_huber"}, default "logistic"
        The loss, as in `minimize`.
    alpha : float or array (k,), default 1.0
        Regularization strength Lambda > 0, one per row of W.
    h : float, default 0.5
        Width of the Huber / smoothed-hinge / pseudo-Huber transition (> 0).
    extra_l2 : float or array (k,), default 0.0
        Extra ridge term Delta >= 0 added to alpha, one per row of W.
    n_threads : int or None, optional
        OpenMP threads for the pass over X (None: all available cores).

    Returns
    -------
    numpy.ndarray
        The Hessian, (d, d), or one per point, (k, d, d).
    """
    _oracle.require_local(X, "hessian: the full Hessian is not computed over a Dask array; "
                          "use hessian_vector (or compute a small X locally)")
    X, y, lo, h, l2, _, _, nt = _prepare(X, y, loss, alpha, h, extra_l2, None, n_threads)
    W, single = _as_block(W, X.shape[1], "W")
    l2 = np.ascontiguousarray(np.broadcast_to(l2, (W.shape[0],)))
    out = _oracle.full_hessian(X, y, W, l2, lo, h, nt)
    return out[0] if single else out
