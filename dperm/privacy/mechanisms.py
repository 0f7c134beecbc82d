"""The private mechanisms: Algorithms 1 and 2 of Chaudhuri, Monteleoni & Sarwate (2011)
with the corrections of docs/specification.md (pure epsilon-DP, ``delta=0``), and their (epsilon, delta)
Gaussian counterparts (``delta > 0``); approximate minima perturbation.

This module holds the public entry points, their parameter checks, the pure-epsilon steps
and the dispatch; the (epsilon, delta) steps (the Gaussian calibrations per Lambda, the
objective's Gaussian noise, AMP's output release, output perturbation's Gaussian draw) are
in dperm.privacy.gaussian_release.  Every privacy constant is computed in one of the two
(pure epsilon: `output_perturbation_constants`, `objective_perturbation_constants`;
Gaussian: dperm.privacy.calibration, called from gaussian_release) and recorded on the
result.  The derivations are in docs/privacy_analysis.md.

Rows satisfy ||x_i|| <= R (`data_norm`, public).  The loss gradient bound is L = l R
and the curvature bound c R^2, both declared by the loss (dperm.losses.Loss.gradient_bound
and .curvature: l = 1 for the margin losses, l = h for the pseudo-Huber regression loss,
whose c is 1).  With q = c R^2 / (n Lambda)::

    pure output perturbation:     beta = eps / sens, sens = 2L/(n Lambda) (replace_one)
                                  or L/(n Lambda) (add_remove)
    pure objective perturbation:  eps' = eps - log(1 + 2q + q^2) (replace_one)
                                  or eps - log(1 + q) (add_remove);
                                  Delta branch if eps' <= 0;  beta = eps' / (2L) or eps' / L.

A regression loss (loss="pseudo_huber") takes real labels y; its guarantee needs no
bound on them (abs(rho') <= h whatever the residual), docs/privacy_analysis.md, section 12.

Neighbouring relations.  "replace_one" (the paper's, docs/specification.md): n is public.  "add_remove"
(the relation DP-SGD libraries use): the data set's size is itself private, so the mean
objective is normalised by a PUBLIC count `n_public` (sum loss / n_public); with
n_public=None the row count of X is used and a PrivacyLeakWarning says that the guarantee
then holds only for data sets of that size.

Floating point (Mironov 2012).  Released coefficients lie on a public grid g Z^d (g a
power of two recorded as `grid`): Gaussian output noise is sampled exactly on it
(dperm.privacy.exact_noise, integer arithmetic only) around the minimiser rounded to it, with
the rounding's sqrt(d) g added to the sensitivity (output perturbation and AMP, whose
releases are therefore float-safe); Laplace output noise is added to the rounded
minimiser and the sum rounded to the grid.  Objective perturbation releases its
minimiser as solved: like the paper's proof, its guarantee assumes exact arithmetic
(docs/privacy_analysis.md, section 10, "Floating point").
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from dperm.data.oracle import check_rows
from dperm.data.validation import (
    DATA_NORM,
    N_THREADS,
    NONE,
    NORM_POLICIES,
    POSITIVE,
    RANDOM_STATE,
    Each,
    Interval,
    Options,
    ParameterTable,
    Satisfies,
    bound_rows,
    check_params,
    check_random_state,
    validate_params,
)
from dperm.exceptions import NotConvergedError, PrivacyLeakWarning
from dperm.losses import (
    MULTINOMIAL,
    SOFTMAX_GRADIENT_FACTOR,
    Loss,
    get_loss,
    softmax_curvature,
)
from dperm.optim import erm
from dperm.privacy import exact_noise
from dperm.privacy.exact_noise import GRID_BITS, warn_if_grid_clamps
from dperm.privacy.gaussian_release import (
    amp_release,
    gaussian_calibrations,
    gaussian_objective_noise,
    gaussian_output_on_grid,
)
from dperm.privacy.neighbouring import NEIGHBOURING, sensitivity_factor
from dperm.privacy.noise import sample_l2_laplace, warn_if_seeded

if TYPE_CHECKING:
    from collections.abc import Mapping

    from dperm.privacy.accountant import Event
    from dperm.privacy.record import ReleaseRecord

__all__ = ["output_perturbation", "objective_perturbation", "PrivateFit", "add_output_noise",
           "output_perturbation_constants", "objective_perturbation_constants",
           "NEIGHBOURING", "MULTINOMIAL", "check_privacy_params", "privacy_events",
           "normalising_count", "warn_if_count_private"]


@dataclass
class PrivateFit:
    """Result of a private mechanism.

    Releasable (a function of public inputs and the noisy model only): ``coef`` and the
    public constants, the fields of ``record()``.

    NOT releasable, for the analyst who holds the data: ``grad_norm``, ``converged`` and
    ``n_iter`` describe the solve on the private data (for output perturbation, the
    noise-free minimizer itself) and differ between neighbouring data sets;
    ``diagnostics()`` gathers them.  They are left out of the repr so that printing a
    result does not show them.

    Parameters
    ----------
    mechanism : str
        ``"objective"``, ``"output"`` or ``"amp"``.
    loss : str
        The loss's name.
    epsilon : float
        The epsilon of each released coefficient vector.
    data_norm : float
        R, the public row-norm bound.
    h : float
        The loss's width.
    n_samples : int
        The public normalisation count n.
    curvature : float
        The curvature bound used (c R^2).
    alpha, epsilon_prime, extra_l2, beta : ndarray of shape (len(alpha),) or float
        Lambda, the epsilon left for the noise after the log-det term, the paper's extra
        regulariser Delta (mean units), the Laplace rate beta (pure; else nan).
    coef : ndarray
        (len(alpha), n_draws, d), or (n_draws, d) when alpha was a scalar; with
        loss="multinomial" a (K, d) matrix per fit: (len(alpha), n_draws, K, d).
    grad_norm, converged, n_iter : ndarray
        Per fit, shaped like coef[..., 0] (or [..., 0, 0]).  NOT releasable.
    delta : float, default 0.0
        The delta of each released vector (0: pure epsilon-DP).
    neighbouring : str, default "replace_one"
        The neighbouring relation.
    noise : str, default "l2_laplace"
        The noise distribution.
    sigma, sigma_output, grid : ndarray or float, default nan
        The Gaussian scale sigma (objective noise, SUM units; output perturbation:
        coefficient units; else nan), AMP's output-noise sigma (coefficient units; else
        nan), and the public grid of the released values.
    n_classes : int, default 2
        K.
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
    extra_l2: np.ndarray
    beta: np.ndarray
    coef: np.ndarray
    grad_norm: np.ndarray = field(repr=False)
    converged: np.ndarray = field(repr=False)
    n_iter: np.ndarray = field(repr=False)
    delta: float = 0.0
    neighbouring: str = "replace_one"
    noise: str = "l2_laplace"
    sigma: np.ndarray | float = np.nan
    sigma_output: np.ndarray | float = np.nan
    grid: np.ndarray | float = np.nan
    n_classes: int = 2

    def _pick(self, a: Any, i: int, j: int) -> Any:
        a = np.asarray(a)
        return a.item() if a.ndim == 0 else a.reshape(-1)[i] if a.ndim == 1 else a[i, j]

    def record(self, i: int = 0, j: int = 0) -> ReleaseRecord:
        """The releasable privacy record of fit (alpha index i, draw j): public values only.

        Keys: mechanism, noise, loss, neighbouring, epsilon, delta, epsilon_prime,
        extra_l2, beta, sigma, sigma_output, grid, alpha, data_norm, h, n_samples (the
        public normalisation count), curvature, n_classes.  Values that do not apply to
        the mechanism are None.

        Parameters
        ----------
        i : int, default 0
            Index into ``alpha``.
        j : int, default 0
            Index of the noise draw.

        Returns
        -------
        dict
        """
        from dperm.privacy.record import ReleaseRecord

        def num(a):
            v = float(self._pick(a, i, j))
            return None if math.isnan(v) else v

        return ReleaseRecord(
            layout="mechanism", mechanism=self.mechanism, noise=self.noise, loss=self.loss,
            neighbouring=self.neighbouring, epsilon=self.epsilon, delta=float(self.delta),
            epsilon_prime=num(self.epsilon_prime), extra_l2=num(self.extra_l2),
            beta=num(self.beta), sigma=num(self.sigma), sigma_output=num(self.sigma_output),
            grid=num(self.grid), alpha=float(self._pick(self.alpha, i, j)),
            data_norm=self.data_norm, h=self.h, n_samples=self.n_samples,
            curvature=self.curvature, n_classes=int(self.n_classes))

    def diagnostics(self, i: int = 0, j: int = 0) -> dict[str, Any]:
        """Solver diagnostics of fit (i, j): data-dependent, for the analyst's eyes only.

        Parameters
        ----------
        i : int, default 0
            Index into ``alpha``.
        j : int, default 0
            Index of the noise draw.

        Returns
        -------
        dict
            ``grad_norm``, ``converged``, ``n_iter``.  NOT releasable.
        """
        return {"grad_norm": float(self._pick(self.grad_norm, i, j)),
                "converged": bool(self._pick(self.converged, i, j)),
                "n_iter": int(self._pick(self.n_iter, i, j))}


# ----------------------------------------------------------------------------- constants
def output_perturbation_constants(n: float, alpha: float | ArrayLike, epsilon: float,
                                  gradient_bound: float = 1.0,
                                  neighbouring: str = "replace_one") -> np.ndarray:
    """beta of Algorithm 1.

    The L2 sensitivity of the minimizer is 2L/(n Lambda) (replace_one) or L/(n Lambda)
    (add_remove, n the public normalisation), L the bound on one row's gradient
    (Loss.gradient_bound: R for the margin losses).

    Parameters
    ----------
    n : float
        The public normalisation count.
    alpha : float or array_like
        Lambda > 0.
    epsilon : float
        > 0.
    gradient_bound : float, default 1.0
        L.
    neighbouring : {"replace_one", "add_remove"}, default "replace_one"
        The neighbouring relation.

    Returns
    -------
    float or ndarray
        beta = epsilon / sensitivity, of alpha's shape.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    return n * alpha * epsilon / (sensitivity_factor(neighbouring) * gradient_bound)


def objective_perturbation_constants(n: float, alpha: float | ArrayLike, epsilon: float,
                                     curvature: float, gradient_bound: float = 1.0,
                                     neighbouring: str = "replace_one"
                                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(epsilon_prime, Delta, beta) of Algorithm 2 for each alpha.

    replace_one: the Jacobian ratio is at most (1 + q)^2 and the noise moves by <= 2L;
    add_remove: (1 + q) and L (q = curvature / (n Lambda)).

    Parameters
    ----------
    n : float
        The public normalisation count.
    alpha : float or array_like
        Lambda > 0.
    epsilon : float
        > 0.
    curvature : float
        The bound on phi'' ||x||^2 for rows of norm <= R, i.e. c R^2
        (``Loss.curvature(h, data_norm)`` gives it).
    gradient_bound : float, default 1.0
        L, the bound on one row's gradient (``Loss.gradient_bound(data_norm, h)``: R for the
        margin losses, h R for the pseudo-Huber loss).
    neighbouring : {"replace_one", "add_remove"}, default "replace_one"
        The neighbouring relation.

    Returns
    -------
    epsilon_prime, extra_l2, beta : ndarray
        Each of alpha's shape.
    """
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    q = curvature / (n * alpha)
    replace = neighbouring == "replace_one"
    eps_p = epsilon - (np.log1p(2.0 * q + q * q) if replace else np.log1p(q))
    delta = np.zeros_like(alpha)
    low = eps_p <= 0
    if np.any(low):
        # Delta makes the Jacobian factor exactly e^{eps/2}; half the budget is left for b
        denom = np.expm1(epsilon / 4.0) if replace else np.expm1(epsilon / 2.0)
        delta[low] = curvature / (n * denom) - alpha[low]
        eps_p = np.where(low, epsilon / 2.0, eps_p)
    beta = eps_p / (sensitivity_factor(neighbouring) * gradient_bound)
    return eps_p, delta, beta


def add_output_noise(minimizers: ArrayLike, n: float, alpha: float | ArrayLike, epsilon: float,
                     data_norm: float, n_draws: int, random_state: Any = None,
                     neighbouring: str = "replace_one") -> tuple[np.ndarray, np.ndarray]:
    # (margin losses: the gradient bound is data_norm)
    """The noise step of Algorithm 1, for exact minimizers already computed.

    Experiments that need the non-private solution anyway use this to avoid solving twice.
    (The continuous noise of the paper, not rounded to a grid: output_perturbation rounds.)

    Parameters
    ----------
    minimizers : ndarray of shape (len(alpha), d)
        Non-private solutions on n rows of norm <= data_norm.
    n : int
        The public normalisation count.
    alpha : float or sequence of float
        Lambda of each minimiser.
    epsilon : float
        > 0.
    data_norm : float
        R.
    n_draws : int
        Noise draws per minimiser.
    random_state : None, int or numpy.random.Generator, optional
        The source of the noise (a seed voids the guarantee).
    neighbouring : {"replace_one", "add_remove"}, default "replace_one"
        The neighbouring relation.

    Returns
    -------
    beta : ndarray of shape (len(alpha),)
    coef : ndarray of shape (len(alpha), n_draws, d)
    """
    minimizers = np.atleast_2d(np.asarray(minimizers, dtype=np.float64))
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    beta = output_perturbation_constants(n, alpha, epsilon, data_norm, neighbouring)
    noise = sample_l2_laplace(beta[:, None], minimizers.shape[1], size=(alpha.size, n_draws),
                              random_state=random_state)
    return beta, minimizers[:, None, :] + noise


# ----------------------------------------------------------------------------- inputs
#: delta, neighbouring and n_public: the privacy parameters of every private entry point,
#: declared once (the estimators' tables include this one)
PRIVACY_PARAMETERS: ParameterTable = {
    "delta": [Interval(0.0, 1.0, closed="left",
                       description="a number in [0, 1) (0 for pure epsilon-DP)")],
    "neighbouring": [Options(NEIGHBOURING)],
    "n_public": [NONE, Interval(1, None, closed="left", integer="valued",
                                description="a positive integer (a public count of rows)")],
}


def normalising_count(n_public: float | None, n: int) -> float:
    """The count that normalises the objective: the public ``n_public`` when given, else
    the row count ``n`` (the caller has warned under add_remove: `warn_if_count_private`).
    Takes checked values.

    Parameters
    ----------
    n_public : float or None
        The public count (checked: `PRIVACY_PARAMETERS`), or None.
    n : int
        The row count of the data.

    Returns
    -------
    float

    Examples
    --------
    >>> from dperm.privacy.mechanisms import normalising_count
    >>> normalising_count(None, 500), normalising_count(1000, 500)
    (500.0, 1000.0)
    """
    return float(n_public) if n_public is not None else float(n)


def warn_if_count_private(neighbouring: str, n_public: float | None, stacklevel: int = 3) -> None:
    """The PrivacyLeakWarning of an add_remove release normalised by the row count of X
    (``n_public`` not given).  Issued once per fit, by the entry point that holds the
    user's choice (a mechanism's public function, an estimator's fit); what they call
    receives the resolved count and never warns.

    Parameters
    ----------
    neighbouring : {"replace_one", "add_remove"}
        The neighbouring relation.
    n_public : float or None
        The user's public count (None: not given).
    stacklevel : int, default 3
        As :func:`warnings.warn`'s, counted from the caller of this function (3: the
        caller's caller, the user's call of a public function).

    Examples
    --------
    >>> import warnings
    >>> from dperm.privacy.mechanisms import warn_if_count_private
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_count_private("add_remove", None)
    ...     warn_if_count_private("add_remove", 1000)
    >>> len(caught)
    1
    """
    if neighbouring == "add_remove" and n_public is None:
        warnings.warn(
            "n_public: not given, so the objective is normalised by the row count of X. Under "
            "neighbouring='add_remove' the size of the data set is private: the guarantee then "
            "covers neighbours of the same size only. Pass n_public (a public count, e.g. the "
            "planned sample size) for the full add/remove guarantee.", PrivacyLeakWarning,
            stacklevel=stacklevel + 1)


def check_privacy_params(delta: float, neighbouring: str, n_public: float | None, n: int, *,
                         warn: bool = True) -> tuple[float, str, float]:
    """(delta, neighbouring, n used for normalisation), validated: `PRIVACY_PARAMETERS`
    checked, `normalising_count`, and (``warn``) `warn_if_count_private`.  For callers
    outside the declared entry points; those check the table once and resolve the count.

    Parameters
    ----------
    delta : float
        0 or in (0, 1).
    neighbouring : {"replace_one", "add_remove"}
        The neighbouring relation.
    n_public : int or None
        add_remove: the public count; None reads ``n`` (with a PrivacyLeakWarning).
    n : int
        The row count of the data.
    warn : bool, default True
        Whether to warn when add_remove has to read the count from the data.

    Returns
    -------
    delta, neighbouring, n_norm : tuple
    """
    check_params(PRIVACY_PARAMETERS,
                 {"delta": delta, "neighbouring": neighbouring, "n_public": n_public})
    if warn:
        warn_if_count_private(neighbouring, n_public, stacklevel=3)
    return float(delta), neighbouring, normalising_count(n_public, n)


def privacy_events(record: Mapping[str, Any], n_fits: int = 1) -> list[Event]:
    """The accountant events of ``n_fits`` releases described by ``record``, for a BudgetAccountant.

    Pure epsilon: PureEvent.  Gaussian objective perturbation: an
    ObjectiveGaussianEvent with its RDP curve (dperm.calibration.objective_gaussian_rdp).
    AdaSSP (dperm.privacy.adassp): its event, the Gaussian RDP curve of its noise multiplier.
    Gaussian output perturbation and AMP: ApproxEvents with their stated (epsilon,
    delta) (the output noise's grid term depends on d, which a record does not hold;
    AMP's chain has no RDP form), composed by the accountant's basic / PLD bounds.

    Parameters
    ----------
    record : dict
        A ``PrivateFit.record()`` (or an estimator's ``privacy_``): public values only.
    n_fits : int, default 1
        How many releases the record describes.

    Returns
    -------
    list
        One event per release.
    """
    from dperm.privacy import accountant, calibration

    eps, dlt = float(record["epsilon"]), float(record["delta"])
    if dlt == 0:
        ev = accountant.PureEvent(eps)
    elif record["mechanism"] == "objective":
        K = int(record.get("n_classes", 2))
        lam_tot = record["n_samples"] * (record["alpha"] + (record["extra_l2"] or 0.0))
        lo = None if record["loss"] == MULTINOMIAL else get_loss(record["loss"])
        # the calibration's "data_norm" is one row's gradient bound (R for the margin
        # losses and the softmax's per-block analysis, h R for the pseudo-Huber loss)
        gb = record["data_norm"] if lo is None else lo.gradient_bound(
            record["data_norm"], record.get("h", 0.5))
        curve = calibration.objective_gaussian_rdp(
            np.asarray(accountant.RDP_ORDERS), record["sigma"], data_norm=gb,
            curvature=record["curvature"], lambda_total=lam_tot,
            neighbouring=record["neighbouring"], n_classes=K,
            nonincreasing_loss=lo is not None and lo.nonincreasing)
        ev = accountant.ObjectiveGaussianEvent(eps, dlt, accountant.RDP_ORDERS, tuple(curve))
    elif record["mechanism"] == "adassp":
        from dperm.privacy.adassp import adassp_event

        ev = adassp_event(eps, dlt, record["noise_multiplier"])
    else:
        # output perturbation's exact-grid Gaussian (its sensitivity includes the rounding
        # term) and AMP: stated (epsilon, delta) only, composed by the accountant's
        # basic / PLD bounds
        ev = accountant.ApproxEvent(eps, dlt)
    return [ev] * int(n_fits)


def _check_loss(value: Any, name: str) -> None:
    """A registered loss (get_loss's error names the choices) or "multinomial"."""
    if value != MULTINOMIAL:
        get_loss(value)


#: the parameters both mechanisms have, declared once (checked by `validate_params` when
#: the public function is called; the estimators check their own tables and call the
#: unchecked `_output` / `_objective`)
MECHANISM_PARAMETERS: ParameterTable = {
    "loss": [Satisfies(_check_loss, "a loss name")],
    "alpha": [Each(POSITIVE)],
    "epsilon": [POSITIVE],
    **PRIVACY_PARAMETERS,
    "h": [POSITIVE],
    "data_norm": DATA_NORM,
    "norm_policy": [Options(NORM_POLICIES)],
    "n_draws": [Interval(1, None, closed="left", integer=True)],
    "random_state": RANDOM_STATE,
    "tol": [NONE, POSITIVE],
    "max_iter": [NONE, Interval(0, None, closed="left", integer=True)],
    "n_threads": N_THREADS,
    "solver": [Options(erm.SOLVERS)],
}


def _inputs(X: Any, y: Any, loss: str, alpha: float | ArrayLike, data_norm: float,
            norm_policy: str, n_classes: int | None
            ) -> tuple[Any, Any, Loss | None, np.ndarray, bool]:
    """(rows, labels, Loss or None for the softmax, alphas (k,), whether alpha was a
    scalar): the rows checked and bounded (the data path); the parameters as checked."""
    multinomial = loss == MULTINOMIAL
    lo = None if multinomial else get_loss(loss)
    # a Dask array: rows, labels, validation and clipping stay on the workers
    X, y = check_rows(X, y, min_samples=2, softmax=multinomial, n_classes=n_classes,
                      regression=lo is not None and lo.regression)
    alphas = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    X = bound_rows(X, float(data_norm), norm_policy)   # clipping factors, not a copy
    return X, y, lo, alphas, np.ndim(alpha) == 0


def _shape(a: Any, scalar: bool) -> Any:
    a = np.asarray(a)
    return a[0] if scalar else a


def _solve(X: Any, y: Any, lo: Loss | None, n_classes: int, alpha: np.ndarray, *,
           linear: np.ndarray | None = None, extra_l2: float | np.ndarray = 0.0, h: float,
           tol: float | None, max_iter: int | None, n_threads: int | None,
           solver: str) -> Any:
    """One batched solve, binary GLM or multinomial; coef (k, d) or (k, K, d)."""
    if lo is None:
        from dperm.optim.softmax import minimize_multinomial

        return minimize_multinomial(X, y, n_classes, alpha=alpha, extra_l2=extra_l2,
                                    linear=linear, tol=tol, max_iter=max_iter,
                                    n_threads=n_threads)
    return erm._minimize(X, y, loss=lo.name, alpha=alpha, h=h, linear=linear,
                         extra_l2=extra_l2, tol=tol, max_iter=max_iter, n_threads=n_threads,
                         solver=solver)


def _curvature(lo: Loss | None, h: float, R: float, n_classes: int) -> float:
    return lo.curvature(h, R) if lo is not None else softmax_curvature(n_classes, R)


def _gradient_bound(lo: Loss | None, h: float, R: float) -> float:
    """One row's gradient bound as the calibrations read it: the loss's own (l R), or R
    for the softmax (whose per-block factor the calibration applies itself)."""
    return lo.gradient_bound(R, h) if lo is not None else R


def _fit(mechanism: str, noise: str, lo: Loss | None, n_classes: int, epsilon: float,
         delta: float, nb: str, R: float, h: float, n_norm: float, c: float,
         alphas: np.ndarray, scalar: bool, n_draws: int, coef: np.ndarray, res: Any,
         consts: dict[str, np.ndarray]) -> PrivateFit:
    def per_fit(a):
        return np.repeat(np.asarray(a)[:, None], n_draws, axis=1) \
            if np.ndim(a) == 1 and np.size(a) == alphas.size else np.asarray(a)

    def full(name):
        return _shape(np.broadcast_to(np.asarray(consts.get(name, np.nan), dtype=np.float64),
                                      alphas.shape).copy(), scalar)
    shape2 = (alphas.size, n_draws)

    def diag(a):
        return _shape(np.asarray(a).reshape(shape2) if np.size(a) == alphas.size * n_draws
                      else per_fit(a), scalar)
    return PrivateFit(
        mechanism=mechanism, loss=lo.name if lo is not None else MULTINOMIAL, epsilon=epsilon,
        data_norm=R, h=h, n_samples=int(round(n_norm)), curvature=c,
        alpha=_shape(alphas, scalar), epsilon_prime=full("epsilon_prime"),
        extra_l2=full("extra_l2"), beta=full("beta"), coef=_shape(coef, scalar),
        grad_norm=diag(res.grad_norm), converged=diag(res.converged), n_iter=diag(res.n_iter),
        delta=delta, neighbouring=nb, noise=noise, sigma=full("sigma"),
        sigma_output=full("sigma_output"), grid=full("grid"), n_classes=n_classes)


def _normalised_alpha(alphas: np.ndarray, n: int, n_norm: float) -> np.ndarray:
    # the solver's mean is over the n rows it holds; sum loss / n_norm + (alpha/2)||f||^2
    # has the same minimiser as sum loss / n + (alpha n_norm / n / 2)||f||^2
    return alphas * (n_norm / n)


# ----------------------------------------------------------------------------- mechanisms
@validate_params(MECHANISM_PARAMETERS)
def output_perturbation(X: ArrayLike, y: ArrayLike, *, loss: str = "logistic",
                        alpha: float | ArrayLike, epsilon: float, delta: float = 0.0,
                        neighbouring: str = "replace_one", n_public: float | None = None,
                        n_classes: int | None = None, h: float = 0.5, data_norm: float = 1.0,
                        norm_policy: str = "clip", n_draws: int = 1, random_state: Any = None,
                        tol: float | None = None, max_iter: int | None = None,
                        n_threads: int | None = None, solver: str = "auto") -> PrivateFit:
    """Algorithm 1 (sensitivity method): f* + b.

    delta = 0: ||b|| ~ Gamma(d, 1/beta), beta = eps / sens (sens = 2R/(n Lambda) for
    replace_one, R/(n Lambda) for add_remove), the result rounded to the public grid.
    delta > 0: b ~ N(0, sigma^2 I) sampled exactly on the grid (dperm.exact_noise), sigma
    the analytic Gaussian scale (Balle & Wang 2018) for sens + sqrt(d) g.
    Multinomial: the Frobenius sensitivity is sqrt(2) times larger.

    Parameters
    ----------
    X : array_like of shape (n, d)
        Rows with ||x_i|| <= ``data_norm`` (clipped or refused per ``norm_policy``): dense,
        CSR, float32/float64, a memory map, or (binary losses) a Dask array.
    y : array_like of shape (n,)
        Labels in {-1, +1}; with ``loss="multinomial"``, class indices 0..n_classes-1;
        real, finite targets with ``loss="pseudo_huber"``.
    loss : {"logistic", "huber", "smooth_hinge", "multinomial", "pseudo_huber"}, default "logistic"
        The loss. ``"multinomial"``: softmax over ``n_classes`` classes, coefficients (K, d)
        per fit; ``"pseudo_huber"``: the regression loss (gradient bound h R, curvature R^2;
        local rows only).
    alpha : float or sequence of float
        Lambda > 0 (mean units), a scalar or a sequence (one fit per value, solved as one
        batch).
    epsilon : float
        > 0; each released coefficient vector is (epsilon, delta)-DP.
    delta : float, default 0.0
        0 (the paper's pure epsilon-DP mechanism, Laplace-type noise) or in (0, 1): Gaussian
        noise calibrated by :mod:`dperm.calibration` (the tight analysis of
        docs/privacy_analysis.md).  ``loss="multinomial"`` needs delta > 0.
    neighbouring : {"replace_one", "add_remove"}, default "replace_one"
        One row replaced (n public) or one row added or removed.
    n_public : int, optional
        add_remove only: the public count that normalises the objective (without it the row
        count is read, with a PrivacyLeakWarning).
    n_classes : int, optional
        ``loss="multinomial"`` only: the public number of classes K >= 3 (two classes: a
        binary loss).
    h : float, default 0.5
        Huber / smoothed-hinge / pseudo-Huber width.
    data_norm : float, default 1.0
        R, the PUBLIC bound on every row's L2 norm (same units as X).
    norm_policy : {"clip", "error"}, default "clip"
        A row above ``data_norm``: scaled onto the sphere of radius R (a ClippingWarning
        gives the count, for the analyst) or refused with a ValueError.
    n_draws : int, default 1
        Independent noise draws per alpha (each one a separate release).
    random_state : None, int or numpy.random.Generator, default None
        None draws fresh OS entropy.  An int seed makes the run reproducible and voids the
        guarantee (PrivacyLeakWarning): for experiments and tests only.
    tol, max_iter, n_threads : optional
        Passed to :func:`dperm.erm.minimize` (gradient-norm tolerance, iteration cap,
        threads).
    solver : {"auto", "lbfgs", "newton"}, default "auto"
        Every solver meets the same gradient-norm tolerance.

    Returns
    -------
    PrivateFit
        ``coef`` of shape (len(alpha), n_draws, d), or (n_draws, d) for a scalar alpha
        ((..., K, d) for the multinomial loss), and the public constants.

    Raises
    ------
    ValueError
        A parameter out of range (naming it), a row above ``data_norm`` with
        ``norm_policy="error"``, or labels outside the loss's label set.

    Warns
    -----
    ConvergenceWarning
        A fit missed the gradient-norm tolerance (the proof assumes the exact minimiser).
    PrivacyLeakWarning
        A fixed seed, or add_remove without ``n_public``.

    Examples
    --------
    >>> import numpy as np
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 4))
    >>> X /= np.linalg.norm(X, axis=1, keepdims=True)       # rows of norm 1 (the public R)
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> fit = dperm.output_perturbation(X, y, alpha=[1e-3, 1e-2], epsilon=1.0, n_draws=3)
    >>> fit.coef.shape                                      # (len(alpha), n_draws, d)
    (2, 3, 4)
    >>> fit.record()["mechanism"]                           # public: publish with the coefficients
    'output'
    """
    if loss == MULTINOMIAL and delta == 0:
        raise ValueError("delta: loss='multinomial' is an (epsilon, delta) mechanism; give "
                         "delta > 0 (pure epsilon multi-class models are one-vs-rest: "
                         "PrivateLinearClassifier does that)")
    warn_if_count_private(neighbouring, n_public)
    warn_if_seeded(random_state)
    return _output(X, y, loss=loss, alpha=alpha, epsilon=epsilon, delta=delta,
                   neighbouring=neighbouring, n_public=n_public, n_classes=n_classes, h=h,
                   data_norm=data_norm, norm_policy=norm_policy, n_draws=n_draws,
                   random_state=random_state, tol=tol, max_iter=max_iter,
                   n_threads=n_threads, solver=solver)


def _output(X: Any, y: Any, *, loss: str = "logistic", alpha: float | ArrayLike,
            epsilon: float, delta: float = 0.0, neighbouring: str = "replace_one",
            n_public: float | None = None, n_classes: int | None = None, h: float = 0.5,
            data_norm: float = 1.0, norm_policy: str = "clip", n_draws: int = 1,
            random_state: Any = None, tol: float | None = None, max_iter: int | None = None,
            n_threads: int | None = None, solver: str = "auto") -> PrivateFit:
    """`output_perturbation` on checked parameters (no warning of the caller's: the
    count and the seed were dealt with where the caller took them)."""
    X, y, lo, alphas, scalar = _inputs(X, y, loss, alpha, data_norm, norm_policy, n_classes)
    n = X.shape[0]
    epsilon, delta, h, R, nb = float(epsilon), float(delta), float(h), float(data_norm), neighbouring
    n_draws = int(n_draws)
    n_norm = normalising_count(n_public, n)
    K = 2 if lo is not None else int(n_classes)  # type: ignore[arg-type]
    rng = check_random_state(random_state)
    res = _solve(X, y, lo, K, _normalised_alpha(alphas, n, n_norm), h=h, tol=tol,
                 max_iter=max_iter, n_threads=n_threads, solver=solver)
    if not np.all(res.converged):
        # the sensitivity 2R/(n Lambda) bounds how far the EXACT minimiser moves; a point
        # the solver stopped at can be farther from it (by up to its gradient norm / Lambda),
        # so releasing it with this noise would not be covered: release nothing
        raise NotConvergedError(
            "output_perturbation: the solver stopped before reaching the gradient tolerance "
            f"(tol={erm.DEFAULT_TOL if tol is None else tol:g}) for at least one fit; the "
            "noise is calibrated to the exact minimiser, so nothing is released. Raise "
            "max_iter, or use a larger alpha (a better-conditioned problem)")
    center = np.asarray(res.coef, dtype=np.float64).reshape(
        (alphas.size,) + res.coef.shape[-(1 if lo else 2):])
    dim = int(np.prod(center.shape[1:]))
    factor = sensitivity_factor(nb) * (1.0 if lo is not None else SOFTMAX_GRADIENT_FACTOR)
    L = _gradient_bound(lo, h, R)
    sens = factor * L / (n_norm * alphas)
    consts = {"epsilon_prime": np.full(alphas.size, epsilon), "extra_l2": np.zeros(alphas.size)}
    coef = np.empty((alphas.size, n_draws) + center.shape[1:])
    grids, scales = np.empty(alphas.size), np.empty(alphas.size)
    for a in range(alphas.size):
        c_a = np.broadcast_to(center[a], (n_draws,) + center.shape[1:])
        if delta > 0:
            coef[a], sigma, g = gaussian_output_on_grid(c_a, sens[a], epsilon, delta, dim, rng)
        else:
            coef[a], sigma, g = _laplace_output_on_grid(c_a, sens[a], epsilon, dim, n_draws,
                                                        rng)
        warn_if_grid_clamps(g, L / alphas[a])
        grids[a], scales[a] = g, sigma
    consts["grid"] = grids
    if delta > 0:
        consts["sigma"], noise = scales, "gaussian"
    else:
        consts["beta"], noise = 1.0 / scales, "l2_laplace"
    return _fit("output", noise, lo, K, epsilon, delta, nb, R, h, n_norm, _curvature(lo, h, R, K),
                alphas, scalar, n_draws, coef, res, consts)


def _laplace_output_on_grid(center: np.ndarray, sensitivity: float, epsilon: float, dim: int,
                            n_draws: int, rng: np.random.Generator
                            ) -> tuple[np.ndarray, float, float]:
    """(released, 1/beta, g): Algorithm 1's noise on the public grid g, its Laplace scale
    1/beta covering the rounded center's sensitivity plus sqrt(d) g; the center and the
    noisy sum clamped to the grid's range and rounded to it."""
    scale, g = exact_noise.calibrate_on_grid(lambda s: s / epsilon, sensitivity, dim,
                                             bits=GRID_BITS)
    b = sample_l2_laplace(1.0 / scale, dim, size=n_draws, random_state=rng)
    # clamped (1-Lipschitz) so that no center aborts the release
    rounded = exact_noise.round_to_grid(exact_noise.clamp_to_range(center, g), g)
    released = exact_noise.round_to_grid(
        exact_noise.clamp_to_range(rounded + b.reshape(center.shape), g), g)
    return released, scale, g


#: objective_perturbation's own parameters beside the mechanisms' shared ones
OBJECTIVE_PARAMETERS: ParameterTable = {
    **MECHANISM_PARAMETERS,
    "perturbation": [Options({"objective", "amp"})],
    "amp_output_fraction": [Interval(0.0, 0.5, description="a number in (0, 1/2)")],
}


@validate_params(OBJECTIVE_PARAMETERS)
def objective_perturbation(X: ArrayLike, y: ArrayLike, *, loss: str = "logistic",
                           alpha: float | ArrayLike, epsilon: float, delta: float = 0.0,
                           neighbouring: str = "replace_one", n_public: float | None = None,
                           n_classes: int | None = None, h: float = 0.5,
                           data_norm: float = 1.0, norm_policy: str = "clip", n_draws: int = 1,
                           random_state: Any = None, tol: float | None = None,
                           max_iter: int | None = None, n_threads: int | None = None,
                           solver: str = "auto", perturbation: str = "objective",
                           amp_output_fraction: float = 0.05) -> PrivateFit:
    """Algorithm 2: argmin J(f) + b.f/n + (Delta/2)||f||^2 with the constants of docs/specification.md.

    delta = 0: the paper's mechanism (b with density ~ exp(-beta ||b||)).  delta > 0:
    b ~ N(0, sigma^2 I) with sigma and Delta from dperm.privacy.calibration
    (objective_gaussian_calibration: the tight bound of docs/privacy_analysis.md).
    Every (alpha, draw) pair is one problem of a single batched solve.  The logistic,
    Huber and smoothed-hinge losses all qualify (abs(phi') <= 1, 0 <= phi'' <= c), so does
    the pseudo-Huber regression loss (abs(rho') <= h, 0 <= rho'' <= 1), and the
    multinomial logistic loss with delta > 0.  The proof assumes the exact minimizer: a
    ConvergenceWarning is raised when the tolerance was missed, and ``diagnostics()``
    gives the final gradient norms (analyst-only).

    ``perturbation="amp"`` (approximate minima perturbation, delta > 0): the guarantee
    holds for any solution whose gradient norm is <= tol (checked; a fit that misses it
    raises RuntimeError and releases nothing), by adding exact Gaussian noise on the
    grid to the approximate minimiser (dperm.calibration.amp_calibration: a fraction
    ``amp_output_fraction`` of epsilon and delta pays for it).

    Parameters
    ----------
    X : array_like of shape (n, d)
        Rows with ||x_i|| <= ``data_norm`` (clipped or refused per ``norm_policy``): dense,
        CSR, float32/float64, a memory map, or (binary losses) a Dask array.
    y : array_like of shape (n,)
        Labels in {-1, +1}; with ``loss="multinomial"``, class indices 0..n_classes-1;
        real, finite targets with ``loss="pseudo_huber"``.
    loss : {"logistic", "huber", "smooth_hinge", "multinomial", "pseudo_huber"}, default "logistic"
        The loss. ``"multinomial"``: softmax over ``n_classes`` classes, coefficients (K, d)
        per fit; ``"pseudo_huber"``: the regression loss (gradient bound h R, curvature R^2;
        local rows only).
    alpha : float or sequence of float
        Lambda > 0 (mean units), a scalar or a sequence (one fit per value, solved as one
        batch).
    epsilon : float
        > 0; each released coefficient vector is (epsilon, delta)-DP.
    delta : float, default 0.0
        0 (the paper's pure epsilon-DP mechanism, Laplace-type noise) or in (0, 1): Gaussian
        noise calibrated by :mod:`dperm.calibration` (the tight analysis of
        docs/privacy_analysis.md).  ``loss="multinomial"`` needs delta > 0.
    neighbouring : {"replace_one", "add_remove"}, default "replace_one"
        One row replaced (n public) or one row added or removed.
    n_public : int, optional
        add_remove only: the public count that normalises the objective (without it the row
        count is read, with a PrivacyLeakWarning).
    n_classes : int, optional
        ``loss="multinomial"`` only: the public number of classes K >= 3 (two classes: a
        binary loss).
    h : float, default 0.5
        Huber / smoothed-hinge / pseudo-Huber width.
    data_norm : float, default 1.0
        R, the PUBLIC bound on every row's L2 norm (same units as X).
    norm_policy : {"clip", "error"}, default "clip"
        A row above ``data_norm``: scaled onto the sphere of radius R (a ClippingWarning
        gives the count, for the analyst) or refused with a ValueError.
    n_draws : int, default 1
        Independent noise draws per alpha (each one a separate release).
    random_state : None, int or numpy.random.Generator, default None
        None draws fresh OS entropy.  An int seed makes the run reproducible and voids the
        guarantee (PrivacyLeakWarning): for experiments and tests only.
    tol, max_iter, n_threads : optional
        Passed to :func:`dperm.erm.minimize` (gradient-norm tolerance, iteration cap,
        threads).
    solver : {"auto", "lbfgs", "newton"}, default "auto"
        Every solver meets the same gradient-norm tolerance.
    perturbation : {"objective", "amp"}, default "objective"
        ``"amp"``: approximate minima perturbation (delta > 0), above.
    amp_output_fraction : float, default 0.05
        AMP only: the share of epsilon and delta spent on the output noise, in (0, 1/2).

    Returns
    -------
    PrivateFit
        ``coef`` of shape (len(alpha), n_draws, d), or (n_draws, d) for a scalar alpha
        ((..., K, d) for the multinomial loss), and the public constants.

    Raises
    ------
    ValueError
        A parameter out of range (naming it), a row above ``data_norm`` with
        ``norm_policy="error"``, or labels outside the loss's label set.

    Warns
    -----
    ConvergenceWarning
        A fit missed the gradient-norm tolerance (the proof assumes the exact minimiser).
    PrivacyLeakWarning
        A fixed seed, or add_remove without ``n_public``.
    RuntimeError
        AMP: a fit missed the gradient-norm tolerance; nothing is released.

    Examples
    --------
    >>> import numpy as np
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 4))
    >>> X /= np.linalg.norm(X, axis=1, keepdims=True)       # rows of norm 1 (the public R)
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> fit = dperm.objective_perturbation(X, y, alpha=[1e-3, 1e-2], epsilon=1.0, n_draws=3)
    >>> fit.coef.shape                                      # (len(alpha), n_draws, d)
    (2, 3, 4)
    >>> fit.record()["mechanism"]                           # public: publish with the coefficients
    'objective'
    """
    if delta == 0 and (loss == MULTINOMIAL or perturbation == "amp"):
        raise ValueError(f"delta: {'loss=multinomial' if loss == MULTINOMIAL else 'perturbation=amp'} "
                         "is an (epsilon, delta) mechanism; give delta > 0")
    warn_if_count_private(neighbouring, n_public)
    warn_if_seeded(random_state)
    return _objective(X, y, loss=loss, alpha=alpha, epsilon=epsilon, delta=delta,
                      neighbouring=neighbouring, n_public=n_public, n_classes=n_classes, h=h,
                      data_norm=data_norm, norm_policy=norm_policy, n_draws=n_draws,
                      random_state=random_state, tol=tol, max_iter=max_iter,
                      n_threads=n_threads, solver=solver, perturbation=perturbation,
                      amp_output_fraction=amp_output_fraction)


def _objective(X: Any, y: Any, *, loss: str = "logistic", alpha: float | ArrayLike,
               epsilon: float, delta: float = 0.0, neighbouring: str = "replace_one",
               n_public: float | None = None, n_classes: int | None = None, h: float = 0.5,
               data_norm: float = 1.0, norm_policy: str = "clip", n_draws: int = 1,
               random_state: Any = None, tol: float | None = None,
               max_iter: int | None = None, n_threads: int | None = None,
               solver: str = "auto", perturbation: str = "objective",
               amp_output_fraction: float = 0.05) -> PrivateFit:
    """`objective_perturbation` on checked parameters (as `_output`)."""

    X, y, lo, alphas, scalar = _inputs(X, y, loss, alpha, data_norm, norm_policy, n_classes)
    n, d = X.shape
    epsilon, delta, h, R, nb = float(epsilon), float(delta), float(h), float(data_norm), neighbouring
    n_draws = int(n_draws)
    n_norm = normalising_count(n_public, n)
    K = 2 if lo is not None else int(n_classes)  # type: ignore[arg-type]
    rng = check_random_state(random_state)
    c = _curvature(lo, h, R, K)
    L = _gradient_bound(lo, h, R)
    tol_used = erm.DEFAULT_TOL if tol is None else float(tol)
    shape = (d,) if lo is not None else (K, d)
    dim = int(np.prod(shape))
    if delta == 0:
        eps_p, extra, beta = objective_perturbation_constants(n_norm, alphas, epsilon, c, L, nb)
        b = sample_l2_laplace(beta[:, None], dim, size=(alphas.size, n_draws), random_state=rng)
        consts = {"epsilon_prime": eps_p, "extra_l2": extra, "beta": beta}
        noise = "l2_laplace"
    else:
        cals = gaussian_calibrations(alphas, epsilon, delta, perturbation=perturbation,
                                     tol=tol_used, amp_output_fraction=amp_output_fraction,
                                     n_norm=n_norm, L=L, c=c, nb=nb, K=K, lo=lo)
        b, consts = gaussian_objective_noise(cals, alphas, epsilon, n_draws, dim, rng)
        extra = consts["extra_l2"]
        noise = "gaussian"
    k = alphas.size * n_draws
    # the objective normalised by n_norm, times n_norm / n, is the solver's mean over n rows
    # with alpha and Delta times n_norm / n and the SAME linear term b.f / n
    res = _solve(X, y, lo, K, np.repeat(_normalised_alpha(alphas, n, n_norm), n_draws),
                 linear=b.reshape((k,) + shape),
                 extra_l2=np.repeat(extra * (n_norm / n), n_draws), h=h, tol=tol_used * n_norm / n,
                 max_iter=max_iter, n_threads=n_threads, solver=solver)
    W = np.asarray(res.coef, dtype=np.float64).reshape((alphas.size, n_draws) + shape)
    if perturbation == "amp":
        coef = amp_release(W, res, cals, alphas, tol=tol_used, n=n, n_norm=n_norm, L=L,
                           dim=dim, rng=rng, consts=consts)
    else:
        _require_exact_minimiser(res, tol_used)
        # released as solved: rounding a minimiser to a grid would not make the exact-
        # arithmetic proof cover floating point (docs/privacy_analysis.md, section 10);
        # perturbation="amp" is the float-safe member of this family
        coef = W
    return _fit(perturbation, noise, lo, K, epsilon, delta, nb, R, h, n_norm, c, alphas, scalar,
                n_draws, coef, res, consts)


def _require_exact_minimiser(res: Any, tol: float) -> None:
    if not np.all(res.converged):
        # Algorithm 2's guarantee is for the EXACT minimiser of the perturbed objective (the
        # change of variables b <-> f needs grad J(f) + b/n = 0); a point the solver
        # stopped at is another function of the data: release nothing
        # (docs/privacy_analysis.md, "Objective perturbation needs the exact minimiser")
        raise NotConvergedError(
            "objective_perturbation: the solver stopped before reaching the gradient "
            f"tolerance (tol={tol:g}) for at least one fit; the guarantee holds for the "
            "exact minimiser only, so nothing is released. Raise max_iter, use "
            "solver='newton' (or 'auto'), a larger alpha (a better-conditioned problem), or "
            "perturbation='amp' with a positive delta (its output noise covers a "
            "minimiser approximate to tol)")
