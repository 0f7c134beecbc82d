"""File handling of the `dperm` command line: CSV tables, the public schema,
the public encoding of rows and the JSON model format.

The schema and the encoding are :class:`dperm.schema.PublicSchema`; this module
reads CSV cells (text) into the values it encodes: numbers, categories, and
missing values (a blank cell or one of MISSING_MARKERS).

Everything here raises :class:`CLIError` with a one-line message a user can
act on (the command line prints it and exits with status 2).
"""
import csv
import json
import math
import os

import numpy as np

from dperm.schema import PublicSchema

__all__ = ["CLIError", "Table", "read_csv", "CSVReader", "load_schema", "normalize_schema",
           "infer_schema", "schema_to_json", "feature_names", "encode_rows", "encode_labels", "label_codes",
           "resolve_label", "apply_missing", "missing_masks", "parse_delimiter", "MISSING_MARKERS",
           "model_to_json", "load_model", "MODEL_FORMAT", "MODEL_FORMAT_VERSION",
           "MODEL_FORMAT_VERSIONS", "MODEL_FORMAT_VERSION_REGRESSION"]

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
#: versions load_model reads (version 1 records are mapped to version 2 semantics; a
#: file without "task" is a classifier)
MODEL_FORMAT_VERSIONS = (1, 2, 3)

# Cells read as a missing value (compared case-insensitively, after stripping).
# In a categorical column a marker that the schema lists as a category is that
# category, not a missing value.
MISSING_MARKERS = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "#n/a"})
_DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}


class CLIError(Exception):
    """A user-facing error: printed as one line on stderr, exit status 2."""


# ----------------------------------------------------------------------------- CSV
class Table:
    """A CSV file (or a chunk of one) read as strings: `header`, `columns` (name ->
    list of str or a float array), `n_rows`, `lines` (file line of each data row,
    for messages) and `rows` (its number in the file, 1 = the first data row;
    default 1..n_rows)."""

    def __init__(self, name, header, columns, n_rows, lines=None, rows=None):
        self.name = name
        self.header = list(header)
        self.columns = columns
        self.n_rows = n_rows
        self.lines = lines
        self.rows = rows
        self._parsed = {}

    def where(self, i):
        """'row N' (1 = first row after the header of the file) with its line."""
        row = i + 1 if self.rows is None else int(self.rows[i])
        if self.lines is None:
            return f"row {row}"
        return f"row {row}, line {self.lines[i]}"

    def take(self, rows):
        """The table restricted to `rows` (indices); rows keep their numbers and lines."""
        rows = np.asarray(rows, dtype=np.intp)
        columns = {}
        for c, col in self.columns.items():
            columns[c] = col[rows] if isinstance(col, np.ndarray) else [col[i] for i in rows]
        lines = None if self.lines is None else np.asarray(self.lines)[rows]
        numbers = (rows + 1) if self.rows is None else np.asarray(self.rows)[rows]
        out = Table(self.name, self.header, columns, int(rows.size), lines, numbers)
        out._parsed = {k: v[rows] for k, v in self._parsed.items()}
        return out


def _is_number(s):
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def _is_marker(s):
    return s.lower() in MISSING_MARKERS


def parse_delimiter(s):
    """--delimiter: one character, or tab / comma / semicolon / pipe / \\t."""
    d = _DELIMITER_NAMES.get(s.lower(), s) if isinstance(s, str) else s
    if not (isinstance(d, str) and len(d) == 1) or d in "\"\r\n" or d.isalnum() or d == " ":
        raise ValueError(f"--delimiter must be one character such as ';' or '|' (or 'tab'), "
                         f"got {s!r}")
    return d


def _show_delimiter(d):
    return "tab" if d == "\t" else repr(d)


def read_csv(path, what="data file", delimiter=","):
    """Read a delimited file with a header row; values are stripped strings."""
    reader = CSVReader(path, what=what, delimiter=delimiter)
    with reader:
        tables = list(reader.chunks(None))
    return tables[0]


class CSVReader:
    """A delimited file with a header row, read in chunks of rows.

    The header is read (and checked) on construction; ``chunks(n)`` then yields
    Tables of at most n data rows (all rows when n is None), numbered and with
    file lines as in the whole file, so messages name the row of the file.
    ``usecols`` keeps only those columns in the chunks (the header stays whole).
    Every problem is a CLIError naming the file and the row or line.
    """

    def __init__(self, path, what="data file", delimiter=","):
        self.path, self.what, self.delimiter = path, what, delimiter
        if os.path.isdir(path):
            raise CLIError(f"{what} {path!r} is a directory, not a CSV file")
        try:
            self._fh = open(path, encoding="utf-8-sig", newline="")
        except FileNotFoundError:
            raise CLIError(f"{what} {path!r} not found") from None
        except OSError as exc:
            raise CLIError(f"cannot open {what} {path!r}: {exc.strerror or exc}") from None
        self._reader = csv.reader(self._fh, delimiter=delimiter, skipinitialspace=True)
        self.header = None
        try:
            for rec in self._records():
                self.header = [v.strip() for v in rec]
                _check_header(self.header, path, delimiter)
                break
        except BaseException:
            self.close()
            raise
        if self.header is None:
            self.close()
            raise CLIError(f"{what} {path!r} is empty (a header row naming the columns is "
                           "required)")
        self.n_rows = 0          # data rows read so far

    def _records(self):
        """Non-blank records; decoding and CSV errors as CLIError."""
        reader = self._reader
        try:
            for rec in reader:
                if not rec or all(not v.strip() for v in rec):
                    continue  # blank line
                yield rec
        except UnicodeDecodeError as exc:
            raise CLIError(f"{self.path}: not UTF-8 text (byte {exc.start}); save the file "
                           "as UTF-8 CSV") from None
        except csv.Error as exc:
            raise CLIError(f"{self.path}: malformed CSV at line {reader.line_num}: "
                           f"{exc}") from None

    def chunks(self, n=None, usecols=None):
        """Tables of at most n rows (None: one table of every row); at least one."""
        header, width = self.header, len(self.header)
        keep = [j for j, h in enumerate(header) if usecols is None or h in usecols]
        names = [header[j] for j in keep]
        limit = math.inf if n is None else int(n)
        cols, lines, first = [[] for _ in keep], [], self.n_rows
        for rec in self._records():
            if len(rec) != width:
                raise CLIError(f"{self.path}: row {self.n_rows + 1} (line "
                               f"{self._reader.line_num}) has {len(rec)} fields, the header "
                               f"has {width}")
            for out, j in zip(cols, keep):
                out.append(rec[j].strip())
            lines.append(self._reader.line_num)
            self.n_rows += 1
            if len(lines) >= limit:
                yield self._table(names, cols, lines, first)
                cols, lines, first = [[] for _ in keep], [], self.n_rows
        if lines:
            yield self._table(names, cols, lines, first)
        elif self.n_rows == 0:
            raise CLIError(f"{self.what} {self.path!r} has a header but no data rows")

    def _table(self, names, cols, lines, first):
        n = len(lines)
        rows = None if first == 0 else np.arange(first + 1, first + n + 1)
        return Table(self.path, self.header, dict(zip(names, cols)), n,
                     np.asarray(lines, dtype=np.int64), rows)

    def close(self):
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_header(header, path, delimiter=","):
    if len(header) == 1:
        counts = {d: header[0].count(d) for d in (";", "\t", "|", ",") if d != delimiter}
        best = max(counts, key=counts.get)
        if counts[best]:
            if best == "\t":
                hint = "is the file tab-delimited? use --delimiter tab"
            else:
                hint = f"is the file delimited by {best!r}? use --delimiter {best!r}"
            raise CLIError(f"{path}: the header has one column ({header[0][:60]!r}, read with "
                           f"the delimiter {_show_delimiter(delimiter)}); {hint}")
    for j, h in enumerate(header):
        if not h:
            raise CLIError(f"{path}: column {j + 1} of the header row has no name")
    seen, dup = set(), None
    for h in header:
        if h in seen and dup is None:
            dup = h
        seen.add(h)
    numbers = sum(_is_number(h) for h in header)
    # a first line of numbers (or one that repeats a number) is data: the file has no header
    if numbers == len(header) or (dup is not None and (_is_number(dup) or 2 * numbers >= len(header))):
        why = (f"{numbers} of its {len(header)} values are numbers"
               + (f" and {dup!r} appears twice" if dup is not None else ""))
        raise CLIError(
            f"{path}: the first line ({delimiter.join(header[:4])}"
            f"{delimiter + '...' if len(header) > 4 else ''}) looks like data, not a header "
            f"row ({why}): the file seems to have no header. Add a first line naming the "
            "columns (the names --label and the schema use), e.g. with "
            "`(echo 'age,income,...'; cat FILE) > WITH_HEADER.csv`")
    if dup is not None:
        raise CLIError(f"{path}: column name {dup!r} appears twice in the header row")


# ----------------------------------------------------------------------------- schema
def normalize_schema(obj, where="schema"):
    """Validate a schema object (the JSON form); returns a :class:`PublicSchema` whose
    categories and classes are strings (cells are compared as text).  label.classes
    lists two labels [negative, positive], or the K > 2 labels of a K-class model."""
    try:
        return PublicSchema.from_dict(obj, where=where, categories_as_text=True)
    except ValueError as exc:
        msg = str(exc)
        raise CLIError(msg if msg.startswith(where) else f"{where}: {msg}") from None


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
    return schema.to_dict()


def feature_names(schema):
    return schema.feature_names()


def infer_schema(table, label):
    """Bounds and category lists READ FROM THE DATA (not private; the caller warns).

    A column in which most non-missing cells are finite numbers is numeric,
    with bounds [min, max] of its numbers; a blank or missing-marker cell in it
    is a missing value and any other cell is an error naming the column, the
    value and its row. Every other column is categorical, with the sorted
    distinct values of its non-missing cells.
    """
    num, cat = {}, {}
    for c in table.header:
        if c == label:
            continue
        col = table.columns[c]
        if isinstance(col, np.ndarray) and col.dtype.kind == "f":
            x = col[np.isfinite(col)]
            if x.size:
                lo, hi = float(x.min()), float(x.max())
                num[c] = (lo, hi if hi > lo else lo + 1.0)
            continue
        present = [v for v in col if not _is_marker(v)]
        if not present:
            raise CLIError(f"{table.name}: column {c!r} has no values (every cell is blank or "
                           "a missing marker); remove it or give a schema")
        numbers = [float(v) for v in present if _is_number(v)]
        if 2 * len(numbers) > len(present):
            for i, v in enumerate(col):
                if not _is_marker(v) and not _is_number(v):
                    raise CLIError(
                        f"{table.name}: non-numeric value {v!r} in numeric column {c!r} "
                        f"({table.where(i)}; most cells of the column are numbers); correct "
                        "it, leave the cell blank (a missing value), or declare the column "
                        "categorical in a schema")
            lo, hi = min(numbers), max(numbers)
            num[c] = (lo, hi if hi > lo else lo + 1.0)
        else:
            cat[c] = sorted(set(present))
    if not num and not cat:
        raise CLIError(f"{table.name}: no feature columns besides the label {label!r}")
    try:
        return PublicSchema(num, cat, label=label)
    except ValueError as exc:
        raise CLIError(f"{table.name}: {exc}") from None


# ----------------------------------------------------------------------------- cells
def _numeric_column(table, c):
    """Column c as floats, NaN for a missing cell; any other non-number is an error."""
    if ("num", c) in table._parsed:
        return table._parsed[("num", c)]
    col = table.columns[c]
    if isinstance(col, np.ndarray) and col.dtype.kind == "f":
        bad = np.flatnonzero(np.isinf(col))
        if bad.size:
            raise CLIError(f"{table.name}: non-numeric value {col[bad[0]]!r} in numeric column "
                           f"{c!r} ({table.where(bad[0])})")
        out = col
    else:
        out = np.empty(len(col))
        for i, s in enumerate(col):
            try:
                v = float(s)
            except ValueError:
                v = None
            if v is not None and math.isfinite(v):
                out[i] = v
            elif _is_marker(s):
                out[i] = np.nan
            else:
                raise CLIError(f"{table.name}: non-numeric value {s!r} in numeric column {c!r} "
                               f"({table.where(i)})")
    table._parsed[("num", c)] = out
    return out


def _category_column(table, c, categories):
    """Column c as an object array, None for a missing cell (blank, or a missing
    marker that is not one of the categories)."""
    key = ("cat", c, tuple(categories))
    if key in table._parsed:
        return table._parsed[key]
    listed = set(categories)
    out = np.empty(table.n_rows, dtype=object)
    for i, s in enumerate(table.columns[c]):
        out[i] = None if (_is_marker(s) and s not in listed) else s
    table._parsed[key] = out
    return out


def _check_columns(table, schema):
    missing = [c for c in schema.columns if c not in table.columns]
    if missing:
        raise CLIError(f"{table.name}: column(s) {missing} of the schema are missing "
                       f"(the file has: {', '.join(table.header)})")


def _cells(table, schema):
    """The values of the schema's columns, as PublicSchema.encode reads them."""
    _check_columns(table, schema)
    values = {c: _numeric_column(table, c) for c in schema.numeric}
    values.update({c: _category_column(table, c, cats) for c, cats in schema.categorical.items()})
    return values


def _label_missing(table, label, classes):
    listed = set(classes or ())
    return np.fromiter((_is_marker(v) and v not in listed for v in resolve_label(table, label)),
                       dtype=bool, count=table.n_rows)


MISSING_HINT_FIT = ("use --missing drop to drop such rows, or give the column a public "
                    "\"fill\" value in the schema (see dperm fit --help)")
MISSING_HINT_PREDICT = ("the model's schema has no \"fill\" value for this column, and predict "
                        "writes one row per input row: fill the cell, or refit with a schema "
                        "that has a public \"fill\" for it")


def missing_masks(table, schema, label=None, classes=None):
    """column -> bool mask of the rows with a missing value in that used column (the
    schema's columns without a public fill value, and the label when given)."""
    try:
        masks = schema.missing_mask(_cells(table, schema), by_column=True,
                                    describe_row=table.where)
    except ValueError as exc:
        raise CLIError(f"{table.name}: {exc}") from None
    if label is not None:
        lab = _label_missing(table, label, classes)
        if lab.any():
            masks[label] = lab
    return masks


def missing_error(table, masks, schema, label, hint=MISSING_HINT_FIT):
    """The error for the first row with a missing value (masks non-empty)."""
    first = {c: int(np.argmax(m)) for c, m in masks.items()}
    i = min(first.values())
    c = next(c for c in list(schema.columns) + [label] if first.get(c) == i)
    what = "missing label" if c == label else "missing value"
    return CLIError(f"{table.name}: {what} in column {c!r} ({table.where(i)}); {hint}")


def nothing_left_error(name, columns):
    return CLIError(f"{name}: every row has a missing value in a used column "
                    f"({', '.join(repr(c) for c in columns)}); nothing left to fit")


def apply_missing(table, schema, label=None, classes=None, policy="error",
                  hint=MISSING_HINT_FIT, allow_empty=False):
    """Missing values in the used columns (the schema's, and the label when given).

    A column with a public fill value in the schema has none to report. With
    policy "error" the first row with a missing value is an error naming the
    column and the row; with "drop" those rows are removed (every row dropped
    is an error unless allow_empty). Returns (table, number of rows dropped).
    """
    if policy not in ("error", "drop"):
        raise CLIError(f"--missing must be 'error' or 'drop', got {policy!r}")
    masks = missing_masks(table, schema, label, classes)
    if not masks:
        return table, 0
    if policy == "error":
        raise missing_error(table, masks, schema, label, hint)
    drop = np.zeros(table.n_rows, dtype=bool)
    for m in masks.values():
        drop |= m
    if drop.all() and not allow_empty:
        raise nothing_left_error(table.name, masks)
    return table.take(np.flatnonzero(~drop)), int(drop.sum())


# ----------------------------------------------------------------------------- encoding
def encode_rows(table, schema, unknown="error", sparse=False):
    """The public encoding of every row (rows have norm <= 1); returns (X, names).

    See :meth:`dperm.schema.PublicSchema.encode`: numeric column c with public
    range [lo, hi] is clipped to [lo, hi] and mapped to (v - lo) / (hi - lo);
    a categorical column is one-hot encoded against the public list (a value
    outside it is an error with unknown="error", used when training, or an
    all-zero group with unknown="zero", used when predicting); each row is
    divided by sqrt(#numeric + #categorical). A missing cell takes the
    schema's fill value, else it is an error (callers run apply_missing first
    for a message with advice). Nothing is read from the other rows. With
    sparse, X is a CSR array built without a dense (n, d) intermediate.
    """
    values = _cells(table, schema)
    try:
        X = schema.encode(values, unknown="ignore" if unknown in ("zero", "ignore") else "error",
                          describe_row=table.where, sparse=sparse)
    except ValueError as exc:
        raise CLIError(f"{table.name}: {exc}") from None
    return X, schema.feature_names()


def resolve_label(table, label):
    if label not in table.columns:
        raise CLIError(f"{table.name}: label column {label!r} not found (the file has: "
                       f"{', '.join(table.header)})")
    return table.columns[label]


def encode_labels(table, label, classes):
    """Labels as an array of str; every one must be in `classes`."""
    y = resolve_label(table, label)
    label_codes(table, label, classes)
    return np.asarray(y, dtype=object).astype(str)


def label_codes(table, label, classes):
    """Labels as int8: k for classes[k] (two classes: 0 negative, 1 positive); every
    label must be one of the classes (an error names the first row that is not)."""
    y = resolve_label(table, label)
    if len(classes) > 127:
        raise CLIError(f"label column {label!r}: {len(classes)} classes; at most 127 are "
                       "supported")
    code = {c: k for k, c in enumerate(classes)}
    out = np.empty(len(y), dtype=np.int8)
    for i, v in enumerate(y):
        k = code.get(v)
        if k is None:
            what = "missing label" if v == "" else f"label {v!r}"
            raise CLIError(f"{table.name}: {what} in column {label!r} ({table.where(i)}) is not "
                           f"one of the classes {list(classes)}")
        out[i] = k
    return out


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


def check_format_header(obj, fmt, version, keys, bad, hint=""):
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


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


#: the keys of a version 2 privacy record (dperm.mechanisms.PrivateFit.record() and the
#: estimator's additions); a version 1 record is read into this form
PRIVACY_KEYS = ("mechanism", "noise", "loss", "neighbouring", "epsilon", "delta",
                "epsilon_prime", "extra_l2", "beta", "sigma", "sigma_output", "grid", "alpha",
                "data_norm", "h", "n_samples", "curvature", "n_classes", "multiclass",
                "epsilon_total", "delta_total")


def upgrade_v1(obj):
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


def load_model(path):
    """Read and check a model written by `dperm fit` (format version 1 or 2); returns
    the dict with a normalized `schema`, numpy `coef` ((d,) for two classes, (K, d) for
    K > 2) and `intercept` (a float, or (K,)).  A version 1 file is returned with its
    privacy record and estimator in version 2 terms (upgrade_v1)."""
    where = f"model {path}"
    obj = _load_json(path, "model", lambda detail: f"{where}: not a dperm model ({detail})")

    def bad(msg):
        return CLIError(f"{where}: not a valid dperm model: {msg}")

    check_format_header(obj, MODEL_FORMAT, MODEL_FORMAT_VERSIONS,
                        ("coef", "intercept", "classes", "feature_names", "schema", "estimator"),
                        bad, hint=" (write models with `dperm fit`)")
    if obj["format_version"] == 1:
        obj = upgrade_v1(obj)
    if obj.get("task", "classification") == "regression":
        return _load_regression(obj, bad)
    if obj["format_version"] > 2 or "task" in obj and obj["task"] != "classification":
        raise bad("'task' must be 'classification' or (format version 3) 'regression'")
    classes = obj["classes"]
    if not (isinstance(classes, list) and len(classes) >= 2
            and all(isinstance(c, str) for c in classes) and len(set(classes)) == len(classes)):
        raise bad("'classes' must list two or more different labels ([negative, positive] "
                  "for two)")
    if len(classes) > 2 and obj["format_version"] < 2:
        raise bad("a version 1 model has exactly two classes")
    try:
        schema = normalize_schema(obj["schema"], where="schema")
    except CLIError as exc:
        raise bad(str(exc)) from None
    names = obj["feature_names"]
    if names != feature_names(schema):
        raise bad("'feature_names' do not match the preprocessing schema")
    coef, b, K = obj["coef"], obj["intercept"], len(classes)
    if K == 2:
        if not (isinstance(coef, list) and all(_is_num(v) for v in coef)):
            raise bad("'coef' must be a list of numbers")
        if len(coef) != len(names):
            raise bad(f"'coef' has {len(coef)} entries but there are {len(names)} features")
        if not _is_num(b):
            raise bad("'intercept' must be a number")
    else:
        if not (isinstance(coef, list) and len(coef) == K and all(
                isinstance(row, list) and all(_is_num(v) for v in row) for row in coef)):
            raise bad(f"'coef' must be a list of {K} lists of numbers (one per class)")
        if any(len(row) != len(names) for row in coef):
            raise bad(f"each row of 'coef' must have {len(names)} entries (one per feature)")
        if not (isinstance(b, list) and len(b) == K and all(_is_num(v) for v in b)):
            raise bad(f"'intercept' must be a list of {K} numbers (one per class)")
    est = obj["estimator"]
    if not isinstance(est, dict) or not isinstance(est.get("loss"), str):
        raise bad("'estimator' must be an object with the 'loss'")
    coef = np.asarray(coef, dtype=np.float64)
    b = float(b) if K == 2 else np.asarray(b, dtype=np.float64)
    if not np.isfinite(coef).all() or not np.isfinite(b).all():
        raise bad("coefficients must be finite")
    obj = dict(obj, coef=coef, intercept=b, schema=schema)
    return obj


def _load_regression(obj, bad):
    """The checks of load_model for a regression model (format version 3)."""
    if obj["format_version"] != MODEL_FORMAT_VERSION_REGRESSION:
        raise bad(f"a regression model has format_version {MODEL_FORMAT_VERSION_REGRESSION}")
    try:
        schema = normalize_schema(obj["schema"], where="schema")
    except CLIError as exc:
        raise bad(str(exc)) from None
    names = obj["feature_names"]
    if names != feature_names(schema):
        raise bad("'feature_names' do not match the preprocessing schema")
    coef, b = obj["coef"], obj["intercept"]
    if not (isinstance(coef, list) and all(_is_num(v) for v in coef)):
        raise bad("'coef' must be a list of numbers")
    if len(coef) != len(names):
        raise bad(f"'coef' has {len(coef)} entries but there are {len(names)} features")
    if not _is_num(b):
        raise bad("'intercept' must be a number")
    est = obj["estimator"]
    if not isinstance(est, dict) or not isinstance(est.get("loss"), str):
        raise bad("'estimator' must be an object with the 'loss'")
    coef = np.asarray(coef, dtype=np.float64)
    if not np.isfinite(coef).all() or not math.isfinite(b):
        raise bad("coefficients must be finite")
    return dict(obj, coef=coef, intercept=float(b), schema=schema)
