"""PrivateLinearClassifier: the scikit-learn face of Algorithms 1 and 2."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import ClassifierMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import type_of_target

from dperm.data import oracle as _oracle
from dperm.data.design import WithInterceptColumn
from dperm.data.design import augment_intercept as augment_intercept  # re-exported
from dperm.data.validation import (
    bound_rows,
    check_choice,
    check_epsilon,
    check_positive,
    warn_if_rows_far_inside,
)
from dperm.exceptions import NoiseDominatedWarning, PrivacyLeakWarning
from dperm.losses import MULTINOMIAL_MIN_CLASSES, get_loss, softmax_curvature
from dperm.optim import erm
from dperm.privacy.mechanisms import (
    MULTINOMIAL,
    check_privacy_params,
    objective_perturbation,
    output_perturbation,
    privacy_events,
)
from dperm.privacy.neighbouring import sensitivity_factor
from dperm.privacy.record import ReleaseRecord, public_count
from dperm.privacy.regularization import auto_alpha, expected_noise_shift, noise_dominates
from dperm.sklearn._base import (  # split_intercept: re-exported
    PrivateLinearBase,
    _feature_names,
    _warn_clipped,
    split_intercept,
)

__all__ = ["PrivateLinearClassifier"]

PERTURBATIONS = {"objective", "output", "amp", "none"}


class PrivateLinearClassifier(ClassifierMixin, PrivateLinearBase):
    """Differentially private linear classifier: epsilon-DP (Chaudhuri et al. 2011) or,
    with delta > 0, (epsilon, delta)-DP with Gaussian noise; two classes or K > 2.

    Minimizes (1/n) sum_i loss(y_i f.x_i) + (alpha/2) ||f||^2 and releases the
    result privately by objective perturbation (Algorithm 2), output
    perturbation (Algorithm 1) or, with delta > 0, approximate minima perturbation.
    K > 2 classes: one multinomial (softmax) model for the logistic loss with
    delta > 0, else one-vs-rest (K binary models, each with epsilon/K and delta/K,
    independent noise).  Every row is assumed to satisfy
    ||x_i||_2 <= data_norm, a PUBLIC bound (rows over it are clipped onto the
    sphere of radius data_norm, or refused).

    Parameters
    ----------
    loss : {"logistic", "huber", "smooth_hinge"}
    perturbation : {"objective", "output", "amp", "none"}
        "amp" (delta > 0): approximate minima perturbation, whose guarantee covers
        the solution the solver returns (gradient norm <= tol, checked).  "none"
        is the non-private baseline on the same solver (no guarantee).
    epsilon : float > 0
        Privacy parameter of the released model (per fit; the total over the K
        models of a one-vs-rest fit).
    delta : float in [0, 1)
        0 (default): the paper's pure epsilon-DP mechanisms.  > 0: Gaussian noise
        calibrated for (epsilon, delta) (docs/privacy_analysis.md); 1/n**2 is usual.
    neighbouring : {"replace_one", "add_remove"}
        The neighbouring relation the guarantee is for: one row replaced (n public,
        the default) or one row added or removed (then pass n_public).
    n_public : None or int
        A public count that normalises the objective.  add_remove: without it n
        is read from X and a PrivacyLeakWarning says the guarantee then covers data
        sets of that size only.  replace_one: optional, the public size of the data
        set before a rule that depends on the data (e.g. dropping rows with a missing
        value) left the rows of X; the guarantee then also covers a row the rule
        drops or keeps (docs/privacy_analysis.md, "Rows dropped for missing values").
    alpha : "auto" (default), "select" or float > 0
        Regularization strength Lambda (units of loss / ||f||^2). "auto" picks
        it by a rule of public quantities only (n, d, epsilon, data_norm, the
        mechanism; see dperm.privacy.regularization.auto_alpha), so it costs no extra
        privacy; the value used is stored in `alpha_`.  A given value whose
        expected noise would swamp the model draws a UserWarning.  "select":
        chosen privately within epsilon, every candidate trained on all rows
        (dperm.privacy.selection.fit_with_selection; pure epsilon only).
    h : float > 0
        Width of the Huber / smoothed-hinge transition (ignored for logistic).
    data_norm : float > 0
        Public bound R on the Euclidean norm of a row (in the units of X).
    norm_policy : {"clip", "error"}
        What to do with rows whose norm exceeds data_norm.
    fit_intercept : bool
        Append the public constant feature R and scale rows by 1/sqrt(2) so the
        bound still holds; the intercept is regularized like every coefficient.
    classes : None or sequence of labels
        The PUBLIC label set: two labels ([negative, positive]) or every one of
        K > 2 classes, in the order of the model's scores. If None, it is read
        from y and a PrivacyLeakWarning says so.
    tol, max_iter, n_threads : solver controls (gradient-norm tolerance; see dperm.optim.erm.minimize).
    solver : {"auto", "lbfgs", "newton"}
        Batched L-BFGS or trust-region Newton-CG (dperm.optim.erm.minimize); "auto" is
        L-BFGS today (BENCHMARKS.md). Every solver meets the same tolerance, so
        the guarantee does not depend on the choice.
    random_state : None, int or numpy Generator
        None (the default) draws fresh OS entropy on every fit. An int seed is
        for reproducible experiments only: the guarantee does not hold for a
        seeded fit (PrivacyLeakWarning; refused with an accountant). A
        Generator is never reused as is: each fit, and each clone, draws from
        its own spawned child stream.
    accountant : None or BudgetAccountant
        If given, each fit checks its privacy events (epsilon, or the Gaussian
        mechanism's) against it before touching the data, and spends them.

    Attributes
    ----------
    Releasable (functions of public inputs and the noisy model):

    coef_ : ndarray (1, n_features), or (K, n_features) for K > 2 classes
    intercept_ : ndarray (1,) or (K,)
    classes_ : ndarray (2,), [negative, positive], or (K,)
    alpha_ : float, the Lambda used (a public rule's value when alpha="auto")
    n_features_in_ : int
    feature_names_in_ : ndarray (n_features,) of str, when X was a DataFrame
    release_record_ : ReleaseRecord (dperm.privacy.record): the fit's immutable,
        typed record, built from public values only
    privacy_ : dict
        ``release_record_`` serialised (a new dict each time), of public values:
        mechanism, noise, loss, epsilon (per model) and epsilon_total,
        delta (the (epsilon, delta) parameter) and delta_total,
        neighbouring, n_samples (n, or n_public), n_classes, multiclass,
        epsilon_prime, extra_l2 (the paper's Delta), beta, sigma, sigma_output,
        grid, alpha, data_norm, h, curvature.  Values that do not apply are None.
        The model file of dperm.save_model holds the same record.

    NOT releasable:

    fit_diagnostics_ : dict, for the analyst who holds the data: grad_norm
        (final gradient norm), converged, n_iter, rows_clipped.  Every entry
        depends on the private data (for output perturbation, on the
        noise-free minimizer itself); never publish it beside the model.  A pickle
        (or joblib.dump, copy.deepcopy) of the fitted estimator carries it: that is
        for the analyst; the publishable form is dperm.save_model's model file,
        which holds the coefficients, the public parameters and ``privacy_`` only.

    Examples
    --------
    >>> import numpy as np
    >>> import dperm
    >>> X, y = dperm.datasets.load_adult(preprocess="public")  # public bounds: ||x|| <= 1
    >>> clf = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1])
    >>> clf.fit(X[:30000], y[:30000])
    PrivateLinearClassifier(classes=[-1, 1])
    >>> bool(clf.score(X[30000:], y[30000:]) > 0.76)      # the majority class: 0.75
    True
    >>> clf.privacy_["epsilon"], clf.privacy_["mechanism"] # public: publish with the model
    (1.0, 'objective')
    """

    _fitted_attributes = ("coef_", "classes_")

    def __init__(self, loss="logistic", perturbation="objective", epsilon=1.0, delta=0.0,
                 neighbouring="replace_one", n_public=None, alpha="auto", h=0.5,
                 data_norm=1.0, norm_policy="clip", fit_intercept=True, classes=None, tol=None,
                 max_iter=None, n_threads=None, random_state=None, accountant=None,
                 solver="auto"):
        self.loss = loss
        self.delta = delta
        self.neighbouring = neighbouring
        self.n_public = n_public
        self.solver = solver
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
        get_loss(self.loss, regression=False)
        check_choice(self.perturbation, "perturbation", PERTURBATIONS)
        if self.perturbation != "none":
            check_epsilon(self.epsilon, "epsilon")
        self._check_common_params()
        if self.perturbation == "amp" and float(self.delta) == 0:
            raise ValueError("delta: perturbation='amp' is an (epsilon, delta) mechanism; "
                             "give delta > 0 (e.g. 1/n**2)")
        check_positive(self.h, "h")

    def _equivalent_epsilon(self, n, d, lo, eps, delta, nb, n_classes):
        """The pure, replace-one epsilon whose noise has the norm this fit's noise has:
        the public rules of dperm.privacy.regularization were calibrated on that mechanism.
        Pure: eps (replace_one) or 2 eps (add_remove: half the sensitivity).  Gaussian:
        the Laplace-type norm d * sens / eps equals the Gaussian norm sqrt(d) sigma."""
        if self.perturbation == "none":
            return 1.0
        if delta == 0:
            # a Laplace-type budget of the replace_one sensitivity
            return eps * 2.0 / sensitivity_factor(nb)
        from dperm.privacy import calibration

        R = float(self.data_norm)
        if self.perturbation == "output":
            # sigma scales as 1/(n alpha): the ratio does not depend on alpha
            sens = sensitivity_factor(nb) * R
            sigma = calibration.analytic_gaussian_sigma(eps, delta, sens)
            return 2.0 * R * math.sqrt(d) / sigma
        K = n_classes
        curvature = softmax_curvature(K, R) if K >= MULTINOMIAL_MIN_CLASSES \
            else lo.curvature(self.h, R)
        provisional = auto_alpha(n, d, eps, perturbation="objective", loss=lo.name,
                                 data_norm=R, h=float(self.h))
        cal = calibration.objective_gaussian_calibration(
            eps, delta, n=n, alpha=provisional, data_norm=R, curvature=curvature,
            neighbouring=nb, n_classes=K, nonincreasing_loss=K == 2)
        return 2.0 * R * math.sqrt(d) / cal.sigma

    def _resolve_alpha(self, n, d, lo, eps, delta, nb, n_classes=2):
        """Lambda for this fit: the public rule for "auto", else the user's value (with a
        warning when, by public quantities alone, the noise would swamp the model)."""
        pert = "output" if self.perturbation == "output" else \
            "none" if self.perturbation == "none" else "objective"
        kw = dict(perturbation=pert, loss=lo.name, data_norm=float(self.data_norm),
                  h=float(self.h))
        eps = self._equivalent_epsilon(n, d, lo, eps, delta, nb, n_classes)
        if isinstance(self.alpha, str):
            return auto_alpha(n, d, eps, **kw)
        alpha = float(self.alpha)
        if self.perturbation != "none" and noise_dominates(n, d, eps, alpha, **kw):
            shift = expected_noise_shift(n, d, eps, alpha, **kw)
            warnings.warn(
                f"alpha={alpha:g}: with n={n}, d={d} and epsilon={float(self.epsilon):g} the "
                f"expected noise moves the coefficients by about {shift:.3g}, more than any "
                f"non-private solution can measure; the model will be mostly noise. "
                f"alpha='auto' would use {auto_alpha(n, d, eps, **kw):.3g}.",
                NoiseDominatedWarning, stacklevel=3)
        return alpha

    def _check_classes(self, y):
        """(classes (K,), codes (n,) in 0..K-1) with K >= 2; the label set is public
        (classes=) or read from y with a PrivacyLeakWarning."""
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
            if y_type.startswith("continuous") and classes.size > 2:
                raise ValueError(f"y: Unknown label type: {y_type} (a continuous target was "
                                 "passed to a classifier)")
            if classes.size < 2:
                raise ValueError(f"y: at least two classes are needed, found {classes.size} "
                                 f"({classes[:5].tolist()})")
            warnings.warn(
                "classes: the label set was read from the private y; pass classes=[...] "
                "(public knowledge: every label that may occur) to avoid this leak",
                PrivacyLeakWarning, stacklevel=3)
        else:
            classes = np.asarray(self.classes)
            if classes.ndim != 1 or classes.size < 2 or np.unique(classes).size != classes.size:
                raise ValueError(f"classes: must list at least two distinct labels, got "
                                 f"{self.classes!r}")
            if y.dtype.kind in "OUS" and classes.dtype.kind not in "OUS" or \
                    classes.dtype.kind in "OUS" and y.dtype.kind not in "OUS":
                raise ValueError(f"y: labels {np.unique(y)[:5].tolist()} do not match "
                                 f"classes={self.classes!r}")
            inside = np.isin(y, classes)
            if not inside.all():
                raise ValueError(f"y: values {np.unique(y[~inside])[:5].tolist()} are not in "
                                 f"classes={classes.tolist()}")
        codes = np.zeros(y.shape[0], dtype=np.intp)
        for k, c in enumerate(classes):
            codes[y == c] = k
        if y.size and (codes == codes[0]).all():
            # the public classes make the fit well defined, but a model fitted to one
            # label is rarely what was meant (a filtered file, the wrong label column);
            # a notice for the analyst, as sklearn's classifiers refuse such y outright
            only, rest = classes.tolist()[codes[0]], classes.tolist()
            warnings.warn(
                f"y: every label is {only!r}: none of the other classes "
                f"{[c for c in rest if c != only][:5]} occurs, "
                "so the model learns to predict one class (plus noise); check the label "
                "column and the rows (this notice is about the private data: do not "
                "publish it)", UserWarning, stacklevel=3)
        return classes, codes

    def _multiclass_mode(self, K):
        """How K classes are fitted: "binary" (K = 2), "multinomial" (softmax; the
        logistic loss with delta > 0 or without noise) or "ovr" (one-vs-rest)."""
        if K < MULTINOMIAL_MIN_CLASSES:
            return "binary"
        if self.loss == "logistic" and (float(self.delta) > 0 or self.perturbation == "none"):
            return "multinomial"
        return "ovr"

    # ------------------------------------------------------------------ fit
    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> PrivateLinearClassifier:  # noqa: C901
        """Fit privately. X: (n, d) floats with row norms <= data_norm; y: (n,) labels.

        Two classes: one binary model.  K > 2 classes: the softmax (multinomial
        logistic) model when loss="logistic" and delta > 0; otherwise one-vs-rest, K
        binary models on all rows, each with epsilon/K (and delta/K), the K noise draws
        independent (``privacy_`` records the split and the total).

        A failed fit (bad input, exceeded budget) leaves the estimator as it was.
        ``sample_weight`` is refused: weights change how much one row can move
        the minimizer, so the mechanisms' constants would no longer hold.

        Parameters
        ----------
        X : array (n, d), CSR matrix, memory map, DataFrame or Dask array
            Rows with norms <= data_norm (longer ones per norm_policy).
        y : array (n,)
            Labels, from `classes` when it is given.
        **fit_params
            Refused: ``sample_weight`` (and any other fit parameter) raises a
            ValueError saying why.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad input (naming the parameter, row or column), a label outside ``classes``,
            or a row above data_norm with ``norm_policy="error"``.
        BudgetExceededError
            The fit would exceed the accountant's budget (checked before the data are read).
        """
        if isinstance(self.alpha, str) and self.alpha == "select":   # Lambda chosen privately
            from dperm.privacy.selection import fit_with_selection
            return fit_with_selection(self, X, y, **fit_params)
        self._start_fit(fit_params, "perturbation")
        feature_names = _feature_names(X)
        # a Dask collection: rows stay on the workers; the labels (n values) are read
        # here to find and map the classes, then sent back chunked like the rows. Local
        # rows: validated once here; the mechanism and the solver below take them as
        # checked (and their norms, once computed), not another pass over the data
        X, y, distributed = _oracle.labelled_rows(X, y, min_samples=2, describe=True)
        n = X.shape[0]
        if y is None:
            raise ValueError("y: this estimator requires y to be passed, but the target y is None")
        yy = np.asarray(y)
        if yy.ndim == 0 or yy.shape[0] != n:
            raise ValueError(f"y: has {yy.shape[0] if yy.ndim else 0} labels but X has {n} rows")
        classes, codes = self._check_classes(y)
        K = classes.size
        mode = self._multiclass_mode(K)
        if distributed and mode != "binary":
            raise ValueError(f"y: {K} classes with a Dask array X are not supported yet; "
                             "fit one-vs-rest binary models (sklearn.multiclass.OneVsRestClassifier)")
        delta, nb, n_norm = check_privacy_params(self.delta, self.neighbouring, self.n_public, n)
        n_fits = K if mode == "ovr" else 1
        eps_fit = float(self.epsilon) / n_fits if self.perturbation != "none" else float("inf")
        if distributed:
            X = _oracle.with_worker_labels(X, np.where(codes == 1, 1.0, -1.0), min_samples=2)
        lo = get_loss(self.loss)
        R = float(self.data_norm)
        # rows over R get a clipping factor the kernels apply as they read them: no copy
        row_stats = {}
        X, clipped = bound_rows(X, R, self.norm_policy, return_clipped=True, stats=row_stats)
        if "max_norm" in row_stats:
            warn_if_rows_far_inside(row_stats["max_norm"], R)
        # the intercept's constant column is added by the kernels as they read each
        # row: X (a memory map, say) is never copied to make room for it
        Xa = WithInterceptColumn(X, R) if self.fit_intercept else X
        dim = Xa.shape[1] * (K if mode == "multinomial" else 1)
        alpha = self._resolve_alpha(int(n_norm), dim, lo, eps_fit, delta / n_fits, nb,
                                    K if mode == "multinomial" else 2)
        events = None
        if self.accountant is not None:
            events = self._planned_events(lo, mode, K, n_norm, alpha, eps_fit, delta / n_fits,
                                          nb, R, Xa.shape[1])
            self.accountant.check_all(events)
        _warn_clipped(clipped, n, R)
        common = dict(alpha=alpha, h=float(self.h), tol=self.tol, max_iter=self.max_iter,
                      n_threads=self.n_threads, solver=self.solver)
        private = dict(delta=delta / n_fits, neighbouring=nb,
                       n_public=n_norm)
        rng = self._fit_generator()
        if self.perturbation == "none":
            if mode == "multinomial":
                from dperm.optim.softmax import minimize_multinomial

                res = minimize_multinomial(Xa, codes, K, alpha=alpha, tol=self.tol,
                                           max_iter=self.max_iter, n_threads=self.n_threads)
                W = res.coef[0]
            else:
                targets = [codes == 1] if mode == "binary" else [codes == k for k in range(K)]
                Y = [np.where(t, 1.0, -1.0) for t in targets]
                res = [erm.minimize(Xa, yk, loss=lo.name, **common) for yk in Y]
                W = np.stack([r.coef for r in res])
                res = res[0]
            record = ReleaseRecord(
                layout="mechanism", mechanism="none",
                loss=lo.name if mode != "multinomial" else MULTINOMIAL, neighbouring=nb,
                epsilon=float("inf"), delta=0.0, extra_l2=0.0, alpha=alpha, data_norm=R,
                h=float(self.h), n_samples=public_count(nb, self.n_public, n),
                curvature=lo.curvature(self.h, R), n_classes=K)
            diagnostics = {"grad_norm": float(np.max(res.grad_norm)),
                           "converged": bool(np.all(res.converged)),
                           "n_iter": int(np.max(res.n_iter))}
        else:
            mech = output_perturbation if self.perturbation == "output" else objective_perturbation
            extra = {} if self.perturbation == "output" else {"perturbation": self.perturbation}
            with warnings.catch_warnings():
                # the add_remove count warning was given above, once
                warnings.filterwarnings("ignore", message="n_public: not given")
                if mode == "multinomial":
                    fit = mech(Xa, codes, loss=MULTINOMIAL, n_classes=K, epsilon=eps_fit,
                               data_norm=R, norm_policy="clip", n_draws=1, random_state=rng,
                               **private, **extra, **common)
                    W, fits = fit.coef[0], [fit]
                else:
                    targets = [codes == 1] if mode == "binary" else [codes == k for k in range(K)]
                    fits = []
                    for t in targets:
                        # one generator for all K fits: K independent noise draws
                        fits.append(mech(Xa, np.where(t, 1.0, -1.0), loss=lo.name,
                                         epsilon=eps_fit, data_norm=R, norm_policy="clip",
                                         n_draws=1, random_state=rng, **private, **extra,
                                         **common))
                    W = np.stack([f.coef[0] for f in fits])
            record = fits[0].record()
            diags = [f.diagnostics() for f in fits]
            diagnostics = {"grad_norm": max(d["grad_norm"] for d in diags),
                           "converged": all(d["converged"] for d in diags),
                           "n_iter": max(d["n_iter"] for d in diags)}
        # the estimator's release: the mechanism's record and the split over K classes
        record = record.replace(
            layout="classifier", n_classes=K,
            multiclass={"binary": None, "multinomial": "multinomial", "ovr": "ovr"}[mode],
            epsilon_total=float(self.epsilon) if self.perturbation != "none" else float("inf"),
            delta_total=delta if self.perturbation != "none" else 0.0)
        diagnostics["rows_clipped"] = int(clipped)
        W = np.asarray(W, dtype=np.float64).reshape(-1, Xa.shape[1])
        if self.fit_intercept:
            coef, intercept = split_intercept(W, R)
        else:
            coef, intercept = W, np.zeros(W.shape[0])
        if mode == "binary":
            coef, intercept = coef[:1], intercept[:1]
        if self.accountant is not None:
            self._spend_events(events)
        # everything below only assigns: a fit that failed above changed nothing
        self.classes_ = classes
        self.coef_ = np.asarray(coef, dtype=np.float64).reshape(-1, X.shape[1])
        self.intercept_ = np.asarray(intercept, dtype=np.float64).reshape(-1)
        self._set_fitted(X.shape[1], feature_names, alpha, record, diagnostics)
        return self

    def _planned_events(self, lo, mode, K, n_norm, alpha, eps_fit, delta_fit, nb, R, d):
        """The accountant events of this fit, from public values only (computed before
        the data are touched, so that a refused fit costs nothing)."""
        from dperm.privacy import calibration

        if delta_fit == 0:
            # pure epsilon: a float is a PureEvent, recorded as the float
            return [eps_fit] * (K if mode == "ovr" else 1)
        # the record this fit will release (public values only), as far as the
        # accountant's event needs it
        rec = ReleaseRecord(
            layout="mechanism", epsilon=eps_fit, delta=delta_fit, mechanism=self.perturbation,
            n_samples=n_norm, alpha=alpha, data_norm=R, neighbouring=nb, h=float(self.h),
            loss=MULTINOMIAL if mode == "multinomial" else lo.name,
            n_classes=K if mode == "multinomial" else 2,
            curvature=softmax_curvature(K, R) if mode == "multinomial"
            else lo.curvature(self.h, R))
        if self.perturbation == "objective":
            cal = calibration.objective_gaussian_calibration(
                eps_fit, delta_fit, n=n_norm, alpha=alpha, data_norm=R,
                curvature=rec["curvature"], neighbouring=nb, n_classes=rec["n_classes"],
                nonincreasing_loss=mode != "multinomial")
            rec = rec.replace(sigma=cal.sigma, extra_l2=cal.extra_l2)
        return privacy_events(rec, K if mode == "ovr" else 1)

    # ------------------------------------------------------------------ predict
    @_oracle.on_workers_if_dask()
    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Signed score f.x + b, shape (n,); positive means ``classes_[1]``.

        Rows longer than data_norm are first shrunk onto the sphere of radius
        data_norm, the same public map the training rows went through (whatever
        norm_policy says: prediction never refuses a row), so a score is linear in
        x only inside that ball.

        A Dask array gives a Dask array (lazy), computed block by block on the
        workers by the same code; so do predict, predict_proba and predict_log_proba.

        Parameters
        ----------
        X : array (n, d), CSR matrix, memory map, DataFrame or Dask array

        Returns
        -------
        array (n,), or (n, K) for K > 2 classes
        """
        X = self._check_fitted_X(X)
        score = _oracle.linear_scores(X, self.coef_, self.intercept_)
        return score[:, 0] if score.shape[1] == 1 else score

    @_oracle.on_workers_if_dask(dtype=lambda self: self.classes_.dtype)
    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted labels, taken from ``classes_`` (the largest score for K > 2).

        Parameters
        ----------
        X : array (n, d), CSR matrix, memory map, DataFrame or Dask array

        Returns
        -------
        array (n,) of labels
        """
        scores = self.decision_function(X)  # checks fitted-ness before classes_ is read
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _has_proba(self):
        if self.loss != "logistic":
            raise AttributeError(f"predict_proba is only available for loss='logistic', not {self.loss!r}")
        return True

    @available_if(_has_proba)
    @_oracle.on_workers_if_dask(out_cols=lambda self: len(self.classes_))
    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities (n, K) in the order of ``classes_`` (logistic loss only).

        Binary: sigmoid of the score.  Multinomial (softmax) model: softmax of the K
        scores.  One-vs-rest: the K sigmoids normalised to sum to 1.

        Parameters
        ----------
        X : array (n, d), CSR matrix, memory map, DataFrame or Dask array

        Returns
        -------
        array (n, K)
        """
        return np.exp(self.predict_log_proba(X))

    @available_if(_has_proba)
    @_oracle.on_workers_if_dask(out_cols=lambda self: len(self.classes_))
    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """log of predict_proba, (n, K) (logistic loss only); finite for every finite score.

        log sigmoid(s) = -log(1 + e^-s) = -logaddexp(0, -s), exact where
        log(predict_proba) would give -inf.  X as for `predict_proba`; returns an (n, K)
        array (a lazy Dask array for a Dask X).
        """
        s = self.decision_function(X)
        if s.ndim == 1:
            return np.column_stack([-np.logaddexp(0.0, s), -np.logaddexp(0.0, -s)])
        from scipy.special import logsumexp

        if self.privacy_.get("multiclass") == "ovr":
            s = -np.logaddexp(0.0, -s)   # log sigmoid of each one-vs-rest score
        return s - logsumexp(s, axis=1, keepdims=True)

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Mean accuracy on (X, y).  With a Dask array X the rows are predicted and
        compared on the workers (y: numpy or Dask, chunked like X's rows there) and
        a float comes back.

        Parameters
        ----------
        X : array (n, d), CSR matrix, memory map, DataFrame or Dask array
        y : array (n,) of labels
        sample_weight : None or array (n,) (not with a Dask array)

        Returns
        -------
        float
        """
        return _oracle.mean_accuracy(X, y, self.predict, super().score, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # sklearn's meaning: "not deterministic given a fixed random_state"; a private fit
        # with a fixed seed is reproducible (random_state=None is what makes it random)
        tags.non_deterministic = False
        tags.classifier_tags.multi_class = True
        tags.input_tags.sparse = True
        return tags
