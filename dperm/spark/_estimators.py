"""PrivateLinearClassifier and PrivateLinearRegression as pyspark.ml estimators.

A fit builds `SparkRows` over the DataFrame (dperm.data.spark_rows: the rows stay on the
executors) and runs the local estimator's steps on them -- the same parameter checks,
the public Lambda rule, the mechanism (dperm.privacy.mechanisms) and the same release
record -- so `model.privacy` is the dict the local estimator's `privacy_` would be, and
`model.localModel` is a fitted dperm estimator (for numpy and pandas rows).
"""
import json
import warnings
from dataclasses import replace
from typing import Any

import numpy as np
from pyspark.ml import Estimator, Model
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import (
    HasFeaturesCol,
    HasFitIntercept,
    HasLabelCol,
    HasMaxIter,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasTol,
)
from pyspark.ml.util import (
    DefaultParamsReadable,
    DefaultParamsReader,
    DefaultParamsWritable,
    DefaultParamsWriter,
    MLReadable,
    MLReader,
    MLWritable,
    MLWriter,
)

from dperm.data.design import WithInterceptColumn
from dperm.data.spark_rows import SparkRows
from dperm.data.validation import bound_rows
from dperm.exceptions import NoiseDominatedWarning, PrivacyLeakWarning
from dperm.optim import erm
from dperm.privacy import selection as _selection
from dperm.privacy.accountant import BudgetAccountant
from dperm.sklearn import classifier as _clf
from dperm.sklearn import regressor as _reg
from dperm.sklearn._base import ALPHA_OPTIONS, _warn_clipped

__all__ = ["PrivateLinearClassifier", "PrivateLinearClassificationModel",
           "PrivateLinearRegression", "PrivateLinearRegressionModel"]


# ------------------------------------------------------------------ parameters
def _to_optional_int(value):
    return None if value is None else TypeConverters.toInt(value)


def _to_optional_float(value):
    return None if value is None else TypeConverters.toFloat(value)


def _to_alpha(value):
    if isinstance(value, str):
        if value not in ALPHA_OPTIONS:
            raise TypeError(f"alpha: one of {', '.join(map(repr, ALPHA_OPTIONS))} or a "
                            f"positive number, got {value!r}")
        return value
    return TypeConverters.toFloat(value)


def _to_optional_pair(value):
    if value is None:
        return None
    pair = TypeConverters.toListFloat(value)
    if len(pair) != 2:
        raise TypeError(f"labelBounds: a pair [low, high] or None, got {value!r}")
    return pair


def _to_accountant(value):
    if value is None or isinstance(value, BudgetAccountant):
        return value
    raise TypeError(f"accountant: expected a dperm.BudgetAccountant or None, got "
                    f"{type(value).__name__}")


def _param(name, doc, conv):
    return Param(Params._dummy(), name, doc, typeConverter=conv)


#: Spark parameter -> the local estimator's parameter
_COMMON = {"epsilon": "epsilon", "delta": "delta", "neighbouring": "neighbouring",
           "nPublic": "n_public", "alpha": "alpha", "dataNorm": "data_norm",
           "normPolicy": "norm_policy", "fitIntercept": "fit_intercept", "tol": "tol",
           "maxIter": "max_iter", "randomState": "random_state", "solver": "solver", "h": "h"}


class _PrivateParams(HasFeaturesCol, HasLabelCol, HasPredictionCol, HasFitIntercept, HasMaxIter,
                     HasTol):
    """The parameters both estimators (and their models) share, named as in MLlib; each
    is the local estimator's parameter of the same meaning (dperm.PrivateLinearClassifier)."""

    epsilon = _param("epsilon", "privacy parameter epsilon > 0 of the released model",
                     TypeConverters.toFloat)
    delta = _param("delta", "0 (pure epsilon-DP) or in (0, 1): Gaussian noise for "
                   "(epsilon, delta)-DP", TypeConverters.toFloat)
    neighbouring = _param("neighbouring", "'replace_one' (n public) or 'add_remove' (then "
                          "give nPublic)", TypeConverters.toString)
    nPublic = _param("nPublic", "add_remove only: the public count normalising the objective",
                     _to_optional_int)
    alpha = _param("alpha", "regularization Lambda > 0, 'auto' (a public rule) or 'select' "
                   "(chosen privately within epsilon, every candidate fitted on all rows: "
                   "dperm.privacy.selection; pure epsilon, a mechanism with a Lambda)",
                   _to_alpha)
    dataNorm = _param("dataNorm", "public bound R on a row's Euclidean norm (longer rows are "
                      "clipped or refused, per normPolicy)", TypeConverters.toFloat)
    normPolicy = _param("normPolicy", "'clip' or 'error': rows over dataNorm",
                        TypeConverters.toString)
    randomState = _param("randomState", "None (fresh entropy, the default) or an int seed "
                         "(reproducible, and then NOT private: for tests only)", _to_optional_int)
    solver = _param("solver", "'auto', 'lbfgs' or 'newton'", TypeConverters.toString)
    threadsPerTask = _param("threadsPerTask", "threads of the compiled pass in each Spark task "
                            "(None: spark.task.cpus)", _to_optional_int)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(epsilon=1.0, delta=0.0, neighbouring="replace_one", nPublic=None,
                         alpha="auto", dataNorm=1.0, normPolicy="clip", randomState=None,
                         solver="auto", threadsPerTask=None, fitIntercept=True,
                         maxIter=erm.DEFAULT_MAX_ITER, tol=erm.DEFAULT_TOL)

    def _local_params(self):
        """The local estimator's parameters (dperm.PrivateLinearClassifier / Regression)."""
        out = {}
        for name, local in {**_COMMON, **self._LOCAL}.items():
            out[local] = self.getOrDefault(name)
        return out


class _HasAccountant(Params):
    """The estimators' ``accountant`` (not the models': a fitted model spends nothing).

    A dperm.BudgetAccountant is runtime state, a ledger shared by every fit it is passed
    to: the Param holds the object itself (``copy()``, a Pipeline's or CrossValidator's
    copies of the estimator share it, never duplicate it), and it is never written by
    ``save()`` (an estimator loaded from disk has none until ``setAccountant``)."""

    accountant = _param("accountant", "None or a dperm.BudgetAccountant: each fit checks its "
                        "whole cost against it before the rows are read and is charged once "
                        "per release, as the local estimator's (runtime state: not saved)",
                        _to_accountant)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(accountant=None)


#: Params that are runtime state, never written by an estimator's or a model's save()
_RUNTIME_PARAMS = ("accountant",)


def _accessors(cls):
    """MLlib's getX / setX for every parameter of cls (and its bases)."""
    for p in cls().params:
        cap = p.name[0].upper() + p.name[1:]
        if not hasattr(cls, "get" + cap):
            setattr(cls, "get" + cap, lambda self, _n=p.name: self.getOrDefault(_n))
        if not hasattr(cls, "set" + cap):
            def setter(self, value, _n=p.name):
                return self._set(**{_n: value})
            setattr(cls, "set" + cap, setter)
    return cls


class _ClassifierParams(_PrivateParams, HasRawPredictionCol, HasProbabilityCol):
    loss = _param("loss", "'logistic', 'huber' or 'smooth_hinge'", TypeConverters.toString)
    perturbation = _param("perturbation", "'objective', 'output', 'amp' (delta > 0) or "
                          "'none' (non-private)", TypeConverters.toString)
    h = _param("h", "width of the Huber / smoothed-hinge transition", TypeConverters.toFloat)
    classes = _param("classes", "the public label values of labelCol: [negative, positive], "
                     "or K > 2 values (fitted as dperm.PrivateLinearClassifier fits them: one "
                     "multinomial model or one-vs-rest, see multiClass)",
                     TypeConverters.toListFloat)
    multiClass = _param("multiClass", "K > 2 classes: 'auto' (as dperm.PrivateLinearClassifier: "
                        "one multinomial (softmax) model for the logistic loss with delta > 0 "
                        "or perturbation 'none', else one-vs-rest) or 'ovr' (always one-vs-rest: "
                        "K binary models, epsilon / K and delta / K each)",
                        TypeConverters.toString)
    _LOCAL = {"loss": "loss", "perturbation": "perturbation", "classes": "classes"}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(loss="logistic", perturbation="objective", h=0.5, classes=[0.0, 1.0],
                         multiClass="auto")


class _RegressionParams(_PrivateParams):
    method = _param("method", "'auto', 'objective', 'output', 'adassp' (delta > 0) or 'none' "
                    "(non-private)", TypeConverters.toString)
    h = _param("h", "width of the pseudo-Huber loss (None: the label bound)", _to_optional_float)
    labelBound = _param("labelBound", "public bound B on |label| (beyond it, clipped; None: "
                        "1.0, or the half-width of labelBounds)", _to_optional_float)
    labelBounds = _param("labelBounds", "None or a public [low, high] of the label: the fit "
                         "sees label - (low + high) / 2 within the half-width (give labelBound "
                         "or labelBounds)", _to_optional_pair)
    _LOCAL = {"method": "method", "labelBound": "label_bound", "labelBounds": "label_bounds"}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(method="auto", h=None, labelBound=None, labelBounds=None)


def _init(self, kwargs):
    unknown = sorted(set(kwargs) - {p.name for p in self.params})
    if unknown:
        raise TypeError(f"{type(self).__name__}: unknown parameter(s) {unknown}; known: "
                        f"{sorted(p.name for p in self.params)}")
    self._set(**kwargs)


# ------------------------------------------------------------------ the fits
#: the values of the Spark classifier's multiClass parameter
MULTI_CLASS = ("auto", "ovr")


def _one_vs_rest(local, plan):
    """The plan as one-vs-rest (multiClass='ovr' where the local estimator would fit the
    multinomial model): K binary models, each with epsilon / K and delta / K, as the local
    estimator splits a one-vs-rest fit (`PrivateLinearClassifier._plan`)."""
    private = local.perturbation != "none"
    return replace(plan, mode="ovr",
                   eps_fit=float(local.epsilon) / plan.K if private else float("inf"),
                   delta_fit=plan.delta / plan.K)


def _fit_classifier(local, rows, multi_class="auto"):
    """dperm.PrivateLinearClassifier.fit's steps (the count warning and the privacy split
    of `_plan`, Lambda, the mechanism, the record, the intercept) on rows whose labels
    (+-1, or the class indices) are on the executors; sets local's fitted attributes.
    K > 2 classes, as locally (multi_class "auto"): the logistic loss with delta > 0 or
    no noise is one multinomial (softmax) model over all classes, its passes the
    softmax pass on the executors (SparkRows.softmax_sums); otherwise (or with
    multi_class "ovr") K binary fits, one design per class (`SparkRows.for_class`), each
    with epsilon / K (and delta / K), one generator for the K noise draws."""
    if multi_class not in MULTI_CLASS:
        raise ValueError(f"multiClass: {multi_class!r} is not valid; choose 'auto' (as "
                         "dperm.PrivateLinearClassifier) or 'ovr' (one-vs-rest)")
    local._start_fit({}, "perturbation")     # the parameters, checked once
    n = rows.shape[0]
    if n < 2:
        raise ValueError(f"featuresCol: needs at least 2 samples; found {n}")
    classes = np.asarray(local.classes, dtype=np.float64)
    K = classes.size
    plan = local._plan(n, K, False)
    if plan.mode == "multinomial" and multi_class == "ovr":
        plan = _one_vs_rest(local, plan)
    X, clipped = bound_rows(rows, plan.R, local.norm_policy, return_clipped=True)
    if plan.mode == "multinomial":   # one design: every class's rows, their indices
        targets = [X]
    else:
        targets = [X] if plan.mode == "binary" else [X.for_class(k) for k in range(K)]
    designs = [WithInterceptColumn(t, plan.R) if local.fit_intercept else t for t in targets]
    d = designs[0].shape[1]
    plan = replace(plan, alpha=local._plan_alpha(plan, d))
    events = local._check_budget(plan, d)      # the local fit's events (None: no accountant)
    _warn_clipped(clipped, n, plan.R)
    rng = local._fit_generator()
    binary = None if plan.mode == "multinomial" else designs
    if local.perturbation == "none":
        W, record, diagnostics = local._fit_nonprivate(designs[0], None, plan, binary)
    else:
        W, record, diagnostics = local._fit_private(designs[0], None, plan, rng, binary)
    diagnostics["rows_clipped"] = int(clipped)
    coef, intercept = local._coef_intercept(W, plan, d)
    if events is not None:
        local._spend_events(events)            # once per release, as the local fit
    local.classes_ = classes
    local.coef_ = np.asarray(coef, dtype=np.float64).reshape(-1, X.shape[1])
    local.intercept_ = np.asarray(intercept, dtype=np.float64).reshape(-1)
    local._set_fitted(X.shape[1], None, plan.alpha, local._classifier_record(record, plan),
                      diagnostics)
    return local


def _fit_regression(local, rows):
    """dperm.PrivateLinearRegression.fit's steps (`_plan`: the mechanism, the count
    warning, Lambda; objective, output, AdaSSP or none; the record; the intercept and the
    public centre) on rows whose targets (minus the public centre of label_bounds, clipped
    to the label bound) are on the executors, so the steps get no targets (yc None); sets
    local's fitted attributes."""
    local._start_fit({}, "method")     # the parameters, checked once
    n = rows.shape[0]
    if n < 2:
        raise ValueError(f"featuresCol: needs at least 2 samples; found {n}")
    B, centre = local._label()
    R = float(local.data_norm)
    X, clipped = bound_rows(rows, R, local.norm_policy, return_clipped=True)
    Xa = WithInterceptColumn(X, R) if local.fit_intercept else X
    plan = local._plan(n, Xa.shape[1], B, centre)
    events = local._check_budget(plan, Xa.shape[1])
    _warn_clipped(clipped, n, R)
    _reg._warn_labels_clipped(rows.labels_clipped, n, B, centre)
    step = {"adassp": local._fit_adassp, "none": local._fit_nonprivate}.get(
        plan.method, local._fit_private)
    W, record, diagnostics = step(Xa, None, plan)
    diagnostics.update(rows_clipped=int(clipped), labels_clipped=int(rows.labels_clipped))
    coef, intercept = local._coef_intercept(W, plan)
    if events is not None:
        local._spend_events(events)
    local.coef_ = np.asarray(coef, dtype=np.float64).reshape(-1)
    local.intercept_ = float(intercept)
    local._set_fitted(X.shape[1], None, plan.alpha, local._regression_record(record, plan),
                      diagnostics)
    return local


def _classifier_budget_plan(local, n, n_features, multi_class="auto"):
    """(plan with Lambda, d of the design) that `_fit_classifier` will fit, for n rows of
    n_features features: the same `_plan` and `_plan_alpha` (and the `multiClass` routing),
    from public values only, for the accountant's check before the rows are read."""
    plan = local._plan(n, np.asarray(local.classes).size, False)
    if plan.mode == "multinomial" and multi_class == "ovr":
        plan = _one_vs_rest(local, plan)
    d = n_features + (1 if local.fit_intercept else 0)
    return replace(plan, alpha=local._plan_alpha(plan, d)), d


def _regression_budget_plan(local, n, n_features):
    """(plan, d of the design) that `_fit_regression` will fit (the same `_plan`)."""
    d = n_features + (1 if local.fit_intercept else 0)
    return local._plan(n, d, *local._label()), d


def _feature_width(dataset, col):
    """The number of features of `col`: its ML attributes' ``num_attrs`` (VectorAssembler
    writes them: schema metadata, no job), else the length of one row's vector (a job
    that reads one row's features column, for its length only)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if col not in dataset.schema.names:
        raise ValueError(f"featuresCol: the DataFrame has no column {col!r} "
                         f"(columns: {dataset.schema.names})")
    field = dataset.schema[col]
    width = (field.metadata or {}).get("ml_attr", {}).get("num_attrs")
    if width is not None:
        return int(width)
    if type(field.dataType).__name__ == "VectorUDT":
        from pyspark.ml.functions import vector_to_array

        x = vector_to_array(F.col(col), "float64")
    elif isinstance(field.dataType, T.ArrayType):
        x = F.col(col)
    else:
        raise TypeError(f"featuresCol: column {col!r} has type "
                        f"{field.dataType.simpleString()}; expected a vector or an array of "
                        "numbers")
    row = dataset.select(F.size(x).alias("d")).head()
    return 0 if row is None else int(row["d"])


class _PrivateEstimator(Estimator, DefaultParamsReadable, DefaultParamsWritable):
    def _local_params(self):
        """The local estimator's parameters, the accountant included."""
        return {**super()._local_params(), "accountant": self.getOrDefault("accountant")}

    def _fit(self, dataset):
        local = self._local_class(**self._local_params())
        local._check_params()
        select = isinstance(local.alpha, str) and local.alpha == "select"
        if select:
            # Lambda chosen privately: the local fit's refusals and the selection's whole
            # epsilon checked against the accountant, before anything is read
            _selection.check_selection(local)
        elif local.accountant is not None:
            # before anything is read: the local fit's refusals (a non-private fit, a
            # seed: with an accountant neither warns, both raise) and the budget
            local._start_fit({}, self._privacy_param)
            self._check_budget_before_reading(local, dataset)
        # the fit's clipping onto dataNorm is counted (or refused) as the rows are read
        rows = SparkRows(dataset, self.getFeaturesCol(), self.getLabelCol(), **self._rows_kw(local),
                         n_threads=self.getOrDefault("threadsPerTask"),
                         bound=(local.data_norm, local.norm_policy))
        try:
            if select:
                # the local rule (dperm.privacy.selection.fit_with_selection), each run
                # and the final model fitted by this estimator's steps on the executors,
                # each run scored there (SparkRows.block_sum)
                _selection.fit_selected(local, rows, None,
                                        fit=lambda est: self._fit_local(est, rows))
            else:
                self._fit_local(local, rows)
        finally:
            rows.close()
        model = self._model_class(local)
        self._copyValues(model)
        return model

    def _check_budget_before_reading(self, local, dataset):
        """The accountant's check of the fit's events (the local estimator's, for this
        fit's plan) before the rows are read; the fit checks them again on the rows'
        shape, just before the mechanism, and is charged them once, as the local fit.

        Pure epsilon (delta = 0): the events are epsilon (epsilon / K for each of K
        one-vs-rest models) whatever the rows: nothing is read.  delta > 0: the Gaussian
        events depend on the public count and the number of features, so this check
        reads them, and only them: ``nPublic`` (else the row count, a count job) and
        the features' width (`_feature_width`)."""
        if float(local.delta) == 0.0:
            n, width = 2, 1                      # pure events: the same for every shape
        else:
            n_public = local.n_public
            n = int(n_public) if n_public is not None else int(dataset.count())
            width = _feature_width(dataset, self.getFeaturesCol())
        with warnings.catch_warnings():
            # the count and Lambda warnings are the fit's own, given once when it plans
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            warnings.simplefilter("ignore", NoiseDominatedWarning)
            plan, d = self._budget_plan(local, max(n, 2), width)
        local._check_budget(plan, d)

    def write(self) -> MLWriter:
        """DefaultParamsWriter without the runtime state (the accountant)."""
        return _EstimatorWriter(self)


class _EstimatorWriter(DefaultParamsWriter):
    """An estimator's save(): MLlib's default layout, every Param but the runtime ones
    (`_RUNTIME_PARAMS`: a BudgetAccountant is a live ledger, not a setting)."""

    def saveImpl(self, path):
        inst = self.instance
        params = {p.name: v for p, v in inst._paramMap.items() if p.name not in _RUNTIME_PARAMS}
        DefaultParamsWriter.saveMetadata(inst, path, self.sparkSession, paramMap=params)


@_accessors
class PrivateLinearClassifier(_PrivateEstimator, _ClassifierParams, _HasAccountant):
    """Differentially private binary linear classifier on a Spark DataFrame: the
    mechanisms of dperm.PrivateLinearClassifier (objective or output perturbation,
    pure epsilon or (epsilon, delta); AMP; "none" for the non-private baseline) with the
    passes over the rows on the executors.  accountant: a dperm.BudgetAccountant,
    checked for the fit's whole cost before any row is read and charged as the local
    estimator is (runtime state: not saved).

    featuresCol: a vector (VectorAssembler's) or array column with ||x|| <= dataNorm;
    labelCol: one of the public values in `classes` (default [0.0, 1.0], MLlib's
    convention; classes[1] is the positive class).  K > 2 classes: as
    dperm.PrivateLinearClassifier fits them -- one multinomial (softmax) model for the
    logistic loss with delta > 0 or perturbation "none" (its passes on the executors),
    one-vs-rest otherwise (K binary models, epsilon / K and delta / K each) -- or
    one-vs-rest always with multiClass="ovr".  The model adds
    predictionCol (a value of `classes`), rawPredictionCol ([-score, score], or the K
    scores) and, for the logistic loss, probabilityCol (the softmax of the K scores for
    a multinomial model, the K sigmoids normalised for one-vs-rest).  An int randomState makes the
    fit reproducible and voids the guarantee (tests and experiments only).
    """

    _local_class = _clf.PrivateLinearClassifier
    _privacy_param = "perturbation"

    def _budget_plan(self, local, n, n_features):
        return _classifier_budget_plan(local, n, n_features, self.getOrDefault("multiClass"))

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        _init(self, kwargs)

    def _rows_kw(self, local):
        classes = tuple(self.getOrDefault("classes"))
        return {"task": "binary" if len(classes) == 2 else "multiclass", "classes": classes}

    def _fit_local(self, local, rows):
        return _fit_classifier(local, rows, self.getOrDefault("multiClass"))

    @property
    def _model_class(self):
        return PrivateLinearClassificationModel


@_accessors
class PrivateLinearRegression(_PrivateEstimator, _RegressionParams, _HasAccountant):
    """Differentially private linear regression (the pseudo-Huber loss of
    dperm.PrivateLinearRegression) on a Spark DataFrame: objective or output
    perturbation (method "auto" picks objective), the passes on the executors, or
    AdaSSP (method "adassp", delta > 0: X^T X and X^T y in one pass).

    featuresCol: rows with ||x|| <= dataNorm; labelCol: real targets, clipped to
    [-labelBound, labelBound], or, with labelBounds = [low, high], centred on the public
    midpoint and clipped to the half-width (as the local label_bounds).  The model adds
    predictionCol (f.x + b).  accountant: as for PrivateLinearClassifier."""

    _local_class = _reg.PrivateLinearRegression
    _privacy_param = "method"
    _budget_plan = staticmethod(_regression_budget_plan)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        _init(self, kwargs)

    def _rows_kw(self, local):
        B, centre = local._label()
        return {"task": "regression", "label_bound": B, "label_centre": centre}

    def _fit_local(self, local, rows):
        return _fit_regression(local, rows)

    @property
    def _model_class(self):
        return PrivateLinearRegressionModel


# ------------------------------------------------------------------ the models
def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v)
    return v


class _PrivateModel(Model, MLWritable, MLReadable):
    """A fitted model: the local dperm estimator (`localModel`) and its Spark transform."""

    def __init__(self, local: Any = None) -> None:
        super().__init__()
        self._local = local

    @property
    def localModel(self) -> Any:
        """The fitted dperm estimator (dperm.PrivateLinearClassifier / Regression): the
        same coefficients, for numpy and pandas rows."""
        return self._local

    @property
    def privacy(self) -> dict[str, Any]:
        """The release record: the local estimator's privacy_ (public values only)."""
        return dict(self._local.privacy_)

    @property
    def numFeatures(self) -> int:
        return int(self._local.n_features_in_)

    def _coef_matrix(self):
        return np.atleast_2d(np.asarray(self._local.coef_, dtype=np.float64))

    def _intercepts(self):
        return np.asarray(self._local.intercept_, dtype=np.float64).reshape(-1)

    def _one(self, what):
        if self._coef_matrix().shape[0] != 1:
            kind = "rows of coefficients (a multinomial model)" if \
                self._local.privacy_.get("multiclass") == "multinomial" else "one-vs-rest models"
            raise ValueError(f"{what}: this model has {self._coef_matrix().shape[0]} {kind}; "
                             "use coefficientMatrix and interceptVector")

    def _coef(self):
        self._one("coefficients")
        return self._coef_matrix()[0]

    def _intercept(self):
        self._one("intercept")
        return float(self._intercepts()[0])

    @property
    def coefficients(self) -> Any:
        from pyspark.ml.linalg import DenseVector

        return DenseVector(self._coef())

    @property
    def intercept(self) -> float:
        return self._intercept()

    def _score(self, dataset):
        """f.x' + b for each row (one model), x' = x clipped onto the ball of radius
        dataNorm (the public map the training rows went through), in Spark SQL."""
        return self._scores(dataset)[0]

    def _scores(self, dataset):
        """[f_k.x' + b_k for each model k] as Spark SQL columns (_score)."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        col = self.getFeaturesCol()
        if col not in dataset.schema.names:
            raise ValueError(f"featuresCol: the DataFrame has no column {col!r}")
        ft = dataset.schema[col].dataType
        if type(ft).__name__ == "VectorUDT":
            from pyspark.ml.functions import vector_to_array

            x = vector_to_array(F.col(col), "float64")
        elif isinstance(ft, T.ArrayType) and isinstance(ft.elementType, T.NumericType):
            x = F.col(col).cast("array<double>")
        else:
            raise TypeError(f"featuresCol: column {col!r} has type {ft.simpleString()}; "
                            "expected a vector or an array of numbers")
        C, b = self._coef_matrix(), self._intercepts()
        d = C.shape[1]
        R = float(self.getOrDefault("dataNorm"))
        norm = F.sqrt(F.aggregate(x, F.lit(0.0), lambda acc, v: acc + v * v))
        # bound_rows' factor: R / ||x|| shrunk by 2^-40 for rows over the bound
        factor = F.when(norm > R, F.lit(R) / norm * F.lit(1.0 - 2.0**-40)).otherwise(F.lit(1.0))
        out = []
        for coef, icpt in zip(C, b):
            w = F.array(*[F.lit(float(c)) for c in coef])
            dot = F.aggregate(F.zip_with(x, w, lambda a, b: a * b), F.lit(0.0),
                              lambda acc, v: acc + v)
            score = dot * factor + F.lit(float(icpt))
            out.append(F.when(F.size(x) == d, score).otherwise(F.raise_error(F.lit(
                f"featuresCol: a row does not have {d} features (the model's)"))))
        return out

    def write(self) -> MLWriter:
        return _ModelWriter(self)

    @classmethod
    def read(cls) -> MLReader:
        return _ModelReader(cls)


@_accessors
class PrivateLinearClassificationModel(_PrivateModel, _ClassifierParams):
    """A fitted PrivateLinearClassifier: transform() adds predictionCol (a value of
    `classes`), rawPredictionCol and, for the logistic loss, probabilityCol."""

    _local_class = _clf.PrivateLinearClassifier

    @property
    def numClasses(self) -> int:
        return int(len(self._local.classes_))

    @property
    def coefficientMatrix(self) -> Any:
        """The coefficients, (1, d) for two classes, (K, d) for K > 2 (one row per class:
        the multinomial model's, or the K one-vs-rest models')."""
        from pyspark.ml.linalg import DenseMatrix

        C = self._coef_matrix()
        return DenseMatrix(C.shape[0], C.shape[1], C.ravel().tolist(), isTransposed=True)

    @property
    def interceptVector(self) -> Any:
        from pyspark.ml.linalg import DenseVector

        return DenseVector(self._intercepts())

    def _transform(self, dataset):
        if self.numClasses > 2:
            return self._transform_ovr(dataset)
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as F

        score = self._score(dataset)
        classes = [float(c) for c in self._local.classes_]
        out = dataset.withColumn("__dperm_score", score)
        s = F.col("__dperm_score")
        if self.getRawPredictionCol():
            out = out.withColumn(self.getRawPredictionCol(), array_to_vector(F.array(-s, s)))
        if self.getProbabilityCol() and self._local.loss == "logistic":
            p = F.when(s >= 0, 1.0 / (1.0 + F.exp(-s))).otherwise(F.exp(s) / (1.0 + F.exp(s)))
            out = out.withColumn(self.getProbabilityCol(), array_to_vector(F.array(1.0 - p, p)))
        if self.getPredictionCol():
            out = out.withColumn(self.getPredictionCol(),
                                 F.when(s > 0, F.lit(classes[1])).otherwise(F.lit(classes[0])))
        return out.drop("__dperm_score")

    def _transform_ovr(self, dataset):
        """K scores (one-vs-rest or the multinomial model): prediction the class of the
        largest (the first of ties, as numpy's argmax), probability the local
        estimator's predict_proba: the softmax of the scores for a multinomial model,
        the K sigmoids normalised to sum to 1 for one-vs-rest."""
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as F

        classes = [float(c) for c in self._local.classes_]
        out = dataset.withColumn("__dperm_scores", F.array(*self._scores(dataset)))
        s = F.col("__dperm_scores")
        if self.getRawPredictionCol():
            out = out.withColumn(self.getRawPredictionCol(), array_to_vector(s))
        if self.getProbabilityCol() and self._local.loss == "logistic" and \
                self._local.privacy_.get("multiclass") == "multinomial":
            top = F.array_max(s)
            ex = F.transform(s, lambda v: F.exp(v - top))
            total = F.aggregate(ex, F.lit(0.0), lambda acc, v: acc + v)
            out = out.withColumn(self.getProbabilityCol(),
                                 array_to_vector(F.transform(ex, lambda v: v / total)))
        elif self.getProbabilityCol() and self._local.loss == "logistic":
            sig = F.transform(s, lambda v: F.when(v >= 0, 1.0 / (1.0 + F.exp(-v)))
                              .otherwise(F.exp(v) / (1.0 + F.exp(v))))
            total = F.aggregate(sig, F.lit(0.0), lambda acc, v: acc + v)
            out = out.withColumn(self.getProbabilityCol(),
                                 array_to_vector(F.transform(sig, lambda v: v / total)))
        if self.getPredictionCol():
            k = F.array_position(s, F.array_max(s)).cast("int")      # 1-based
            out = out.withColumn(self.getPredictionCol(),
                                 F.element_at(F.array(*[F.lit(c) for c in classes]), k))
        return out.drop("__dperm_scores")


@_accessors
class PrivateLinearRegressionModel(_PrivateModel, _RegressionParams):
    """A fitted PrivateLinearRegression: transform() adds predictionCol, f.x + b (rows
    longer than dataNorm first shrunk onto the ball, as in training)."""

    _local_class = _reg.PrivateLinearRegression

    def _transform(self, dataset):
        if not self.getPredictionCol():
            return dataset
        return dataset.withColumn(self.getPredictionCol(), self._score(dataset))


# ------------------------------------------------------------------ persistence
#: parameters never written to a model file: a seed is not a public part of a release
_NOT_SAVED = ("randomState",)
MODEL_FORMAT = "dperm.spark"
MODEL_FORMAT_VERSION = 2


class _ModelWriter(MLWriter):
    """Spark's model layout (path/metadata, one JSON line that DefaultParamsReader reads)
    holding the Spark parameters (not the seed) and, under "model", the dperm model file
    of the fitted local estimator (dperm.model_io.model_to_dict, what dperm.save_model
    writes: coefficients, public parameters, the release record) -- public values only;
    no time of saving, no fit diagnostics."""

    def __init__(self, instance):
        super().__init__()
        self.instance = instance

    def saveImpl(self, path):
        from dperm.model_io import model_to_dict, model_to_json

        m = self.instance
        params = {p.name: _jsonable(m.getOrDefault(p)) for p in m.params
                  if m.isDefined(p) and p.name not in _NOT_SAVED}
        meta = {"class": f"{type(m).__module__}.{type(m).__name__}",
                "sparkVersion": self.sparkSession.version, "uid": m.uid, "paramMap": params,
                "defaultParamMap": {}, "format": MODEL_FORMAT,
                "format_version": MODEL_FORMAT_VERSION,
                "model": json.loads(model_to_json(model_to_dict(m._local)))}
        text = json.dumps(meta, separators=(",", ":"))
        self.sparkSession.createDataFrame([(text,)], schema=["value"]).coalesce(1).write.text(
            path + "/metadata")


class _ModelReader(MLReader):
    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path):
        from dperm.model_io import MODEL_FORMAT as DPERM_FORMAT
        from dperm.privacy.record import record_from_dict

        meta = DefaultParamsReader.loadMetadata(path, self.sc)
        if meta.get("format") != MODEL_FORMAT or meta.get("format_version") != \
                MODEL_FORMAT_VERSION:
            raise ValueError(f"path: {path!r} is not a dperm.spark model of format version "
                             f"{MODEL_FORMAT_VERSION} (format {meta.get('format')!r}, version "
                             f"{meta.get('format_version')!r})")
        obj = meta["model"]
        if obj.get("format") != DPERM_FORMAT:
            raise ValueError(f"path: {path!r}: the embedded model is not a dperm model file")
        model = self.cls()
        for name, value in meta["paramMap"].items():
            model._set(**{name: value})
        local = self.cls._local_class(**model._local_params())
        classifier = obj.get("task", "classification") == "classification"
        coef = np.asarray(obj["coef"], dtype=np.float64)
        if classifier:
            local.classes_ = np.asarray(obj["classes"], dtype=np.float64)
            K = len(obj["classes"])
            local.coef_ = coef.reshape(1 if K == 2 else K, -1)
            local.intercept_ = np.asarray(obj["intercept"], dtype=np.float64).reshape(-1)
        else:
            local.coef_ = coef.reshape(-1)
            local.intercept_ = float(obj["intercept"])
        local.n_features_in_ = int(obj["training"]["n_features"])
        rec = record_from_dict(obj["privacy"], "classifier" if classifier else "regression")
        local.alpha_ = rec["alpha"]
        local.release_record_ = rec
        model._local = local
        return model
