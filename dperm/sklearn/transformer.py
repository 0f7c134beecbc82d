"""The scikit-learn face of the public schema: :class:`PublicBoundsTransformer` scales
the feature columns of a DataFrame or 2-D array by PUBLIC bounds (a
:class:`~dperm.PublicSchema` does the encoding), so that every row has norm <=
data_norm, in front of :class:`~dperm.PrivateLinearClassifier` or
:class:`~dperm.PrivateLinearRegression` in a Pipeline.  What kind of container holds the
columns (DataFrame, 2-D array, dask DataFrame) is asked of dperm/data/columns.py."""
from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from dperm.data.columns import (
    frame_columns,
    frame_info,
    is_dask_frame,
    map_dask_partitions,
    plain_list,
)
from dperm.data.validation import (
    BOOLEAN,
    NONE,
    POSITIVE,
    Options,
    ParameterTable,
    Satisfies,
    check_params,
)
from dperm.schema import PublicSchema

__all__ = ["PublicBoundsTransformer"]


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _is_pair(v: Any) -> bool:
    return (isinstance(v, (list, tuple)) and len(v) == 2 and all(_is_real(x) for x in v))


# the forms of the column parameters (which columns they name is checked against X in fit)
def _check_numeric(numeric: Any, name: str) -> None:
    if not (_is_pair(plain_list(numeric)) or isinstance(numeric, Mapping)):
        raise ValueError(f"{name} must map column -> (low, high), or be one (low, high) "
                         f"pair for every column; got {numeric!r}")


def _check_categorical(categorical: Any, name: str) -> None:
    if not isinstance(categorical, Mapping):
        raise ValueError(f"{name} must map column -> list of categories, got "
                         f"{type(categorical).__name__}")


def _check_fill(fill: Any, name: str) -> None:
    if not (_is_real(fill) or isinstance(fill, Mapping)):
        raise ValueError(f"{name} must map column -> value or be one number, got {fill!r}")


def _short(items, k=8):
    items = list(items)
    return repr(items[:k])[:-1] + (", ...]" if len(items) > k else "]")


def _column_locator(labels: list[Any] | None,
                    n_cols: int) -> Callable[[Any, str], tuple[Any, str]]:
    """locate(key, what) -> (the key X is read by, the schema's column name), for a
    column name (str) or index (int) of X; errors name the parameter (``what``)."""
    names_in = labels if labels is not None and all(isinstance(c, str) for c in labels) \
        else None

    def locate(key: Any, what: str) -> tuple[Any, str]:
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            j = int(key)
            if not 0 <= j < n_cols:
                raise ValueError(f"{what}: column index {j} is out of range; X has "
                                 f"{n_cols} column(s)")
            return j, (names_in[j] if names_in is not None else f"x{j}")
        if isinstance(key, str):
            if labels is None:
                raise ValueError(f"{what}: column {key!r} is named, but X is an array "
                                 "without column names; pass a DataFrame or use integer "
                                 "column indices")
            if key not in labels:
                raise ValueError(f"{what}: column {key!r} is not in X (X has columns: "
                                 f"{_short(labels, 12)[1:-1]})")
            return key, key
        raise ValueError(f"{what}: column keys must be names (str) or indices (int), "
                         f"got {key!r}")
    return locate


def _every_other_column(pair: tuple[float, ...], cat_keys: set[Any], labels: list[Any] | None,
                        n_cols: int) -> dict[Any, tuple[float, ...]]:
    """numeric=(low, high): the pair for every column of X that is not categorical."""
    if labels is None:
        keys = [j for j in range(n_cols) if j not in cat_keys]
    else:
        keys = [c if isinstance(c, str) else j for j, c in enumerate(labels)
                if c not in cat_keys and j not in cat_keys]
    return {k: pair for k in keys}


class PublicBoundsTransformer(TransformerMixin, BaseEstimator):
    """Scale features by PUBLIC bounds so every row has norm <= data_norm.

    The scikit-learn face of :class:`~dperm.PublicSchema`: put it in front of
    :class:`~dperm.PrivateLinearClassifier` instead of a scaler that learns
    from the data (StandardScaler, MinMaxScaler read means, variances or
    extremes of the private rows; their output also exceeds the norm bound,
    so the classifier would clip nearly every row).  ``fit`` reads nothing
    from the data but the column names (DataFrame) or the number of columns
    (array); ``transform`` maps each row on its own.

    Parameters
    ----------
    numeric : mapping column -> (low, high), or a single (low, high) pair
        Public range of each numeric column, in the column's own units
        (e.g. years for an age).  Keys are column names for a DataFrame and
        integer column indices (0-based) for a 2-D array; a single pair
        applies to every column (of a DataFrame: every column not in
        ``categorical``).  Values are clipped to [low, high] and mapped to
        [0, 1].  Columns not named are dropped.
    categorical : mapping column -> list of categories, optional
        Public category lists (DataFrame columns); one-hot encoded in list
        order after the numeric columns.
    fill : mapping column -> value, or a number, optional
        Public replacement of missing values (None, NaN, pandas' NA): a
        number for a numeric column, a listed category for a categorical
        one; a single number fills every numeric column.  Without it a
        missing value is an error naming the column and the first such row.
    data_norm : float > 0, default 1.0
        The public row-norm bound R; use the same value as the classifier's
        ``data_norm``.
    unknown : {"error", "ignore"}, default "error"
        A category not in the public list is an error naming the column, the
        first such value and how many rows hold one (cells and categories are
        compared after stripping surrounding spaces); "ignore" encodes it as an
        all-zero group, silently: only when that is what you want.
    sparse_output : bool, default False
        Return a ``scipy.sparse.csr_array`` built directly (never through a
        dense array): the numeric columns and one entry per categorical
        column are stored, so a row has at most ``schema_.stored_per_row``
        entries.  Worth it when the category lists are long
        (``schema_.density`` well below 1).

    Attributes
    ----------
    schema_ : PublicSchema
        The schema used (array columns are named ``x0``, ``x1``, ... or by
        the input feature names).
    n_features_in_ : int
        Number of columns of X seen in fit.
    feature_names_in_ : ndarray of str, shape (n_features_in,)
        Column names, when X was a DataFrame with string column names.

    Notes
    -----
    A fitted transformer (and a :class:`~dperm.PublicSchema`) can be pickled, dumped with
    joblib and deep-copied; it holds public values only.  A pickle of a whole fitted
    pipeline also carries the estimator's ``fit_diagnostics_`` (analyst-only):
    publish a model with :func:`dperm.save_model` instead.

    ``transform(X)`` returns a float64 array (CSR with ``sparse_output``) of shape
    (n_samples, d), d =
    #numeric + sum of the category list lengths, whose rows have norm <=
    ``data_norm``: each row is the concatenation of the mapped numeric values
    and the one-hot groups, divided by sqrt(#numeric + #categorical) and
    multiplied by ``data_norm``.  The input is never modified.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from dperm import PrivateLinearClassifier, PublicBoundsTransformer
    >>> model = make_pipeline(
    ...     PublicBoundsTransformer(numeric={"age": (17, 90), "hours": (0, 99)},
    ...                             categorical={"sex": ["Female", "Male"]},
    ...                             fill={"hours": 40}),
    ...     PrivateLinearClassifier(epsilon=1.0, classes=[0, 1]))
    >>> model.fit(frame, y)                             # doctest: +SKIP
    """

    def __init__(self, numeric: Any = None, categorical: Mapping | None = None,
                 fill: Any = None, data_norm: float = 1.0, unknown: str = "error",
                 sparse_output: bool = False) -> None:
        self.numeric = numeric
        self.categorical = categorical
        self.fill = fill
        self.data_norm = data_norm
        self.unknown = unknown
        self.sparse_output = sparse_output

    @classmethod
    def from_schema(cls, schema: PublicSchema, *, data_norm: float = 1.0, unknown: str = "error",
                    sparse_output: bool = False) -> PublicBoundsTransformer:
        """A transformer applying a :class:`~dperm.PublicSchema` to the feature columns.

        The schema's label and classes are not used here: y passes through
        the transformer untouched (no recoding to 0/1 or -1/+1), so two or
        K > 2 classes reach the classifier as they are.  Give the classifier
        the schema's public label set, in its order:
        ``PrivateLinearClassifier(classes=list(schema.classes))`` (two classes:
        [negative, positive]; K > 2: the order of its scores and ``classes_``).

        Parameters
        ----------
        schema : PublicSchema
            The public bounds, category lists and fill values.
        data_norm : float, default 1.0
            R: every encoded row has norm <= R.
        unknown : {"error", "ignore"}, default "error"
            A category not in the public list: an error, or an all-zero group.
        sparse_output : bool, default False
            Return CSR rows instead of dense ones.

        Returns
        -------
        PublicBoundsTransformer
        """
        if not isinstance(schema, PublicSchema):
            raise TypeError(f"schema must be a PublicSchema, got {type(schema).__name__}")
        return cls(numeric={c: tuple(b) for c, b in schema.numeric.items()},
                   categorical={c: list(v) for c, v in schema.categorical.items()},
                   fill=dict(schema.fill) or None, data_norm=data_norm, unknown=unknown,
                   sparse_output=sparse_output)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

    # ------------------------------------------------------------------ fit
    #: every parameter's declared forms, checked once per fit
    _parameter_constraints: ClassVar[ParameterTable] = {
        "numeric": [NONE, Satisfies(_check_numeric, "a mapping or one (low, high) pair")],
        "categorical": [NONE, Satisfies(_check_categorical, "a mapping")],
        "fill": [NONE, Satisfies(_check_fill, "a mapping or one number")],
        "data_norm": [POSITIVE],
        "unknown": [Options({"error", "ignore"})],
        "sparse_output": [BOOLEAN],
    }

    def _resolve(self, labels: list[Any] | None,
                 n_cols: int) -> tuple[list[tuple[str, Any]], PublicSchema]:
        """The selection [(schema name, key)] and the schema, from the (checked)
        parameters and X's column names / count only."""
        locate = _column_locator(labels, n_cols)
        categorical = {} if self.categorical is None else self.categorical
        numeric = {} if self.numeric is None else self.numeric
        if _is_pair(plain_list(numeric)):        # one pair: every column not categorical
            cat_keys = {locate(k, "categorical")[0] for k in categorical}
            numeric = _every_other_column(tuple(float(v) for v in plain_list(numeric)),
                                          cat_keys, labels, n_cols)
        selection, by_key = [], {}
        num_s: dict[str, Any] = {}
        cat_s: dict[str, Any] = {}
        for what, spec, out in (("numeric", numeric, num_s), ("categorical", categorical, cat_s)):
            for key, value in spec.items():
                k, name = locate(key, what)
                if k in by_key or name in num_s or name in cat_s:
                    raise ValueError(f"{what}: column {key!r} is listed twice (numeric and "
                                     "categorical, or by name and by index)")
                by_key[k] = name
                out[name] = value
                selection.append((name, k))
        fill_s = self._fill_by_name(locate, num_s, cat_s)
        return selection, PublicSchema(num_s, cat_s, fill=fill_s)

    def _fill_by_name(self, locate: Callable[[Any, str], tuple[Any, str]],
                      num_s: Mapping[str, Any], cat_s: Mapping[str, Any]) -> dict[str, Any]:
        """fill as {schema name: value}: one number for every numeric column, or a
        mapping over selected columns."""
        fill = self.fill
        if fill is None:
            return {}
        if _is_real(fill):
            return {name: fill for name in num_s}
        fill_s = {}
        for key, value in fill.items():
            _, name = locate(key, "fill")
            if name not in num_s and name not in cat_s:
                raise ValueError(f"fill: column {key!r} is neither in numeric nor in "
                                 "categorical")
            fill_s[name] = value
        return fill_s

    def fit(self, X: Any, y: Any = None) -> PublicBoundsTransformer:
        """Check the parameters against X's column names / count; reads no values.

        Parameters
        ----------
        X : DataFrame or array_like of shape (n_samples, n_features)
            The feature columns (only their names or count are read).
        y : None
            Ignored.

        Returns
        -------
        PublicBoundsTransformer
            self.
        """
        check_params(self._parameter_constraints, self.get_params(deep=False))
        labels, n_cols = frame_info(X)
        selection, schema = self._resolve(labels, n_cols)
        self._selection = selection
        self.schema_ = schema
        self.n_features_in_ = n_cols
        if labels is not None and labels and all(isinstance(c, str) for c in labels):
            self.feature_names_in_ = np.asarray(labels, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return self

    # ------------------------------------------------------------------ transform
    def transform(self, X: Any) -> Any:
        """Encode X, with row norms <= data_norm.

        Parameters
        ----------
        X : DataFrame or array_like of shape (n_samples, n_features)
            The same columns as in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples, d) or scipy.sparse.csr_array
            float64 rows; CSR with ``sparse_output``.

        Raises
        ------
        ValueError
            A category not in the public list (with ``unknown="error"``), or a missing value
            with no public fill value, naming the column and the row.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "schema_")
        if is_dask_frame(X):
            # each partition encoded on a worker by this method (public and row-wise)
            return map_dask_partitions(X, self.transform)
        labels, n_cols = frame_info(X)
        self._check_columns(labels, n_cols)
        columns, index = frame_columns(X, self._selection, labels)

        def where(i):
            text = f"row index {i}"
            if index is not None:
                try:
                    lab = index[i]
                except Exception:  # pragma: no cover - exotic index
                    return text
                if not (isinstance(lab, (int, np.integer)) and int(lab) == i):
                    lab = lab.item() if isinstance(lab, np.generic) else lab
                    text += f", index label {lab!r}"
            return text

        return self.schema_.encode(columns, unknown=self.unknown,
                                   data_norm=float(self.data_norm), describe_row=where,
                                   sparse=bool(self.sparse_output))

    def _check_columns(self, labels: list[Any] | None, n_cols: int) -> None:
        """X at transform has the columns selected in fit (by name, or by position and
        the same count)."""
        positional = [k for _, k in self._selection if not isinstance(k, str)]
        named = [k for _, k in self._selection if isinstance(k, str)]
        if named and labels is None:
            raise ValueError("X: this transformer selects columns by name; pass a DataFrame "
                             "with the columns " + _short(named, 12))
        if labels is not None and named:
            lacking = [c for c in named if c not in labels]
            if lacking:
                raise ValueError(f"X lacks column(s) {lacking} (it has: "
                                 f"{_short(labels, 12)[1:-1]})")
        if positional and n_cols != self.n_features_in_:
            raise ValueError(f"X has {n_cols} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the output columns: ``col`` and ``col=category``.

        Parameters
        ----------
        input_features : array_like of str, optional
            Ignored beyond scikit-learn's check against ``feature_names_in_``.

        Returns
        -------
        ndarray of str
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "schema_")
        rename = {}
        if input_features is not None:
            input_features = np.asarray(input_features, dtype=object)
            if input_features.shape != (self.n_features_in_,):
                raise ValueError(f"input_features should have length equal to number of "
                                 f"features ({self.n_features_in_}), got "
                                 f"{input_features.shape[0]}")
            fitted = getattr(self, "feature_names_in_", None)
            if fitted is not None and np.any(input_features != fitted):
                raise ValueError("input_features is not equal to feature_names_in_")
            rename = {name: str(input_features[k]) for name, k in self._selection
                      if not isinstance(k, str)}
        s = self.schema_
        out = [rename.get(c, c) for c in s.numeric]
        out += [f"{rename.get(c, c)}={v}" for c, cats in s.categorical.items() for v in cats]
        return np.asarray(out, dtype=object)
