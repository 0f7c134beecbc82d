"""Model files: :func:`save_model` and :func:`load_model`, the library's publishable form
of a fitted model.

The format is the versioned JSON that ``dperm fit`` writes and ``dperm predict`` reads
(the command line calls this module).  A model file holds only what may be published:
the noisy coefficients, the public schema that encodes a row, the public parameters of
the estimator and its release record (dperm.privacy.record: ``privacy``), and public
sizes.  It never holds the solver's diagnostics (``fit_diagnostics_``), a seed or a
timing: a pickle of a fitted estimator or pipeline does carry ``fit_diagnostics_``
(statistics of the private rows, for the analyst who holds the data), so a pickle is
for the analyst, and the model file is what to publish.

Format (``"format": "dperm.linear-model"``):

* version 1 (read only): the first binary classifier files (mapped to version 2 terms);
* version 2: a classifier (two or K > 2 classes);
* version 3: a regression model (``"task": "regression"``);
* version 4: a model saved from an estimator without a schema (``"schema": null``): its
  rows are the estimator's own features, clipped to the row-norm bound
  ``preprocessing.row_norm_bound`` before scoring, exactly as the estimator predicts.
  ``dperm predict`` refuses it (it reads CSV cells through a schema).

Versions 2 and 3 encode a row with the public schema (``PublicSchema.encode``, norm <= 1;
an unknown category is an error naming its column, as in ``dperm predict``, unless the
model is loaded with ``unknown="ignore"``, the all-zero group of ``--unknown zero``) and
score it as
``x @ coef + intercept``: the computation of ``dperm predict``, which
:class:`LoadedModel` repeats so that both give the same numbers bit for bit.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dperm.privacy.record import ReleaseRecord, record_from_dict, record_to_dict
from dperm.schema import PublicSchema

__all__ = ["save_model", "load_model", "LoadedModel", "ModelFormatError", "model_to_dict",
           "model_file", "read_model", "model_to_json", "MODEL_FORMAT", "MODEL_FORMAT_VERSION",
           "MODEL_FORMAT_VERSION_REGRESSION", "MODEL_FORMAT_VERSION_RAW", "MODEL_FORMAT_VERSIONS",
           "PRIVACY_KEYS", "check_format_header", "upgrade_v1"]

MODEL_FORMAT = "dperm.linear-model"
#: version 2: the privacy record of (epsilon, delta) mechanisms ("delta" is the DP
#: parameter, the paper's extra regulariser Delta is "extra_l2"; noise, neighbouring,
#: sigma, ...), the estimator's delta / neighbouring / n_public, and K > 2 classes.
MODEL_FORMAT_VERSION = 2
#: version 3: a regression model ("task": "regression", "classes": null, one coef vector,
#: a float intercept, the label bound); classifiers are still written as version 2, so
#: every file an older dperm reads is unchanged, and an older dperm refuses a regression
#: file by its version instead of misreading it
MODEL_FORMAT_VERSION_REGRESSION = 3
#: version 4: no schema ("schema": null): rows are the estimator's features, clipped to
#: preprocessing.row_norm_bound (save_model of an estimator fitted without a
#: PublicBoundsTransformer in front); an older dperm refuses it by its version
MODEL_FORMAT_VERSION_RAW = 4
#: versions read (version 1 records are mapped to version 2 semantics; a file without
#: "task" is a classifier)
MODEL_FORMAT_VERSIONS = (1, 2, 3, 4)

#: the keys of a version 2 privacy record (the classifier layout of
#: dperm.privacy.record); a version 1 record is read into this form
PRIVACY_KEYS = ("mechanism", "noise", "loss", "neighbouring", "epsilon", "delta",
                "epsilon_prime", "extra_l2", "beta", "sigma", "sigma_output", "grid", "alpha",
                "data_norm", "h", "n_samples", "curvature", "n_classes", "multiclass",
                "epsilon_total", "delta_total")


class ModelFormatError(ValueError):
    """A file that is not a dperm model, or not a valid one; the message names the file
    and what is wrong."""


# ----------------------------------------------------------------------------- writing
def _jsonable(v: Any) -> Any:
    """Plain JSON values; non-finite floats become the strings 'inf', '-inf', 'nan'."""
    if isinstance(v, ReleaseRecord):
        return _jsonable(record_to_dict(v))
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, np.generic):
        return v.item()
    return v


def model_to_json(model: dict) -> str:
    """The text of a model file (or of any JSON object dperm writes)."""
    return json.dumps(_jsonable(model), indent=2, allow_nan=False) + "\n"


def _preprocessing(schema: PublicSchema, **extra: Any) -> dict[str, Any]:
    """The model file's description of the public preprocessing (public values only)."""
    return {
        "numeric": "clip to [low, high], then (v - low) / (high - low), in schema order",
        "categorical": "one-hot in the order of the schema's lists, after the numeric columns",
        "unknown_category": "an error; all-zero group with predict --unknown zero",
        "row_divisor": schema.row_divisor,
        "row_norm_bound": 1.0,
        **extra,
    }


def model_file(*, task: str, estimator: dict, record: ReleaseRecord, coef: Any, intercept: Any,
               schema: PublicSchema | None, classes: Iterable[Any] | None = None,
               feature_names: Sequence[str] | None = None,
               row_norm_bound: float = 1.0, data: str | None = None,
               read_from_data: Iterable[str] = (),
               budget: ReleaseRecord | None = None) -> dict:
    """THE model file's content, from public parts only (the one place it is assembled,
    for ``dperm fit`` and :func:`save_model` alike).

    task : "classification" or "regression"; estimator : its public parameters;
    record : the fit's ReleaseRecord (written as "privacy"; its n_samples, the public
    normalising count, is also training.n_samples); coef, intercept : on the schema's
    encoded rows (norm <= 1), (d,) and a float, or (K, d) and (K,) for K > 2 classes;
    schema : the PublicSchema (with label and classes), or None (format version 4: rows
    are the features, clipped to row_norm_bound); data : the training file's name
    (None from Python); read_from_data : what was read from the private data (a leak,
    warned about when fitting); budget : the split of a whole release's epsilon (a
    "budget" ReleaseRecord: dperm.private_pipeline, ``dperm fit --bounds-share``), written
    as "budget" after "privacy" (absent otherwise, so other files are unchanged; a reader
    that predates it ignores the key).
    """
    from dperm._core._build_info import VERSION

    if not isinstance(record, ReleaseRecord):
        raise TypeError(f"record: expected a ReleaseRecord, got {type(record).__name__}")
    if budget is not None and not (isinstance(budget, ReleaseRecord)
                                   and budget.layout == "budget"):
        raise TypeError(f"budget: expected a ReleaseRecord of layout 'budget', got {budget!r}")
    coef = np.asarray(coef, dtype=np.float64)
    regression = task == "regression"
    if schema is None:
        version = MODEL_FORMAT_VERSION_RAW
    else:
        version = MODEL_FORMAT_VERSION_REGRESSION if regression else MODEL_FORMAT_VERSION
        feature_names = schema.feature_names()
    if feature_names is None:
        raise TypeError("feature_names: required without a schema (format version 4)")
    obj = {"format": MODEL_FORMAT, "format_version": version, "dperm_version": VERSION}
    if regression or schema is None:
        obj["task"] = task
    extra = {"label": "clipped to [-label_bound, label_bound]"} if regression else {}
    if regression and record.get("label_centre") is not None:
        # the public centre of label_bounds: the intercept includes it, so a reader's
        # x @ coef + intercept is the estimator's prediction on the label's own scale
        extra = {"label": "clipped to [label_centre - label_bound, label_centre + "
                          "label_bound] and fitted as label - label_centre; the intercept "
                          "includes label_centre",
                 "label_centre": float(record["label_centre"])}
    obj.update({
        "estimator": dict(estimator),
        "label": None if schema is None else schema.label,
        "classes": None if classes is None else [_jsonable(c) for c in classes],
        "feature_names": list(feature_names),
        "coef": coef.tolist(),
        "intercept": float(intercept) if np.ndim(intercept) == 0
        else np.asarray(intercept, dtype=np.float64).tolist(),
        "schema": None if schema is None else schema.to_dict(),
        "preprocessing": _preprocessing(schema, **extra) if schema is not None else {
            "input": "the estimator's own feature columns, in order",
            "row_norm_bound": float(row_norm_bound),
            "rows": "a row longer than row_norm_bound is shrunk onto it", **extra},
        "schema_from_data": bool(read_from_data),
        "read_from_data": list(read_from_data),
        "privacy": record_to_dict(record),
        **({} if budget is None else {"budget": record_to_dict(budget)}),
        # public sizes only: no seed (it regenerates the noise), no wall time (a side
        # channel on the data), no solver diagnostics (they differ between neighbours);
        # n_samples is the record's PUBLIC count, never the rows actually fitted
        "training": {"data": data, "n_samples": record.n_samples,
                     "n_features": len(feature_names)},
    })
    return obj


def _steps(model: Any) -> tuple[Any, Any]:
    """(transformer or None, estimator) of a fitted estimator or Pipeline."""
    from sklearn.pipeline import Pipeline

    from dperm.sklearn.classifier import PrivateLinearClassifier
    from dperm.sklearn.regressor import PrivateLinearRegression
    from dperm.sklearn.transformer import PublicBoundsTransformer

    kinds = (PrivateLinearClassifier, PrivateLinearRegression)
    if isinstance(model, Pipeline):
        steps = [s for _, s in model.steps if s not in (None, "passthrough")]
        if len(steps) == 2 and isinstance(steps[0], PublicBoundsTransformer) \
                and isinstance(steps[1], kinds):
            return steps[0], steps[1]
        if len(steps) == 1 and isinstance(steps[0], kinds):
            return None, steps[0]
        raise TypeError("model: save_model takes a Pipeline of a PublicBoundsTransformer and "
                        "a PrivateLinearClassifier or PrivateLinearRegression (or the "
                        f"estimator alone); got the steps {[type(s).__name__ for s in steps]}")
    if isinstance(model, kinds):
        return None, model
    raise TypeError(f"model: expected a fitted PrivateLinearClassifier, "
                    f"PrivateLinearRegression or a Pipeline ending in one, got "
                    f"{type(model).__name__}")


def model_to_dict(model: Any) -> dict:
    """The model file's content for a fitted estimator or Pipeline (see save_model)."""
    from sklearn.utils.validation import check_is_fitted

    from dperm.sklearn.classifier import PrivateLinearClassifier

    transformer, est = _steps(model)
    check_is_fitted(est, list(est._fitted_attributes))
    record = getattr(est, "release_record_", None)
    if record is None:
        raise TypeError("model: the estimator has no release record (fitted by an older dperm?)"
                        "; fit it again")
    classifier = isinstance(est, PrivateLinearClassifier)
    params = {k: _jsonable(v) for k, v in est.get_params(deep=False).items()
              if k not in ("random_state", "accountant", "n_threads", "tol", "max_iter",
                           "solver", "classes", "norm_policy")}
    params = {"class": type(est).__name__,
              "loss": est.loss if classifier else "pseudo_huber", **params}
    R_e = float(est.data_norm)
    if transformer is not None:
        check_is_fitted(transformer, "schema_")
        R_t = float(transformer.data_norm)
        if R_t > R_e:
            raise ValueError(
                f"model: the PublicBoundsTransformer's data_norm={R_t:g} exceeds the "
                f"estimator's data_norm={R_e:g}, so the estimator shrinks the encoded rows "
                "again before scoring, which the model file cannot express; give both the "
                "same data_norm")
        # encoded rows of norm <= 1 times R_t are the estimator's rows (norm <= R_e,
        # so not clipped again): coef on the file's rows is R_t * coef_
        scale = R_t
        schema = transformer.schema_
        classes = list(est.classes_) if classifier else None
        schema = schema.replace(label=None, classes=classes)
        names = None
    else:
        scale, schema = 1.0, None
        classes = list(est.classes_) if classifier else None
        names = getattr(est, "feature_names_in_", None)
        names = [f"x{j}" for j in range(est.n_features_in_)] if names is None else list(names)
    if classifier:
        coef = np.asarray(est.coef_, dtype=np.float64) * scale
        intercept = np.asarray(est.intercept_, dtype=np.float64)
        if coef.shape[0] == 1:
            coef, intercept = coef[0], float(intercept[0])
    else:
        coef = np.asarray(est.coef_, dtype=np.float64) * scale
        intercept = float(est.intercept_)
    return model_file(task="classification" if classifier else "regression",
                      estimator=params, record=record, coef=coef, intercept=intercept,
                      schema=schema, classes=classes, feature_names=names,
                      row_norm_bound=R_e, budget=getattr(model, "budget_", None))


def save_model(model: Any, path: str | os.PathLike) -> None:
    """Write a fitted model to ``path`` as a dperm model file (JSON), atomically.

    The file holds only what may be published: the noisy coefficients, the public
    schema, the estimator's public parameters and its release record (``privacy_``), and
    the record's public count; never ``fit_diagnostics_``, a seed or a timing.  (A pickle
    of the same object carries ``fit_diagnostics_``: it is for the analyst who holds the
    data, while this file is the publishable form.)  ``dperm predict`` reads it (except
    a model without a schema, format version 4), and :func:`load_model` gives back a
    model that predicts as ``dperm predict`` does.  The file is written to a temporary
    file in the same folder and renamed into place: a failure leaves no partial file.

    Parameters
    ----------
    model : PrivateLinearClassifier, PrivateLinearRegression or Pipeline
        A fitted estimator, or a Pipeline of a fitted PublicBoundsTransformer (e.g.
        ``PublicBoundsTransformer.from_schema``) and one of them.  The transformer's
        data_norm may not exceed the estimator's.
    path : str or os.PathLike
        The file to write (replaced atomically if it exists).

    Returns
    -------
    None

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> X /= np.linalg.norm(X, axis=1, keepdims=True)      # rows of norm 1 (public)
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> clf = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1]).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "model.json")
    ...     dperm.save_model(clf, path)                    # the publishable form
    ...     loaded = dperm.load_model(path)
    ...     same = np.array_equal(loaded.predict(X), clf.predict(X))
    >>> same
    True
    """
    from dperm._files import atomic_write_text

    atomic_write_text(os.fspath(path), model_to_json(model_to_dict(model)))


# ----------------------------------------------------------------------------- reading
def check_format_header(obj: Any, fmt: str, version: int | Collection[int], keys: Iterable[str],
                        bad: Callable[[str], Exception], hint: str = "") -> None:
    """A JSON document's 'format', 'format_version' and required keys (models and the
    streamed binaries' manifests); `version` is one int or a collection of the versions
    read; `bad(msg)` builds the error to raise."""
    if not isinstance(obj, dict) or obj.get("format") != fmt:
        raise bad(f"'format' must be {fmt!r}{hint}")
    versions = (version,) if isinstance(version, int) else tuple(version)
    got = obj.get("format_version")
    if isinstance(got, bool) or got not in versions:
        reads = (f"version {versions[0]}" if len(versions) == 1 else
                 f"versions {', '.join(map(str, versions))}")
        raise bad(f"unsupported format_version {got!r} (this dperm reads {reads})")
    for key in keys:
        if key not in obj:
            raise bad(f"missing key {key!r}")


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def upgrade_v1(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A version 1 model read with version 2 semantics: its privacy record's "delta" was
    the paper's extra regulariser Delta (now "extra_l2"); every version 1 model is a pure
    epsilon-DP (delta = 0), replace-one, binary fit with Laplace-type noise."""
    obj = dict(obj)
    rec = obj.get("privacy")
    if isinstance(rec, dict):
        rec = dict(rec)
        mech = rec.get("mechanism")
        rec["extra_l2"] = rec.pop("delta", None)
        private = mech in ("objective", "output")
        rec.update(delta=0.0, neighbouring="replace_one",
                   noise="l2_laplace" if private else None, sigma=None, sigma_output=None,
                   grid=None, n_classes=2, multiclass=None,
                   epsilon_total=rec.get("epsilon"), delta_total=0.0)
        obj["privacy"] = {k: rec.get(k) for k in PRIVACY_KEYS} | {
            k: v for k, v in rec.items() if k not in PRIVACY_KEYS}
    est = obj.get("estimator")
    if isinstance(est, dict):
        obj["estimator"] = dict(est, delta=0.0, neighbouring="replace_one", n_public=None)
    return obj


def _read_json(path: str) -> Any:
    where = f"model {path}"
    if os.path.isdir(path):
        raise ModelFormatError(f"model {path!r} is a directory, not a JSON file")
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise ModelFormatError(f"model file {path!r} not found") from None
    except json.JSONDecodeError as exc:
        raise ModelFormatError(f"{where}: not a dperm model (invalid JSON at line "
                               f"{exc.lineno} column {exc.colno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise ModelFormatError(f"{where}: not a dperm model (not UTF-8 text)") from None
    except OSError as exc:
        raise ModelFormatError(f"cannot read model {path!r}: {exc.strerror or exc}") from None


def _schema(obj: Mapping[str, Any], bad: Callable[[str], Exception],
            categories_as_text: bool) -> tuple[PublicSchema, list[str]]:
    """A model file's preprocessing schema and its feature names, checked to agree."""
    try:
        schema = PublicSchema.from_dict(obj["schema"], where="schema",
                                        categories_as_text=categories_as_text)
    except ValueError as exc:
        raise bad(str(exc)) from None
    names = obj["feature_names"]
    if names != schema.feature_names():
        raise bad("'feature_names' do not match the preprocessing schema")
    return schema, names


def _classes(obj: Mapping[str, Any], bad: Callable[[str], Exception], text: bool) -> list[Any]:
    classes = obj["classes"]
    kinds = (str,) if text else (str, int, float)
    if not (isinstance(classes, list) and len(classes) >= 2
            and all(isinstance(c, kinds) and not isinstance(c, bool) for c in classes)
            and len(set(classes)) == len(classes)):
        raise bad("'classes' must list two or more different labels ([negative, positive] "
                  "for two)")
    return classes


def _is_number_list(value: Any, length: int | None = None) -> bool:
    """A JSON list of numbers (of `length` entries, when given)."""
    return isinstance(value, list) and (length is None or len(value) == length) \
        and all(_is_num(v) for v in value)


def _check_binary_coef(coef: Any, b: Any, bad: Callable[[str], Exception],
                       n_features: int) -> None:
    """One model (two classes, or a regression): n_features numbers and one intercept."""
    if not _is_number_list(coef):
        raise bad("'coef' must be a list of numbers")
    if len(coef) != n_features:
        raise bad(f"'coef' has {len(coef)} entries but there are {n_features} features")
    if not _is_num(b):
        raise bad("'intercept' must be a number")


def _check_multiclass_coef(coef: Any, b: Any, bad: Callable[[str], Exception],
                           n_features: int, K: int) -> None:
    """K models: K rows of n_features numbers and K intercepts."""
    if not (isinstance(coef, list) and len(coef) == K
            and all(_is_number_list(row) for row in coef)):
        raise bad(f"'coef' must be a list of {K} lists of numbers (one per class)")
    if any(len(row) != n_features for row in coef):
        raise bad(f"each row of 'coef' must have {n_features} entries (one per feature)")
    if not _is_number_list(b, K):
        raise bad(f"'intercept' must be a list of {K} numbers (one per class)")


def _check_estimator_loss(obj: Mapping[str, Any], bad: Callable[[str], Exception]) -> None:
    """'estimator': an object naming the loss."""
    est = obj["estimator"]
    if not isinstance(est, dict) or not isinstance(est.get("loss"), str):
        raise bad("'estimator' must be an object with the 'loss'")


def _finite_coef(coef: Any, b: Any, bad: Callable[[str], Exception]
                 ) -> tuple[np.ndarray, float | np.ndarray]:
    """The checked lists as arrays (a float intercept for one model), all finite."""
    coef = np.asarray(coef, dtype=np.float64)
    b = float(b) if np.ndim(b) == 0 else np.asarray(b, dtype=np.float64)
    if not np.isfinite(coef).all() or not np.isfinite(b).all():
        raise bad("coefficients must be finite")
    return coef, b


def _check_coef(obj: Mapping[str, Any], bad: Callable[[str], Exception], n_features: int,
                K: int | None) -> tuple[np.ndarray, float | np.ndarray]:
    """(coef, intercept) of a model file: their shapes for K classes (None or 2: one
    model), the estimator's loss, finite values; `bad` makes the error."""
    coef, b = obj["coef"], obj["intercept"]
    if K is None or K == 2:
        _check_binary_coef(coef, b, bad, n_features)
    else:
        _check_multiclass_coef(coef, b, bad, n_features, K)
    _check_estimator_loss(obj, bad)
    return _finite_coef(coef, b, bad)


def _raw_feature_names(obj: Mapping[str, Any], bad: Callable[[str], Exception]) -> list[str]:
    """A version 4 (raw features, no schema) model's feature names, its norm bound checked."""
    if obj["schema"] is not None:
        raise bad(f"a format_version {MODEL_FORMAT_VERSION_RAW} model has no schema")
    names = obj["feature_names"]
    if not (isinstance(names, list) and names and all(isinstance(c, str) for c in names)):
        raise bad("'feature_names' must be a list of column names")
    _check_row_norm_bound(obj, bad)
    return names


def _check_row_norm_bound(obj: Mapping[str, Any], bad: Callable[[str], Exception]) -> None:
    bound = (obj.get("preprocessing") or {}).get("row_norm_bound")
    if not (isinstance(bound, (int, float)) and not isinstance(bound, bool)
            and math.isfinite(bound) and bound > 0):
        raise bad("'preprocessing.row_norm_bound' must be a positive number")


def _model_schema(obj: Mapping[str, Any], version: int, task: str,
                  bad: Callable[[str], Exception],
                  categories_as_text: bool) -> tuple[PublicSchema | None, list[str]]:
    """(schema, feature names) of a model file: None and the raw names for version 4."""
    if version == MODEL_FORMAT_VERSION_RAW:
        return None, _raw_feature_names(obj, bad)
    if task == "regression":
        if version != MODEL_FORMAT_VERSION_REGRESSION:
            raise bad(f"a regression model has format_version {MODEL_FORMAT_VERSION_REGRESSION}")
        return _schema(obj, bad, categories_as_text)
    if version > 2 or "task" in obj and obj["task"] != "classification":
        raise bad("'task' must be 'classification' or (format version 3) 'regression'")
    return _schema(obj, bad, categories_as_text)


def _model_classes(obj: Mapping[str, Any], version: int, bad: Callable[[str], Exception],
                   as_text: bool) -> list[Any]:
    """A classifier's classes (two for a version 1 file)."""
    classes = _classes(obj, bad, as_text)
    if len(classes) > 2 and version < 2:
        raise bad("a version 1 model has exactly two classes")
    return classes


def read_model(path: str | os.PathLike, *, categories_as_text: bool = True) -> dict:
    """Read and check a model file (format versions 1 to 4); returns its dict with a
    PublicSchema `schema` (None for version 4), numpy `coef` ((d,) for two classes or a
    regression, (K, d) for K > 2) and `intercept` (a float, or (K,)).  A version 1 file
    is returned in version 2 terms (upgrade_v1).  ModelFormatError names what is wrong.

    categories_as_text: categories and classes as strings (the command line, which reads
    every cell as text); False keeps the types the file holds (JSON numbers stay numbers).
    """
    path = os.fspath(path)
    where = f"model {path}"
    obj = _read_json(path)

    def bad(msg: str) -> ModelFormatError:
        return ModelFormatError(f"{where}: not a valid dperm model: {msg}")

    check_format_header(obj, MODEL_FORMAT, MODEL_FORMAT_VERSIONS,
                        ("coef", "intercept", "classes", "feature_names", "schema", "estimator"),
                        bad, hint=" (write models with `dperm fit` or dperm.save_model)")
    version = obj["format_version"]
    if version == 1:
        obj = upgrade_v1(obj)
    task = obj.get("task", "classification")
    if task not in ("classification", "regression"):
        raise bad("'task' must be 'classification' or 'regression'")
    schema, names = _model_schema(obj, version, task, bad, categories_as_text)
    K = None
    if task == "classification":
        K = len(_model_classes(obj, version, bad, categories_as_text and schema is not None))
    coef, b = _check_coef(obj, bad, len(names), K)
    return dict(obj, coef=coef, intercept=b, schema=schema)


def _layout(obj: Mapping[str, Any]) -> str:
    rec = obj.get("privacy") or {}
    if obj.get("task", "classification") == "classification":
        return "classifier"
    return "adassp" if rec.get("mechanism") == "adassp" and "n_features" in rec \
        else "regression"


class LoadedModel:
    """A model read from a model file by :func:`load_model`: it predicts exactly as
    ``dperm predict`` does (the same encoding and the same arithmetic, so the same
    numbers bit for bit).

    Input: a DataFrame (or a mapping column -> values) with the schema's columns, as in
    the training CSV; a version 4 file (no schema) takes the estimator's feature rows (an
    array or a DataFrame with its columns).

    Attributes: ``schema`` (PublicSchema, or None), ``coef_`` and ``intercept_`` (on the
    encoded rows), ``classes_`` (None for a regression), ``task``, ``feature_names``,
    ``estimator_params`` (the public parameters of the fit), ``release_record_`` (the
    ReleaseRecord read back) and ``privacy_`` (its serialised dict), ``budget_`` (the
    split of the whole release's epsilon, a "budget" ReleaseRecord, or None when the file
    has none), ``training``.
    """

    def __init__(self, obj: dict, unknown: str = "error") -> None:
        if unknown not in ("error", "ignore"):
            raise ValueError(f"unknown: must be 'error' or 'ignore', got {unknown!r}")
        self.unknown = unknown
        self._obj = obj
        self.schema = obj["schema"]
        self.task = obj.get("task", "classification")
        self.coef_ = obj["coef"]
        self.intercept_ = obj["intercept"]
        self.classes_ = None if obj["classes"] is None else np.asarray(obj["classes"])
        self.feature_names = list(obj["feature_names"])
        self.estimator_params = dict(obj["estimator"])
        self.training = dict(obj.get("training") or {})
        self.format_version = obj["format_version"]
        rec = obj.get("privacy")
        self.release_record_ = None if not isinstance(rec, dict) else \
            record_from_dict(rec, _layout(obj))
        budget = obj.get("budget")
        self.budget_ = None if not isinstance(budget, dict) else \
            record_from_dict(budget, "budget")

    @property
    def privacy_(self) -> dict[str, Any] | None:
        return None if self.release_record_ is None else record_to_dict(self.release_record_)

    def __repr__(self) -> str:
        return (f"LoadedModel({self.estimator_params.get('class', '?')}, task={self.task!r}, "
                f"{len(self.feature_names)} features)")

    # ----------------------------------------------------------------- predicting
    def transform(self, X: Any) -> np.ndarray:
        """The rows the coefficients apply to: the schema's encoding (an unknown
        category is an error, or with ``unknown="ignore"`` an all-zero group, as
        ``dperm predict`` and its ``--unknown zero``), or (no schema) the
        feature rows, shrunk onto the norm bound."""
        if self.schema is None:
            from dperm.data.validation import apply_norm_bound

            arr = np.asarray(X[self.feature_names] if hasattr(X, "columns") else X,
                             dtype=np.float64)
            if arr.ndim != 2 or arr.shape[1] != len(self.feature_names):
                raise ValueError(f"X: expected {len(self.feature_names)} feature columns, "
                                 f"got shape {arr.shape}")
            bound = float(self._obj["preprocessing"]["row_norm_bound"])
            return np.asarray(apply_norm_bound(arr, bound, "clip"))
        if isinstance(X, np.ndarray):
            X = {f"x{j}": X[:, j] for j in range(X.shape[1])}
        return self.schema.encode(X, unknown=self.unknown)

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores x @ coef + intercept: (n,) for two classes or a regression, (n, K)."""
        Z = self.transform(X)
        if self.coef_.ndim == 1:
            return Z @ self.coef_ + self.intercept_
        return np.asarray(Z @ self.coef_.T) + self.intercept_

    def predict(self, X: Any) -> np.ndarray:
        """Labels (the larger score; positive score: classes_[1]) or real predictions."""
        s = self.decision_function(X)
        if self.task == "regression" or self.classes_ is None:
            return s
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (logistic loss only), as ``dperm predict`` writes them."""
        if self.task == "regression" or self.estimator_params.get("loss") != "logistic":
            raise AttributeError("predict_proba is only available for loss='logistic'")
        s = self.decision_function(X)
        if s.ndim == 1:
            e = np.exp(-np.abs(s))
            p = np.where(s >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
            return np.column_stack([1.0 - p, p])
        from scipy.special import logsumexp

        if (self.privacy_ or {}).get("multiclass") == "ovr":
            s = -np.logaddexp(0.0, -s)
        return np.exp(s - logsumexp(s, axis=1, keepdims=True))


def load_model(path: str | os.PathLike, *, unknown: str = "error") -> LoadedModel:
    """Read a model file written by ``dperm fit`` or :func:`save_model` (format versions 1 to 4).

    Categories and classes keep the types the file holds.

    Parameters
    ----------
    path : str or os.PathLike
        The model file.
    unknown : {"error", "ignore"}, default "error"
        A category the model's schema does not list, met when predicting: an error
        naming the column and value (as ``dperm predict``), or ``"ignore"``: an
        all-zero group for that column (as ``dperm predict --unknown zero``).

    Returns
    -------
    LoadedModel
        A model that predicts exactly as ``dperm predict`` does.

    Raises
    ------
    ModelFormatError
        A ValueError naming the file and what is wrong with it.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> X /= np.linalg.norm(X, axis=1, keepdims=True)      # rows of norm 1 (public)
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> clf = dperm.PrivateLinearClassifier(epsilon=1.0, classes=[-1, 1]).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "model.json")
    ...     dperm.save_model(clf, path)                    # the publishable form
    ...     loaded = dperm.load_model(path)
    ...     same = np.array_equal(loaded.predict(X), clf.predict(X))
    >>> same
    True
    """
    return LoadedModel(read_model(path, categories_as_text=False), unknown=unknown)
