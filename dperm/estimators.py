"""PrivateLinearClassifier: the scikit-learn face of Algorithms 1 and 2."""
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import type_of_target

from dperm import erm
from dperm._validation import (apply_norm_bound, check_choice, check_epsilon, check_n_threads,
                               check_positive, check_random_state, check_X)
from dperm.accountant import BudgetAccountant
from dperm.exceptions import BudgetExceededError, PrivacyLeakWarning
from dperm.losses import get_loss
from dperm.mechanisms import objective_perturbation, output_perturbation

__all__ = ["PrivateLinearClassifier"]

PERTURBATIONS = {"objective", "output", "none"}


def augment_intercept(X, data_norm):
    """Append the public constant feature R and scale by 1/sqrt(2): ||[x, R]||/sqrt(2) <= R."""
    n = X.shape[0]
    out = np.empty((n, X.shape[1] + 1), dtype=X.dtype)
    out[:, :-1] = X
    out[:, -1] = data_norm
    out *= X.dtype.type(1.0 / np.sqrt(2.0))
    return out


def split_intercept(w, data_norm):
    """Map weights on augmented rows back to (coef, intercept) on the original rows."""
    s = 1.0 / np.sqrt(2.0)
    return w[..., :-1] * s, w[..., -1] * data_norm * s


class PrivateLinearClassifier(ClassifierMixin, BaseEstimator):
    """Epsilon-differentially private linear classifier (Chaudhuri et al. 2011).

    Minimizes (1/n) sum_i loss(y_i f.x_i) + (alpha/2) ||f||^2 and releases the
    result privately by objective perturbation (Algorithm 2) or output
    perturbation (Algorithm 1).  Every row is assumed to satisfy
    ||x_i||_2 <= data_norm, a PUBLIC bound (rows over it are clipped onto the
    sphere of radius data_norm, or refused).

    Parameters
    ----------
    loss : {"logistic", "huber", "smooth_hinge"}
    perturbation : {"objective", "output", "none"}
        "none" is the non-private baseline on the same solver (no guarantee).
    epsilon : float > 0
        Privacy parameter of the released model (per fit).
    alpha : float > 0
        Regularization strength Lambda.
    h : float > 0
        Width of the Huber / smoothed-hinge transition (ignored for logistic).
    data_norm : float > 0
        Public bound R on the Euclidean norm of a row (in the units of X).
    norm_policy : {"clip", "error"}
        What to do with rows whose norm exceeds data_norm.
    fit_intercept : bool
        Append the public constant feature R and scale rows by 1/sqrt(2) so the
        bound still holds; the intercept is regularized like every coefficient.
    classes : None or sequence of two labels
        The PUBLIC label set ([negative, positive]). If None, it is read from y
        and a PrivacyLeakWarning says so.
    tol, max_iter, n_threads : solver controls (gradient-norm tolerance; see dperm.erm.minimize).
    random_state : None, int or numpy Generator
        None (the default) draws fresh OS entropy on every fit; set it only for
        reproducible experiments.
    accountant : None or BudgetAccountant
        If given, each fit checks and spends epsilon from it.

    Attributes
    ----------
    coef_ : (1, n_features)
    intercept_ : (1,)
    classes_ : (2,)
    n_iter_ : (1,)
    privacy_ : dict with mechanism, epsilon, epsilon_prime, delta, beta, alpha,
        data_norm, curvature, n_samples, grad_norm (final gradient norm of the
        solve), converged.
    """

    def __init__(self, loss="logistic", perturbation="objective", epsilon=1.0, alpha=1e-3, h=0.5,
                 data_norm=1.0, norm_policy="clip", fit_intercept=True, classes=None, tol=None,
                 max_iter=None, n_threads=None, random_state=None, accountant=None):
        self.loss = loss
        self.perturbation = perturbation
        self.epsilon = epsilon
        self.alpha = alpha
        self.h = h
        self.data_norm = data_norm
        self.norm_policy = norm_policy
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.tol = tol
        self.max_iter = max_iter
        self.n_threads = n_threads
        self.random_state = random_state
        self.accountant = accountant

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        get_loss(self.loss)
        check_choice(self.perturbation, "perturbation", PERTURBATIONS)
        if self.perturbation != "none":
            check_epsilon(self.epsilon, "epsilon")
        if np.ndim(self.alpha) != 0:
            raise ValueError(f"alpha: must be a single positive number, got {self.alpha!r} "
                             "(use dperm.private_tuning to choose among several)")
        check_positive(self.alpha, "alpha")
        check_positive(self.h, "h")
        check_positive(self.data_norm, "data_norm")
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
            raise TypeError(f"accountant: expected a dperm.BudgetAccountant, got {type(self.accountant).__name__}")
        check_random_state(None if isinstance(self.random_state, np.random.Generator) else self.random_state)

    def _check_classes(self, y):
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected; "
                          "using y.ravel()", DataConversionWarning, stacklevel=3)
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
        if y.dtype.kind in "fc" and not np.isfinite(y).all():
            raise ValueError("y: contains NaN or infinity")
        if self.classes is None:
            try:
                classes = np.unique(y)
            except TypeError:
                raise ValueError("y: Unknown label type: the labels cannot be sorted "
                                 "(mixed types?)") from None
            y_type = type_of_target(y, input_name="y")
            if classes.size != 2 and y_type.startswith("continuous"):
                # two distinct float labels are fine; many are a regression target
                raise ValueError(f"y: Unknown label type: {y_type} (a continuous target was "
                                 "passed to a classifier; exactly two classes are needed)")
            if classes.size != 2:
                raise ValueError(f"y: Only binary classification is supported; exactly two "
                                 f"classes are needed, found {classes.size} "
                                 f"({classes[:5].tolist()}{'...' if classes.size > 5 else ''})")
            warnings.warn(
                "classes: the label set was read from the private y; pass classes=[neg, pos] "
                "(public knowledge) to avoid this leak", PrivacyLeakWarning, stacklevel=3)
        else:
            classes = np.asarray(self.classes)
            if classes.ndim != 1 or classes.size != 2 or classes[0] == classes[1]:
                raise ValueError(f"classes: must list exactly two distinct labels, got {self.classes!r}")
            if y.dtype.kind in "OUS" and classes.dtype.kind not in "OUS" or \
                    classes.dtype.kind in "OUS" and y.dtype.kind not in "OUS":
                raise ValueError(f"y: labels {np.unique(y)[:5].tolist()} do not match classes={self.classes!r}")
            inside = np.isin(y, classes)
            if not inside.all():
                raise ValueError(f"y: values {np.unique(y[~inside])[:5].tolist()} are not in "
                                 f"classes={classes.tolist()}")
        y_pm = np.where(y == classes[1], 1.0, -1.0)
        return classes, y_pm

    def _prepare_rows(self, X):
        X = apply_norm_bound(X, float(self.data_norm), self.norm_policy)
        return augment_intercept(X, float(self.data_norm)) if self.fit_intercept else X

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Fit privately. X: (n, d) floats with row norms <= data_norm; y: (n,) labels.

        A failed fit (bad input, exceeded budget) leaves the estimator as it was.
        """
        self._check_params()
        X = check_X(X, name="X", min_samples=2)
        n = X.shape[0]
        if y is None:
            raise ValueError("y: this estimator requires y to be passed, but the target y is None")
        yy = np.asarray(y)
        if yy.ndim == 0 or yy.shape[0] != n:
            raise ValueError(f"y: has {yy.shape[0] if yy.ndim else 0} labels but X has {n} rows")
        classes, y_pm = self._check_classes(y)
        lo = get_loss(self.loss)
        if self.accountant is not None:
            if self.perturbation == "none":
                raise BudgetExceededError("a non-private fit (perturbation='none') cannot be "
                                          "charged to a BudgetAccountant: its epsilon is infinite")
            self.accountant.check(self.epsilon)
        Xa = self._prepare_rows(X)
        R = float(self.data_norm)
        common = dict(loss=lo.name, alpha=float(self.alpha), h=float(self.h), tol=self.tol,
                      max_iter=self.max_iter, n_threads=self.n_threads)
        if self.perturbation == "none":
            res = erm.minimize(Xa, y_pm, **common)
            w, n_iter = res.coef, res.n_iter
            record = {"mechanism": "none", "loss": lo.name, "epsilon": float("inf"),
                      "epsilon_prime": float("inf"), "delta": 0.0, "beta": float("inf"),
                      "alpha": float(self.alpha), "data_norm": R, "h": float(self.h),
                      "n_samples": n, "curvature": lo.curvature(self.h, R),
                      "grad_norm": float(res.grad_norm), "converged": bool(res.converged)}
        else:
            mech = objective_perturbation if self.perturbation == "objective" else output_perturbation
            fit = mech(Xa, y_pm, epsilon=float(self.epsilon), data_norm=R, norm_policy="clip",
                       n_draws=1, random_state=self.random_state, **common)
            w, n_iter = fit.coef[0], int(np.asarray(fit.n_iter).reshape(-1)[0])
            record = fit.record()
        if self.fit_intercept:
            coef, intercept = split_intercept(w, R)
        else:
            coef, intercept = w, 0.0
        if self.accountant is not None:
            self.accountant.spend(self.epsilon, label=repr(self))
        # everything below only assigns: a fit that failed above changed nothing
        self.classes_ = classes
        self.coef_ = np.asarray(coef, dtype=np.float64).reshape(1, -1)
        self.intercept_ = np.array([float(intercept)])
        self.n_iter_ = np.array([n_iter])
        self.n_features_in_ = X.shape[1]
        self.privacy_ = record
        return self

    # ------------------------------------------------------------------ predict
    def _check_fitted_X(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, ["coef_", "classes_"])
        X = check_X(X, name="X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        # the same public, data-independent map as in training (clip onto the R-ball)
        return apply_norm_bound(X, float(self.data_norm), "clip")

    def decision_function(self, X):
        """Signed score f.x + b, shape (n,); positive means classes_[1].

        Rows longer than data_norm are first shrunk onto the sphere of radius
        data_norm, the same public map the training rows went through (whatever
        norm_policy says: prediction never refuses a row), so a score is linear in
        x only inside that ball.
        """
        X = self._check_fitted_X(X)
        return X.astype(np.float64, copy=False) @ self.coef_[0] + self.intercept_[0]

    def predict(self, X):
        """Predicted labels, shape (n,), taken from classes_."""
        scores = self.decision_function(X)  # checks fitted-ness before classes_ is read
        return self.classes_[(scores > 0).astype(int)]

    def _has_proba(self):
        if self.loss != "logistic":
            raise AttributeError(f"predict_proba is only available for loss='logistic', not {self.loss!r}")
        return True

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (n, 2) in the order of classes_ (logistic loss only)."""
        s = self.decision_function(X)
        p1 = np.where(s >= 0, 1.0 / (1.0 + np.exp(-np.abs(s))), np.exp(-np.abs(s)) / (1.0 + np.exp(-np.abs(s))))
        return np.column_stack([1.0 - p1, p1])

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """log of predict_proba (logistic loss only)."""
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # sklearn's meaning: "not deterministic given a fixed random_state"; a private fit
        # with a fixed seed is reproducible (random_state=None is what makes it random)
        tags.non_deterministic = False
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = False
        return tags
