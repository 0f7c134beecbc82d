"""One call from a private table to a fitted, saved model (issue 28, item 4).

:func:`private_pipeline` takes a DataFrame, a total epsilon, the PUBLIC category lists and
the label column, and spends the budget by one documented rule
(docs/user_guide/from_nothing.md):

1. ``bounds_share`` x epsilon (default 0.1) on the numeric columns' bounds:
   :func:`dperm.estimate_bounds` over every column that is neither the label nor in
   ``categories`` (for a regression the label too, one more column of the same even
   split: its released range gives ``label_bounds``, centre and bound of the fit);
   nothing when there is no column to bound;
2. the rest on the fit: :class:`dperm.PrivateLinearClassifier` or
   :class:`dperm.PrivateLinearRegression` behind a
   :class:`dperm.PublicBoundsTransformer` of the released schema (with
   ``alpha="select"`` the estimator's own rule spends part of it on Lambda).

Each part is charged to one :class:`dperm.BudgetAccountant` (checked for the whole epsilon
before any data are read), so the whole is epsilon-DP by basic composition.  Which
columns are numeric is decided by the public arguments (the columns' names), never by
the data's dtypes.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["private_pipeline", "DEFAULT_BOUNDS_SHARE", "BOUNDS_WARN_SLACK", "split_budget",
           "release_bounds", "release_bounds_from_histograms", "budget_record"]

#: the share of epsilon spent on the numeric columns' (and a regression label's) bounds
DEFAULT_BOUNDS_SHARE = 0.1
#: the bounds' accuracy warning of the pipeline: estimate_bounds warns when a bound is
#: likely (> 5 %) to land more than its quantiles' tail + this fraction of the rows from its
#: quantile (3 % for the 1 %-99 % bounds), not the tail alone: bounds that clip a few % of
#: the rows more or fewer than asked cost a linear fit nothing measurable (Adult at the
#: default share: docs/user_guide/from_nothing.md, "The bounds' warning")
BOUNDS_WARN_SLACK = 0.02


def _check_share(bounds_share):
    if isinstance(bounds_share, bool) or not isinstance(bounds_share, numbers.Real) \
            or not (math.isfinite(float(bounds_share)) and 0.0 < float(bounds_share) < 1.0):
        raise ValueError(f"bounds_share: must be a number in (0, 1), the share of epsilon spent "
                         f"on the numeric bounds, got {bounds_share!r}")
    return float(bounds_share)


def private_pipeline(frame: Any, *, label: str, epsilon: float,
                     categories: Mapping | None = None, task: str = "classification",
                     bounds_share: float = DEFAULT_BOUNDS_SHARE, alpha: Any = "auto",
                     fill: Mapping | None = None, estimator_params: Mapping | None = None,
                     path: Any = None, accountant: Any = None,
                     random_state: Any = None) -> Any:
    """Fit a private model on a table from nothing but public category lists.

    Parameters
    ----------
    frame : pandas DataFrame
        The private table: the label column and the feature columns (every other
        column).  Columns named in ``categories`` are one-hot encoded; the others are
        numeric, with bounds released privately.
    label : str
        The label column.
    epsilon : float > 0
        The total budget (pure epsilon-DP, replace one row): bounds and fit together.
    categories : mapping column -> list, optional
        The PUBLIC category list of each categorical column; for a classification the
        label's entry is the public class list (required there: ``[negative, positive]``
        for two classes).
    task : {"classification", "regression"}, default "classification"
    bounds_share : float in (0, 1), default 0.1
        The share of epsilon spent on the bounds (see the module docstring); the fit
        gets the rest, all of epsilon when there is nothing to bound.
    alpha : "auto" (default), "select" or float > 0
        The estimator's Lambda (``"select"``: chosen privately within the fit's share).
    fill : mapping column -> value, optional
        PUBLIC replacements of missing values (PublicSchema's ``fill``).
    estimator_params : mapping, optional
        Other parameters of the estimator (e.g. ``{"loss": "huber"}``); not ``epsilon``,
        ``delta``, ``classes``, ``label_bounds``, ``accountant`` or ``random_state``.
    path : str or os.PathLike, optional
        Where to write the model file (:func:`dperm.save_model`; read it back with
        :func:`dperm.load_model`).
    accountant : BudgetAccountant, optional
        Charged each part; default a new ``BudgetAccountant(epsilon)`` (none with a
        ``random_state``: a seeded fit is not charged).
    random_state : None, int or numpy Generator
        None (default) draws fresh OS entropy; a seed is for tests and benchmarks only
        (it voids the guarantee and warns; refused with an accountant).

    Returns
    -------
    sklearn.pipeline.Pipeline
        Fitted: ``("bounds", PublicBoundsTransformer)`` then ``("model", estimator)``;
        its ``predict`` takes a frame with the feature columns.  The parts of the budget
        are the accountant's ``history`` (``bounds``, then the estimator's fit); the
        split is its ``budget_`` (a ReleaseRecord of public values, :func:`budget_record`),
        which the model file holds as ``"budget"``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dperm
    >>> rng = np.random.default_rng(0)
    >>> frame = pd.DataFrame({"age": rng.integers(18, 80, 5000).astype(float),
    ...                       "colour": rng.choice(["red", "blue"], 5000)})
    >>> frame["y"] = np.where(frame["age"] + 20 * (frame["colour"] == "red") > 55, "yes", "no")
    >>> budget = dperm.BudgetAccountant(1.0)
    >>> model = dperm.private_pipeline(frame, label="y", epsilon=1.0, accountant=budget,
    ...     categories={"colour": ["red", "blue"], "y": ["no", "yes"]})
    >>> len(budget.history), budget.spent           # bounds, then the fit
    (2, 1.0)
    >>> model[-1].privacy_["epsilon"]
    0.9
    >>> model.budget_["epsilon_bounds"], model.budget_["columns"]
    (0.1, ['age'])
    """
    from sklearn.pipeline import Pipeline

    from dperm.sklearn.transformer import PublicBoundsTransformer

    epsilon, share, columns = _check_arguments(frame, label, epsilon, task, bounds_share)
    regression = task == "regression"
    categories, classes = _split_categories(categories, label, columns, regression)
    numeric = [c for c in columns if c != label and c not in categories]
    params = _estimator_params(estimator_params)
    accountant = _resolve_accountant(accountant, random_state, epsilon)
    bounded = numeric + ([label] if regression else [])
    eps_bounds, eps_fit = split_budget(epsilon, share, bounded)
    rng = _noise_stream(random_state, accountant)
    numeric_bounds, label_bounds = release_bounds(
        {c: frame[c].to_numpy() for c in bounded}, numeric, label if regression else None,
        eps_bounds, accountant=accountant, random_state=rng)
    schema = _schema(numeric_bounds, categories, fill)
    est = _estimator(regression, eps_fit, alpha, classes, label_bounds, accountant, rng, params)
    model = Pipeline([("bounds", PublicBoundsTransformer.from_schema(schema)), ("model", est)])
    model.fit(frame[[c for c in columns if c != label]], frame[label].to_numpy())
    model.budget_ = budget_record(epsilon=epsilon, bounds_share=share, epsilon_bounds=eps_bounds,
                                  epsilon_fit=eps_fit, columns=bounded, label=label, task=task)
    if path is not None:
        from dperm.model_io import save_model

        save_model(model, path)
    return model


# ----------------------------------------------------------------------------- the steps
def split_budget(epsilon: float, bounds_share: float,
                 bounded: Sequence[str]) -> tuple[float, float]:
    """THE budget rule (private_pipeline and ``dperm fit --bounds-share``): (epsilon of
    the bounds, epsilon of the fit) = (bounds_share x epsilon, the rest), or (0, epsilon)
    when no column is bounded.  `bounds_share` is checked (a number in (0, 1))."""
    share = _check_share(bounds_share)
    eps_bounds = share * epsilon if bounded else 0.0
    return eps_bounds, epsilon - eps_bounds


def release_bounds(data: Mapping[str, Any], numeric: Sequence[str], label: str | None,
                   epsilon: float, *, accountant: Any = None, random_state: Any = None,
                   **bounds_params: Any) -> tuple[dict, tuple[float, float] | None]:
    """The private step of the rule: :func:`dperm.estimate_bounds` at `epsilon` over the
    `numeric` columns of `data` (column -> values) and, for a regression, the `label`
    last (one more column of the same even split).  Returns ({column: (low, high)} of the
    numeric columns, the label's (low, high) or None); nothing is drawn or charged when
    there is no column.  `bounds_params`: estimate_bounds' other parameters; its accuracy
    warning tolerates :data:`BOUNDS_WARN_SLACK` of the rows beyond the quantiles' tail
    unless ``warn_tolerance`` is given."""
    from dperm.privacy.quantiles import estimate_bounds

    bounded = list(numeric) + ([label] if label is not None else [])
    if not bounded:
        return {}, None
    bounds = estimate_bounds({c: data[c] for c in bounded}, epsilon, columns=bounded,
                             accountant=accountant, random_state=random_state,
                             **_with_warn_tolerance(bounds_params))
    return _split_label(bounds, numeric, label)


def release_bounds_from_histograms(histograms: Mapping[str, Any], numeric: Sequence[str],
                                   label: str | None, epsilon: float, *, accountant: Any = None,
                                   random_state: Any = None,
                                   **bounds_params: Any) -> tuple[dict, tuple[float, float] | None]:
    """:func:`release_bounds` from counts made elsewhere (in chunks, by a streamed pass):
    `histograms` maps each column to its ``column_histogram`` (atoms, cells) on the public
    grid of `bounds_params` (``default_grid(bounds_range)``), missing values dropped and the
    rest clipped to the grid's ends.  :func:`dperm.privacy.quantiles.bounds_from_histograms`
    over the same columns in the same order: on the same rows, the same law, record and
    charge as release_bounds (with the same generator, the same draws)."""
    from dperm.privacy.quantiles import bounds_from_histograms

    bounded = list(numeric) + ([label] if label is not None else [])
    if not bounded:
        return {}, None
    bounds = bounds_from_histograms({c: histograms[c] for c in bounded}, epsilon,
                                    accountant=accountant, random_state=random_state,
                                    **_with_warn_tolerance(bounds_params))
    return _split_label(bounds, numeric, label)


def _with_warn_tolerance(bounds_params: dict) -> dict:
    """The pipeline's accuracy warning (:data:`BOUNDS_WARN_SLACK`) unless the caller gives
    ``warn_tolerance``: the quantiles' tail + the slack, as a fraction of the rows."""
    from dperm.privacy.quantiles import DEFAULT_QUANTILES, _check_quantiles

    if "warn_tolerance" in bounds_params:
        return bounds_params
    q = _check_quantiles(bounds_params.get("quantiles", DEFAULT_QUANTILES))
    return {**bounds_params,
            "warn_tolerance": min(min(q[0], 1.0 - q[1]) + BOUNDS_WARN_SLACK, 0.5)}


def _split_label(bounds: Any, numeric: Sequence[str],
                 label: str | None) -> tuple[dict, tuple[float, float] | None]:
    numeric_bounds = {c: tuple(bounds[c]) for c in numeric}
    if label is None:
        return numeric_bounds, None
    low, high = bounds[label]
    return numeric_bounds, (float(low), float(high))


def budget_record(*, epsilon: float, bounds_share: float, epsilon_bounds: float,
                  epsilon_fit: float, columns: Sequence[str], label: str,
                  task: str, delta: float = 0.0) -> Any:
    """The split as a publishable ReleaseRecord (layout "budget"): every value is a public
    input or a function of public inputs (the column names, epsilon, the share); `delta`
    is the fit's (the bounds are pure epsilon-DP)."""
    from dperm.privacy.record import ReleaseRecord

    columns = list(columns)
    return ReleaseRecord(
        layout="budget", mechanism="basic_composition", epsilon=epsilon, delta=delta,
        task=task, label=label, bounds_share=bounds_share, epsilon_bounds=epsilon_bounds,
        columns=tuple(columns),
        epsilon_per_column=epsilon_bounds / len(columns) if columns else None,
        epsilon_fit=epsilon_fit)


def _check_arguments(frame: Any, label: str, epsilon: float, task: str,
                     bounds_share: float) -> tuple[float, float, list]:
    """(epsilon, the share, the frame's columns), checked."""
    from dperm.data.validation import check_epsilon

    epsilon = check_epsilon(epsilon, "epsilon")
    share = _check_share(bounds_share)
    if task not in ("classification", "regression"):
        raise ValueError(f"task: must be 'classification' or 'regression', got {task!r}")
    columns = getattr(frame, "columns", None)
    if columns is None or not hasattr(frame, "loc"):
        raise TypeError(f"frame: expected a pandas DataFrame, got {type(frame).__name__}")
    columns = list(columns)
    if label not in columns:
        raise ValueError(f"label: no column {label!r} in the frame (columns: {columns[:12]})")
    return epsilon, share, columns


def _split_categories(categories: Mapping | None, label: str, columns: list,
                      regression: bool) -> tuple[dict, list | None]:
    """(the features' category lists, the public classes or None for a regression)."""
    categories = {} if categories is None else dict(categories)
    unknown = [c for c in categories if c not in columns]
    if unknown:
        raise ValueError(f"categories: no column(s) {unknown} in the frame")
    if regression:
        if label in categories:
            raise ValueError(f"categories: {label!r} is the label of a regression (numeric); "
                             "leave it out of categories")
        return categories, None
    if label not in categories:
        raise ValueError(f"categories: give the label's PUBLIC classes, e.g. "
                         f"categories={{{label!r}: [negative, positive], ...}} (a class "
                         "list read from the data would not be covered by epsilon)")
    classes = list(categories.pop(label))
    return categories, classes


def _estimator_params(estimator_params: Mapping | None) -> dict:
    params = dict(estimator_params or {})
    taken = sorted(set(params) & {"epsilon", "delta", "classes", "label_bounds",
                                  "label_bound", "accountant", "random_state", "alpha"})
    if taken:
        raise ValueError(f"estimator_params: {taken} are set by private_pipeline (epsilon "
                         "and its split, the public classes, the released label range, "
                         "the accountant, random_state and alpha are its own arguments)")
    return params


def _resolve_accountant(accountant: Any, random_state: Any, epsilon: float) -> Any:
    """The accountant charged (a new one of epsilon unless seeded), checked for the whole
    epsilon before any data are read."""
    from dperm.privacy.accountant import BudgetAccountant, PureEvent

    if accountant is None and random_state is None:
        accountant = BudgetAccountant(epsilon)
    elif accountant is not None and not isinstance(accountant, BudgetAccountant):
        raise TypeError(f"accountant: expected a dperm.BudgetAccountant, got "
                        f"{type(accountant).__name__}")
    if accountant is not None:
        accountant.check(PureEvent(epsilon))    # the whole budget, before any data are read
    return accountant


def _noise_stream(random_state: Any, accountant: Any) -> Any:
    """One stream for both parts (an int seed becomes a Generator: no reused noise)."""
    import numpy as np

    from dperm.privacy.noise import warn_if_seeded

    warn_if_seeded(random_state, accountant=accountant)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    return random_state


def _schema(numeric_bounds: dict, categories: dict, fill: Mapping | None) -> Any:
    from dperm.schema import PublicSchema

    return PublicSchema(numeric=numeric_bounds, categorical=categories, fill=fill or None)


def _estimator(regression: bool, eps_fit: float, alpha: Any, classes: list | None,
               label_bounds: tuple[float, float] | None, accountant: Any, rng: Any,
               params: dict) -> Any:
    from dperm.sklearn.classifier import PrivateLinearClassifier
    from dperm.sklearn.regressor import PrivateLinearRegression

    if regression:
        return PrivateLinearRegression(epsilon=eps_fit, alpha=alpha, label_bounds=label_bounds,
                                       accountant=accountant, random_state=rng, **params)
    return PrivateLinearClassifier(epsilon=eps_fit, alpha=alpha, classes=classes,
                                   accountant=accountant, random_state=rng, **params)
