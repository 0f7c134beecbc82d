"""PrivateLinearRegression: private linear regression, the scikit-learn way.

The ERM path minimizes (1/n) sum_i rho_h(f.x_i - y_i) + (alpha/2) ||f||^2 with the
pseudo-Huber loss rho_h(r) = h^2 (sqrt(1 + (r/h)^2) - 1) (|rho'| <= h, rho'' <= 1:
dperm.losses) and releases it by objective perturbation (pure epsilon, or Gaussian for
delta > 0) or output perturbation, the mechanisms of dperm.privacy.mechanisms with the
loss's own gradient and curvature bounds (docs/privacy_analysis.md, section 12).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import RegressorMixin

from dperm.data import oracle as _oracle
from dperm.data.design import WithInterceptColumn
from dperm.data.validation import (
    NONE,
    POSITIVE,
    Options,
    ParameterTable,
    Satisfies,
    bound_labels,
    bound_rows,
    warn_if_rows_far_inside,
)
from dperm.exceptions import ClippingWarning, NoiseDominatedWarning
from dperm.losses import get_loss
from dperm.optim import erm
from dperm.privacy.accountant import BudgetAccountant, Event
from dperm.privacy.mechanisms import (
    _objective,
    _output,
    normalising_count,
    privacy_events,
    warn_if_count_private,
)
from dperm.privacy.neighbouring import sensitivity_factor
from dperm.privacy.record import ReleaseRecord, public_count
from dperm.privacy.regularization import auto_alpha, expected_noise_shift, noise_dominates
from dperm.sklearn._base import (
    COMMON_PARAMETERS,
    PrivateLinearBase,
    _feature_names,
    _warn_clipped,
    split_intercept,
)

__all__ = ["PrivateLinearRegression", "METHODS", "resolve_method"]

#: the loss of the ERM path
LOSS = "pseudo_huber"
METHODS = ("auto", "objective", "output", "adassp", "none")


def resolve_method(method: str, *, n: int, d: int, epsilon: float, delta: float) -> str:
    """The mechanism `method` stands for: itself, or for "auto" the documented rule of
    public quantities (never the data): objective perturbation (pure for delta = 0,
    Gaussian for delta > 0), whatever n, d and epsilon.

    Measured (BENCHMARKS.md, "Private linear regression: the ERM path": 7 data sets, n
    from 353 to 10^6, epsilon 0.1, 1 and 10, delta = 1/n^2): objective perturbation's R^2
    was above AdaSSP's and output perturbation's in all 21 (data set, epsilon) settings,
    so no region of (n, d, epsilon, delta) was found where another choice would be
    better; AdaSSP (method="adassp") stays available (a closed form: faster for very
    large n and small d)."""
    if method != "auto":
        return method
    return "objective"


def _warn_labels_clipped(clipped: int, n: int, label_bound: float,
                         centre: float | None = None, stacklevel: int = 3) -> None:
    if clipped:
        where = (f"[-label_bound, label_bound] = [-{label_bound:g}, {label_bound:g}]"
                 if centre is None else
                 f"label_bounds = [{centre - label_bound:g}, {centre + label_bound:g}]")
        warnings.warn(
            f"{clipped} of {n} targets ({100.0 * clipped / n:.1f}%) were outside "
            f"{where} and were "
            "clipped to it. The fit stays private, but clipped targets lose their size: "
            "choose a larger public label_bound (or wider label_bounds), or scale y by a "
            "public bound. (This count "
            "is about the private data: for your eyes, not for publication.)",
            ClippingWarning, stacklevel=stacklevel)


def _check_label_range(label_bounds: Any, name: str) -> None:
    """label_bounds: (low, high), two finite numbers with low < high and a finite
    half-width (high - low) / 2 (the public range of y)."""
    try:
        lo, hi = (float(v) for v in label_bounds)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be (low, high), two numbers, got "
                         f"{label_bounds!r}") from None
    if isinstance(label_bounds, (str, bytes)) or not (math.isfinite(lo) and math.isfinite(hi)
                                                     and lo < hi):
        raise ValueError(f"{name} = {label_bounds!r} needs finite low < high")
    B = (hi - lo) / 2.0
    if not (B > 0 and math.isfinite(B)):
        raise ValueError(f"{name} = {label_bounds!r}: the half-width (high - low) / 2 "
                         "must be a finite positive number")


def _label_scale(label_bounds: Any, label_bound: float | None) -> tuple[float, float | None]:
    """(B, centre) from the checked public label parameters: label_bounds=(low, high)
    gives the half-width (high - low) / 2 and the midpoint (low + high) / 2 (both public:
    functions of public bounds); else label_bound (None: 1.0) and no centre."""
    if label_bounds is None:
        return (1.0 if label_bound is None else float(label_bound)), None
    lo, hi = (float(v) for v in label_bounds)
    B = (hi - lo) / 2.0
    return B, lo + B


@dataclass(frozen=True)
class _Plan:
    """What a regression fit will do, from public values only."""

    method: str          # the mechanism ("auto" resolved), or "none"
    n: int               # rows of X (the analyst's)
    n_norm: float        # the public count normalising the objective
    neighbouring: str
    delta: float
    eps: float           # inf: non-private
    R: float             # data_norm
    h: float             # the loss's width
    B: float             # label bound (half-width)
    centre: float | None
    alpha: float | None  # None: AdaSSP (its ridge comes from its own release)


class PrivateLinearRegression(RegressorMixin, PrivateLinearBase):
    """Differentially private linear regression: epsilon-DP, or (epsilon, delta)-DP with
    Gaussian noise for delta > 0.

    Minimizes (1/n) sum_i rho_h(f.x_i + b - y_i) + (alpha/2) ||(f, b)||^2, rho_h the
    pseudo-Huber loss (quadratic for abs(r) << h, h abs(r) for abs(r) >> h), and releases the
    result privately.  Rows satisfy ||x_i|| <= data_norm and targets abs(y_i) <= label_bound
    (or low <= y_i <= high with label_bounds), both PUBLIC bounds (rows and targets beyond
    them are clipped, with a warning).

    Parameters
    ----------
    method : {"auto", "objective", "output", "adassp", "none"}
        "objective": objective perturbation (Algorithm 2 with the pseudo-Huber loss's
        bounds; Gaussian noise calibrated tightly when delta > 0).  "output": output
        perturbation (sensitivity 2 h R / (n alpha)).  "adassp" (delta > 0): ridge
        regression from noisy sufficient statistics (dperm.privacy.adassp, Wang 2018).
        "auto": a documented rule of public quantities (`resolve_method`: objective
        perturbation, the best method at every setting measured).  "none": the
        non-private baseline on the same solver (no guarantee).
    epsilon : float > 0
    delta : float in [0, 1); 0 (default) is pure epsilon-DP.
    neighbouring : {"replace_one", "add_remove"}
    n_public : None or int
        The public count normalising the objective: add_remove (without it, the row
        count, with a PrivacyLeakWarning; AdaSSP needs no count and records None), or
        replace_one's optional public size of the data set before a data-dependent
        filter such as dropping rows with a missing value (as for PrivateLinearClassifier).
    alpha : "auto" (default), "select" or float > 0
        "auto": Lambda = C R^2 (h / B) / (n epsilon) raised by public safeguards
        (dperm.privacy.regularization.auto_alpha with loss="pseudo_huber"; no privacy cost).
        "select": chosen privately within epsilon, every candidate on all rows
        (dperm.privacy.selection.fit_with_selection; pure epsilon, ERM methods only).
    h : None or float > 0
        Width of the pseudo-Huber loss; None (default) uses label_bound (residuals of
        the size of the targets are in the loss's quadratic range).  The noise scales
        with h (the gradient bound is h R).
    label_bound : None or float > 0
        Public bound B on abs(y); targets beyond it are clipped to [-B, B] (ClippingWarning).
        None (default): 1.0, or the half-width of label_bounds.
    data_norm : float > 0
        Public bound R on the Euclidean norm of a row.
    norm_policy : {"clip", "error"}
        Rows with norm above data_norm: clipped onto the sphere (a ClippingWarning
        with the count, for the analyst) or refused.
    fit_intercept : bool
        The public constant column of PrivateLinearClassifier (dperm.data.design).
    tol : float > 0 or None, default None
        The solver's gradient-norm tolerance (None: dperm.optim.erm.minimize's default).
    max_iter : int >= 1 or None, default None
        The solver's iteration cap (None: its default).
    n_threads : int or None, default None
        OpenMP threads for each pass over X (None: every core this process may use).
    random_state : None, int or numpy Generator
        None (the default) draws fresh OS entropy on every fit; an int seed is for
        reproducible experiments only and voids the guarantee (PrivacyLeakWarning).
    accountant : None or BudgetAccountant
        If given, each fit checks its privacy events against it before touching the
        data, and spends them.
    solver : {"auto", "lbfgs", "newton"}
        Batched L-BFGS or trust-region Newton-CG (dperm.optim.erm.minimize); every
        solver meets the same tolerance.
    label_bounds : None or (low, high)
        Public range of y (e.g. released by ``dperm.estimate_bounds`` or ``dperm bounds
        --label``): the targets are centred on c = (low + high) / 2 and fitted as y - c with
        label_bound B = (high - low) / 2 (the privacy constants are those of label_bound=B);
        predictions are on the original scale (c is added to ``intercept_``, a public shift).
        Not together with label_bound.

    Attributes
    ----------
    Releasable: coef_ (n_features,), intercept_ (float), alpha_, n_features_in_,
    feature_names_in_, release_record_ (the fit's immutable ReleaseRecord,
    dperm.privacy.record), privacy_ (its serialised form, a new dict each time, of
    public values: method, mechanism, noise, loss, epsilon, delta, neighbouring,
    n_samples, epsilon_prime, extra_l2, beta, sigma,
    sigma_output, grid, alpha, data_norm, label_bound, h, curvature, gradient_bound,
    task, epsilon_total, delta_total, label_centre).

    With method "adassp" the record is the AdaSSP release's (dperm.privacy.adassp: noise
    scales, the split, and the released noisy lambda_min and ridge), alpha_ is None.

    NOT releasable: fit_diagnostics_ (grad_norm, converged, n_iter, rows_clipped,
    labels_clipped): statistics of the private data, for the analyst only.  A pickle
    (or joblib.dump) of the fitted estimator carries it; dperm.save_model writes the
    publishable form (coefficients, public parameters, ``privacy_``).

    Examples
    --------
    >>> import numpy as np
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 5)) / np.sqrt(5)    # rows of norm <= 1 (public)
    >>> y = np.clip(X @ [1.0, -2.0, 0.5, 0.0, 1.5] + 0.1 * rng.normal(size=20000), -1, 1)
    >>> reg = dperm.PrivateLinearRegression(epsilon=1.0, label_bound=1.0, data_norm=1.0)
    >>> bool(reg.fit(X, y).score(X, y) > 0.8)
    True
    >>> reg.privacy_["method"]
    'objective'
    """

    def __init__(self, method: str = "auto", epsilon: float = 1.0, delta: float = 0.0,
                 neighbouring: str = "replace_one", n_public: int | None = None,
                 alpha: str | float = "auto", h: float | None = None,
                 label_bound: float | None = None, data_norm: float = 1.0,
                 norm_policy: str = "clip", fit_intercept: bool = True,
                 tol: float | None = None, max_iter: int | None = None,
                 n_threads: int | None = None,
                 random_state: int | np.random.Generator | None = None,
                 accountant: BudgetAccountant | None = None, solver: str = "auto",
                 label_bounds: tuple[float, float] | None = None) -> None:
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.neighbouring = neighbouring
        self.n_public = n_public
        self.alpha = alpha
        self.h = h
        self.label_bound = label_bound
        self.label_bounds = label_bounds
        self.data_norm = data_norm
        self.norm_policy = norm_policy
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.n_threads = n_threads
        self.random_state = random_state
        self.accountant = accountant
        self.solver = solver

    # ------------------------------------------------------------------ checks
    #: every parameter's declared forms, checked once per fit (`_start_fit`)
    _parameter_constraints: ClassVar[ParameterTable] = {
        "method": [Options(METHODS)],
        "epsilon": [POSITIVE],
        **COMMON_PARAMETERS,
        "label_bound": [NONE, POSITIVE],
        "label_bounds": [NONE, Satisfies(_check_label_range, "(low, high)")],
        "h": [NONE, POSITIVE],
    }
    _privacy_param = "method"

    def _check_param_pairs(self) -> None:
        if self.label_bounds is not None and self.label_bound is not None:
            raise ValueError(
                f"label_bound={self.label_bound!r} and label_bounds={self.label_bounds!r}: give "
                "one of them (label_bounds=(low, high) sets the bound to (high - low) / 2 "
                "around the centre (low + high) / 2; label_bound=B is the range [-B, B])")
        if self.method == "adassp" and float(self.delta) == 0:
            raise ValueError("delta: method='adassp' is an (epsilon, delta) mechanism; give "
                             "delta > 0 (e.g. 1/n**2)")

    def _label(self) -> tuple[float, float | None]:
        """(B, centre or None): the public label bound and centre."""
        return _label_scale(self.label_bounds, self.label_bound)

    def _B(self) -> float:
        return self._label()[0]

    def _h(self) -> float:
        return self._B() if self.h is None else float(self.h)

    def _equivalent_epsilon(self, n: int, d: int, method: str, eps: float, delta: float,
                            nb: str, h: float) -> float:
        """The pure, replace-one epsilon whose noise has the norm of this fit's noise (the
        public alpha rule is stated for it): eps (pure replace_one), 2 eps (pure
        add_remove); Gaussian: the Laplace-type norm d * sens / eps = sqrt(d) sigma."""
        if method == "none":
            return 1.0
        if delta == 0:
            return eps * 2.0 / sensitivity_factor(nb)
        from dperm.privacy import calibration

        lo = get_loss(LOSS)
        R = float(self.data_norm)
        L = lo.gradient_bound(R, h)
        if method == "output":
            sigma = calibration.analytic_gaussian_sigma(eps, delta, sensitivity_factor(nb) * L)
            return 2.0 * L * math.sqrt(d) / sigma
        provisional = auto_alpha(n, d, eps, perturbation="objective", loss=LOSS, data_norm=R,
                                 h=h, label_bound=self._B())
        cal = calibration.objective_gaussian_calibration(
            eps, delta, n=n, alpha=provisional, data_norm=L, curvature=lo.curvature(h, R),
            neighbouring=nb, nonincreasing_loss=lo.nonincreasing)
        return 2.0 * L * math.sqrt(d) / cal.sigma

    def _resolve_alpha(self, n: int, d: int, method: str, eps: float, delta: float, nb: str,
                       h: float, stacklevel: int = 3) -> float:
        kw: dict[str, Any] = dict(perturbation="objective" if method == "objective" else method, loss=LOSS,
                  data_norm=float(self.data_norm), h=h, label_bound=self._B())
        eps = self._equivalent_epsilon(n, d, method, eps, delta, nb, h)
        if isinstance(self.alpha, str):
            return auto_alpha(n, d, eps, **kw)
        alpha = float(self.alpha)
        if method != "none" and noise_dominates(n, d, eps, alpha, **kw):
            shift = expected_noise_shift(n, d, eps, alpha, **kw)
            warnings.warn(
                f"alpha={alpha:g}: with n={n}, d={d} and epsilon={float(self.epsilon):g} the "
                f"expected noise moves the coefficients by about {shift:.3g}, more than any "
                f"non-private solution can measure; the model will be mostly noise. "
                f"alpha='auto' would use {auto_alpha(n, d, eps, **kw):.3g}.",
                NoiseDominatedWarning, stacklevel=stacklevel)
        return alpha

    def _planned_events(self, method: str, n_norm: float, alpha: float | None, eps: float,
                        delta: float, nb: str, h: float, d: int) -> Sequence[Event | float]:
        """The accountant events of this fit, from public values only (before the data)."""
        if delta == 0:
            return [eps]
        from dperm.privacy import calibration

        if method == "adassp":
            from dperm.privacy.adassp import adassp_calibration

            cal = adassp_calibration(eps, delta, n_features=d, data_norm=float(self.data_norm),
                                     label_bound=self._B(), neighbouring=nb)
            return privacy_events(ReleaseRecord(
                layout="adassp", epsilon=eps, delta=delta, mechanism="adassp",
                noise_multiplier=cal.noise_multiplier), 1)
        lo = get_loss(LOSS)
        R = float(self.data_norm)
        # the record this fit will release, as far as the accountant's event needs it
        rec = ReleaseRecord(layout="mechanism", epsilon=eps, delta=delta, mechanism=method,
                            n_samples=int(n_norm), alpha=alpha, data_norm=R, neighbouring=nb,
                            loss=LOSS, h=h, n_classes=2, curvature=lo.curvature(h, R))
        if method == "objective":
            assert alpha is not None        # every method but AdaSSP has a Lambda
            cal = calibration.objective_gaussian_calibration(
                eps, delta, n=n_norm, alpha=alpha, data_norm=lo.gradient_bound(R, h),
                curvature=rec["curvature"], neighbouring=nb,
                nonincreasing_loss=lo.nonincreasing)
            rec = rec.replace(sigma=cal.sigma, extra_l2=cal.extra_l2)
        return privacy_events(rec, 1)

    # ------------------------------------------------------------------ fit
    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> PrivateLinearRegression:
        """Fit privately.

        A failed fit (bad input, exceeded budget) leaves the estimator as it was; the
        user's X and y are never modified.  ``sample_weight`` is refused (weights change
        the sensitivity).

        Parameters
        ----------
        X : array_like of shape (n, d), CSR matrix, memory map, DataFrame or Dask array
            Rows with norms <= data_norm (longer ones per norm_policy); dense or CSR, float32
            or float64.  A Dask array's rows stay on the workers.
        y : array_like of shape (n,)
            Finite real targets, abs(y) <= label_bound, or within label_bounds (clipped
            beyond, with a ClippingWarning).
        **fit_params
            Refused: ``sample_weight`` (and any other fit parameter) raises a ValueError.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad input (naming the parameter, row or column), or a row above data_norm with
            ``norm_policy="error"``.
        BudgetExceededError
            The fit would exceed the accountant's budget (checked before the data are read).
        """
        if isinstance(self.alpha, str) and self.alpha == "select":   # Lambda chosen privately
            from dperm.privacy.selection import fit_with_selection
            return fit_with_selection(self, X, y, **fit_params)
        self._start_fit(fit_params, "method")     # the parameters, checked once
        feature_names = _feature_names(X)
        X, y, distributed = self._rows_and_targets(X, y)
        n = X.shape[0]
        B, centre = self._label()
        X, clipped, yc, y_clipped = self._bound(X, y, B, distributed)
        Xa = WithInterceptColumn(X, float(self.data_norm)) if self.fit_intercept else X
        plan = self._plan(n, Xa.shape[1], B, centre)
        events = self._check_budget(plan, Xa.shape[1])
        _warn_clipped(clipped, n, plan.R)
        _warn_labels_clipped(y_clipped, n, B, centre)
        if plan.method == "adassp":
            W, record, diagnostics = self._fit_adassp(Xa, yc, plan)
        elif plan.method == "none":
            W, record, diagnostics = self._fit_nonprivate(Xa, yc, plan)
        else:
            W, record, diagnostics = self._fit_private(Xa, yc, plan)
        record = self._regression_record(record, plan)
        diagnostics.update(rows_clipped=int(clipped), labels_clipped=int(y_clipped))
        coef, intercept = self._coef_intercept(W, plan)
        if events is not None:
            self._spend_events(events)
        # everything below only assigns: a fit that failed above changed nothing
        self.coef_ = np.asarray(coef, dtype=np.float64).reshape(-1)
        self.intercept_ = float(intercept)
        self._set_fitted(X.shape[1], feature_names, plan.alpha, record, diagnostics)
        return self

    # the steps of fit, in order (dperm.spark's fit calls them too, yc None: its rows carry their targets)
    def _rows_and_targets(self, X: Any, y: Any) -> tuple[Any, np.ndarray, bool]:
        """(rows, targets on the fit's scale, distributed): rows checked once (a Dask
        collection's stay on the workers), targets finite and, with label_bounds, moved
        by the public centre (the fit sees y - c in [-B, B]).  With a Dask array X, a
        Dask y (or dask Series) stays one: checked and centred on the workers
        (dperm.data.oracle.real_targets), clipped there by `_bound`."""
        X, y, distributed = _oracle.labelled_rows(X, y, min_samples=2, describe=True,
                                                  labels_on_workers=True)
        if y is None:
            raise ValueError("y: this estimator requires y to be passed, but the target y is None")
        return X, _oracle.real_targets(X, y, self._label()[1]), distributed

    def _bound(self, X: Any, y: np.ndarray, B: float,
               distributed: bool) -> tuple[Any, int, np.ndarray | None, int]:
        """(rows within data_norm, rows clipped, targets within [-B, B], targets clipped):
        the public row-by-row maps; rows on the workers get their clipped targets first
        (a Dask y: made there, dperm.data.oracle.targets_to_workers, and the targets
        returned are None: the rows carry them, as dperm.spark's)."""
        R = float(self.data_norm)
        if distributed:        # the rows get their clipped targets (a Dask y's: made there)
            X, y_clipped, yc = _oracle.targets_to_workers(X, y, B)
        row_stats: dict[str, float] = {}
        X, clipped = bound_rows(X, R, self.norm_policy, return_clipped=True, stats=row_stats)
        if "max_norm" in row_stats:
            warn_if_rows_far_inside(row_stats["max_norm"], R, stacklevel=4)
        if not distributed:
            yc, y_clipped = bound_labels(y, B)
        return X, clipped, yc, y_clipped

    def _plan(self, n: int, d: int, B: float, centre: float | None) -> _Plan:
        """The mechanism, the public count (its warning given here, once, when the
        mechanism needs a count) and Lambda, from public values."""
        delta = float(self.delta)
        n_norm = normalising_count(self.n_public, n)
        method = resolve_method(self.method, n=int(n_norm), d=d, epsilon=float(self.epsilon),
                                delta=delta)
        if method not in ("adassp", "none"):
            # the objective is normalised by a count: under add_remove without n_public, warn
            warn_if_count_private(self.neighbouring, self.n_public, stacklevel=3)
        eps = float(self.epsilon) if method != "none" else float("inf")
        h = self._h()
        # AdaSSP chooses its ridge from its own release (no alpha)
        alpha = None if method == "adassp" else self._resolve_alpha(
            int(n_norm), d, method, eps, delta, self.neighbouring, h, stacklevel=4)
        return _Plan(method=method, n=n, n_norm=n_norm, neighbouring=self.neighbouring,
                     delta=delta, eps=eps, R=float(self.data_norm), h=h, B=B, centre=centre,
                     alpha=alpha)

    def _planned_alpha(self, n: int, d: int) -> float:
        """Lambda of `_plan` for the public count n and d columns (intercept included)."""
        plan = self._plan(n, d, *self._label())
        if plan.alpha is None:
            raise ValueError(f"method={self.method!r}: AdaSSP has no Lambda (it chooses its "
                             "ridge from its own release)")
        return plan.alpha

    def _check_budget(self, plan: _Plan, d: int) -> Sequence[Event | float] | None:
        """The fit's accountant events, checked against the budget before the data are
        fitted (None without an accountant)."""
        if self.accountant is None:
            return None
        events = self._planned_events(plan.method, plan.n_norm, plan.alpha, plan.eps,
                                      plan.delta, plan.neighbouring, plan.h, d)
        self.accountant.check_all(events)
        return events

    def _fit_adassp(self, Xa: Any, yc: np.ndarray | None,
                    plan: _Plan) -> tuple[np.ndarray, ReleaseRecord, dict[str, Any]]:
        """AdaSSP: ridge regression from noisy sufficient statistics.  They are sums:
        AdaSSP needs no count, and under add_remove records only a PUBLIC one
        (n_public), never the row count."""
        from dperm.privacy.adassp import adassp

        # the rows as stored (a memory map, CSR, a DesignRows): the statistics are summed
        # by blocks of rows (dperm.data.oracle.sufficient_statistics), never materialized
        W, raw = adassp(Xa, yc, epsilon=plan.eps, delta=plan.delta,
                        data_norm=plan.R, label_bound=plan.B, neighbouring=plan.neighbouring,
                        random_state=self._fit_generator())
        raw = dict(raw, n_samples=public_count(plan.neighbouring, self.n_public, plan.n,
                                               needs_count=False))
        return W, ReleaseRecord(layout="adassp", noise="gaussian", **raw), {}

    def _solver_args(self, plan: _Plan) -> dict[str, Any]:
        return dict(alpha=plan.alpha, h=plan.h, tol=self.tol, max_iter=self.max_iter,
                    n_threads=self.n_threads, solver=self.solver)

    def _fit_nonprivate(self, Xa: Any, yc: np.ndarray | None,
                        plan: _Plan) -> tuple[np.ndarray, ReleaseRecord, dict[str, Any]]:
        """method='none': the exact minimiser, no noise, no guarantee."""
        res = erm._minimize(Xa, yc, loss=LOSS, **self._solver_args(plan))
        record = ReleaseRecord(
            layout="mechanism", mechanism="none", loss=LOSS, neighbouring=plan.neighbouring,
            epsilon=float("inf"), delta=0.0, extra_l2=0.0, alpha=plan.alpha, data_norm=plan.R,
            h=plan.h, n_samples=public_count(plan.neighbouring, self.n_public, plan.n),
            curvature=get_loss(LOSS).curvature(plan.h, plan.R))
        diagnostics = {"grad_norm": float(res.grad_norm), "converged": bool(res.converged),
                       "n_iter": int(res.n_iter)}
        return res.coef, record, diagnostics

    def _fit_private(self, Xa: Any, yc: np.ndarray | None,
                     plan: _Plan) -> tuple[np.ndarray, ReleaseRecord, dict[str, Any]]:
        """Objective or output perturbation on checked parameters."""
        mech = _output if plan.method == "output" else _objective
        fit = mech(Xa, yc, loss=LOSS, epsilon=plan.eps, data_norm=plan.R, norm_policy="clip",
                   n_draws=1, random_state=self._fit_generator(), delta=plan.delta,
                   neighbouring=plan.neighbouring, n_public=plan.n_norm,
                   **self._solver_args(plan))
        return fit.coef[0], fit.record().replace(n_classes=None), fit.diagnostics()

    def _regression_record(self, record: ReleaseRecord, plan: _Plan) -> ReleaseRecord:
        """The estimator's release: the mechanism's record and the regression's bounds."""
        adassp = plan.method == "adassp"
        return record.replace(
            layout="adassp" if adassp else "regression", method=plan.method,
            task="regression", label_bound=plan.B, label_centre=plan.centre,
            gradient_bound=None if adassp else get_loss(LOSS).gradient_bound(plan.R, plan.h),
            epsilon_total=plan.eps, delta_total=plan.delta if plan.method != "none" else 0.0)

    def _coef_intercept(self, W: np.ndarray, plan: _Plan) -> tuple[np.ndarray, float]:
        """(coef, intercept) on the original scale: the intercept column's weight mapped
        back, plus the public label centre."""
        W = np.asarray(W, dtype=np.float64).reshape(-1)
        if self.fit_intercept:
            coef, intercept = split_intercept(W, plan.R)
        else:
            coef, intercept = W, 0.0
        if plan.centre is not None:     # predictions on the original scale: + c (public)
            intercept = float(intercept) + plan.centre
        return coef, float(intercept)

    # ------------------------------------------------------------------ predict
    @_oracle.on_workers_if_dask()
    def predict(self, X: ArrayLike) -> np.ndarray:
        """f.x + b for each row.

        Rows longer than data_norm are first shrunk onto the sphere of radius data_norm, the
        public map the training rows went through.  Predictions are not clipped to
        [-label_bound, label_bound].

        Parameters
        ----------
        X : array_like of shape (n, d), CSR matrix, memory map, DataFrame or Dask array
            Rows with the columns seen in fit.

        Returns
        -------
        ndarray of shape (n,)
            A Dask array (lazy, predicted block by block on the workers) for a Dask X.
        """
        X = self._check_fitted_X(X)
        return _oracle.linear_scores(X, self.coef_[None, :], np.array([self.intercept_]))[:, 0]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.sparse = True
        return tags
