"""File handling of the `dperm` command line: CSV tables, the public schema,
the public encoding of rows and the JSON model format.

Everything here raises :class:`CLIError` with a one-line message a user can
act on (the command line prints it and exits with status 2).
"""
import csv
import json
import math
import os

import numpy as np

__all__ = ["CLIError", "Table", "read_csv", "load_schema", "normalize_schema", "infer_schema",
           "schema_to_json", "feature_names", "encode_rows", "encode_labels", "resolve_label",
           "model_to_json", "load_model", "MODEL_FORMAT", "MODEL_FORMAT_VERSION"]

MODEL_FORMAT = "dperm.linear-model"
MODEL_FORMAT_VERSION = 1
_SCHEMA_KEYS = {"numeric", "categorical", "label"}


class CLIError(Exception):
    """A user-facing error: printed as one line on stderr, exit status 2."""


# ----------------------------------------------------------------------------- CSV
class Table:
    """A CSV file read as strings: `header`, `columns` (name -> list of str or a
    float array), `n_rows`, `lines` (file line of each data row, for messages)."""

    def __init__(self, name, header, columns, n_rows, lines=None):
        self.name = name
        self.header = list(header)
        self.columns = columns
        self.n_rows = n_rows
        self.lines = lines

    def where(self, i):
        """'row N' (1 = first row after the header) with its line in the file."""
        if self.lines is None:
            return f"row {i + 1}"
        return f"row {i + 1}, line {self.lines[i]}"


def _is_number(s):
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def read_csv(path, what="data file"):
    """Read a comma-separated file with a header row; values are stripped strings."""
    if os.path.isdir(path):
        raise CLIError(f"{what} {path!r} is a directory, not a CSV file")
    try:
        fh = open(path, encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise CLIError(f"{what} {path!r} not found") from None
    except OSError as exc:
        raise CLIError(f"cannot open {what} {path!r}: {exc.strerror or exc}") from None
    with fh:
        reader = csv.reader(fh, skipinitialspace=True)
        try:
            header = None
            rows, lines = [], []
            for rec in reader:
                if not rec or all(not v.strip() for v in rec):
                    continue  # blank line
                if header is None:
                    header = [v.strip() for v in rec]
                    _check_header(header, path)
                    continue
                if len(rec) != len(header):
                    raise CLIError(f"{path}: row {len(rows) + 1} (line {reader.line_num}) has "
                                   f"{len(rec)} fields, the header has {len(header)}")
                rows.append([v.strip() for v in rec])
                lines.append(reader.line_num)
        except UnicodeDecodeError as exc:
            raise CLIError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as "
                           "UTF-8 CSV") from None
        except csv.Error as exc:
            raise CLIError(f"{path}: malformed CSV at line {reader.line_num}: {exc}") from None
    if header is None:
        raise CLIError(f"{what} {path!r} is empty (a header row naming the columns is required)")
    if not rows:
        raise CLIError(f"{what} {path!r} has a header but no data rows")
    columns = {h: [r[j] for r in rows] for j, h in enumerate(header)}
    return Table(path, header, columns, len(rows), lines)


def _check_header(header, path):
    for j, h in enumerate(header):
        if not h:
            raise CLIError(f"{path}: column {j + 1} of the header row has no name")
    seen = set()
    for h in header:
        if h in seen:
            raise CLIError(f"{path}: column name {h!r} appears twice in the header row")
        seen.add(h)
    if all(_is_number(h) for h in header):
        raise CLIError(f"{path}: the first line ({','.join(header[:4])}{',...' if len(header) > 4 else ''}) "
                       "looks like data; a header row naming the columns is required")


# ----------------------------------------------------------------------------- schema
def _label_str(v, where):
    """Labels and categories are compared as strings; JSON integers are accepted."""
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    raise CLIError(f"{where}: {v!r} must be a string (write labels and categories as "
                   "they appear in the CSV file, in quotes)")


def normalize_schema(obj, where="schema"):
    """Validate a schema object; return {"numeric": {c: (lo, hi)}, "categorical":
    {c: [str, ...]}, "label": {"column": str or None, "classes": [neg, pos] or None}}."""
    if not isinstance(obj, dict):
        raise CLIError(f"{where}: must be a JSON object with keys 'numeric', 'categorical', 'label'")
    extra = set(obj) - _SCHEMA_KEYS
    if extra:
        raise CLIError(f"{where}: unknown key(s) {sorted(extra)}; expected {sorted(_SCHEMA_KEYS)}")
    numeric = obj.get("numeric", {}) or {}
    categorical = obj.get("categorical", {}) or {}
    label = obj.get("label", {}) or {}
    if not isinstance(numeric, dict):
        raise CLIError(f"{where}: 'numeric' must map column -> [low, high]")
    if not isinstance(categorical, dict):
        raise CLIError(f"{where}: 'categorical' must map column -> list of categories")
    if not isinstance(label, dict):
        raise CLIError(f"{where}: 'label' must be an object {{\"column\": ..., \"classes\": [neg, pos]}}")
    num = {}
    for c, b in numeric.items():
        if isinstance(b, (int, float)) and not isinstance(b, bool):
            b = [0.0, b]  # a single number is the upper bound of [0, high]
        if not (isinstance(b, list) and len(b) == 2 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in b)):
            raise CLIError(f"{where}: numeric[{c!r}] must be [low, high] (two numbers), got {b!r}")
        lo, hi = float(b[0]), float(b[1])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise CLIError(f"{where}: numeric[{c!r}] = {b!r} needs finite low < high")
        num[c] = (lo, hi)
    cat = {}
    for c, cats in categorical.items():
        if not isinstance(cats, list) or not cats:
            raise CLIError(f"{where}: categorical[{c!r}] must be a non-empty list of categories")
        cats = [_label_str(v, f"{where}: categorical[{c!r}]") for v in cats]
        if len(set(cats)) != len(cats):
            dup = sorted({v for v in cats if cats.count(v) > 1})
            raise CLIError(f"{where}: categorical[{c!r}] lists {dup} more than once")
        cat[c] = cats
    both = set(num) & set(cat)
    if both:
        raise CLIError(f"{where}: column(s) {sorted(both)} are both numeric and categorical")
    extra = set(label) - {"column", "classes"}
    if extra:
        raise CLIError(f"{where}: label has unknown key(s) {sorted(extra)}; expected 'column', 'classes'")
    column = label.get("column")
    if column is not None and not (isinstance(column, str) and column):
        raise CLIError(f"{where}: label.column must be a column name, got {column!r}")
    classes = label.get("classes")
    if classes is not None:
        if not (isinstance(classes, list) and len(classes) == 2):
            raise CLIError(f"{where}: label.classes must list exactly two labels [negative, positive]")
        classes = [_label_str(v, f"{where}: label.classes") for v in classes]
        if classes[0] == classes[1]:
            raise CLIError(f"{where}: label.classes must be two different labels")
    if column is not None and column in set(num) | set(cat):
        raise CLIError(f"{where}: the label column {column!r} is also listed as a feature")
    if not num and not cat:
        raise CLIError(f"{where}: no feature columns (give 'numeric' and/or 'categorical')")
    return {"numeric": num, "categorical": cat, "label": {"column": column, "classes": classes}}


def _load_json(path, kind, undecodable):
    """The JSON object in `path` (a schema or a model); every failure is a CLIError.

    undecodable(detail) words the message for a file that is not JSON text.
    """
    if os.path.isdir(path):
        raise CLIError(f"{kind} {path!r} is a directory, not a JSON file")
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise CLIError(f"{kind} file {path!r} not found") from None
    except json.JSONDecodeError as exc:
        raise CLIError(undecodable(f"invalid JSON at line {exc.lineno} column {exc.colno}: "
                                   f"{exc.msg}")) from None
    except UnicodeDecodeError:
        raise CLIError(undecodable("not UTF-8 text")) from None
    except OSError as exc:
        raise CLIError(f"cannot read {kind} {path!r}: {exc.strerror or exc}") from None


def load_schema(path):
    obj = _load_json(path, "schema", lambda detail: f"schema {path}: {detail}")
    return normalize_schema(obj, where=f"schema {path}")


def schema_to_json(schema):
    return {
        "numeric": {c: [lo, hi] for c, (lo, hi) in schema["numeric"].items()},
        "categorical": {c: list(v) for c, v in schema["categorical"].items()},
        "label": {"column": schema["label"]["column"], "classes": schema["label"]["classes"]},
    }


def infer_schema(table, label):
    """Bounds and category lists READ FROM THE DATA (not private; the caller warns).

    A column whose values all parse as finite numbers is numeric with bounds
    [min, max]; any other column is categorical with its sorted distinct values.
    """
    num, cat = {}, {}
    for c in table.header:
        if c == label:
            continue
        vals = table.columns[c]
        if all(_is_number(v) for v in vals):
            x = np.array([float(v) for v in vals])
            lo, hi = float(x.min()), float(x.max())
            num[c] = (lo, hi if hi > lo else lo + 1.0)
        else:
            cat[c] = sorted(set(vals))
    if not num and not cat:
        raise CLIError(f"{table.name}: no feature columns besides the label {label!r}")
    return {"numeric": num, "categorical": cat, "label": {"column": label, "classes": None}}


def feature_names(schema):
    return list(schema["numeric"]) + [f"{c}={v}" for c, cats in schema["categorical"].items()
                                      for v in cats]


# ----------------------------------------------------------------------------- encoding
def _numeric_column(table, c):
    col = table.columns[c]
    if isinstance(col, np.ndarray) and col.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(col))
        if bad.size:
            raise CLIError(f"non-numeric value {col[bad[0]]!r} in numeric column {c!r} "
                           f"({table.where(bad[0])})")
        return col
    out = np.empty(len(col))
    for i, s in enumerate(col):
        try:
            v = float(s)
        except ValueError:
            v = None
        if v is None or not math.isfinite(v):
            if s == "":
                raise CLIError(f"{table.name}: missing value in numeric column {c!r} ({table.where(i)})")
            raise CLIError(f"{table.name}: non-numeric value {s!r} in numeric column {c!r} "
                           f"({table.where(i)})")
        out[i] = v
    return out


def encode_rows(table, schema, unknown="error"):
    """The public encoding of every row (rows have norm <= 1); returns (X, names).

    Numeric column c with public range [lo, hi]: clipped to [lo, hi] and mapped to
    (v - lo) / (hi - lo) in [0, 1]. Categorical column: one-hot against the public
    list; a value outside the list is an error (unknown="error", used when
    training) or gives an all-zero group (unknown="zero", used when predicting).
    Each row is then divided by sqrt(#numeric + #categorical). Nothing is read
    from the other rows.
    """
    from dperm.datasets import encode_public

    cols = list(schema["numeric"]) + list(schema["categorical"])
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise CLIError(f"{table.name}: column(s) {missing} of the schema are missing "
                       f"(the file has: {', '.join(table.header)})")
    values, bounds = {}, {}
    for c, (lo, hi) in schema["numeric"].items():
        values[c] = _numeric_column(table, c) - lo
        bounds[c] = hi - lo
    for c, cats in schema["categorical"].items():
        col = table.columns[c]
        if unknown == "error":
            known = set(cats)
            for i, v in enumerate(col):
                if v not in known:
                    raise CLIError(f"{table.name}: unknown category {v!r} in column {c!r} "
                                   f"({table.where(i)}); the schema lists {_short(cats)}")
        values[c] = np.asarray(col, dtype=object).astype(str)
    try:
        X, names = encode_public(values, bounds, {c: tuple(v) for c, v in schema["categorical"].items()})
    except ValueError as exc:  # already checked above; kept as a safety net
        raise CLIError(f"{table.name}: {exc}") from None
    return X, names


def _short(items, k=8):
    items = list(items)
    return repr(items[:k])[:-1] + (", ...]" if len(items) > k else "]")


def resolve_label(table, label):
    if label not in table.columns:
        raise CLIError(f"{table.name}: label column {label!r} not found (the file has: "
                       f"{', '.join(table.header)})")
    return table.columns[label]


def encode_labels(table, label, classes):
    """Labels as an array of str; every one must be in `classes`."""
    y = resolve_label(table, label)
    known = set(classes)
    for i, v in enumerate(y):
        if v not in known:
            what = "missing label" if v == "" else f"label {v!r}"
            raise CLIError(f"{table.name}: {what} in column {label!r} ({table.where(i)}) is not "
                           f"one of the classes {list(classes)}")
    return np.asarray(y, dtype=object).astype(str)


# ----------------------------------------------------------------------------- model JSON
def _jsonable(v):
    """Plain JSON values; non-finite floats become the strings 'inf', '-inf', 'nan'."""
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
    return v


def model_to_json(model):
    return json.dumps(_jsonable(model), indent=2, allow_nan=False) + "\n"


def load_model(path):
    """Read and check a model written by `dperm fit`; returns the dict with a
    normalized `schema` and numpy `coef`."""
    where = f"model {path}"
    obj = _load_json(path, "model", lambda detail: f"{where}: not a dperm model ({detail})")

    def bad(msg):
        return CLIError(f"{where}: not a valid dperm model: {msg}")

    if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
        raise bad(f"'format' must be {MODEL_FORMAT!r} (write models with `dperm fit`)")
    if obj.get("format_version") != MODEL_FORMAT_VERSION:
        raise bad(f"unsupported format_version {obj.get('format_version')!r} "
                  f"(this dperm reads version {MODEL_FORMAT_VERSION})")
    for key in ("coef", "intercept", "classes", "feature_names", "schema", "estimator"):
        if key not in obj:
            raise bad(f"missing key {key!r}")
    try:
        schema = normalize_schema(obj["schema"], where="schema")
    except CLIError as exc:
        raise bad(str(exc)) from None
    coef = obj["coef"]
    if not (isinstance(coef, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                           for v in coef)):
        raise bad("'coef' must be a list of numbers")
    names = obj["feature_names"]
    if names != feature_names(schema):
        raise bad("'feature_names' do not match the preprocessing schema")
    if len(coef) != len(names):
        raise bad(f"'coef' has {len(coef)} entries but there are {len(names)} features")
    b = obj["intercept"]
    if not isinstance(b, (int, float)) or isinstance(b, bool):
        raise bad("'intercept' must be a number")
    classes = obj["classes"]
    if not (isinstance(classes, list) and len(classes) == 2 and all(isinstance(c, str) for c in classes)
            and classes[0] != classes[1]):
        raise bad("'classes' must list two different labels [negative, positive]")
    est = obj["estimator"]
    if not isinstance(est, dict) or not isinstance(est.get("loss"), str):
        raise bad("'estimator' must be an object with the 'loss'")
    coef = np.asarray(coef, dtype=np.float64)
    if not np.isfinite(coef).all() or not math.isfinite(b):
        raise bad("coefficients must be finite")
    obj = dict(obj, coef=coef, intercept=float(b), schema=schema)
    return obj
