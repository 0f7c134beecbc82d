"""The UCI Adult data set, shipped compressed inside the package."""

import functools
import hashlib
import lzma
import math
import os
import types
import warnings
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal, overload

import numpy as np

from ..data.norms import project_rows
from ..exceptions import PrivacyLeakWarning
from ..schema import PublicSchema

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_NUMERIC_COLUMNS",
    "ADULT_CATEGORICAL_COLUMNS",
    "ADULT_PUBLIC_BOUNDS",
    "ADULT_PUBLIC_CATEGORIES",
    "DataChecksumError",
    "Bunch",
    "load_adult",
    "encode_public",
]

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# SHA-256 of the original (decompressed) files; also listed in data/README.txt.
_SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    "adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
}

ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country",
)
ADULT_NUMERIC_COLUMNS = (
    "age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week",
)
ADULT_CATEGORICAL_COLUMNS = tuple(c for c in ADULT_COLUMNS if c not in ADULT_NUMERIC_COLUMNS)
_LABEL = "income"

# Public upper bounds of the numeric columns (chosen from the meaning of each
# column, not from the data).
ADULT_PUBLIC_BOUNDS = types.MappingProxyType({
    "age": 100.0,
    "fnlwgt": 1.5e6,
    "education-num": 16.0,
    "capital-gain": 100000.0,
    "capital-loss": 5000.0,
    "hours-per-week": 100.0,
})

# Category lists as published in adult.names (order kept).
ADULT_PUBLIC_CATEGORIES = types.MappingProxyType({
    "workclass": (
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
        "State-gov", "Without-pay", "Never-worked",
    ),
    "education": (
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
        "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate",
        "5th-6th", "Preschool",
    ),
    "marital-status": (
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces",
    ),
    "relationship": (
        "Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried",
    ),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
        "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
        "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
        "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
        "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
    ),
})

_MISSING = "?"


class DataChecksumError(OSError):
    """A shipped data file is unreadable or its SHA-256 does not match."""


class Bunch(dict):
    """A dict whose keys are also attributes."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __dir__(self) -> list[str]:
        return list(self.keys())


def read_shipped(path: str, sha256: str, decompress: Callable[[bytes], bytes], *,
                 checksum_of_packed: bool = False) -> bytes:
    """The decompressed bytes of a shipped data file, checked against its SHA-256.

    The digest is of the decompressed bytes, or of the file as shipped when
    `checksum_of_packed` (the hash its source publishes). Any failure to read,
    decompress or match raises DataChecksumError naming the file.
    """
    try:
        with open(path, "rb") as fh:
            packed = fh.read()
    except OSError as exc:
        raise DataChecksumError(f"cannot read shipped data file {path!r}: {exc}") from exc

    def unpack() -> bytes:
        try:
            return decompress(packed)
        except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
            raise DataChecksumError(f"cannot read shipped data file {path!r}: {exc}") from exc

    raw = b"" if checksum_of_packed else unpack()     # (not used when checksum_of_packed)
    digest = hashlib.sha256(packed if checksum_of_packed else raw).hexdigest()
    if digest != sha256:
        raise DataChecksumError(
            f"shipped data file {path!r} is corrupted: SHA-256 of the "
            f"{'file' if checksum_of_packed else 'decompressed bytes'} is {digest}, expected "
            f"{sha256} (see data/README.txt); reinstall dperm")
    return unpack() if checksum_of_packed else raw


def _read_verified(name: str, data_dir: str | None = None) -> bytes:
    """Decompress ``name + '.xz'`` and check its SHA-256; return the bytes."""
    path = os.path.join(DATA_DIR if data_dir is None else data_dir, name + ".xz")
    return read_shipped(path, _SHA256[name], lzma.decompress)


def _parse_columns(text: str, strip_dot: bool) -> list[list[str]]:
    """Split the file into 15 lists of strings (one per column, label last)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("|")]
    ncol = len(ADULT_COLUMNS) + 1
    fields = ",".join(lines).replace(", ", ",").split(",")
    if len(fields) != ncol * len(lines):
        raise DataChecksumError("malformed Adult file: wrong number of fields")
    cols = [fields[j::ncol] for j in range(ncol)]
    if strip_dot:
        cols[-1] = [v[:-1] if v.endswith(".") else v for v in cols[-1]]
    return cols


@functools.lru_cache(maxsize=4)
def _table(data_dir: str | None = None) -> types.SimpleNamespace:
    """Parse adult.data + adult.test into read-only arrays (cached)."""
    train = _parse_columns(_read_verified("adult.data", data_dir).decode("ascii"), False)
    test = _parse_columns(_read_verified("adult.test", data_dir).decode("ascii"), True)
    n_train, n_test = len(train[0]), len(test[0])
    cols = [a + b for a, b in zip(train, test)]
    n = n_train + n_test
    is_test = np.zeros(n, dtype=bool)
    is_test[n_train:] = True
    idx = {c: i for i, c in enumerate(ADULT_COLUMNS)}
    numeric = np.empty((n, len(ADULT_NUMERIC_COLUMNS)), dtype=np.float64)
    for j, c in enumerate(ADULT_NUMERIC_COLUMNS):
        try:
            numeric[:, j] = np.fromiter(map(float, cols[idx[c]]), dtype=np.float64, count=n)
        except ValueError as exc:
            raise DataChecksumError(f"malformed Adult file: column {c!r}: {exc}") from exc
    # Categorical columns as (levels, codes), levels sorted.
    levels = []
    codes = np.empty((n, len(ADULT_CATEGORICAL_COLUMNS)), dtype=np.intp)
    for j, c in enumerate(ADULT_CATEGORICAL_COLUMNS):
        lev = sorted(set(cols[idx[c]]))
        pos = {v: k for k, v in enumerate(lev)}
        codes[:, j] = np.fromiter(map(pos.__getitem__, cols[idx[c]]), dtype=np.intp, count=n)
        levels.append(tuple(lev))
    lab = {">50K": 1, "<=50K": -1}
    try:
        y = np.fromiter(map(lab.__getitem__, cols[-1]), dtype=np.int64, count=n)
    except KeyError as exc:
        raise DataChecksumError(f"unexpected label {exc} in the Adult data") from None
    missing = np.zeros(n, dtype=bool)
    for j, lev in enumerate(levels):
        if _MISSING in lev:
            missing |= codes[:, j] == lev.index(_MISSING)
    for a in (numeric, codes, y, is_test, missing):
        a.setflags(write=False)
    return types.SimpleNamespace(
        numeric=numeric, codes=codes, levels=tuple(levels), y=y,
        is_test=is_test, missing=missing,
    )


def _frame(tab: types.SimpleNamespace, rows: np.ndarray) -> np.ndarray:
    """Raw rows as a numpy structured array (strings for categorical columns)."""
    dtype: list[tuple[str, Any]] = []
    for c in ADULT_COLUMNS:
        if c in ADULT_NUMERIC_COLUMNS:
            dtype.append((c, np.float64))
        else:
            j = ADULT_CATEGORICAL_COLUMNS.index(c)
            dtype.append((c, f"U{max(len(s) for s in tab.levels[j])}"))
    dtype.append((_LABEL, np.int64))
    out = np.empty(rows.size, dtype=dtype)
    for j, c in enumerate(ADULT_NUMERIC_COLUMNS):
        out[c] = tab.numeric[rows, j]
    for j, c in enumerate(ADULT_CATEGORICAL_COLUMNS):
        out[c] = np.asarray(tab.levels[j])[tab.codes[rows, j]]
    out[_LABEL] = tab.y[rows]
    return out


def _one_hot(codes: np.ndarray, levels: Sequence[str], categories: Sequence[str]) -> np.ndarray:
    """One-hot columns of ``categories`` (unknown levels give all zeros)."""
    pos = {c: k for k, c in enumerate(categories)}
    lut = np.array([pos.get(lev, -1) for lev in levels], dtype=np.intp)
    k = lut[codes]
    out = np.zeros((codes.size, len(categories)), dtype=np.float64)
    hit = np.flatnonzero(k >= 0)
    out[hit, k[hit]] = 1.0
    return out


def _check_choice(name: str, value: Any, choices: Collection[str]) -> None:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")


def _public_schema(bounds: Any, categories: Any, numeric_names: Sequence[str],
                   categorical_names: Sequence[str]) -> PublicSchema:
    """The loader's `bounds` / `categories` arguments as a PublicSchema.

    Checks what is particular to the loader (mappings of known columns, a
    single upper bound > 0 per numeric column, categories as strings); the
    schema checks the rest. Columns come in the order of `numeric_names` /
    `categorical_names`.
    """
    if not isinstance(bounds, Mapping):
        raise ValueError(f"bounds must be a mapping column -> upper bound, got {type(bounds).__name__}")
    if not isinstance(categories, Mapping):
        raise ValueError(
            f"categories must be a mapping column -> list of categories, got {type(categories).__name__}"
        )
    extra = set(bounds) - set(numeric_names)
    if extra:
        raise ValueError(f"bounds has unknown numeric columns {sorted(extra)}; known: {list(numeric_names)}")
    extra = set(categories) - set(categorical_names)
    if extra:
        raise ValueError(
            f"categories has unknown categorical columns {sorted(extra)}; known: {list(categorical_names)}"
        )
    numeric = {}
    for c in numeric_names:
        if c in bounds:
            try:
                v = float(bounds[c])
            except (TypeError, ValueError):
                raise ValueError(f"bounds[{c!r}] must be a number, got {bounds[c]!r}") from None
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"bounds[{c!r}] must be finite and > 0, got {bounds[c]!r}")
            numeric[c] = (0.0, v)
    categorical = {}
    for c in categorical_names:
        if c in categories:
            cats = categories[c]
            if isinstance(cats, Sequence) and not isinstance(cats, str):
                if not all(isinstance(s, str) for s in cats):
                    raise ValueError(f"categories[{c!r}] must be a list of distinct strings")
                cats = list(cats)
            categorical[c] = cats
    if not numeric and not categorical:
        raise ValueError("bounds and categories select no columns")
    return PublicSchema(numeric, categorical)


def encode_public(columns: Mapping[str, Any], bounds: Mapping[str, float],
                  categories: Mapping[str, Sequence[Any]]) -> tuple[np.ndarray, list[str]]:
    """Encode raw columns with PUBLIC bounds and category lists only.

    Each numeric column ``c`` in ``bounds`` is clipped to ``[0, bounds[c]]`` and
    divided by ``bounds[c]``; each categorical column in ``categories`` is
    one-hot encoded against its public list (a value not in the list, such as
    the missing marker ``"?"``, gives all zeros for that group). Rows are then
    divided by ``sqrt(len(bounds) + len(categories))``, the largest norm such a
    row can have, so every row norm is <= 1. Nothing but the rows themselves is
    read from the data, and each row is mapped on its own: safe for private
    training. (This is :meth:`dperm.PublicSchema.encode` with the ranges
    ``[0, bound]``; categorical values are compared as strings.)

    Parameters
    ----------
    columns : mapping of str to 1-D array
        Raw values per column name (numbers for numeric columns, strings for
        categorical ones), all of the same length.
    bounds : mapping of str to float
        Public upper bound (> 0) per numeric column.
    categories : mapping of str to list of str
        Public category list per categorical column.

    Returns
    -------
    X : ndarray of shape (n, d), float64, C-contiguous
        Numeric columns first (in ``bounds`` order), then the one-hot groups
        (in ``categories`` order, categories in list order).
    feature_names : list of str
        ``"col"`` for numeric columns, ``"col=category"`` for one-hot columns.
    """
    if not isinstance(columns, Mapping):
        raise ValueError("columns must be a mapping column name -> 1-D array")
    schema = _public_schema(bounds, categories, list(bounds), list(categories))
    missing = [k for k in schema.columns if k not in columns]
    if missing:
        raise ValueError(f"columns lacks {missing}")
    values = {k: np.asarray(columns[k]) for k in schema.numeric}
    # categorical values are compared as text (None or NaN become unknown values)
    values.update({k: np.asarray(columns[k]).astype(str) for k in schema.categorical})
    sizes = {a.shape for a in values.values()}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise ValueError("columns must be 1-D arrays of equal length")
    X = schema.encode(values, unknown="ignore")
    return X, schema.feature_names()


def _public_matrix(tab: types.SimpleNamespace, keep: np.ndarray,
                   schema: PublicSchema) -> tuple[np.ndarray, list[str]]:
    """The public encoding of the rows ``keep`` of the parsed table."""
    columns = {c: tab.numeric[keep, ADULT_NUMERIC_COLUMNS.index(c)] for c in schema.numeric}
    for c in schema.categorical:
        j = ADULT_CATEGORICAL_COLUMNS.index(c)
        columns[c] = np.asarray(tab.levels[j])[tab.codes[keep, j]]
    return schema.encode(columns, unknown="ignore"), schema.feature_names()


def _paper_matrix(tab: types.SimpleNamespace, keep: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """One-hot with the categories present in ``keep`` rows, then column max scaling."""
    blocks = [tab.numeric[keep]]
    names = list(ADULT_NUMERIC_COLUMNS)
    for j, col in enumerate(ADULT_CATEGORICAL_COLUMNS):
        present = set(np.asarray(tab.levels[j])[np.unique(tab.codes[keep, j])]) - {_MISSING}
        listed = ADULT_PUBLIC_CATEGORIES[col]
        cats = [s for s in listed if s in present] + sorted(present - set(listed))
        blocks.append(_one_hot(tab.codes[keep, j], tab.levels[j], cats))
        names += [f"{col}={s}" for s in cats]
    X = np.hstack(blocks)
    colmax = np.abs(X).max(axis=0)
    colmax[colmax == 0] = 1.0
    X /= colmax
    return X, names


def _scale_rows(X: np.ndarray, mode: str | None) -> None:
    """In place: "each" projects rows with norm > 1 onto the unit sphere,
    "global" divides all rows by the largest norm; any other mode only
    fixes rounding (dperm.data.norms.project_rows: the norms stay <= 1 whatever
    the rounding of the caller's norm computation)."""
    project_rows(X, mode, 1.0)


@functools.lru_cache(maxsize=8)
def _encoded(preprocess: str, row_scaling: str | None, missing: str,
             schema: PublicSchema | None) -> tuple[np.ndarray, tuple[str, ...], np.ndarray]:
    """The encoded matrix of all kept rows (cached, read-only), names, kept row indices."""
    tab = _table()
    keep = np.flatnonzero(~tab.missing if missing == "drop" else np.ones(tab.y.size, dtype=bool))
    if preprocess == "paper":
        X, names = _paper_matrix(tab, keep)
        _scale_rows(X, row_scaling)
    else:
        assert schema is not None, "the public encoding needs its schema"
        X, names = _public_matrix(tab, keep, schema)
        if row_scaling == "each":
            # Undo the constant, then project rows with norm > 1 (a per-row map).
            X *= schema.row_divisor
            _scale_rows(X, "each")
    X.setflags(write=False)
    keep.setflags(write=False)
    return X, tuple(names), keep


@overload
def load_adult(preprocess: str = ...,
               return_frame: Literal[False] = ...,
               *,
               split: str = ...,
               row_scaling: str | None = ...,
               missing: str = ...,
               bounds: Mapping[str, float] | None = ...,
               categories: Mapping[str, Sequence[Any]] | None = ...,
               return_feature_names: Literal[False] = ...) -> tuple[np.ndarray, np.ndarray]: ...


@overload
def load_adult(preprocess: str = ...,
               return_frame: Literal[False] = ...,
               *,
               split: str = ...,
               row_scaling: str | None = ...,
               missing: str = ...,
               bounds: Mapping[str, float] | None = ...,
               categories: Mapping[str, Sequence[Any]] | None = ...,
               return_feature_names: Literal[True]) -> tuple[np.ndarray, np.ndarray, list[str]]: ...


@overload
def load_adult(preprocess: str,
               return_frame: Literal[True],
               *,
               split: str = ...,
               row_scaling: str | None = ...,
               missing: str = ...,
               bounds: Mapping[str, float] | None = ...,
               categories: Mapping[str, Sequence[Any]] | None = ...,
               return_feature_names: bool = ...) -> Bunch: ...


@overload
def load_adult(preprocess: str = ...,
               *,
               return_frame: Literal[True],
               split: str = ...,
               row_scaling: str | None = ...,
               missing: str = ...,
               bounds: Mapping[str, float] | None = ...,
               categories: Mapping[str, Sequence[Any]] | None = ...,
               return_feature_names: bool = ...) -> Bunch: ...


@overload
def load_adult(preprocess: str = ...,
               return_frame: bool = ...,
               *,
               split: str = ...,
               row_scaling: str | None = ...,
               missing: str = ...,
               bounds: Mapping[str, float] | None = ...,
               categories: Mapping[str, Sequence[Any]] | None = ...,
               return_feature_names: bool = ...) -> tuple[Any, ...] | Bunch: ...


def load_adult(
    preprocess: str = "paper",
    return_frame: bool = False,
    *,
    split: str = "all",
    row_scaling: str | None = None,
    missing: str = "drop",
    bounds: Mapping[str, float] | None = None,
    categories: Mapping[str, Sequence[Any]] | None = None,
    return_feature_names: bool = False,
) -> tuple[Any, ...] | Bunch:
    """Load the UCI Adult data set (shipped with dperm) as X, y.

    The files adult.data and adult.test (Becker & Kohavi 1996, UCI Machine
    Learning Repository, CC BY 4.0; see ``dperm/datasets/data/README.txt``)
    are decompressed, checked against their SHA-256 (a mismatch raises
    :class:`DataChecksumError`) and parsed once per process; every call returns
    fresh copies.

    Parameters
    ----------
    preprocess : {"paper", "public"}
        ``"paper"``: the preprocessing of Chaudhuri, Monteleoni & Sarwate (2011),
        Section 7.1: one-hot every categorical column with the categories
        present in the kept rows (98 columns), divide every column by its
        maximum, then scale rows so no norm exceeds 1 (see ``row_scaling``).
        Category lists and scales are READ FROM THE DATA: fine for reproducing
        the paper, but not differentially private; a
        :class:`~dperm.exceptions.PrivacyLeakWarning` is emitted.

        ``"public"``: uses only PUBLIC bounds and category lists (defaults
        :data:`ADULT_PUBLIC_BOUNDS` and :data:`ADULT_PUBLIC_CATEGORIES`, the
        latter from adult.names). Numeric values are clipped to ``[0, bound]``
        and divided by the bound; categorical columns are one-hot encoded
        against the public lists (a value not in the list gives all zeros for
        that group); rows are divided by ``sqrt(n_numeric + n_categorical)``
        (``sqrt(14)`` by default) so every row norm is <= 1. Nothing is read
        from the data except the rows themselves, each mapped on its own, so
        this mode is safe for private training.
    return_frame : bool
        If True return a :class:`Bunch` with ``data`` (X), ``target`` (y),
        ``feature_names``, ``frame`` (the raw kept rows as a numpy structured
        array with the 14 original columns and ``income`` in {-1, +1}),
        ``is_test`` (bool per row: from adult.test), and the options used.
    split : {"all", "train", "test"}
        Rows of both files, of adult.data only, or of adult.test only. The
        encoding (paper mode: categories, column maxima, global row scale) is
        always computed on the combined kept rows, so the splits share columns.
    row_scaling : {None, "each", "global", "constant"}
        Last step. ``"each"``: every row with norm > 1 is divided by its own
        norm (projected onto the unit sphere; a per-row map). ``"global"``:
        every row is divided by the largest row norm (reads the data; paper
        mode only). ``"constant"``: divide by the public constant described
        above (public mode only). None: ``"each"`` in paper mode,
        ``"constant"`` in public mode. In paper mode every row has norm >=
        sqrt(8) after the column step (eight one-hot ones), so ``"each"`` puts
        every row on the unit sphere. Scaled norms are kept <= 1 exactly (a
        factor 1 - 8 eps absorbs rounding).
    missing : {"drop", "zero"}
        Rows with a missing value ("?", categorical columns only) are dropped
        (the paper's 45,222 rows remain) or, in public mode only, kept with
        an all-zero group for the missing column.
    bounds, categories : mapping, optional
        Public mode only: numeric column -> upper bound, categorical column ->
        list of categories. The columns given are the columns used (in the
        data's column order), so a subset selects features. Default: the
        shipped public defaults.
    return_feature_names : bool
        If True (and ``return_frame`` is False) return ``(X, y, feature_names)``.

    Returns
    -------
    X : ndarray of shape (n, d), float64, C-contiguous
        Columns: the 6 numeric columns (age, fnlwgt, education-num,
        capital-gain, capital-loss, hours-per-week), then the one-hot groups
        in file order (workclass, education, marital-status, occupation,
        relationship, race, sex, native-country), categories in adult.names
        order. Paper mode, split "all": shape (45222, 104). Public mode with
        the defaults: d = 105 (adds workclass=Never-worked).
    y : ndarray of shape (n,), int64
        +1 for income ">50K", -1 for "<=50K".
    """
    _check_choice("preprocess", preprocess, {"paper", "public"})
    _check_choice("split", split, {"all", "train", "test"})
    _check_choice("missing", missing, {"drop", "zero"})
    if not isinstance(return_frame, bool):
        raise ValueError(f"return_frame must be a bool, got {return_frame!r}")
    if not isinstance(return_feature_names, bool):
        raise ValueError(f"return_feature_names must be a bool, got {return_feature_names!r}")
    if preprocess == "paper":
        row_scaling = "each" if row_scaling is None else row_scaling
        _check_choice("row_scaling", row_scaling, {"each", "global"})
        if missing != "drop":
            raise ValueError('missing must be "drop" when preprocess="paper"')
        if bounds is not None or categories is not None:
            raise ValueError('bounds and categories are only used with preprocess="public"')
    else:
        row_scaling = "constant" if row_scaling is None else row_scaling
        _check_choice("row_scaling", row_scaling, {"each", "constant"})
        schema = _public_schema(
            ADULT_PUBLIC_BOUNDS if bounds is None else bounds,
            ADULT_PUBLIC_CATEGORIES if categories is None else categories,
            ADULT_NUMERIC_COLUMNS, ADULT_CATEGORICAL_COLUMNS,
        )

    if preprocess == "paper":
        warnings.warn(
            'load_adult(preprocess="paper") reads category lists and column/row scales '
            'from the data (the paper\'s protocol); use preprocess="public" for '
            "private training",
            PrivacyLeakWarning,
            stacklevel=2,
        )
        key = (preprocess, row_scaling, missing, None)
    else:
        key = (preprocess, row_scaling, missing, schema)
    tab = _table()
    X, names, keep = _encoded(*key)

    sel = np.ones(keep.size, dtype=bool)
    if split != "all":
        sel = tab.is_test[keep] == (split == "test")
    rows = keep[sel]
    X = np.array(X[sel], dtype=np.float64, order="C")
    y = tab.y[rows].copy()
    names = list(names)
    if return_frame:
        return Bunch(
            data=X, target=y, feature_names=names, frame=_frame(tab, rows),
            is_test=tab.is_test[rows].copy(), preprocess=preprocess, split=split,
            row_scaling=row_scaling, missing=missing,
        )
    if return_feature_names:
        return X, y, names
    return X, y
