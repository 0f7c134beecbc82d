"""PrivateLinearClassifier: the scikit-learn face of Algorithms 1 and 2."""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

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
    NONE,
    POSITIVE,
    Options,
    ParameterTable,
    Satisfies,
    bound_rows,
    warn_if_rows_far_inside,
)
from dperm.exceptions import NoiseDominatedWarning, PrivacyLeakWarning
from dperm.losses import MULTINOMIAL_MIN_CLASSES, Loss, get_loss, softmax_curvature
from dperm.optim import erm
from dperm.privacy.accountant import BudgetAccountant, Event
from dperm.privacy.mechanisms import (
    MULTINOMIAL,
    PrivateFit,
    _objective,
    _output,
    normalising_count,
    privacy_events,
    warn_if_count_private,
)
from dperm.privacy.neighbouring import sensitivity_factor
from dperm.privacy.record import ReleaseRecord, public_count
from dperm.privacy.regularization import auto_alpha, expected_noise_shift, noise_dominates
from dperm.sklearn._base import (  # split_intercept: re-exported
    COMMON_PARAMETERS,
    PrivateLinearBase,
    _feature_names,
    _warn_clipped,
    split_intercept,
)

__all__ = ["PrivateLinearClassifier"]

PERTURBATIONS = {"objective", "output", "amp", "none"}


def _check_margin_loss(value: Any, name: str) -> None:
    get_loss(value, regression=False)


def _check_class_list(classes: Any, name: str) -> None:
    """classes: the public label set, at least two distinct labels."""
    arr = np.asarray(classes)
    if arr.ndim != 1 or arr.size < 2 or np.unique(arr).size != arr.size:
        raise ValueError(f"{name}: must list at least two distinct labels, got {classes!r}")


# the checks of y against the label set (stacklevel 4: fit -> _check_classes -> here)
def _label_vector(y: Any) -> np.ndarray:
    """y as a 1-D array of finite labels (a column vector is ravelled, with sklearn's
    DataConversionWarning)."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; "
                      "using y.ravel()", DataConversionWarning, stacklevel=4)
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        raise ValueError("y: contains NaN or infinity")
    return y


def _classes_read_from(y: np.ndarray) -> np.ndarray:
    """The label set read from the private y (no classes given): a PrivacyLeakWarning."""
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
        PrivacyLeakWarning, stacklevel=4)
    return classes


def _check_labels_in(y: np.ndarray, classes: np.ndarray, given: Any) -> None:
    """Every label of y is one of the public classes (of a matching kind)."""
    text_y, text_classes = y.dtype.kind in "OUS", classes.dtype.kind in "OUS"
    if text_y != text_classes:
        raise ValueError(f"y: labels {np.unique(y)[:5].tolist()} do not match "
                         f"classes={given!r}")
    inside = np.isin(y, classes)
    if not inside.all():
        raise ValueError(f"y: values {np.unique(y[~inside])[:5].tolist()} are not in "
                         f"classes={classes.tolist()}")


def _warn_if_one_class(codes: np.ndarray, classes: np.ndarray) -> None:
    """The public classes make the fit well defined, but a model fitted to one label is
    rarely what was meant (a filtered file, the wrong label column): a notice for the
    analyst, as sklearn's classifiers refuse such y outright."""
    if codes.size and (codes == codes[0]).all():
        only, rest = classes.tolist()[codes[0]], classes.tolist()
        warnings.warn(
            f"y: every label is {only!r}: none of the other classes "
            f"{[c for c in rest if c != only][:5]} occurs, "
            "so the model learns to predict one class (plus noise); check the label "
            "column and the rows (this notice is about the private data: do not "
            "publish it)", UserWarning, stacklevel=4)


@dataclass(frozen=True)
class _Plan:
    """What a classifier fit will do, from public values only (decided before the
    private rows are fitted): how K classes are fitted, the privacy split, Lambda."""

    mode: str            # "binary", "multinomial" or "ovr"
    K: int               # classes
    n: int               # rows of X (the analyst's; never released under add_remove)
    n_norm: float        # the public count normalising the objective
    neighbouring: str
    delta: float         # the fit's total delta
    eps_fit: float       # epsilon of each released model (inf: non-private)
    delta_fit: float     # delta of each released model
    loss: Loss
    R: float             # data_norm
    alpha: float = float("nan")

    @property
    def n_fits(self) -> int:
        return self.K if self.mode == "ovr" else 1


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
    tol : float > 0 or None, default None
        The solver's gradient-norm tolerance (None: dperm.optim.erm.minimize's default).
    max_iter : int >= 1 or None, default None
        The solver's iteration cap (None: its default).
    n_threads : int or None, default None
        OpenMP threads for each pass over X (None: every core this process may use);
        the result depends on it, never on the machine's load.
    random_state : None, int or numpy Generator
        None (the default) draws fresh OS entropy on every fit. An int seed is
        for reproducible experiments only: the guarantee does not hold for a
        seeded fit (PrivacyLeakWarning; refused with an accountant). A
        Generator is never reused as is: each fit, and each clone, draws from
        its own spawned child stream.
    accountant : None or BudgetAccountant
        If given, each fit checks its privacy events (epsilon, or the Gaussian
        mechanism's) against it before touching the data, and spends them.
    solver : {"auto", "lbfgs", "newton"}
        Batched L-BFGS or trust-region Newton-CG (dperm.optim.erm.minimize); "auto" is
        L-BFGS today (BENCHMARKS.md). Every solver meets the same tolerance, so
        the guarantee does not depend on the choice.

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

    def __init__(self, loss: str = "logistic", perturbation: str = "objective",
                 epsilon: float = 1.0, delta: float = 0.0, neighbouring: str = "replace_one",
                 n_public: int | None = None, alpha: str | float = "auto", h: float = 0.5,
                 data_norm: float = 1.0, norm_policy: str = "clip", fit_intercept: bool = True,
                 classes: ArrayLike | None = None, tol: float | None = None,
                 max_iter: int | None = None, n_threads: int | None = None,
                 random_state: int | np.random.Generator | None = None,
                 accountant: BudgetAccountant | None = None, solver: str = "auto") -> None:
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
    #: every parameter's declared forms, checked once per fit (`_start_fit`)
    _parameter_constraints: ClassVar[ParameterTable] = {
        "loss": [Satisfies(_check_margin_loss, "a classification loss")],
        "perturbation": [Options(PERTURBATIONS)],
        "epsilon": [POSITIVE],
        **COMMON_PARAMETERS,
        "h": [POSITIVE],
        "classes": [NONE, Satisfies(_check_class_list, "a list of two or more labels")],
    }
    _privacy_param = "perturbation"

    def _check_param_pairs(self) -> None:
        if self.perturbation == "amp" and float(self.delta) == 0:
            raise ValueError("delta: perturbation='amp' is an (epsilon, delta) mechanism; "
                             "give delta > 0 (e.g. 1/n**2)")

    def _equivalent_epsilon(self, n: int, d: int, lo: Loss, eps: float, delta: float, nb: str,
                            n_classes: int) -> float:
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

    def _resolve_alpha(self, n: int, d: int, lo: Loss, eps: float, delta: float, nb: str,
                       n_classes: int = 2, stacklevel: int = 3) -> float:
        """Lambda for this fit: the public rule for "auto", else the user's value (with a
        warning when, by public quantities alone, the noise would swamp the model)."""
        pert = "output" if self.perturbation == "output" else \
            "none" if self.perturbation == "none" else "objective"
        kw: dict[str, Any] = dict(perturbation=pert, loss=lo.name, data_norm=float(self.data_norm),
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
                NoiseDominatedWarning, stacklevel=stacklevel)
        return alpha

    def _check_classes(self, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """(classes (K,), codes (n,) in 0..K-1) with K >= 2; the label set is public
        (classes=) or read from y with a PrivacyLeakWarning."""
        y = _label_vector(y)
        if self.classes is None:
            classes = _classes_read_from(y)
        else:
            classes = np.asarray(self.classes)
            _check_labels_in(y, classes, self.classes)
        codes = np.zeros(y.shape[0], dtype=np.intp)
        for k, c in enumerate(classes):
            codes[y == c] = k
        _warn_if_one_class(codes, classes)
        return classes, codes

    def _multiclass_mode(self, K: int) -> str:
        """How K classes are fitted: "binary" (K = 2), "multinomial" (softmax; the
        logistic loss with delta > 0 or without noise) or "ovr" (one-vs-rest)."""
        if K < MULTINOMIAL_MIN_CLASSES:
            return "binary"
        if self.loss == "logistic" and (float(self.delta) > 0 or self.perturbation == "none"):
            return "multinomial"
        return "ovr"

    # ------------------------------------------------------------------ fit
    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params: Any) -> PrivateLinearClassifier:
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
        self._start_fit(fit_params, "perturbation")     # the parameters, checked once
        feature_names = _feature_names(X)
        X, y, distributed = self._rows_and_labels(X, y)
        codes: np.ndarray | None = None
        if distributed:   # the labels stay on the workers, as class indices
            classes, X = self._worker_classes(X, y)
        else:
            classes, codes = self._check_classes(y)
        plan = self._plan(X.shape[0], classes.size, distributed)
        X, clipped = self._bound_rows(X)
        # the intercept's constant column is added by the kernels as they read each
        # row: X (a memory map, say) is never copied to make room for it
        Xa = WithInterceptColumn(X, plan.R) if self.fit_intercept else X
        designs = self._worker_designs(X, plan) if distributed else None
        plan = replace(plan, alpha=self._plan_alpha(plan, Xa.shape[1]))
        events = self._check_budget(plan, Xa.shape[1])
        _warn_clipped(clipped, plan.n, plan.R)
        rng = self._fit_generator()
        if self.perturbation == "none":
            W, record, diagnostics = self._fit_nonprivate(Xa, codes, plan, designs)
        else:
            W, record, diagnostics = self._fit_private(Xa, codes, plan, rng, designs)
        record = self._classifier_record(record, plan)
        diagnostics["rows_clipped"] = int(clipped)
        coef, intercept = self._coef_intercept(W, plan, Xa.shape[1])
        if events is not None:
            self._spend_events(events)
        # everything below only assigns: a fit that failed above changed nothing
        self.classes_ = classes
        self.coef_ = np.asarray(coef, dtype=np.float64).reshape(-1, X.shape[1])
        self.intercept_ = np.asarray(intercept, dtype=np.float64).reshape(-1)
        self._set_fitted(X.shape[1], feature_names, plan.alpha, record, diagnostics)
        return self

    # the steps of fit, in order
    def _rows_and_labels(self, X: Any, y: Any) -> tuple[Any, Any, bool]:
        """(rows, labels, distributed).  A Dask collection: rows stay on the workers, and
        a Dask y too (`_worker_classes` maps its labels to class indices there).  Local
        rows: validated once here; the mechanism and the solver take them as checked
        (and their norms, once computed)."""
        X, y, distributed = _oracle.labelled_rows(X, y, min_samples=2, describe=True,
                                                  labels_on_workers=True)
        n = X.shape[0]
        if y is None:
            raise ValueError("y: this estimator requires y to be passed, but the target y is None")
        shape = _oracle.label_shape(y)
        if len(shape) == 0 or shape[0] != n:
            raise ValueError(f"y: has {shape[0] if len(shape) else 0} labels but X has {n} rows")
        return X, y, distributed

    def _worker_classes(self, X: Any, y: Any) -> tuple[np.ndarray, Any]:
        """(classes (K,), rows): for a Dask array X, the rows on the workers with the
        class indices of y's labels beside them, mapped and checked chunk by chunk there
        (a label outside the public classes is an error naming its chunk); y (Dask, or
        numpy sent chunked like the rows) never comes to the client.  Without classes=
        the label set is read on the workers (only the set comes back), with the
        PrivacyLeakWarning of the local fit."""
        if self.classes is None:
            classes = _classes_read_from(_oracle.label_set(y))
        else:
            classes = np.asarray(self.classes)
        rows = _oracle.class_rows(X, y, classes, min_samples=2)
        present = np.flatnonzero(rows.class_counts())
        if present.size == 1:
            _warn_if_one_class(present, classes)
        return classes, rows

    def _worker_designs(self, X: Any, plan: _Plan) -> list[Any] | None:
        """Rows on the workers (with class indices) as each binary model's design: class 1
        against class 0 (two classes), or each class against the rest (one-vs-rest), the
        +-1 labels made on the workers (`for_class`); None for the multinomial model,
        which reads the class indices themselves."""
        if plan.mode == "multinomial":
            return None
        ks = [1] if plan.mode == "binary" else list(range(plan.K))
        return [WithInterceptColumn(X.for_class(k), plan.R) if self.fit_intercept
                else X.for_class(k) for k in ks]

    def _plan(self, n: int, K: int, distributed: bool) -> _Plan:
        """How the K classes are fitted and the privacy split over the K models, from
        public values (the count warning, if any, is given here, once); every mode runs on
        local rows and on rows on the Dask workers alike (`distributed`)."""
        mode = self._multiclass_mode(K)
        warn_if_count_private(self.neighbouring, self.n_public, stacklevel=3)
        private = self.perturbation != "none"
        n_fits = K if mode == "ovr" else 1
        delta = float(self.delta)
        return _Plan(mode=mode, K=K, n=n, n_norm=normalising_count(self.n_public, n),
                     neighbouring=self.neighbouring, delta=delta,
                     eps_fit=float(self.epsilon) / n_fits if private else float("inf"),
                     delta_fit=delta / n_fits, loss=get_loss(self.loss),
                     R=float(self.data_norm))

    def _bound_rows(self, X: Any) -> tuple[Any, int]:
        """(rows within data_norm, rows clipped): rows over R get a clipping factor the
        kernels apply as they read them (no copy), or are refused per norm_policy (rows
        on the workers, with their class indices: there)."""
        R = float(self.data_norm)
        row_stats: dict[str, float] = {}
        X, clipped = bound_rows(X, R, self.norm_policy, return_clipped=True, stats=row_stats)
        if "max_norm" in row_stats:
            warn_if_rows_far_inside(row_stats["max_norm"], R, stacklevel=4)
        return X, clipped

    def _plan_alpha(self, plan: _Plan, d: int) -> float:
        """Lambda for the plan's models on d columns (intercept included)."""
        multinomial = plan.mode == "multinomial"
        return self._resolve_alpha(int(plan.n_norm), d * (plan.K if multinomial else 1),
                                   plan.loss, plan.eps_fit, plan.delta_fit, plan.neighbouring,
                                   plan.K if multinomial else 2, stacklevel=4)

    def _planned_alpha(self, n: int, d: int) -> float:
        """Lambda of `_plan` and `_plan_alpha` for the public count n, d columns (intercept
        included) and the public label set (``classes``: K is read from it, never from y)."""
        if self.classes is None:
            raise ValueError("classes: Lambda is planned before the labels are read, from the "
                             "public label set; pass classes=[...]")
        plan = self._plan(n, int(np.asarray(self.classes).size), False)
        return self._plan_alpha(plan, d)

    def _check_budget(self, plan: _Plan, d: int) -> Sequence[Event | float] | None:
        """The fit's accountant events, checked against the budget before the data are
        fitted (None without an accountant)."""
        if self.accountant is None:
            return None
        events = self._planned_events(plan.loss, plan.mode, plan.K, plan.n_norm, plan.alpha,
                                      plan.eps_fit, plan.delta_fit, plan.neighbouring,
                                      plan.R, d)
        self.accountant.check_all(events)
        return events

    def _targets(self, codes: np.ndarray, plan: _Plan) -> list[np.ndarray]:
        """The +-1 labels of each binary model: one (binary) or K (one-vs-rest)."""
        if plan.mode == "binary":
            return [np.where(codes == 1, 1.0, -1.0)]
        return [np.where(codes == k, 1.0, -1.0) for k in range(plan.K)]

    def _binary_rows(self, Xa: Any, codes: np.ndarray | None, plan: _Plan,
                     designs: Sequence[Any] | None) -> list[tuple[Any, np.ndarray | None]]:
        """(rows, +-1 labels) of each binary model: Xa with each of `_targets`, or each of
        `designs`, rows that carry their model's labels themselves (dperm.spark's, or rows
        on the Dask workers from `_worker_designs`: one per class), with labels None."""
        if designs is not None:
            return [(D, None) for D in designs]
        assert codes is not None
        return [(Xa, t) for t in self._targets(codes, plan)]

    def _solver_args(self, plan: _Plan) -> dict[str, Any]:
        return dict(alpha=plan.alpha, h=float(self.h), tol=self.tol, max_iter=self.max_iter,
                    n_threads=self.n_threads, solver=self.solver)

    def _fit_nonprivate(self, Xa: Any, codes: np.ndarray | None, plan: _Plan,
                        designs: Sequence[Any] | None = None
                        ) -> tuple[np.ndarray, ReleaseRecord, dict[str, Any]]:
        """perturbation='none': the exact minimiser(s), no noise, no guarantee.  `designs`:
        the binary models' rows with their labels on them (`_binary_rows`; codes not read)."""
        if plan.mode == "multinomial":
            from dperm.optim.softmax import minimize_multinomial

            # codes None: rows whose class indices are on the executors (dperm.spark)
            res = minimize_multinomial(Xa, codes, plan.K, alpha=plan.alpha, tol=self.tol,
                                       max_iter=self.max_iter, n_threads=self.n_threads)
            W, results = res.coef[0], [res]
        else:
            results = [erm._minimize(Xk, yk, loss=plan.loss.name, **self._solver_args(plan))
                       for Xk, yk in self._binary_rows(Xa, codes, plan, designs)]
            W = np.stack([r.coef for r in results])
        R = plan.R
        record = ReleaseRecord(
            layout="mechanism", mechanism="none",
            loss=plan.loss.name if plan.mode != "multinomial" else MULTINOMIAL,
            neighbouring=plan.neighbouring, epsilon=float("inf"), delta=0.0, extra_l2=0.0,
            alpha=plan.alpha, data_norm=R, h=float(self.h),
            n_samples=public_count(plan.neighbouring, self.n_public, plan.n),
            curvature=plan.loss.curvature(self.h, R), n_classes=plan.K)
        first = results[0]
        diagnostics = {"grad_norm": float(np.max(first.grad_norm)),
                       "converged": bool(np.all(first.converged)),
                       "n_iter": int(np.max(first.n_iter))}
        return W, record, diagnostics

    def _fit_private(self, Xa: Any, codes: np.ndarray | None, plan: _Plan,
                     rng: np.random.Generator | None, designs: Sequence[Any] | None = None
                     ) -> tuple[np.ndarray, ReleaseRecord, dict[str, Any]]:
        """The mechanism on checked parameters: one multinomial model, or one binary
        model per target, all drawing from one generator (independent noise draws).
        `designs`: as for `_fit_nonprivate`."""
        mech = _output if self.perturbation == "output" else _objective
        extra = {} if self.perturbation == "output" else {"perturbation": self.perturbation}
        kw = dict(epsilon=plan.eps_fit, data_norm=plan.R, norm_policy="clip", n_draws=1,
                  random_state=rng, delta=plan.delta_fit, neighbouring=plan.neighbouring,
                  n_public=plan.n_norm, **extra, **self._solver_args(plan))
        fits: list[PrivateFit]
        if plan.mode == "multinomial":
            fits = [mech(Xa, codes, loss=MULTINOMIAL, n_classes=plan.K, **kw)]
            W = fits[0].coef[0]
        else:
            fits = [mech(Xk, yk, loss=plan.loss.name, **kw)
                    for Xk, yk in self._binary_rows(Xa, codes, plan, designs)]
            W = np.stack([f.coef[0] for f in fits])
        diags = [f.diagnostics() for f in fits]
        diagnostics = {"grad_norm": max(d["grad_norm"] for d in diags),
                       "converged": all(d["converged"] for d in diags),
                       "n_iter": max(d["n_iter"] for d in diags)}
        return W, fits[0].record(), diagnostics

    def _classifier_record(self, record: ReleaseRecord, plan: _Plan) -> ReleaseRecord:
        """The estimator's release: the mechanism's record and the split over K classes."""
        private = self.perturbation != "none"
        return record.replace(
            layout="classifier", n_classes=plan.K,
            multiclass={"binary": None, "multinomial": "multinomial", "ovr": "ovr"}[plan.mode],
            epsilon_total=float(self.epsilon) if private else float("inf"),
            delta_total=plan.delta if private else 0.0)

    def _coef_intercept(self, W: np.ndarray, plan: _Plan,
                        d: int) -> tuple[np.ndarray, np.ndarray]:
        """(coef, intercept) on the rows' units: the intercept column's weight mapped back."""
        W = np.asarray(W, dtype=np.float64).reshape(-1, d)
        if self.fit_intercept:
            coef, intercept = split_intercept(W, plan.R)
        else:
            coef, intercept = W, np.zeros(W.shape[0])
        if plan.mode == "binary":
            coef, intercept = coef[:1], intercept[:1]
        return coef, intercept

    def _planned_events(self, lo: Loss, mode: str, K: int, n_norm: float, alpha: float,
                        eps_fit: float, delta_fit: float, nb: str, R: float,
                        d: int) -> Sequence[Event | float]:
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
            n_samples=int(n_norm), alpha=alpha, data_norm=R, neighbouring=nb, h=float(self.h),
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

    def _has_proba(self) -> bool:
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
        log(predict_proba) would give -inf.

        Parameters
        ----------
        X : array_like (n, n_features), sparse matrix, DataFrame or Dask collection
            As for `predict_proba`.

        Returns
        -------
        numpy.ndarray or dask.array.Array
            (n, K) log-probabilities, columns in the order of ``classes_`` (a lazy
            Dask array for a Dask X).
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

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # sklearn's meaning: "not deterministic given a fixed random_state"; a private fit
        # with a fixed seed is reproducible (random_state=None is what makes it random)
        tags.non_deterministic = False
        tags.classifier_tags.multi_class = True
        tags.input_tags.sparse = True
        return tags
