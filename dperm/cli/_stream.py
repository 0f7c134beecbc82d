"""Streaming for `dperm fit`: a CSV file larger than memory, read in chunks into an
on-disk binary of the design matrix, which the solver then reads in place.

The binary is a directory holding the rows exactly as the solver sees them:

    design.json                     the manifest (written last: a directory without it
                                    is an unfinished binary and is refused)
    X.npy                           dense layout: (n, d') float64 or float32, C order
    data.npy, indices.npy, indptr.npy
                                    CSR layout: values, int64 column indices, int64
                                    row pointers (n + 1)
    y.npy                           int8 labels: k = classes[k] (two classes: 0 negative,
                                    1 positive); a regression binary ("task":
                                    "regression" in the manifest): float64 targets

Each row is the public schema's encoding (norm <= 1), then, with the intercept, the
constant feature appended and the row scaled by 1/sqrt(2) (the estimator's own
augmentation, dperm.data.design.augment_intercept), then held to norm <= 1 (the same
public clip as the estimator's). Every step maps a row on its own, so a chunk of rows
gives exactly the rows the whole table gives: a streamed fit equals the in-memory one.

The .npy files are written by appending rows behind a header of fixed size, which is
rewritten with the final shape at the end: one pass over the CSV, no row count first,
and no array larger than a chunk in memory. Nothing here reads a statistic of the data:
the chunk size comes from the memory budget, the schema and the header only.
"""
import json
import math
import os
import re
import shutil

import numpy as np

from dperm.cli._io import CLIError, check_format_header

__all__ = ["parse_size", "format_size", "design_rows", "encoded_design_rows", "DesignWriter",
           "open_design", "chunk_rows", "BINARY_FORMAT",
           "BINARY_FORMAT_VERSION", "MANIFEST", "DEFAULT_BUDGET", "SPARSE_DENSITY"]

BINARY_FORMAT = "dperm.design-binary"
BINARY_FORMAT_VERSION = 1
MANIFEST = "design.json"
DEFAULT_BUDGET = 256 << 20
MIN_CHUNK_ROWS = 16
# --sparse auto: CSR when a row has at most this fraction of non-zero entries
SPARSE_DENSITY = 0.3

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
          "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


# ----------------------------------------------------------------------------- sizes
def parse_size(s):
    """'256M', '256MB', '1.5G', '65536' -> bytes (K, M, G, T: powers of 1024)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(s))
    unit = m and _UNITS.get(m.group(2).lower())
    if not m or unit is None:
        raise ValueError(f"{s!r} is not a size; write e.g. 256M, 256MB, 2G or 500000000 "
                         "(bytes; K, M, G, T are powers of 1024)")
    v = float(m.group(1)) * unit
    if not (math.isfinite(v) and v >= 1):
        raise ValueError(f"{s!r} is not a positive size")
    return int(v)


def format_size(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n} B"


def chunk_rows(budget, schema, layout, dtype, fit_intercept, label=True):
    """(rows per chunk, estimated bytes per row) so that reading and encoding one chunk
    stays within `budget` bytes. Public inputs only: the schema (its columns, the
    lengths of its category and class names), the layout and the dtype.

    Per row: each used CSV cell at about 60 bytes plus its length (a numeric cell is
    taken as 24 characters) and its parsed forms (about 64 bytes for a number, 40 for a
    category code); the encoded row with its copies (dense: the (d) encoding, its
    (d + 1) augmentation and a cast; CSR: about 64 bytes per stored entry over the
    value, index and mask blocks). The cell term was sized for Python strings; the
    Arrow reader keeps a cell in its length plus 4 to 12 bytes (offsets, a stripped
    copy, masks), so the estimate is generous there. Measured peaks stay below it (see
    tests/cli/test_cli_stream.py).
    """
    d1 = schema.n_features + bool(fit_intercept)
    itemsize = np.dtype(dtype).itemsize
    per_row = 96 + len(schema.numeric) * (60 + 24 + 64)
    per_row += sum(100 + max(len(str(v)) for v in cats) for cats in schema.categorical.values())
    if label:
        per_row += 100 + max((len(str(v)) for v in schema.classes or ()), default=24)
    if layout == "csr":
        per_row += (schema.stored_per_row + 1) * 64
    else:
        per_row += d1 * (3 * 8 + itemsize)
    rows = int(budget // per_row)
    if rows < MIN_CHUNK_ROWS:
        need = MIN_CHUNK_ROWS * per_row
        raise CLIError(f"--memory-budget {format_size(budget)} is too small: a row of this "
                       f"schema takes about {per_row} bytes to read and encode; give at least "
                       f"{format_size(need)}"
                       + ("" if layout == "csr" else " (or --sparse yes for one-hot columns)"))
    return rows, per_row


# ----------------------------------------------------------------------------- rows
def design_rows(X, fit_intercept, dtype):
    """The rows the solver reads: with the intercept [x, 1]/sqrt(2) (the estimator's
    augment_intercept), cast to dtype, held to norm <= 1 (apply_norm_bound "clip").
    Each row on its own; dense stays dense, CSR stays CSR."""
    from dperm.data.design import augment_intercept
    from dperm.data.validation import apply_norm_bound

    Xa = augment_intercept(X, 1.0) if fit_intercept else X
    Xa = Xa.astype(dtype, copy=False)
    return apply_norm_bound(Xa, 1.0, "clip")


def encoded_design_rows(table, schema, fit_intercept, dtype, sparse=False, out=None):
    """design_rows(encode_rows(table, schema)[0], fit_intercept, dtype), the same bits.

    Dense rows with the intercept are written once, [x, 1]/sqrt(2) straight into one
    array (dperm.cli._io.encode_rows_with_constant), instead of the encoding, its
    augmented copy and the norm check of both (into `out` when given: a reused float64
    buffer of at least as many rows, whose rows are then returned); then cast and held
    to norm <= 1 as in design_rows."""
    from dperm.cli._io import encode_rows, encode_rows_with_constant

    if sparse or not fit_intercept:
        X, _ = encode_rows(table, schema, unknown="error", sparse=sparse)
        return design_rows(X, fit_intercept, dtype)
    from dperm.data.design import INTERCEPT_SCALE
    from dperm.data.validation import apply_norm_bound

    Xa = encode_rows_with_constant(table, schema, INTERCEPT_SCALE, out=out)
    if np.dtype(dtype) == np.float64:
        # No float64 row can be clipped: an encoded row has ||x||^2 <= 1 + 8 eps (each
        # value at most 1/sqrt(k) up to 2 roundings, at most k of them non-zero), so
        # ||[x, 1] * INTERCEPT_SCALE||^2 <= (1 - 2^-40)^2 (1 + 8 eps) < 1 - 1e-12 in
        # any summation order: apply_norm_bound would return Xa itself.
        return Xa
    return apply_norm_bound(Xa.astype(dtype), 1.0, "clip")


# ----------------------------------------------------------------------------- .npy
_HEADER_BYTES = 128   # magic, version, length, the dict padded with spaces, "\n"


def _npy_header(dtype, shape):
    """A version 1.0 .npy header of exactly _HEADER_BYTES bytes (NEP 1 format)."""
    d = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
         "shape": tuple(int(v) for v in shape)}
    text = repr(d).encode("latin1")
    prefix = np.lib.format.MAGIC_PREFIX + bytes([1, 0])
    room = _HEADER_BYTES - len(prefix) - 2 - 1
    if len(text) > room:  # pragma: no cover - 20-digit dimensions still fit
        raise ValueError(f"shape {shape} too large for the header")
    body = text + b" " * (room - len(text)) + b"\n"
    return prefix + len(body).to_bytes(2, "little") + body


class _NpyAppender:
    """A .npy file grown by appending rows; the header gets the final shape at close."""

    def __init__(self, path, dtype, width=None):
        self.path, self.dtype, self.width = path, np.dtype(dtype), width
        self.rows = 0
        self._fh = open(path, "wb")
        self._fh.write(_npy_header(self.dtype, self._shape()))

    def _shape(self):
        return (self.rows,) if self.width is None else (self.rows, self.width)

    def append(self, arr):
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        self._fh.write(memoryview(arr.reshape(-1)).cast("B"))
        self.rows += arr.shape[0]

    def close(self):
        if self._fh.closed:
            return
        self._fh.seek(0)
        self._fh.write(_npy_header(self.dtype, self._shape()))
        self._fh.close()

    def abort(self):
        self._fh.close()


class DesignWriter:
    """Appends chunks of design rows (dense or CSR) and labels to a binary directory."""

    def __init__(self, directory, layout, dtype, n_columns, regression=False):
        self.dir, self.layout, self.n_columns = directory, layout, n_columns
        #: real targets (float64) instead of int8 class codes
        self.regression = bool(regression)
        self.dtype = np.dtype(dtype)
        self.n_samples = 0
        self.nnz = 0
        self._files = []
        if layout == "dense":
            self.X = self._open("X.npy", self.dtype, n_columns)
        else:
            self.data = self._open("data.npy", self.dtype)
            self.indices = self._open("indices.npy", np.int64)
            self.indptr = self._open("indptr.npy", np.int64)
            self.indptr.append(np.zeros(1, dtype=np.int64))
        self.y = self._open("y.npy", np.float64 if self.regression else np.int8)

    def _open(self, name, dtype, width=None):
        f = _NpyAppender(os.path.join(self.dir, name), dtype, width)
        self._files.append(f)
        return f

    def append(self, Xa, y):
        n = Xa.shape[0]
        if n == 0:
            return
        if self.layout == "dense":
            self.X.append(Xa)
        else:
            nnz = int(Xa.indptr[-1])
            self.data.append(Xa.data[:nnz])
            self.indices.append(Xa.indices[:nnz])
            self.indptr.append(Xa.indptr[1:].astype(np.int64) + self.nnz)
            self.nnz += nnz
        self.y.append(y)
        self.n_samples += n

    def finish(self, manifest):
        """Close the arrays (final headers) and write the manifest last."""
        for f in self._files:
            f.close()
        files = ({"X": "X.npy"} if self.layout == "dense" else
                 {"data": "data.npy", "indices": "indices.npy", "indptr": "indptr.npy"})
        manifest = dict(manifest, format=BINARY_FORMAT, format_version=BINARY_FORMAT_VERSION,
                        layout=self.layout, dtype=self.dtype.name, n_samples=self.n_samples,
                        n_columns=self.n_columns, files=dict(files, y="y.npy"))
        if self.layout == "csr":
            manifest.update(index_dtype="int64", nnz=self.nnz)
        if self.regression:
            manifest.update(task="regression")
        tmp = os.path.join(self.dir, MANIFEST + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, os.path.join(self.dir, MANIFEST))
        return manifest

    def abort(self):
        for f in self._files:
            f.abort()


def remove_binary(directory, created_dir):
    """Delete a binary this run wrote: its files, and the directory if it made it."""
    if created_dir:
        shutil.rmtree(directory, ignore_errors=True)
        return
    for name in ("X.npy", "data.npy", "indices.npy", "indptr.npy", "y.npy", MANIFEST,
                 MANIFEST + ".tmp"):
        try:
            os.remove(os.path.join(directory, name))
        except OSError:
            pass


def open_design(directory):
    """(X, y, manifest) of a finished binary: X a read-only memory map (dense) or a
    csr_array over memory maps, y an int8 memory map (a regression binary's: float64
    targets); nothing is read into memory."""
    where = f"binary {directory}"
    if not os.path.isdir(directory):
        raise CLIError(f"{where}: not found (give the directory written by --keep-binary)")
    path = os.path.join(directory, MANIFEST)
    if not os.path.exists(path):
        raise CLIError(f"{where}: no {MANIFEST} in it: not a dperm binary, or one whose "
                       "writing did not finish")
    try:
        with open(path, encoding="utf-8") as fh:
            man = json.load(fh)
    except (OSError, ValueError) as exc:
        raise CLIError(f"{where}: cannot read {MANIFEST} ({exc})") from None

    def bad(msg):
        return CLIError(f"{where}: not a valid dperm binary: {msg}")

    check_format_header(man, BINARY_FORMAT, BINARY_FORMAT_VERSION,
                        ("layout", "dtype", "n_samples", "n_columns", "files", "schema",
                         "intercept_column", "feature_names", "source"),
                        lambda msg: bad(f"{MANIFEST}: {msg}"))
    layout, n, d = man["layout"], man["n_samples"], man["n_columns"]
    if man["dtype"] not in ("float32", "float64") or layout not in ("dense", "csr"):
        raise bad(f"layout {layout!r} / dtype {man['dtype']!r} not understood")
    dtype = np.dtype(man["dtype"])

    def load(key, want_dtype, want_shape):
        name = man["files"].get(key)
        if not isinstance(name, str) or os.path.basename(name) != name:
            raise bad(f"{MANIFEST} names no file for {key!r}")
        p = os.path.join(directory, name)
        if not os.path.isfile(p):
            raise bad(f"{name} is missing")
        try:
            if int(np.prod(want_shape)) == 0:
                arr = np.load(p)
            else:
                arr = np.load(p, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise bad(f"{name}: {exc}") from None
        if arr.dtype != want_dtype or arr.shape != tuple(want_shape):
            raise bad(f"{name} holds {arr.dtype} {arr.shape}, the manifest says "
                      f"{np.dtype(want_dtype)} {tuple(want_shape)}")
        return arr

    y = load("y", np.float64 if man.get("task") == "regression" else np.int8, (n,))
    if layout == "dense":
        X = load("X", dtype, (n, d))
    else:
        nnz = man.get("nnz")
        if not isinstance(nnz, int):
            raise bad(f"{MANIFEST} lacks 'nnz'")
        data = load("data", dtype, (nnz,))
        indices = load("indices", np.int64, (nnz,))
        indptr = load("indptr", np.int64, (n + 1,))
        if int(indptr[0]) != 0 or int(indptr[-1]) != nnz:
            raise bad("indptr does not run from 0 to nnz")
        from dperm.data.validation import _csr_from_parts

        X = _csr_from_parts(data, indices, indptr, (n, d))
    return X, y, man
