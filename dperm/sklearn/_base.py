"""What the private linear estimators share: parameter checks, the fit's randomness and
clones, the checks of X at prediction, the intercept's map back to the rows' units."""
from __future__ import annotations

import functools as _functools
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from dperm.data import oracle as _oracle
from dperm.data.design import INTERCEPT_SCALE
from dperm.data.validation import (
    bound_rows,
    check_choice,
    check_data_norm,
    check_n_threads,
    check_positive,
    check_random_state,
    check_X,
    spawn_generator,
)
from dperm.exceptions import BudgetExceededError, ClippingWarning
from dperm.optim import erm
from dperm.privacy.accountant import BudgetAccountant
from dperm.privacy.mechanisms import check_privacy_params
from dperm.privacy.noise import warn_if_seeded
from dperm.privacy.record import record_to_dict

__all__ = ["PrivateLinearBase", "split_intercept"]


def split_intercept(w, data_norm):
    """Map weights on augmented rows back to (coef, intercept) on the original rows."""
    s = INTERCEPT_SCALE
    return w[..., :-1] * s, w[..., -1] * data_norm * s


def _feature_names(X):
    """Column names of a DataFrame-like X (all strings), else None."""
    cols = getattr(X, "columns", None)
    if cols is None:
        return None
    names = np.asarray([c for c in cols], dtype=object)
    if names.size and all(isinstance(c, str) for c in names):
        return names
    return None


def _block_call(est, method, block):
    """est.method on one row block of a Dask array (on a worker); the feature-name check
    was done on the client."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        return getattr(est, method)(block)


def _warn_clipped(clipped, n, data_norm):
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
    _fitted_attributes = ("coef_",)

    def _check_common_params(self):
        """The parameters both estimators have: solver, delta / neighbouring / n_public,
        alpha, h, data_norm, norm_policy, fit_intercept, tol, max_iter, n_threads,
        accountant, random_state."""
        check_choice(self.solver, "solver", set(erm.SOLVERS))
        check_privacy_params(self.delta, self.neighbouring, self.n_public, 2,
                             warn=False)
        if isinstance(self.alpha, str):
            if self.alpha not in ("auto", "select"):
                raise ValueError(f"alpha: must be 'auto', 'select' or a positive number, got "
                                 f"{self.alpha!r}")
        elif np.ndim(self.alpha) != 0:
            raise ValueError(f"alpha: must be 'auto' or a single positive number, got "
                             f"{self.alpha!r} (use dperm.private_tuning to choose among several)")
        else:
            check_positive(self.alpha, "alpha")
        check_data_norm(self.data_norm, "data_norm")
        check_choice(self.norm_policy, "norm_policy", {"clip", "error"})
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept: must be True or False, got {self.fit_intercept!r}")
        if self.tol is not None:
            check_positive(self.tol, "tol")
        if self.max_iter is not None and (isinstance(self.max_iter, bool) or not isinstance(
                self.max_iter, numbers.Integral) or self.max_iter < 1):
            raise ValueError(f"max_iter: must be an integer >= 1, got {self.max_iter!r}")
        check_n_threads(self.n_threads)
        if self.accountant is not None and not isinstance(self.accountant, BudgetAccountant):
            raise TypeError("accountant: expected a dperm.BudgetAccountant, got "
                            f"{type(self.accountant).__name__}")
        check_random_state(None if isinstance(self.random_state, np.random.Generator) else self.random_state)

    def _start_fit(self, fit_params, privacy_param):
        """What every fit checks before it reads X: no per-row weights, no unknown keyword,
        the parameters, no accountant for a non-private fit, the seeded-noise warning.
        ``privacy_param`` names the estimator's parameter that says how it is private
        ('perturbation' or 'method'; its value 'none' is the non-private fit)."""
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
            warn_if_seeded(self.random_state, accountant=self.accountant)

    def _set_fitted(self, n_features, feature_names, alpha, record, diagnostics):
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

    @property
    def privacy_(self):
        """The public privacy record of the fit as a new dict: the serialised form
        (dperm.privacy.record.record_to_dict) of `release_record_`, the immutable
        ReleaseRecord the fit built from public values only.  The same mapping is the
        model file's "privacy" object (dperm.save_model)."""
        rec = self.__dict__.get("release_record_")
        if rec is None:
            raise AttributeError(f"{type(self).__name__} is not fitted: privacy_ is set by fit")
        return record_to_dict(rec)

    def _spend_events(self, events):
        self.accountant.spend_all(events, label=repr(self))

    def _fit_generator(self):
        """This fit's randomness: fresh entropy (None), a seeded generator (an int, already
        warned about), or an independent child of a user's Generator, so that fits and
        clones sharing one Generator never reuse noise."""
        rs = self.random_state
        if rs is None:
            return None
        if isinstance(rs, np.random.Generator):
            return spawn_generator(rs)
        return check_random_state(rs)

    def __sklearn_clone__(self):
        # sklearn's clone deep-copies a Generator, so clones (GridSearchCV folds, private
        # tuning) would draw identical noise; give each clone its own child stream instead
        new = super().__sklearn_clone__()
        if isinstance(self.random_state, np.random.Generator):
            new.random_state = spawn_generator(self.random_state)
        return new

    # ------------------------------------------------------------------ predict
    def _check_fitted_X(self, X):
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

    def _check_feature_names_at_predict(self, X):
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

    def _on_workers(self, X, method, out_cols=None, dtype=np.float64):
        """method on a Dask array: the local path run blockwise on the workers (a lazy
        Dask array chunked like X's rows)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, list(self._fitted_attributes))
        self._check_feature_names_at_predict(X)   # here, once (a Dask array has none)
        return _oracle.map_rows(X, _functools.partial(_block_call, self, method),
                                self.n_features_in_, out_cols, dtype)
