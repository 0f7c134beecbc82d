"""What the private linear estimators share: parameter checks, the fit's randomness and
clones, the checks of X at prediction, the intercept's map back to the rows' units."""
from __future__ import annotations

import functools as _functools
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator

from dperm.data import oracle as _oracle
from dperm.data.design import INTERCEPT_SCALE
from dperm.data.validation import (
    BOOLEAN,
    DATA_NORM,
    N_THREADS,
    NONE,
    NORM_POLICIES,
    POSITIVE,
    RANDOM_STATE,
    Constraint,
    InstanceOf,
    Interval,
    Options,
    ParameterTable,
    bound_rows,
    check_params,
    check_random_state,
    check_X,
    spawn_generator,
)
from dperm.exceptions import BudgetExceededError, ClippingWarning, PrivacyLeakWarning
from dperm.optim import erm
from dperm.privacy.accountant import BudgetAccountant, Event
from dperm.privacy.mechanisms import PRIVACY_PARAMETERS
from dperm.privacy.noise import warn_if_seeded
from dperm.privacy.record import ReleaseRecord, public_count, record_to_dict

__all__ = ["PrivateLinearBase", "split_intercept", "ALPHA_OPTIONS", "ALPHA",
           "COMMON_PARAMETERS"]

#: The estimators' ``alpha``, declared in this one place for both: one of these options
#: (each a rule of public quantities that `_resolve_alpha` turns into Lambda) or a single
#: positive number.  A new option is one more name here and its branch in each
#: estimator's ``_resolve_alpha``.
ALPHA_OPTIONS: tuple[str, ...] = ("auto", "select")
ALPHA: list[Constraint] = [
    Options(ALPHA_OPTIONS),
    Interval(0, None, description="a single positive number (to choose among several, use "
                                  "dperm.private_tuning)"),
]

#: The parameters both estimators have, declared once: each estimator's
#: ``_parameter_constraints`` is this table and its own entries.  Checked once per fit,
#: in `PrivateLinearBase._start_fit`; what fit calls takes the values as checked.
COMMON_PARAMETERS: ParameterTable = {
    "solver": [Options(erm.SOLVERS)],
    **PRIVACY_PARAMETERS,             # delta, neighbouring, n_public
    "alpha": ALPHA,
    "data_norm": DATA_NORM,
    "norm_policy": [Options(NORM_POLICIES)],
    "fit_intercept": [BOOLEAN],
    "tol": [NONE, POSITIVE],
    "max_iter": [NONE, Interval(1, None, closed="left", integer=True)],
    "n_threads": N_THREADS,
    "accountant": [NONE, InstanceOf(BudgetAccountant, "a dperm.BudgetAccountant")],
    "random_state": RANDOM_STATE,
}


def split_intercept(w: np.ndarray, data_norm: float) -> tuple[np.ndarray, np.ndarray]:
    """Map weights on augmented rows back to (coef, intercept) on the original rows."""
    s = INTERCEPT_SCALE
    return w[..., :-1] * s, w[..., -1] * data_norm * s


def _feature_names(X: Any) -> np.ndarray | None:
    """Column names of a DataFrame-like X (all strings), else None."""
    cols = getattr(X, "columns", None)
    if cols is None:
        return None
    names = np.asarray([c for c in cols], dtype=object)
    if names.size and all(isinstance(c, str) for c in names):
        return names
    return None


def _block_call(est: Any, method: str, block: Any) -> Any:
    """est.method on one row block of a Dask array (on a worker); the feature-name check
    was done on the client."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        return getattr(est, method)(block)


def _warn_clipped(clipped: int, n: int, data_norm: float) -> None:
    if clipped:
        warnings.warn(
            f"{clipped} of {n} rows ({100.0 * clipped / n:.1f}%) had norm above "
            f"data_norm={data_norm:g} and were clipped onto it. The fit stays private, but "
            "clipped rows lose their scale: scale X by PUBLIC bounds first "
            "(dperm.PublicBoundsTransformer in a Pipeline) or choose a larger public "
            "data_norm. (This count is about the private data: for your eyes, not for "
            "publication.)", ClippingWarning, stacklevel=3)


class PrivateLinearBase(BaseEstimator):
    """The parts of PrivateLinearClassifier and PrivateLinearRegression that do not
    depend on the task (parameters named alike in both)."""

    #: attributes a fitted estimator has (check_is_fitted)
    _fitted_attributes: ClassVar[tuple[str, ...]] = ("coef_",)

    #: name -> the forms the parameter may take (scikit-learn's convention); each
    #: estimator declares its own, `COMMON_PARAMETERS` included
    _parameter_constraints: ClassVar[ParameterTable] = COMMON_PARAMETERS

    def _check_params(self) -> None:
        """Check the parameters against `_parameter_constraints` (epsilon only for a
        private fit), then the rules that tie two parameters (`_check_param_pairs`)."""
        values = self.get_params(deep=False)
        if values.get(self._privacy_param) == "none":
            values.pop("epsilon", None)       # a non-private fit has no epsilon
        check_params(self._parameter_constraints, values)
        self._check_param_pairs()

    #: the parameter that says how the fit is private ('none': the non-private fit)
    _privacy_param: ClassVar[str] = "perturbation"

    def _check_param_pairs(self) -> None:
        """Rules across parameters (an estimator's own); the table checked each one."""

    def _start_fit(self, fit_params: dict[str, Any], privacy_param: str) -> None:
        """What every fit checks before it reads X: no per-row weights, no unknown keyword,
        the parameters (once, here), no accountant for a non-private fit, the seeded-noise
        warning.  ``privacy_param`` names the estimator's parameter that says how it is
        private ('perturbation' or 'method'; its value 'none' is the non-private fit)."""
        if "sample_weight" in fit_params:
            raise TypeError(
                "sample_weight: not supported; per-row weights change the sensitivity of the "
                "minimizer (a row with weight w moves it up to w times as far), so the privacy "
                "constants would no longer hold. Resample or duplicate rows before fitting only "
                "if that is public knowledge; otherwise fit unweighted.")
        if fit_params:
            raise TypeError(f"fit() got unexpected keyword argument(s) {sorted(fit_params)}")
        self._check_params()
        private = getattr(self, privacy_param) != "none"
        if self.accountant is not None and not private:
            raise BudgetExceededError(f"a non-private fit ({privacy_param}='none') cannot be "
                                      "charged to a BudgetAccountant: its epsilon is infinite")
        if private:
            warn_if_seeded(self.random_state, accountant=self.accountant, stacklevel=4)

    def _set_fitted(self, n_features: int, feature_names: np.ndarray | None,
                    alpha: float | None, record: ReleaseRecord,
                    diagnostics: dict[str, Any]) -> None:
        """The fitted attributes both estimators share (the last step of a fit: it only
        assigns, so a fit that failed before it changed nothing)."""
        self.n_features_in_ = n_features
        if feature_names is not None:
            self.feature_names_in_ = feature_names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.alpha_ = alpha
        self.release_record_ = record
        self.fit_diagnostics_ = diagnostics

    def _auto_alpha(self, epsilon: float, n_rows: int, n_features: int) -> float:
        """``alpha="auto"``'s Lambda for a fit of this estimator at ``epsilon`` on
        ``n_rows`` rows of ``n_features`` columns (the intercept's column not counted),
        computed by the fit's own planning step from public values only: nothing is read
        and nothing is minimized.  The count is a fit's public count
        (dperm.privacy.record.public_count: ``n_public`` when given, else ``n_rows``);
        the parameters are checked as a fit checks them (``alpha`` and ``accountant``
        are not used).  ``alpha="select"`` (dperm.privacy.selection.fit_with_selection)
        centres its grid here."""
        est = type(self)(**{**self.get_params(deep=False), "alpha": "auto",
                            "epsilon": epsilon, "accountant": None, "random_state": None})
        est._check_params()
        n = public_count(est.neighbouring, est.n_public, int(n_rows))
        assert n is not None                # a count-normalised fit always has one
        d = int(n_features) + (1 if est.fit_intercept else 0)
        with warnings.catch_warnings():
            # add_remove without n_public: the count's PrivacyLeakWarning is the fits' to give
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return est._planned_alpha(n, d)

    def _planned_alpha(self, n: int, d: int) -> float:
        """Lambda of the fit's plan for the public count n and d columns (intercept
        included): each estimator's planning step (see `_auto_alpha`)."""
        raise NotImplementedError(f"{type(self).__name__} has no planning step for Lambda")

    @property
    def privacy_(self) -> dict[str, Any]:
        """The public privacy record of the fit as a new dict: the serialised form
        (dperm.privacy.record.record_to_dict) of `release_record_`, the immutable
        ReleaseRecord the fit built from public values only.  The same mapping is the
        model file's "privacy" object (dperm.save_model)."""
        rec = self.__dict__.get("release_record_")
        if rec is None:
            raise AttributeError(f"{type(self).__name__} is not fitted: privacy_ is set by fit")
        return record_to_dict(rec)

    def _spend_events(self, events: Sequence[Event | float]) -> None:
        self.accountant.spend_all(events, label=repr(self))

    def _fit_generator(self) -> np.random.Generator | None:
        """This fit's randomness: fresh entropy (None), a seeded generator (an int, already
        warned about), or an independent child of a user's Generator, so that fits and
        clones sharing one Generator never reuse noise."""
        rs = self.random_state
        if rs is None:
            return None
        if isinstance(rs, np.random.Generator):
            return spawn_generator(rs)
        return check_random_state(rs)

    def __sklearn_clone__(self) -> PrivateLinearBase:
        # sklearn's clone deep-copies a Generator, so clones (GridSearchCV folds, private
        # tuning) would draw identical noise; give each clone its own child stream instead
        new = super().__sklearn_clone__()
        if isinstance(self.random_state, np.random.Generator):
            new.random_state = spawn_generator(self.random_state)
        return new

    # ------------------------------------------------------------------ predict
    def _check_fitted_X(self, X: ArrayLike) -> Any:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, list(self._fitted_attributes))
        self._check_feature_names_at_predict(X)
        X = check_X(X, name="X", accept_sparse=True)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        # the same public, data-independent map as in training (clip onto the R-ball),
        # as a factor per row: X is never copied
        return bound_rows(X, float(self.data_norm), "clip")

    def _check_feature_names_at_predict(self, X: Any) -> None:
        names = _feature_names(X)
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is None:
            if names is not None:
                warnings.warn(f"X has feature names, but {type(self).__name__} was fitted "
                              "without feature names", UserWarning, stacklevel=4)
            return
        if names is None:
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} "
                          "was fitted with feature names", UserWarning, stacklevel=4)
            return
        if names.shape != fitted.shape or np.any(names != fitted):
            unseen = [c for c in names if c not in set(fitted)][:5]
            missing = [c for c in fitted if c not in set(names)][:5]
            detail = (f" Unseen at fit time: {unseen}." if unseen else "") + \
                     (f" Seen at fit time, yet now missing: {missing}." if missing else "")
            raise ValueError("The feature names should match those that were passed during fit "
                             f"(same names, same order).{detail or ' The order differs.'}")

    def _on_workers(self, X: Any, method: str, out_cols: int | None = None,
                    dtype: Any = np.float64) -> Any:
        """method on a Dask array: the local path run blockwise on the workers (a lazy
        Dask array chunked like X's rows)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, list(self._fitted_attributes))
        self._check_feature_names_at_predict(X)   # here, once (a Dask array has none)
        return _oracle.map_rows(X, _functools.partial(_block_call, self, method),
                                self.n_features_in_, out_cols, dtype)
