"""The release record: what a private fit publishes beside its noisy output.

One typed, immutable object (:class:`ReleaseRecord`) for every release of dperm: the
mechanisms' :class:`~dperm.privacy.mechanisms.PrivateFit`, the estimators' ``privacy_``,
the model file's ``"privacy"`` object (dperm.model_io), :class:`PrivateBounds`'
``privacy_`` and the accountant's events (:func:`dperm.privacy.mechanisms.privacy_events`
reads a record).  It is built from PUBLIC inputs only (docs/privacy_analysis.md, "What a
fit releases"): the privacy parameters, the public bounds and count, the mechanism's
constants (functions of those) and, for AdaSSP, two values of its noisy release.  Every
field is a plain value (None, bool, int, float, str or a tuple of those; never an array
of the data), checked when the record is built, and a record cannot be changed after.

Serialised by ONE function, :func:`record_to_dict` (also the record's Mapping view:
``rec["epsilon"]``, ``dict(rec)``, ``rec == {...}``): the keys of its ``layout`` in a
fixed order, tuples as lists.  The layouts keep the keys each release had before the
record existed, so ``privacy_`` reads as it always did and model files are unchanged.

The count rule lives here too (:func:`public_count`): the ``n_samples`` a record holds
is the count that normalised the objective, a PUBLIC number: the row count under
replace-one (n is public there), else the ``n_public`` given; under add/remove without
``n_public`` the row count is used and recorded with a PrivacyLeakWarning (the
guarantee then covers neighbours of that size only), except by AdaSSP, whose statistics
are sums that need no count: its record holds None.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

__all__ = ["ReleaseRecord", "record_to_dict", "record_from_dict", "public_count", "LAYOUTS"]

#: the mechanisms' record (PrivateFit.record()): one fit of output / objective
#: perturbation or AMP
_MECHANISM = ("mechanism", "noise", "loss", "neighbouring", "epsilon", "delta",
              "epsilon_prime", "extra_l2", "beta", "sigma", "sigma_output", "grid", "alpha",
              "data_norm", "h", "n_samples", "curvature", "n_classes")
#: the keys each kind of release serialises, in order
LAYOUTS = {
    "mechanism": _MECHANISM,
    # PrivateLinearClassifier (and the model file's format version 2 record)
    "classifier": _MECHANISM + ("multiclass", "epsilon_total", "delta_total"),
    # PrivateLinearRegression's ERM methods (objective, output, none)
    "regression": tuple(k for k in _MECHANISM if k != "n_classes") + (
        "method", "task", "label_bound", "gradient_bound", "epsilon_total", "delta_total",
        "label_centre"),
    # PrivateLinearRegression(method="adassp"): dperm.privacy.adassp's release
    "adassp": ("mechanism", "epsilon", "delta", "neighbouring", "data_norm", "label_bound",
               "n_samples", "n_features", "split", "noise_multiplier", "sigma_lambda_min",
               "sigma_xtx", "sigma_xty", "ridge_bound", "eta", "shift", "failure_probability",
               "lambda_min_noisy", "ridge", "loss", "h", "alpha", "noise", "method", "task",
               "gradient_bound", "epsilon_total", "delta_total", "label_centre"),
    # private_tuning (dperm.privacy.tuning): the procedure's own guarantee; each model
    # it releases carries its own record
    "tuning": ("mechanism", "epsilon", "delta", "neighbouring", "n_candidates",
               "train_sizes", "validation_size"),
    # estimate_bounds (dperm.privacy.quantiles)
    "bounds": ("mechanism", "epsilon", "delta", "epsilon_per_column", "epsilon_per_quantile",
               "quantiles", "columns", "range", "grid", "grid_points", "width_prior",
               "rank_sensitivity", "neighbouring"),
    # dperm.private_pipeline (and `dperm fit --bounds-share`): how the whole release's
    # epsilon was split (basic composition), public values only; each part has its own
    # record (the bounds' in the accountant's history, the fit's as "privacy")
    "budget": ("mechanism", "epsilon", "delta", "task", "label", "bounds_share",
               "epsilon_bounds", "columns", "epsilon_per_column", "epsilon_fit"),
}


def _plain(name: str, v: Any) -> Any:
    """v as a plain public value, or TypeError: numpy scalars become Python numbers; an
    array, a generator or any other object is refused (a record holds no data)."""
    if v is None or isinstance(v, (str, bool)):
        return v
    if type(v).__name__ == "bool_":
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, (tuple, list)):
        return tuple(_plain(name, x) for x in v)
    raise TypeError(f"ReleaseRecord: field {name!r} must be a plain public value (None, bool, "
                    f"int, float, str or a sequence of them), got {type(v).__name__}")


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class ReleaseRecord(Mapping[str, Any]):
    """What one release publishes besides its noisy output: public values only.

    Immutable; read it as a mapping (``rec["epsilon"]``, ``rec.get("sigma")``,
    ``dict(rec)``) whose keys are those of its ``layout`` (LAYOUTS), or by attribute.
    A value that does not apply to the mechanism is None.  ``replace(**changes)`` gives
    a new record.  Equal to another record, or to a mapping, with the same items.

    Fields (all optional but ``layout``; see docs/privacy_analysis.md):
    mechanism, noise, loss, neighbouring, epsilon, delta (the DP parameter),
    epsilon_prime, extra_l2 (the paper's Delta), beta, sigma, sigma_output, grid,
    alpha (Lambda), data_norm (R), h, n_samples (the PUBLIC normalising count, see
    public_count), curvature, n_classes, multiclass, epsilon_total, delta_total;
    regression: method, task, label_bound, gradient_bound, label_centre (the PUBLIC
    midpoint of label_bounds the targets were shifted by, None without); AdaSSP: n_features, split,
    noise_multiplier, sigma_lambda_min, sigma_xtx, sigma_xty, ridge_bound, eta, shift,
    failure_probability and the released lambda_min_noisy and ridge; private bounds:
    epsilon_per_column, epsilon_per_quantile, quantiles, columns, range, grid (a
    description), grid_points, width_prior, rank_sensitivity; private tuning:
    n_candidates, train_sizes, validation_size; a pipeline's budget (layout "budget"):
    epsilon (the total), task, label (the label column), bounds_share, epsilon_bounds,
    columns (those whose bounds were released, a regression's label last),
    epsilon_per_column, epsilon_fit.
    """

    layout: str
    mechanism: str | None = None
    noise: str | None = None
    loss: str | None = None
    neighbouring: str | None = None
    epsilon: float | None = None
    delta: float | None = None
    epsilon_prime: float | None = None
    extra_l2: float | None = None
    beta: float | None = None
    sigma: float | None = None
    sigma_output: float | None = None
    grid: float | str | None = None
    alpha: float | None = None
    data_norm: float | None = None
    h: float | None = None
    n_samples: int | None = None
    curvature: float | None = None
    n_classes: int | None = None
    multiclass: str | None = None
    epsilon_total: float | None = None
    delta_total: float | None = None
    method: str | None = None
    task: str | None = None
    label_bound: float | None = None
    label_centre: float | None = None
    gradient_bound: float | None = None
    n_features: int | None = None
    split: tuple | None = None
    noise_multiplier: float | None = None
    sigma_lambda_min: float | None = None
    sigma_xtx: float | None = None
    sigma_xty: float | None = None
    ridge_bound: str | None = None
    eta: float | None = None
    shift: float | None = None
    failure_probability: float | None = None
    lambda_min_noisy: float | None = None
    ridge: float | None = None
    epsilon_per_column: float | None = None
    epsilon_per_quantile: float | None = None
    quantiles: tuple | None = None
    columns: tuple | None = None
    range: tuple | None = None
    grid_points: int | None = None
    width_prior: tuple | None = None
    rank_sensitivity: float | None = None
    n_candidates: int | None = None
    train_sizes: tuple | None = None
    validation_size: int | None = None
    label: str | None = None
    bounds_share: float | None = None
    epsilon_bounds: float | None = None
    epsilon_fit: float | None = None

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout: must be one of {sorted(LAYOUTS)}, got {self.layout!r}")
        keys = set(LAYOUTS[self.layout])
        for f in dataclasses.fields(self):
            if f.name == "layout":
                continue
            v = _plain(f.name, getattr(self, f.name))
            if v is not None and f.name not in keys:
                raise ValueError(f"ReleaseRecord: {f.name!r} is not part of a "
                                 f"{self.layout!r} release")
            if isinstance(v, float) and math.isnan(v):
                v = None            # "does not apply", as the serialised record says it
            if f.name == "n_samples" and v is not None:
                if not (isinstance(v, int) or float(v).is_integer()) or v < 1:
                    raise ValueError(f"ReleaseRecord: n_samples must be a positive count, "
                                     f"got {v!r}")
                v = int(v)
            object.__setattr__(self, f.name, v)

    # ------------------------------------------------------------- Mapping view
    def __getitem__(self, key: str) -> Any:
        if key not in LAYOUTS[self.layout]:
            raise KeyError(key)
        return _out(getattr(self, key))

    def __iter__(self) -> Iterator[str]:
        return iter(LAYOUTS[self.layout])

    def __len__(self) -> int:
        return len(LAYOUTS[self.layout])

    def __contains__(self, key: object) -> bool:
        return key in LAYOUTS[self.layout]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return record_to_dict(self) == dict(other.items())
        return NotImplemented

    # equal by value to a mutable mapping, so unhashable (as dict is); typeshed declares
    # object.__hash__ a method, hence the ignore
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ReleaseRecord({record_to_dict(self)!r})"

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        raise TypeError("a ReleaseRecord cannot be changed (it is what was released); "
                        "use record.replace(...) for a new one")

    def replace(self, **changes: Any) -> ReleaseRecord:
        """A new record with `changes` (validated like the constructor)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The serialised record: record_to_dict(self)."""
        return record_to_dict(self)


def _out(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def record_to_dict(record: ReleaseRecord) -> dict[str, Any]:
    """THE serialisation of a release record: {key: value} for the keys of its layout,
    in order, tuples as lists; a new dict each call.  Used by the estimators' privacy_
    view, the model file (dperm.model_io), reprs and privacy_events."""
    if not isinstance(record, ReleaseRecord):
        raise TypeError(f"record: expected a ReleaseRecord, got {type(record).__name__}")
    return {k: _out(getattr(record, k)) for k in LAYOUTS[record.layout]}


def record_from_dict(obj: Mapping[str, Any], layout: str) -> ReleaseRecord:
    """A record read back from its serialised form (a model file's "privacy" object):
    the keys of `layout` (missing ones are None; other keys are not part of a release
    and are ignored). Non-finite numbers written as strings ('inf') are read back."""
    fields: dict[str, Any] = {}
    for k in LAYOUTS[layout]:
        v = obj.get(k)
        if isinstance(v, str) and v in ("inf", "-inf", "nan") and k not in ("grid",):
            v = float(v)
        fields[k] = v
    return ReleaseRecord(layout=layout, **fields)


def public_count(neighbouring: str, n_public: int | None, n_rows: int, *,
                 needs_count: bool = True) -> int | None:
    """The n_samples a record holds: the PUBLIC count that normalised the objective.

    replace_one: `n_public` when given (the size of a data set that a public rule
    filtered down to the n_rows given, e.g. rows with a missing value dropped), else
    n_rows (public under replace-one).  add_remove: `n_public` when given, else n_rows
    (the caller warns: the guarantee then covers neighbours of that size only), or None
    when the mechanism needs no count (`needs_count=False`: AdaSSP's sums).
    """
    if n_public is not None:
        return int(n_public)
    if neighbouring == "add_remove" and not needs_count:
        return None
    return int(n_rows)
