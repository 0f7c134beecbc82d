"""Algorithms 1 and 2 of Chaudhuri, Monteleoni & Sarwate (2011), with the
corrections of SPEC.md.  All privacy constants are computed here, in
`output_perturbation_constants` and `objective_perturbation_constants`, and
recorded on every result.

Rows must satisfy ||x_i|| <= R (`data_norm`, public).  With R != 1 the loss
gradient bound is R and the curvature bound is c R^2:
    output perturbation:    beta = n Lambda eps / (2 R)    (sensitivity 2R/(n Lambda))
    objective perturbation: eps' = eps - log(1 + 2cR^2/(n Lambda) + (cR^2/(n Lambda))^2)
                            Delta branch if eps' <= 0; beta = eps' / (2R).
"""
from dataclasses import dataclass, field

import numpy as np

from dperm import erm
from dperm._validation import (bound_rows, check_alpha, check_epsilon, check_pm1_labels,
                               check_positive, check_random_state, check_X)
from dperm.losses import get_loss
from dperm.noise import sample_l2_laplace, warn_if_seeded

__all__ = ["output_perturbation", "objective_perturbation", "PrivateFit", "add_output_noise",
           "output_perturbation_constants", "objective_perturbation_constants"]


@dataclass
class PrivateFit:
    """Result of a private mechanism.

    Releasable (a function of public inputs and the noisy model only): `coef`
    and the public constants, the fields of `record()`.

    NOT releasable, for the analyst who holds the data: `grad_norm`,
    `converged` and `n_iter` describe the solve on the private data (for output
    perturbation, the noise-free minimizer itself) and differ between
    neighbouring data sets; `diagnostics()` gathers them.  They are left out of
    the repr so that printing a result does not show them.

    coef : (len(alpha), n_draws, d), or (n_draws, d) when alpha was a scalar.
    alpha, epsilon_prime, delta, beta : (len(alpha),) or scalars, the constants used
        (`delta` is the paper's extra regularizer Delta, not an (epsilon, delta) parameter).
    grad_norm, converged, n_iter : per fit, shaped like coef[..., 0].
    """

    mechanism: str
    loss: str
    epsilon: float
    data_norm: float
    h: float
    n_samples: int
    curvature: float
    alpha: np.ndarray
    epsilon_prime: np.ndarray
    delta: np.ndarray
    beta: np.ndarray
    coef: np.ndarray
    grad_norm: np.ndarray = field(repr=False)
    converged: np.ndarray = field(repr=False)
    n_iter: np.ndarray = field(repr=False)

    def _pick(self, a, i, j):
        a = np.asarray(a)
        return a.item() if a.ndim == 0 else a.reshape(-1)[i] if a.ndim == 1 else a[i, j]

    def record(self, i=0, j=0):
        """The releasable privacy record of fit (alpha index i, draw j): public values only."""
        return {
            "mechanism": self.mechanism, "loss": self.loss, "epsilon": self.epsilon,
            "epsilon_prime": float(self._pick(self.epsilon_prime, i, j)),
            "delta": float(self._pick(self.delta, i, j)), "beta": float(self._pick(self.beta, i, j)),
            "alpha": float(self._pick(self.alpha, i, j)), "data_norm": self.data_norm, "h": self.h,
            "n_samples": self.n_samples, "curvature": self.curvature,
        }

    def diagnostics(self, i=0, j=0):
        """Solver diagnostics of fit (i, j): data-dependent, for the analyst's eyes only."""
        return {"grad_norm": float(self._pick(self.grad_norm, i, j)),
                "converged": bool(self._pick(self.converged, i, j)),
                "n_iter": int(self._pick(self.n_iter, i, j))}


def output_perturbation_constants(n, alpha, epsilon, data_norm=1.0):
    """beta of Algorithm 1: the L2 sensitivity of the minimizer is 2R/(n Lambda)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    return n * alpha * epsilon / (2.0 * data_norm)


def objective_perturbation_constants(n, alpha, epsilon, curvature, data_norm=1.0):
    """(epsilon_prime, Delta, beta) of Algorithm 2 for each alpha.

    `curvature` is the bound on phi'' for rows of norm <= data_norm, i.e. c R^2
    (Loss.curvature(h, data_norm) gives it).
    """
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    q = curvature / (n * alpha)
    eps_p = epsilon - np.log1p(2.0 * q + q * q)
    delta = np.zeros_like(alpha)
    low = eps_p <= 0
    if np.any(low):
        # Delta makes the Jacobian factor exactly e^{eps/2}; half the budget is left for b
        delta[low] = curvature / (n * np.expm1(epsilon / 4.0)) - alpha[low]
        eps_p = np.where(low, epsilon / 2.0, eps_p)
    beta = eps_p / (2.0 * data_norm)
    return eps_p, delta, beta


def add_output_noise(minimizers, n, alpha, epsilon, data_norm, n_draws, random_state=None):
    """The noise step of Algorithm 1, for exact minimizers already computed.

    minimizers: (len(alpha), d) non-private solutions on n rows of norm <= data_norm.
    Returns (beta (len(alpha),), coef (len(alpha), n_draws, d)).  Experiments that
    need the non-private solution anyway use this to avoid solving twice.
    """
    minimizers = np.atleast_2d(np.asarray(minimizers, dtype=np.float64))
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    beta = output_perturbation_constants(n, alpha, epsilon, data_norm)
    noise = sample_l2_laplace(beta[:, None], minimizers.shape[1], size=(alpha.size, n_draws),
                              random_state=random_state)
    return beta, minimizers[:, None, :] + noise


def _inputs(X, y, loss, alpha, epsilon, h, data_norm, norm_policy, n_draws):
    from dperm import _dask

    if _dask.is_distributed(X):
        # a Dask array: rows, labels, validation and clipping stay on the workers
        X, y = _dask.as_rows(X, y, min_samples=2), None
    else:
        X = check_X(X, name="X", min_samples=2, accept_sparse=True)
        y = check_pm1_labels(y, X.shape[0], name="y")
    lo = get_loss(loss)
    alphas, scalar = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    h = check_positive(h, "h")
    data_norm = check_positive(data_norm, "data_norm")
    if isinstance(n_draws, bool) or not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise ValueError(f"n_draws: must be an integer >= 1, got {n_draws!r}")
    X = bound_rows(X, data_norm, norm_policy)   # clipping factors, not a copy
    return X, y, lo, alphas, scalar, epsilon, h, data_norm, int(n_draws)


def _shape(a, scalar):
    return a[0] if scalar else a


def output_perturbation(X, y, *, loss="logistic", alpha, epsilon, h=0.5, data_norm=1.0,
                        norm_policy="clip", n_draws=1, random_state=None, tol=None,
                        max_iter=None, n_threads=None, solver="auto"):
    """Algorithm 1 (sensitivity method): f* + b, ||b|| ~ Gamma(d, 1/beta), beta = n Lambda eps / (2R).

    Parameters
    ----------
    X : (n, d) rows with ||x_i|| <= data_norm (clipped or refused per norm_policy).
    y : (n,) labels in {-1, +1}.
    loss : "logistic", "huber" or "smooth_hinge".
    alpha : Lambda > 0, a scalar or a sequence (one minimizer per value, solved as one batch).
    epsilon : privacy parameter > 0 (each released coefficient vector is epsilon-DP).
    h : Huber / smoothed-hinge width.
    n_draws : independent noise draws per alpha (each one a separate epsilon-DP release).
    random_state : None (fresh OS entropy, the default), int or numpy Generator.
        An int seed makes the run reproducible and voids the guarantee
        (PrivacyLeakWarning): for experiments and tests only.
    tol, max_iter, n_threads, solver : passed to dperm.erm.minimize ("lbfgs",
        "newton" or "auto"; every solver meets the same gradient-norm tolerance).

    Returns
    -------
    PrivateFit with coef of shape (len(alpha), n_draws, d) or (n_draws, d).
    """
    X, y, lo, alphas, scalar, epsilon, h, R, n_draws = _inputs(
        X, y, loss, alpha, epsilon, h, data_norm, norm_policy, n_draws)
    warn_if_seeded(random_state)
    rng = check_random_state(random_state)
    n, d = X.shape
    res = erm.minimize(X, y, loss=lo.name, alpha=alphas, h=h, tol=tol, max_iter=max_iter,
                       n_threads=n_threads, solver=solver)
    beta, coef = add_output_noise(res.coef, n, alphas, epsilon, R, n_draws, rng)
    per_fit = lambda a: np.repeat(np.asarray(a)[:, None], n_draws, axis=1)
    return PrivateFit(
        mechanism="output", loss=lo.name, epsilon=epsilon, data_norm=R, h=h, n_samples=n,
        curvature=lo.curvature(h, R), alpha=_shape(alphas, scalar),
        epsilon_prime=_shape(np.full(alphas.size, epsilon), scalar),
        delta=_shape(np.zeros(alphas.size), scalar), beta=_shape(beta, scalar),
        coef=_shape(coef, scalar), grad_norm=_shape(per_fit(res.grad_norm), scalar),
        converged=_shape(per_fit(res.converged), scalar), n_iter=_shape(per_fit(res.n_iter), scalar))


def objective_perturbation(X, y, *, loss="logistic", alpha, epsilon, h=0.5, data_norm=1.0,
                           norm_policy="clip", n_draws=1, random_state=None, tol=None,
                           max_iter=None, n_threads=None, solver="auto"):
    """Algorithm 2: argmin J(f) + b.f/n + (Delta/2)||f||^2 with the constants of SPEC.md.

    Same parameters and result layout as `output_perturbation`; every (alpha, draw)
    pair is one problem of a single batched solve.  The logistic, Huber and
    smoothed-hinge losses all qualify (twice differentiable, |phi'| <= 1,
    phi'' <= c).  The proof assumes the exact minimizer: a ConvergenceWarning
    is raised when the tolerance was missed, and `diagnostics()` gives the
    final gradient norms (analyst-only: they are not covered by epsilon).
    """
    X, y, lo, alphas, scalar, epsilon, h, R, n_draws = _inputs(
        X, y, loss, alpha, epsilon, h, data_norm, norm_policy, n_draws)
    warn_if_seeded(random_state)
    rng = check_random_state(random_state)
    n, d = X.shape
    c = lo.curvature(h, R)
    eps_p, delta, beta = objective_perturbation_constants(n, alphas, epsilon, c, R)
    b = sample_l2_laplace(beta[:, None], d, size=(alphas.size, n_draws), random_state=rng)
    k = alphas.size * n_draws
    res = erm.minimize(X, y, loss=lo.name, alpha=np.repeat(alphas, n_draws), h=h,
                       linear=b.reshape(k, d), extra_l2=np.repeat(delta, n_draws),
                       tol=tol, max_iter=max_iter, n_threads=n_threads, solver=solver)
    shape2 = (alphas.size, n_draws)
    return PrivateFit(
        mechanism="objective", loss=lo.name, epsilon=epsilon, data_norm=R, h=h, n_samples=n,
        curvature=c, alpha=_shape(alphas, scalar), epsilon_prime=_shape(eps_p, scalar),
        delta=_shape(delta, scalar), beta=_shape(beta, scalar),
        coef=_shape(res.coef.reshape(alphas.size, n_draws, d), scalar),
        grad_norm=_shape(res.grad_norm.reshape(shape2), scalar),
        converged=_shape(res.converged.reshape(shape2), scalar),
        n_iter=_shape(res.n_iter.reshape(shape2), scalar))
