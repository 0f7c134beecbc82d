"""The public schema: public column bounds, category lists, the label and its classes.

Differential privacy holds only if everything that shapes the design matrix is
PUBLIC, fixed before the data are seen: the row-norm bound R, each numeric
column's range, each categorical column's list of categories, the classes of
the label (two, [negative, positive], or the K > 2 labels of a K-class model)
and how missing values are filled.  :class:`PublicSchema` holds these, checks
them, reads and writes them as JSON, and encodes raw columns into rows of norm
<= R, each row on its own.  It is the one implementation behind the command
line (``dperm fit --schema``), the Adult loader (``load_adult("public")``) and
the scikit-learn transformer :class:`~dperm.PublicBoundsTransformer`
(dperm/sklearn/transformer.py).  What kind of container holds the columns (a
mapping of arrays, a DataFrame) is asked of dperm/data/columns.py.

The encoding of a row (d = number of encoded columns, k = number of schema
columns, numeric then categorical, in schema order):

* numeric column with public range [low, high]: the value is clipped to
  [low, high] and mapped to (v - low) / (high - low), in [0, 1];
* categorical column with a public list of m categories: m one-hot columns in
  list order; a value not in the list is an error or an all-zero group;
* the row is divided by sqrt(k), the largest norm such a row can have, so its
  norm is <= 1 (then multiplied by ``data_norm`` when one is asked for).

A missing value (None, NaN, pandas' NA) is replaced by the column's public
fill value, or is an error naming the column and the first such row.  Nothing
is read from any other row, so the map is safe for private training.
"""
from __future__ import annotations

import json
import math
import numbers
import types
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dperm.data.columns import column_array, plain_list
from dperm.data.norms import shrink_to

__all__ = ["PublicSchema", "CategoryCodes"]

_SCHEMA_KEYS = ("numeric", "categorical", "label", "fill")
_NA_TYPE_NAMES = frozenset({"NAType", "NaTType"})

# ----------------------------------------------------------------------------- helpers
def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _is_na(v: Any) -> bool:
    """None, a float NaN, pandas' NA or NaT: a missing value."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return v != v
    return type(v).__name__ in _NA_TYPE_NAMES


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def normalize_category(v: Any) -> Any:
    """The one rule by which cells and the schema's categories are compared: a string loses
    its surrounding whitespace (pandas' read_csv keeps the space after a comma unless told
    skipinitialspace; the command line strips every cell); case is kept (two codes that differ
    only in case are different categories, and a mismatch is reported, not guessed)."""
    return v.strip() if isinstance(v, str) else v


class CategoryCodes:
    """A categorical column already matched against the schema's public list, for readers
    that compare cells in bulk (the command line's CSV reader, dperm/cli/_io.py).

    ``codes[i]`` is the index in ``categories`` of row i's value (compared by
    :func:`normalize_category`'s rule), -1 for a value outside the list and -2 for a
    missing value; ``cell(i)`` is row i's value as read, for messages.  ``categories``
    must be the schema's list for the column: :meth:`PublicSchema.encode` and
    :meth:`PublicSchema.missing_mask` check it and then use the codes as they are.
    """

    __slots__ = ("codes", "categories", "cell")

    def __init__(self, codes: Any, categories: Any, cell: Callable[[int], Any]) -> None:
        self.codes = np.asarray(codes, dtype=np.intp)
        if self.codes.ndim != 1:
            raise ValueError(f"codes must be 1-D, got shape {self.codes.shape}")
        self.categories = tuple(categories)
        if self.codes.size and (self.codes.min() < -2
                                or self.codes.max() >= len(self.categories)):
            raise ValueError(f"codes must lie in [-2, {len(self.categories) - 1}] (an index "
                             "in the categories, -1 unknown, -2 missing)")
        self.cell = cell

    def __len__(self) -> int:
        return int(self.codes.shape[0])


def _scalar(v: Any, where: str) -> str | bool | int | float:
    """A category or class as a plain JSON scalar: str, int, bool or a finite float."""
    v = _plain(v)
    if isinstance(v, (str, bool)):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real) and math.isfinite(v):
        return float(v)
    raise ValueError(f"{where}: {v!r} cannot be a category or class (use strings, "
                     "integers or finite numbers)")


def _text(v: Any, where: str) -> str:
    """Command-line form: categories and classes are compared as text."""
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    raise ValueError(f"{where}: {v!r} must be a string (write labels and categories as "
                     "they appear in the CSV file, in quotes)")


def _check_classes(classes: Any, what: str) -> tuple[Any, ...]:
    """The label's classes as a tuple of K >= 2 distinct plain scalars (see `_scalar`);
    errors name `what` ("classes", or "label.classes" in the JSON form)."""
    classes = plain_list(classes)
    if isinstance(classes, (str, bytes)) or not isinstance(classes, (list, tuple)) \
            or len(classes) < 2:
        raise ValueError(f"{what} must list at least two different labels ([negative, "
                         f"positive] for two, every label that may occur for more), got "
                         f"{classes!r}")
    classes = tuple(_scalar(v, what) for v in classes)
    if len(set(classes)) != len(classes):
        seen, dup = set(), []
        for v in classes:
            if v in seen and v not in dup:
                dup.append(v)
            seen.add(v)
        raise ValueError(f"{what}: {dup} listed more than once (the classes must be "
                         f"different labels), got {list(classes)}")
    return classes


def _short(items: Any, k: int = 8) -> str:
    items = list(items)
    return repr(items[:k])[:-1] + (", ...]" if len(items) > k else "]")


def _column_name(c: Any, what: str) -> str:
    if not (isinstance(c, str) and c):
        raise ValueError(f"{what}: column names must be non-empty strings, got {c!r}")
    return c


def _default_where(i: int) -> str:
    return f"row index {i}"


# ----------------------------------------------------------------------------- the constructor's steps
def _mapping(value: Mapping | None, what: str, expected: str) -> Mapping:
    """``value`` ({} for None), which must be a mapping."""
    value = {} if value is None else value
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must map {expected}, got {type(value).__name__}")
    return value


def _numeric_range(c: Any, b: Any) -> tuple[float, float]:
    """The public (low, high) of numeric column c: two finite numbers, low < high (a
    single number H is (0, H))."""
    _column_name(c, "numeric")
    b = plain_list(b)
    if _is_real(b):
        b = [0.0, b]  # a single number is the upper bound of [0, high]
    if not (isinstance(b, (list, tuple)) and len(b) == 2 and all(_is_real(v) for v in b)):
        raise ValueError(f"numeric[{c!r}] must be [low, high] (two numbers), got {b!r}")
    lo, hi = float(b[0]), float(b[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"numeric[{c!r}] = {list(b)!r} needs finite low < high")
    return lo, hi


def _category_list(c: Any, cats: Any) -> tuple[Any, ...]:
    """The public categories of column c: a non-empty list of distinct scalars."""
    _column_name(c, "categorical")
    cats = plain_list(cats)
    if isinstance(cats, (str, bytes)) or not isinstance(cats, (list, tuple)) or not cats:
        raise ValueError(f"categorical[{c!r}] must be a non-empty list of categories, "
                         f"got {cats!r}")
    cats = tuple(normalize_category(_scalar(v, f"categorical[{c!r}]")) for v in cats)
    if len(set(cats)) != len(cats):
        raise ValueError(f"categorical[{c!r}]: categories {_repeated(cats)} are listed more "
                         "than once")
    return cats


def _repeated(items: tuple[Any, ...]) -> list[Any]:
    """The items listed more than once, each once, in order of their second listing."""
    seen: set[Any] = set()
    dup: list[Any] = []
    for v in items:
        if v in seen and v not in dup:
            dup.append(v)
        seen.add(v)
    return dup


def _check_feature_columns(num: Mapping[str, Any], cat: Mapping[str, Any]) -> None:
    """At least one feature column, none both numeric and categorical."""
    both = [c for c in num if c in cat]
    if both:
        raise ValueError(f"column(s) {both} are both numeric and categorical")
    if not num and not cat:
        raise ValueError("no feature columns (give 'numeric' and/or 'categorical')")


def _check_label_column(label: Any, num: Mapping[str, Any], cat: Mapping[str, Any]) -> None:
    """The label (when given) is a column name that is not a feature."""
    if label is None:
        return
    if not (isinstance(label, str) and label):
        raise ValueError(f"label must be a column name, got {label!r}")
    if label in num or label in cat:
        raise ValueError(f"the label column {label!r} is also listed as a feature")


def _label_range(label_bounds: Any, label: str | None) -> tuple[float, float]:
    """The public (low, high) of a regression label: two finite numbers, low < high."""
    if label is None:
        raise ValueError("label_bounds need a label column (label=...)")
    label_bounds = plain_list(label_bounds)
    if not (isinstance(label_bounds, (list, tuple)) and len(label_bounds) == 2
            and all(_is_real(v) for v in label_bounds)):
        raise ValueError(f"label_bounds must be [low, high] (two numbers), got "
                         f"{label_bounds!r}")
    lo, hi = float(label_bounds[0]), float(label_bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"label_bounds = {list(label_bounds)!r} needs finite "
                         "low < high")
    return lo, hi


def _fill_value(c: Any, v: Any, num: Mapping[str, Any],
                cat: Mapping[str, tuple[Any, ...]]) -> Any:
    """The public fill value of feature column c: a finite number for a numeric
    column, one of the listed categories (as listed) for a categorical one."""
    v = _plain(v)
    if c in num:
        if not (_is_real(v) and math.isfinite(v)):
            raise ValueError(f"fill[{c!r}] must be a finite number for the numeric "
                             f"column {c!r}, got {v!r}")
        return float(v)
    if c in cat:
        v = normalize_category(v)
        if _is_na(v) or not isinstance(v, (str, numbers.Real)) or v not in cat[c]:
            raise ValueError(f"fill[{c!r}] = {v!r} must be one of the categories of "
                             f"column {c!r}: {_short(cat[c])}")
        return cat[c][cat[c].index(v)]
    raise ValueError(f"fill names column {c!r}, which is not a feature column of "
                     "the schema")


# ----------------------------------------------------------------------------- from_dict's steps
def _json_sections(obj: dict, where: str) -> tuple[dict, dict, dict, dict]:
    """The JSON form's numeric, categorical, label and fill objects ({} when absent)."""
    extra = set(obj) - set(_SCHEMA_KEYS)
    if extra:
        raise ValueError(f"{where}: unknown key(s) {sorted(extra)}; expected "
                         f"{sorted(_SCHEMA_KEYS)}")
    sections = [obj.get(k, {}) or {} for k in _SCHEMA_KEYS]
    for value, expected in zip(sections, (
            "'numeric' must map column -> [low, high]",
            "'categorical' must map column -> list of categories",
            "'label' must be an object {\"column\": ..., \"classes\": [...]}",
            "'fill' must map column -> public fill value")):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: {expected}")
    numeric, categorical, label, fill = sections
    return numeric, categorical, label, fill


def _json_label(label: dict, where: str) -> tuple[Any, Any, Any]:
    """The JSON label object's column, classes and bounds (each None when absent)."""
    extra = set(label) - {"column", "classes", "bounds"}
    if extra:
        raise ValueError(f"{where}: label has unknown key(s) {sorted(extra)}; expected "
                         "'column', 'classes', 'bounds'")
    label_bounds = label.get("bounds")
    if label_bounds is not None and not (
            isinstance(label_bounds, list) and len(label_bounds) == 2
            and all(_is_real(v) and not isinstance(v, bool) for v in label_bounds)):
        raise ValueError(f"{where}: label.bounds must be [low, high] (two numbers), got "
                         f"{label_bounds!r}")
    column = label.get("column")
    if column is not None and not (isinstance(column, str) and column):
        raise ValueError(f"{where}: label.column must be a column name, got {column!r}")
    classes = label.get("classes")
    if classes is not None and not isinstance(classes, list):
        raise ValueError(f"{where}: label.classes must be a list of at least two different "
                         f"labels, got {classes!r}")
    return column, classes, label_bounds


def _check_json_numeric(numeric: dict) -> None:
    """Each JSON bound is a number or a list (never true/false)."""
    for c, b in numeric.items():
        if isinstance(b, bool) or not (_is_real(b) or isinstance(b, list)):
            raise ValueError(f"numeric[{c!r}] must be [low, high] (two numbers), got {b!r}")


def _json_categories_as_text(categorical: dict, classes: list | None,
                             fill: dict) -> tuple[dict, list | None, dict]:
    """Categories, classes and categorical fill values as strings (the command line,
    which reads every cell as text; JSON integers become strings)."""
    categorical = {c: ([_text(v, f"categorical[{c!r}]") for v in cats]
                       if isinstance(cats, list) else cats)
                   for c, cats in categorical.items()}
    if classes is not None:
        classes = [_text(v, "label.classes") for v in classes]
    fill = {c: (_text(v, f"fill[{c!r}]") if c in categorical else v)
            for c, v in fill.items()}
    return categorical, classes, fill


# ----------------------------------------------------------------------------- schema
class PublicSchema:
    """Public preprocessing of a table: bounds, category lists, label, fill values.

    Every value here must be fixed before looking at the private data (from
    the meaning of each column, a codebook, a previous public release); the
    privacy guarantee covers nothing that was read from the data.

    Parameters
    ----------
    numeric : mapping column -> (low, high), optional
        Public range of each numeric column (finite, low < high).  A single
        number H means (0, H).  Values are clipped to the range and mapped to
        [0, 1] by (v - low) / (high - low).
    categorical : mapping column -> list of categories, optional
        Public list of each categorical column (distinct strings, integers or
        finite numbers; values are compared by equality, so ``1 == 1.0`` but
        ``1 != "1"``).  One-hot encoded in list order, after the numeric
        columns.
    label : str, optional
        The label column (it may not also be a feature).
    classes : list of K >= 2 labels, optional
        The public classes of the label, all different: two are
        ``[negative, positive]``; K > 2 are the public set of every label
        that may occur, in the order of the model's scores (pass
        ``classes=list(schema.classes)`` to
        :class:`~dperm.PrivateLinearClassifier`, which fits K classes
        multinomially or one-vs-rest).
    fill : mapping column -> value, optional
        Public replacement of a missing value (None, NaN, pandas' NA): a
        number for a numeric column, one of the listed categories for a
        categorical one.  Columns without a fill value refuse missing values.
    label_bounds : (low, high), optional
        The PUBLIC range of a regression label (JSON: ``"label": {"column": ...,
        "bounds": [low, high]}``, as ``dperm bounds --label`` releases it);
        ``dperm fit --task regression`` centres the label on its midpoint.

    Notes
    -----
    The schema is immutable; :meth:`replace` returns a modified copy.
    ``PublicSchema.from_dict`` / ``to_dict`` read and write the JSON format
    of ``dperm fit --schema``::

        {"numeric": {"age": [17, 90]}, "categorical": {"color": ["red", "blue"]},
         "label": {"column": "y", "classes": ["no", "yes"]}, "fill": {"age": 40}}

    Examples
    --------
    >>> import numpy as np
    >>> from dperm import PublicSchema
    >>> s = PublicSchema(numeric={"age": (17, 90)}, categorical={"color": ["red", "blue"]})
    >>> s.feature_names()
    ['age', 'color=red', 'color=blue']
    >>> X = s.encode({"age": [17.0, 200.0], "color": ["blue", "red"]})
    >>> X.shape, bool((np.linalg.norm(X, axis=1) <= 1).all())
    ((2, 3), True)
    """

    __slots__ = ("_numeric", "_categorical", "_label", "_classes", "_fill", "_label_bounds")

    def __init__(self, numeric: Mapping | None = None,
                 categorical: Mapping | None = None, *, label: str | None = None,
                 classes: Any = None, fill: Mapping | None = None,
                 label_bounds: Any = None) -> None:
        numeric = _mapping(numeric, "numeric", "column -> [low, high]")
        categorical = _mapping(categorical, "categorical", "column -> list of categories")
        fill = _mapping(fill, "fill", "column -> public fill value")
        num = {c: _numeric_range(c, b) for c, b in numeric.items()}
        cat = {c: _category_list(c, cats) for c, cats in categorical.items()}
        _check_feature_columns(num, cat)
        _check_label_column(label, num, cat)
        if classes is not None:
            classes = _check_classes(classes, "classes")
        if label_bounds is not None:
            label_bounds = _label_range(label_bounds, label)
        fil = {c: _fill_value(c, v, num, cat) for c, v in fill.items()}
        self._numeric = types.MappingProxyType(num)
        self._categorical = types.MappingProxyType(cat)
        self._label = label
        self._classes = classes
        self._fill = types.MappingProxyType(fil)
        self._label_bounds = label_bounds

    # ------------------------------------------------------------------ read-only views
    @property
    def numeric(self) -> Mapping[str, tuple[float, float]]:
        """Column -> (low, high), floats, in encoding order (read-only)."""
        return self._numeric

    @property
    def categorical(self) -> Mapping[str, tuple[Any, ...]]:
        """Column -> tuple of categories, in encoding order (read-only)."""
        return self._categorical

    @property
    def label(self) -> str | None:
        """The label column, or None."""
        return self._label

    @property
    def classes(self) -> tuple[Any, ...] | None:
        """Tuple of the K >= 2 classes ((negative, positive) for two), or None."""
        return self._classes

    @property
    def fill(self) -> Mapping[str, Any]:
        """Column -> public fill value (read-only)."""
        return self._fill

    @property
    def label_bounds(self) -> tuple[float, float] | None:
        """(low, high): the PUBLIC range of a regression label (e.g. released by
        ``dperm bounds --label``), or None."""
        return self._label_bounds

    @property
    def columns(self) -> tuple:
        """The feature columns, numeric then categorical (tuple of str)."""
        return tuple(self._numeric) + tuple(self._categorical)

    @property
    def n_features(self) -> int:
        """Width d of the encoded matrix."""
        return len(self._numeric) + sum(len(v) for v in self._categorical.values())

    @property
    def row_divisor(self) -> float:
        """sqrt(#numeric + #categorical): each encoded row is divided by it."""
        return math.sqrt(len(self._numeric) + len(self._categorical))

    def feature_names(self) -> list[str]:
        """Names of the encoded columns: ``"col"`` (numeric), ``"col=category"`` (one-hot).

        Returns
        -------
        list of str
            One name per encoded column, in encoding order (``n_features`` of them).
        """
        return list(self._numeric) + [f"{c}={v}" for c, cats in self._categorical.items()
                                      for v in cats]

    def replace(self, **changes: Any) -> PublicSchema:
        """A copy with some of numeric, categorical, label, classes, fill replaced.

        Parameters
        ----------
        **changes
            New values by field name (``numeric``, ``categorical``, ``label``, ``classes``,
            ``fill``), as the constructor takes them.

        Returns
        -------
        PublicSchema
            A new, validated schema; this one is unchanged.
        """
        unknown = set(changes) - set(_SCHEMA_KEYS) - {"classes", "label_bounds"}
        if unknown:
            raise TypeError(f"replace() got unexpected keyword argument(s) {sorted(unknown)}")
        kw: dict[str, Any] = dict(numeric=self._numeric, categorical=self._categorical, label=self._label,
                  classes=self._classes, fill=self._fill, label_bounds=self._label_bounds)
        if changes.get("label", self._label) != self._label and "label_bounds" not in changes:
            kw["label_bounds"] = None    # the bounds were those of the old label column
        kw.update(changes)
        return PublicSchema(dict(kw.pop("numeric")), dict(kw.pop("categorical")), **kw)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # pickle, joblib, copy and deepcopy: the read-only views (mappingproxy) cannot be
        # pickled, so the schema is rebuilt from plain copies of its public values (and
        # checked again, as any schema is)
        return (_rebuild_schema, (dict(self._numeric),
                                  {c: list(v) for c, v in self._categorical.items()},
                                  self._label,
                                  None if self._classes is None else list(self._classes),
                                  dict(self._fill), self._label_bounds))

    def _key(self) -> tuple[Any, ...]:
        return (tuple(self._numeric.items()), tuple(self._categorical.items()), self._label,
                self._classes, tuple(self._fill.items()), self._label_bounds)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PublicSchema):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        parts = [f"numeric={dict(self._numeric)!r}", f"categorical="
                 f"{ {c: list(v) for c, v in self._categorical.items()}!r}"]
        if self._label is not None:
            parts.append(f"label={self._label!r}")
        if self._classes is not None:
            parts.append(f"classes={list(self._classes)!r}")
        if self._label_bounds is not None:
            parts.append(f"label_bounds={list(self._label_bounds)!r}")
        if self._fill:
            parts.append(f"fill={dict(self._fill)!r}")
        return f"PublicSchema({', '.join(parts)})"

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """The JSON form (plain dicts and lists); "fill" only when there is one.

        Returns
        -------
        dict
            ``{"numeric": ..., "categorical": ..., "label": {"column", "classes"[, "bounds"]}
            [, "fill": ...]}``, read back by :meth:`from_dict` (see Notes of the class).
        """
        label: dict[str, Any] = {
            "column": self._label,
            "classes": None if self._classes is None else list(self._classes)}
        if self._label_bounds is not None:   # only then: older schema files are unchanged
            label["bounds"] = list(self._label_bounds)
        out: dict[str, Any] = {
            "numeric": {c: [lo, hi] for c, (lo, hi) in self._numeric.items()},
            "categorical": {c: list(v) for c, v in self._categorical.items()},
            "label": label,
        }
        if self._fill:
            out["fill"] = dict(self._fill)
        return out

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps(self.to_dict(), **kwargs)`` (indent=2 unless given).

        Parameters
        ----------
        **kwargs
            Passed to :func:`json.dumps`.

        Returns
        -------
        str
        """
        kwargs.setdefault("indent", 2)
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_json(cls, text: str, *, where: str = "schema") -> PublicSchema:
        """Parse the JSON text written by :meth:`to_json` (or by hand).

        Parameters
        ----------
        text : str
            The JSON document.
        where : str, default "schema"
            The prefix of error messages (e.g. the file's name).

        Returns
        -------
        PublicSchema

        Raises
        ------
        ValueError
            Invalid JSON or an invalid schema, the message starting with ``where``.
        """
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: invalid JSON at line {exc.lineno} column "
                             f"{exc.colno}: {exc.msg}") from None
        return cls.from_dict(obj, where=where)

    @classmethod
    def from_dict(cls, obj: dict, *, where: str = "schema",
                  categories_as_text: bool = False) -> PublicSchema:
        """Read the JSON form; errors are ValueError starting with ``where``.

        With ``categories_as_text`` (the command line, which reads every cell
        as text) categories, classes and categorical fill values must be
        strings; JSON integers are accepted and turned into strings.

        Parameters
        ----------
        obj : dict
            The schema's JSON form (keys ``numeric``, ``categorical``, ``label``, ``classes``,
            ``fill``).
        where : str, default "schema"
            The prefix of error messages.
        categories_as_text : bool, default False
            Read categories, classes and categorical fill values as strings.

        Returns
        -------
        PublicSchema

        Raises
        ------
        ValueError
            An invalid schema.
        """
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: must be a JSON object with keys 'numeric', "
                             "'categorical', 'label' (and optionally 'fill')")
        numeric, categorical, label, fill = _json_sections(obj, where)
        column, classes, label_bounds = _json_label(label, where)
        try:
            _check_json_numeric(numeric)
            if categories_as_text:
                categorical, classes, fill = _json_categories_as_text(categorical, classes, fill)
            elif classes is not None:
                classes = [_scalar(v, "label.classes") for v in classes]
            if classes is not None:
                classes = list(_check_classes(classes, "label.classes"))
            return cls(numeric, categorical, label=column, classes=classes, fill=fill,
                       label_bounds=label_bounds)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    # ------------------------------------------------------------------ encoding
    def _column_arrays(self, columns: Any) -> tuple[dict[str, Any], int]:
        if not hasattr(columns, "__getitem__"):
            raise ValueError("columns must map column name -> 1-D array of values (a dict "
                             "or a DataFrame)")
        got: dict[str, Any] = {}
        lacking: list[str] = []
        n: int | None = None
        for c in self.columns:
            try:
                values = columns[c]
            except (KeyError, IndexError, TypeError):
                lacking.append(c)
                continue
            if isinstance(values, CategoryCodes):
                if c not in self._categorical or values.categories != self._categorical[c]:
                    raise ValueError(f"column {c!r}: codes matched against "
                                     f"{_short(values.categories)}, not the schema's list of "
                                     "this categorical column")
                if n is not None and len(values) != n:
                    raise ValueError(f"column {c!r} has {len(values)} values, the other "
                                     f"columns have {n}")
                got[c] = values
            else:
                got[c] = column_array(values, c, n)
            n = len(got[c])
        if lacking:
            raise ValueError(f"the data lacks column(s) {lacking} of the schema")
        assert n is not None     # a schema has at least one column (the constructor checks)
        return got, n

    def _numeric_values(self, c: str, arr: np.ndarray, where: Callable[[int], str]) -> np.ndarray:
        """Float64 with NaN for missing values (a float64 array as it is: never written
        to); an error for anything else, +-inf included (as numpy input and the command
        line: an infinite value is refused, never clipped to the public range)."""
        out = self._numeric_floats(c, arr, where)
        bad = np.flatnonzero(np.isinf(out))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"non-finite value {float(out[i])!r} in numeric column {c!r} "
                             f"({where(i)}): remove or replace it (a missing value is NaN "
                             f"or None, filled with the column's public fill value)")
        return out

    def _numeric_floats(self, c: str, arr: np.ndarray, where: Callable[[int], str]) -> np.ndarray:
        if arr.dtype.kind in "fiub":
            return arr.astype(np.float64, copy=False)
        if arr.dtype.kind in "OUS":
            try:
                out = arr.astype(np.float64)
                if arr.dtype.kind != "O":
                    return out
                if not any(isinstance(v, (str, bytes)) for v in arr.tolist()):
                    return out
            except (TypeError, ValueError):
                pass
            out = np.empty(arr.shape[0])
            for i, v in enumerate(arr.tolist()):
                if _is_na(v):
                    out[i] = np.nan
                    continue
                if isinstance(v, bytes):
                    v = v.decode("utf-8", "replace")
                try:
                    if isinstance(v, str):
                        out[i] = float(v)
                    elif isinstance(v, numbers.Real):
                        out[i] = float(v)
                    else:
                        raise TypeError
                except (TypeError, ValueError):
                    raise ValueError(f"non-numeric value {v!r} in numeric column {c!r} "
                                     f"({where(i)})") from None
            return out
        raise ValueError(f"numeric column {c!r} has values of dtype {arr.dtype}, not numbers")

    def _codes(self, c: str, arr: Any) -> np.ndarray:
        """Index of each value in the public list; -1 unknown, -2 missing (never written
        to: CategoryCodes' own array)."""
        if isinstance(arr, CategoryCodes):
            return arr.codes
        cats = self._categorical[c]
        pos = {v: k for k, v in enumerate(cats)}
        if arr.dtype.kind in "USiub":
            lev, inv = np.unique(arr, return_inverse=True)
            lut = np.fromiter((pos.get(normalize_category(v), -1) for v in lev.tolist()),
                              dtype=np.intp, count=lev.size)
            return lut[inv.reshape(-1)]
        codes = np.empty(arr.shape[0], dtype=np.intp)
        for i, v in enumerate(arr.tolist()):
            if _is_na(v):
                codes[i] = -2
                continue
            try:
                codes[i] = pos.get(normalize_category(v), -1)
            except TypeError:  # unhashable
                codes[i] = -1
        return codes

    def _prepare(self, columns: Any, where: Callable[[int], str]
                 ) -> tuple[dict[str, Any], int, dict[str, np.ndarray], dict[str, np.ndarray]]:
        cols, n = self._column_arrays(columns)
        num = {c: self._numeric_values(c, cols[c], where) for c in self._numeric}
        cat = {c: self._codes(c, cols[c]) for c in self._categorical}
        return cols, n, num, cat

    def missing_mask(self, columns: Any, *, by_column: bool = False,
                     describe_row: Callable[[int], str] | None = None
                     ) -> np.ndarray | dict[str, np.ndarray]:
        """Rows with a missing value in a column that has no public fill value.

        Parameters
        ----------
        columns : mapping or DataFrame
            Column name -> 1-D array of n values.
        by_column : bool, default False
            Return one mask per column instead of one for the rows.
        describe_row : callable, optional
            int -> str, how messages name a row (e.g. with its line in a file).

        Returns
        -------
        ndarray of shape (n,) or dict
            A bool array, or with ``by_column`` a dict column -> bool array for the columns
            that have missing values.
        """
        where = describe_row or _default_where
        _, n, num, cat = self._prepare(columns, where)
        masks = {}
        for c, v in num.items():
            m = np.isnan(v)
            if c not in self._fill and m.any():
                masks[c] = m
        for c, k in cat.items():
            m = k == -2
            if c not in self._fill and m.any():
                masks[c] = m
        if by_column:
            return masks
        out = np.zeros(n, dtype=bool)
        for m in masks.values():
            out |= m
        return out

    @property
    def stored_per_row(self) -> int:
        """Stored entries of an encoded row in sparse form: #numeric + #categorical.

        Every numeric column is a stored entry (a value mapped to 0 is an
        explicit zero) and each categorical column holds at most one.
        """
        return len(self._numeric) + len(self._categorical)

    @property
    def density(self) -> float:
        """Largest fraction of non-zero entries of an encoded row (a public number:
        ``stored_per_row / n_features``), for choosing sparse or dense output."""
        return self.stored_per_row / self.n_features

    def encode(self, columns: Any, *, unknown: str = "error", data_norm: float = 1.0,
               describe_row: Callable[[int], str] | None = None, sparse: bool = False) -> Any:
        """The public encoding of every row, each on its own.

        Parameters
        ----------
        columns : mapping column -> 1-D array-like, or a DataFrame
            Raw values of (at least) the schema's columns, all of length n.
            Numeric columns hold numbers (numeric strings are parsed), and
            None/NaN for missing values.
        unknown : {"error", "ignore"}
            A categorical value not in the public list: an error naming the
            column, the value and the first such row, or an all-zero group.
        data_norm : float > 0
            The public row-norm bound R: the encoding is multiplied by it.
        describe_row : callable, optional
            i -> text naming row i in error messages (default "row index i",
            counted from 0).
        sparse : bool, default False
            Return a ``scipy.sparse.csr_array`` built directly from the
            values, never through a dense (n, d) array: each row stores its
            numeric columns (a value mapped to 0 is an explicit zero) and one
            entry per categorical column (none for an unknown category with
            ``unknown="ignore"``); indices sorted, int32 when they fit.  The
            values are those of the dense encoding, up to the last bit of
            the few rows that the norm check shrinks by 1 - 8 eps.

        Returns
        -------
        X : ndarray of shape (n, d), float64, C-contiguous (or CSR of that shape)
            d = ``self.n_features``; every row has norm <= data_norm.  The
            input is never modified.
        """
        if unknown not in ("error", "ignore"):
            raise ValueError(f"unknown={unknown!r} is not valid; choose 'error' or 'ignore'")
        if not (_is_real(data_norm) and math.isfinite(data_norm) and data_norm > 0):
            raise ValueError(f"data_norm must be a positive finite number, got {data_norm!r}")
        where = describe_row or _default_where
        n, num, cat = self._encoded_parts(columns, unknown, where)
        if sparse:
            return self._assemble_csr(n, num, cat, float(data_norm))
        X = np.zeros((n, self.n_features), dtype=np.float64)
        j = 0
        for c in self._numeric:
            X[:, j] = num[c]
            j += 1
        for c, cats in self._categorical.items():
            k = cat[c]
            hit = np.flatnonzero(k >= 0)
            X[hit, j + k[hit]] = 1.0
            j += len(cats)
        X /= self.row_divisor
        shrink_to(X, 1.0)
        if data_norm != 1.0:
            X *= float(data_norm)
            shrink_to(X, float(data_norm))
        return np.ascontiguousarray(X)

    def encode_with_constant(self, columns: Any, *, scale: float, unknown: str = "error",
                             describe_row: Callable[[int], str] | None = None,
                             out: np.ndarray | None = None) -> np.ndarray:
        """Dense rows ``[encode(x), 1] * scale``, shape (n, d + 1), float64, C order.

        The same bits as ``X = self.encode(columns)`` followed by appending a column of ones
        and multiplying the whole matrix by ``scale`` (as ``dperm.data.design.augment_intercept``
        does with data_norm 1), written block by block into one array, with no (n, d) intermediate,
        no copy of it and no norm check of every row.

        Each value takes the same floating-point operations as in :meth:`encode`.  Only
        a row whose squared norm is within 1e-9 of 1 can be shrunk by the norm check
        of :meth:`encode` (any two summation orders of <= d + 1 terms differ by a few
        ulps), so that check runs, exactly as there, on those rows alone.

        Parameters
        ----------
        columns : mapping or DataFrame
            Column name -> 1-D array of n values.
        scale : float
            The factor every entry is multiplied by.
        unknown : {"error", "ignore"}, default "error"
            A category not in the public list: an error naming the column and row, or an
            all-zero group.
        describe_row : callable, optional
            int -> str, how messages name a row.
        out : ndarray, optional
            A float64 C-ordered array of at least n rows and d + 1 columns to write into (the
            first n rows are returned), e.g. one buffer reused for every chunk of a file.

        Returns
        -------
        ndarray of shape (n, d + 1)
        """
        if unknown not in ("error", "ignore"):
            raise ValueError(f"unknown={unknown!r} is not valid; choose 'error' or 'ignore'")
        where = describe_row or _default_where
        n, num, cat = self._encoded_parts(columns, unknown, where)
        d = self.n_features
        if out is None:
            out = np.empty((n, d + 1), dtype=np.float64)
        elif (out.dtype != np.float64 or out.ndim != 2 or out.shape[0] < n
              or out.shape[1] != d + 1 or not out.flags.c_contiguous):
            raise ValueError(f"out must be a C-ordered float64 array of at least {n} rows and "
                             f"{d + 1} columns, got {out.dtype} {out.shape}")
        else:
            out = out[:n]
        div = self.row_divisor
        s = np.float64(scale)
        one = np.float64(1.0) / div      # a one-hot 1.0 after the division by div
        nums = [num[c] for c in self._numeric]
        cats, j = [], len(nums)
        for c, names in self._categorical.items():
            cats.append((cat[c], j))
            j += len(names)
        step = 8192      # a block of rows stays in cache through every pass over it
        for r0 in range(0, n, step):
            r1 = min(n, r0 + step)
            blk = out[r0:r1]
            blk.fill(0.0)
            flat = blk.reshape(-1)
            ss = np.zeros(r1 - r0)
            for j, v in enumerate(nums):
                t = v[r0:r1] / div
                ss += t * t
                np.multiply(t, s, out=blk[:, j])
            for k, j in cats:
                kk = k[r0:r1]
                hit = np.flatnonzero(kk >= 0)
                flat[hit * (d + 1) + (j + kk[hit])] = one * s
                ss[hit] += one * one
            blk[:, d] = s
            near = np.flatnonzero(ss > 1.0 - 1e-9)
            if near.size:   # encode()'s rows, its norm check, then scaled
                X = np.zeros((near.size, d), dtype=np.float64)
                for j, v in enumerate(nums):
                    X[:, j] = v[r0:r1][near] / div
                for k, j in cats:
                    kk = k[r0:r1][near]
                    hit = np.flatnonzero(kk >= 0)
                    X[hit, j + kk[hit]] = one
                shrink_to(X, 1.0)
                blk[near, :d] = X * s
        return out

    def _encoded_parts(self, columns: Any, unknown: str, where: Callable[[int], str]
                       ) -> tuple[int, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(n, numeric column -> mapped values in [0, 1], categorical column -> index in
        its list or -1 for an ignored unknown value); missing values filled or refused."""
        cols, n, num, cat = self._prepare(columns, where)
        out_num, out_cat = {}, {}
        for c, (lo, hi) in self._numeric.items():
            v = num[c]
            miss = np.isnan(v)
            if miss.any():
                if c not in self._fill:
                    raise ValueError(self._missing_message(c, int(np.argmax(miss)), where))
                v = np.where(miss, self._fill[c], v)
            out_num[c] = np.clip(v - lo, 0.0, hi - lo) / (hi - lo)
        for c, cats in self._categorical.items():
            k = cat[c]
            miss = k == -2
            if miss.any():
                if c not in self._fill:
                    raise ValueError(self._missing_message(c, int(np.argmax(miss)), where))
                k = np.where(miss, cats.index(self._fill[c]), k)
            if unknown == "error" and (k == -1).any():
                i = int(np.argmax(k == -1))
                col = cols[c]
                cell = col.cell(i) if isinstance(col, CategoryCodes) else _plain(col[i])
                raise ValueError(
                    f"unknown category {cell!r} in column {c!r} ({where(i)}); "
                    f"the schema lists {_short(cats)}. Cells and categories are compared "
                    "after stripping surrounding spaces; case matters. Fix the list (in "
                    "Python, unknown='ignore' encodes such values as an all-zero group)")
            out_cat[c] = k
        return n, out_num, out_cat

    def _assemble_csr(self, n: int, num: dict[str, np.ndarray], cat: dict[str, np.ndarray],
                      data_norm: float) -> Any:
        """CSR from the parts: an (n, #numeric + #categorical) block of values and
        column indices (row-major, so each row's indices increase), never (n, d)."""
        import scipy.sparse as sp

        k = self.stored_per_row
        d = self.n_features
        vals = np.zeros((n, k), dtype=np.float64)
        present = np.ones((n, k), dtype=bool)
        cols = np.empty((n, k), dtype=np.int64)
        p = 0
        for c in self._numeric:
            vals[:, p] = num[c]
            cols[:, p] = p
            p += 1
        j = len(self._numeric)
        for c, cats in self._categorical.items():
            codes = cat[c]
            hit = codes >= 0
            vals[:, p] = hit
            cols[:, p] = j + codes
            present[:, p] = hit
            p += 1
            j += len(cats)
        vals /= self.row_divisor
        shrink_to(vals, 1.0)   # the row norms of the stored values are the row norms
        if data_norm != 1.0:
            vals *= data_norm
            shrink_to(vals, data_norm)
        counts = present.sum(axis=1)
        nnz = int(counts.sum())
        itype = np.int32 if max(d, nnz) < np.iinfo(np.int32).max else np.int64
        indptr = np.zeros(n + 1, dtype=itype)
        np.cumsum(counts, out=indptr[1:])
        if nnz == n * k:
            data, indices = vals.reshape(-1), cols.reshape(-1).astype(itype)
        else:
            data, indices = vals[present], cols[present].astype(itype)
        return sp.csr_array((data, indices, indptr), shape=(n, d))

    @staticmethod
    def _missing_message(c: str, i: int, where: Callable[[int], str]) -> str:
        return (f"missing value in column {c!r} ({where(i)}); give the column a public fill "
                "value (fill={column: value}) or drop such rows before encoding")


# ----------------------------------------------------------------------------- pickling
def _rebuild_schema(numeric: Mapping[str, Any], categorical: Mapping[str, Any], label: str | None,
                    classes: Any, fill: Mapping[str, Any], label_bounds: Any = None) -> PublicSchema:
    """A PublicSchema from its pickled parts (PublicSchema.__reduce__)."""
    return PublicSchema(numeric, categorical, label=label, classes=classes, fill=fill,
                        label_bounds=label_bounds)
