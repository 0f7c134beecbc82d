"""File handling of the `dperm` command line: CSV tables, the public schema,
the public encoding of rows and the JSON model format.

The schema and the encoding are :class:`dperm.schema.PublicSchema`; this module
reads CSV cells (text) into the values it encodes: numbers, categories, and
missing values (a blank cell or one of MISSING_MARKERS). The parsing is pyarrow's
CSV reader and every rule on cells runs on whole columns with pyarrow.compute
(docs/user_guide/cli.md, "Reading CSV files: pyarrow").

Everything here raises :class:`CLIError` with a one-line message a user can
act on (the command line prints it and exits with status 2).
"""
import csv
import io
import json
import math
import os
import re
import shutil
import tempfile
import weakref

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from dperm.cli._common import CLIError, parse_delimiter  # noqa: F401  (this module's API)
from dperm.model_io import (  # the model format (re-exported: the command line's names)
    MODEL_FORMAT,
    MODEL_FORMAT_VERSION,
    MODEL_FORMAT_VERSION_RAW,
    MODEL_FORMAT_VERSION_REGRESSION,
    MODEL_FORMAT_VERSIONS,
    PRIVACY_KEYS,
    ModelFormatError,
    check_format_header,
    model_to_json,
    read_model,
    upgrade_v1,
)
from dperm.schema import CategoryCodes, PublicSchema

__all__ = ["CLIError", "Table", "read_csv", "CSVReader", "load_schema", "normalize_schema",
           "infer_schema", "schema_to_json", "feature_names", "encode_rows",
           "encode_rows_with_constant", "encode_labels", "label_codes", "resolve_label",
           "distinct_values", "numeric_cells", "apply_missing",
           "missing_masks", "parse_delimiter", "MISSING_MARKERS", "model_to_json", "load_model",
           "MODEL_FORMAT", "MODEL_FORMAT_VERSION", "MODEL_FORMAT_VERSIONS",
           "MODEL_FORMAT_VERSION_REGRESSION", "MODEL_FORMAT_VERSION_RAW", "PRIVACY_KEYS",
           "check_format_header", "upgrade_v1"]

# Cells read as a missing value (compared case-insensitively, after stripping).
# In a categorical column a marker that the schema lists as a category is that
# category, not a missing value.
MISSING_MARKERS = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "#n/a"})




class _NeedsHandler(Exception):
    """CSVReader: the threaded pass met a row that needs the Python row handler."""


# ----------------------------------------------------------------------------- CSV
# The characters Python's str.strip() removes (str.isspace), so that the reader trims a
# cell by the rule dperm.schema.normalize_category applies to schema strings.
_WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
               "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
# A number as a cell may write it (the syntax both float() and Arrow's cast accept);
# inf and nan are not numbers here (a non-finite value is an error, "nan" a missing value)
_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_BLOCK = 1 << 20          # bytes of CSV text Arrow parses at a time (a row must fit in one)
_SCAN_BLOCK = 1 << 24     # bytes read at a time when a message looks a line up


class Table:
    """A CSV file (or a chunk of one): `header`, `columns` (name -> the column's cells:
    Arrow strings, surrounding spaces stripped, or a list of str or a float array),
    `n_rows`, `rows` (each row's number in the file, 1 = the first data row; default
    1..n_rows) and `lines` (each row's file line: an array, or an object whose
    line(row) reads the file again when a message needs it; None: no lines)."""

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
        line = self.lines.line(row) if hasattr(self.lines, "line") else int(self.lines[i])
        return f"row {row}" if line is None else f"row {row}, line {line}"

    def take(self, rows):
        """The table restricted to `rows` (indices); rows keep their numbers and lines."""
        rows = np.asarray(rows, dtype=np.intp)
        columns = {}
        for c, col in self.columns.items():
            if isinstance(col, (pa.Array, pa.ChunkedArray)):
                columns[c] = col.take(pa.array(rows))
            elif isinstance(col, np.ndarray):
                columns[c] = col[rows]
            else:
                columns[c] = [col[i] for i in rows]
        lines = self.lines
        if lines is not None and not hasattr(lines, "line"):
            lines = np.asarray(lines)[rows]
        numbers = (rows + 1) if self.rows is None else np.asarray(self.rows)[rows]
        out = Table(self.name, self.header, columns, int(rows.size), lines, numbers)
        out._parsed = {k: v[rows] for k, v in self._parsed.items()}
        return out


def _is_number(s):
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def _show_delimiter(d):
    return "tab" if d == "\t" else repr(d)


def read_csv(path, what="data file", delimiter=","):
    """Read a delimited file with a header row; values are stripped strings."""
    reader = CSVReader(path, what=what, delimiter=delimiter)
    with reader:
        tables = list(reader.chunks(None))
    return tables[0]


class CSVReader:
    """A delimited file with a header row, read in chunks of rows by Arrow's CSV reader.

    The header is read (and checked) on construction; ``chunks(n)`` then yields
    Tables of at most n data rows (all rows when n is None), numbered as in the
    whole file, so messages name the row and the line of the file (lines are looked
    up when a message needs one). ``usecols`` keeps only those columns in the
    chunks (the header stays whole). Cells are text with surrounding spaces
    stripped; a row whose cells are all blank is skipped (not numbered). Quoting:
    a field in double quotes may hold the delimiter, a doubled quote and line
    breaks. Every problem is a CLIError naming the file and the row or line.
    """

    def __init__(self, path, what="data file", delimiter=","):
        self.path, self.what, self.delimiter = path, what, delimiter
        if os.path.isdir(path):
            raise CLIError(f"{what} {path!r} is a directory, not a CSV file")
        self._open = []          # the chunks() generators, closed by close()
        self._spool = None       # a copy of a pipe's text (the file is read more than once)
        try:
            with open(path, "rb") as fh:
                if not os.path.isfile(path):   # a pipe, e.g. `dperm fit <(zcat a.csv.gz)`
                    fd, self._spool = tempfile.mkstemp(prefix="dperm-", suffix=".csv")
                    with os.fdopen(fd, "wb") as out:
                        shutil.copyfileobj(fh, out, 1 << 20)
        except FileNotFoundError:
            raise CLIError(f"{what} {path!r} not found") from None
        except OSError as exc:
            _remove_quietly(self._spool)
            raise CLIError(f"cannot read {what} {path!r}: {exc.strerror or exc}") from None
        self._file = self._spool or path
        try:
            self.header, self._offset, self._header_lines = self._read_header()
            _check_header(self.header, path, delimiter)
        except BaseException:
            _remove_quietly(self._spool)
            raise
        self.lines = _Locator(self._file, delimiter, self._offset, self._header_lines,
                              len(self.header))
        if self._spool is not None:   # kept while a table may still name its lines
            weakref.finalize(self.lines, _remove_quietly, self._spool)
        self.n_rows = 0          # data rows read so far

    def _read_header(self):
        """(names, byte offset of the first data row, lines up to the header's end): the
        first non-blank record, read as before Arrow takes over the rest of the file."""
        consumed = [0, 0]

        def lines(fh):
            while True:
                ln = fh.readline()
                if not ln:
                    return
                consumed[0] += len(ln.encode("utf-8"))
                consumed[1] += 1
                yield ln

        try:
            with open(self._file, encoding="utf-8", newline="") as fh:
                if fh.read(1) == "\ufeff":   # a UTF-8 byte order mark
                    consumed[0] += 3
                else:
                    fh.seek(0)
                for rec in csv.reader(lines(fh), delimiter=self.delimiter,
                                      skipinitialspace=True):
                    if rec and any(v.strip() for v in rec):
                        return [v.strip() for v in rec], consumed[0], consumed[1]
        except UnicodeDecodeError:
            raise self._not_utf8() from None
        except csv.Error as exc:
            raise CLIError(f"{self.path}: malformed CSV at line {consumed[1]}: {exc}") from None
        raise CLIError(f"{self.what} {self.path!r} is empty (a header row naming the columns "
                       "is required)")

    def _batches(self):
        """Arrow record batches of the data rows: every column as text, rows of blank
        cells only (a line of spaces or delimiters) skipped, other problems CLIErrors.

        Arrow's threads never hold a Python object: the first pass parses with Arrow's
        thread pool and no Python callback. A row Arrow cannot take (a line of spaces,
        a ragged row) ends that pass; the file is then read again on this thread alone,
        with a Python invalid_row_handler, and the rows already yielded are skipped.
        (A callback held by a pool thread is released there, taking the GIL; when that
        happened while the interpreter was exiting, the process aborted with "terminate
        called without an active exception": pyarrow's OwnedRefNoGIL, GH-38626.)"""
        done = 0
        try:
            for batch in self._arrow_batches(threads=True):
                done += batch.num_rows
                yield batch
            return
        except _NeedsHandler:
            pass
        skip = done
        for batch in self._arrow_batches(threads=False):
            if skip >= batch.num_rows:
                skip -= batch.num_rows
                continue
            if skip:
                batch, skip = batch.slice(skip), 0
            yield batch

    def _arrow_batches(self, threads):
        names = [f"f{j}" for j in range(len(self.header))]
        ragged = []

        def odd_row(row):
            if not row.text.strip(_WHITESPACE + self.delimiter):
                return "skip"   # a blank line of spaces or delimiters
            ragged.append(row.text)
            return "error"

        parse = dict(delimiter=self.delimiter, newlines_in_values=True)
        if not threads:
            parse["invalid_row_handler"] = odd_row
        src = pa.OSFile(self._file)
        reader = None
        try:
            src.seek(self._offset)
            try:
                reader = pacsv.open_csv(
                    src,
                    read_options=pacsv.ReadOptions(column_names=names, block_size=_BLOCK,
                                                   use_threads=threads),
                    parse_options=pacsv.ParseOptions(**parse),
                    convert_options=pacsv.ConvertOptions(
                        column_types=dict.fromkeys(names, pa.string()),
                        strings_can_be_null=False, quoted_strings_can_be_null=False))
                for batch in reader:
                    yield batch
            except pa.ArrowInvalid as exc:
                if str(exc).startswith("Empty CSV file"):
                    return   # nothing after the header but blank lines
                if threads and "Expected" in str(exc) and "columns, got" in str(exc):
                    raise _NeedsHandler() from None
                raise self._parse_error(exc, ragged) from None
        finally:
            if reader is not None:
                reader.close()
            src.close()

    def _parse_error(self, exc, ragged):
        msg = str(exc)
        if ragged or ("Expected" in msg and "columns, got" in msg):
            hit = self.lines.first_ragged()
            if hit is not None:
                row, line, k = hit
                hint = ""
                if re.search(re.escape(self.delimiter) + r"[ \t]+\"", ragged[0] if ragged else ""):
                    hint = ("; a quoted field must start right after the delimiter (no space "
                            "before its opening quote)")
                return CLIError(f"{self.path}: row {row} (line {line}) has {k} fields, the "
                                f"header has {len(self.header)}{hint}")
        if "UTF8" in msg or "UTF-8" in msg:
            return self._not_utf8()
        if "straddle" in msg:
            return CLIError(f"{self.path}: a row longer than {_BLOCK >> 20} MiB, or a quote "
                            "that is never closed (a field in quotes runs to the end of the "
                            "file)")
        return CLIError(f"{self.path}: malformed CSV: {msg}")

    def _not_utf8(self):
        at = _first_bad_utf8(self._file)
        where = "" if at is None else f" (byte {at[0]}, line {at[1]})"
        return CLIError(f"{self.path}: not UTF-8 text{where}; save the file as UTF-8 CSV")

    def _pieces(self, keep):
        """pa.Tables of the kept columns (cell text) of the non-blank rows, batch by batch
        (an int, the number of rows, when no column is kept)."""
        index = {h: j for j, h in enumerate(self.header)}
        later = [h for h in self.header if h not in keep]
        for batch in self._batches():
            cols = {h: _cell_text(batch.column(index[h])) for h in keep}
            # blank rows: every cell empty; each column is looked at only on the rows
            # still blank in the ones before (usually none after the first)
            cand = None
            for h in keep + later:
                col = cols[h] if h in cols else batch.column(index[h])
                if cand is not None:
                    col = col.take(pa.array(cand))
                if h not in cols:
                    col = pc.utf8_trim(col, _WHITESPACE)
                empty = _np(pc.equal(col, ""))
                cand = np.flatnonzero(empty) if cand is None else cand[empty]
                if not cand.size:
                    break
            if cand is None:
                cand = np.arange(batch.num_rows)
            if cand.size:
                kept = np.ones(batch.num_rows, dtype=bool)
                kept[cand] = False
                mask = pa.array(kept)
                cols = {h: c.filter(mask) for h, c in cols.items()}
            n = batch.num_rows - cand.size
            yield pa.table(cols) if cols else n

    def chunks(self, n=None, usecols=None):
        """Tables of at most n rows (None: one table of every row); at least one."""
        gen = self._chunks(n, usecols)
        self._open.append(gen)
        return gen

    def _chunks(self, n, usecols):
        keep = [h for h in self.header if usecols is None or h in usecols]
        limit = None if n is None else int(n)
        pending, have = [], 0
        for piece in self._pieces(keep):
            k = piece if isinstance(piece, int) else piece.num_rows
            if not k:
                continue
            pending.append(piece)
            have += k
            while limit is not None and have >= limit:
                head, pending = _split(pending, limit)
                have -= limit
                yield self._table(keep, head, limit)
        if have:
            head, _ = _split(pending, have)
            yield self._table(keep, head, have)
        elif self.n_rows == 0:
            raise CLIError(f"{self.what} {self.path!r} has a header but no data rows")

    def _table(self, keep, tb, n):
        first = self.n_rows
        self.n_rows += n
        rows = None if first == 0 else np.arange(first + 1, first + n + 1)
        columns = {h: tb.column(h) for h in keep} if tb is not None else {}
        return Table(self.path, self.header, columns, n, self.lines, rows)

    def rewind(self):
        """Stop the reading, so that the next chunks() reads the file again from its first
        data row (numbered 1 again)."""
        self.close()
        self.n_rows = 0

    def close(self):
        """Stop the reading (its file is closed)."""
        for gen in self._open:
            gen.close()
        self._open = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _plain_edges(arr):
    """True when no cell of the Arrow string array can start or end with a space: none
    of its bytes is an ASCII control or space character or non-ASCII (a byte scan, much
    cheaper than trimming), or else no cell's first or last byte is."""
    if isinstance(arr, pa.ChunkedArray):
        return all(_plain_edges(a) for a in arr.chunks)
    if len(arr) == 0 or arr.buffers()[2] is None:
        return True
    itype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offs = np.frombuffer(arr.buffers()[1], dtype=itype)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.int8)[offs[0]:offs[-1]]
    if not (data < 33).any():        # bytes 0-32 and 128-255 (negative as int8)
        return True
    full = offs[1:] > offs[:-1]
    edges = np.concatenate((data[offs[:-1][full] - offs[0]], data[offs[1:][full] - offs[0] - 1]))
    return not (edges < 33).any()


def _cell_text(raw):
    """Cells as the command line reads them: surrounding spaces stripped; a field of
    spaces then a quoted text (`1, "red"`) is that text, as when the csv module skipped
    the spaces after a delimiter (a delimiter inside such a field still splits it)."""
    if _plain_edges(raw):
        return raw
    text = pc.utf8_trim(raw, _WHITESPACE)
    quoted = pc.starts_with(text, '"')
    if not pc.any(quoted).as_py():
        return text
    late = pc.and_(pc.and_(quoted, pc.match_substring_regex(raw, r'^[ \t]+"')),
                   pc.match_substring_regex(text, r'(?s)^".*"$'))
    inner = pc.replace_substring(pc.utf8_slice_codeunits(text, 1, -1), '""', '"')
    return pc.if_else(late, inner, text)


def _remove_quietly(path):
    if path is not None:
        try:
            os.remove(path)
        except OSError:
            pass


def _split(pieces, n):
    """(the first n rows of the pieces as one pa.Table, or None without columns; the
    pieces that remain)."""
    if not pieces or isinstance(pieces[0], int):
        rest = sum(pieces) - n
        return None, ([rest] if rest else [])
    tb = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
    rest = tb.slice(n)
    return tb.slice(0, n), ([rest] if rest.num_rows else [])


class _Locator:
    """The file line of a data row, and the first row with the wrong number of fields:
    found by reading the file again, only when a message needs it (the reader itself
    keeps no line numbers). Blank rows (every cell blank) are not numbered, as in
    CSVReader; a row's line is the line where it starts."""

    def __init__(self, path, delimiter, offset, header_lines, width):
        self.path, self.delimiter, self.offset = path, delimiter, offset
        self.header_lines, self.width = header_lines, width

    def line(self, row):
        try:
            for rows, lines, _ in self._records():
                if rows.size and rows[-1] >= row:
                    return int(lines[np.searchsorted(rows, row)])
        except OSError:    # the file is gone: the message names the row only
            pass
        return None

    def first_ragged(self):
        try:
            for rows, lines, fields in self._records():
                bad = np.flatnonzero(fields != self.width)
                if bad.size:
                    i = bad[0]
                    return int(rows[i]), int(lines[i]), int(fields[i])
        except OSError:
            pass
        return None

    def _records(self):
        """(row numbers, first lines, field counts) of the non-blank records, a block at
        a time: vectorised over lines while the text has no quotes (one line is one
        record), else record by record with the csv module."""
        row, line, pos = 0, self.header_lines, self.offset
        with open(self.path, "rb") as fh:
            fh.seek(pos)
            tail = b""
            while True:
                block = fh.read(_SCAN_BLOCK)
                data = tail + block
                if not data:
                    return
                cut = len(data) if not block else data.rfind(b"\n") + 1
                if cut == 0:     # a block without a line feed: CR line ends, or one long line
                    yield from self._csv_records(pos, row, line)
                    return
                part, tail = data[:cut], data[cut:]
                if b'"' in part or part.count(b"\r") != part.count(b"\r\n"):
                    yield from self._csv_records(pos, row, line)
                    return
                blank, fields = _lines_of(part, self.delimiter)
                full = ~blank
                numbers = row + np.cumsum(full)
                yield (numbers[full], line + 1 + np.flatnonzero(full), fields[full])
                row = int(numbers[-1]) if numbers.size else row
                line += blank.size
                pos += cut

    def _csv_records(self, pos, row, line):
        with open(self.path, "rb") as raw:
            raw.seek(pos)
            text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            reader = csv.reader(text, delimiter=self.delimiter)
            done = 0
            try:
                for rec in reader:
                    start, done = line + done + 1, reader.line_num
                    if rec and any(v.strip() for v in rec):
                        row += 1
                        yield (np.array([row]), np.array([start]), np.array([len(rec)]))
            except csv.Error:
                return


def _lines_of(part, delimiter):
    """(blank, fields) of each line of `part` (bytes without quotes, lines ending in
    \n or \r\n): whether every cell is blank, and the number of fields."""
    a = np.frombuffer(part, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    if part[-1:] != b"\n":
        ends = np.append(ends, a.size)
    starts = np.concatenate(([0], ends[:-1] + 1))
    soft = np.zeros(256, dtype=bool)       # ASCII whitespace (str.isspace) and the delimiter
    soft[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32, ord(delimiter)]] = True

    def per_line(x):
        cs = np.concatenate(([0], np.cumsum(x, dtype=np.int64)))
        return cs[ends] - cs[starts]

    fields = per_line(a == ord(delimiter)) + 1
    hard = per_line(~soft[a] & (a < 128))
    high = per_line(a >= 128)
    blank = (hard == 0) & (high == 0)
    for i in np.flatnonzero((hard == 0) & (high > 0)):   # perhaps Unicode spaces only
        text = part[starts[i]:ends[i]].decode("utf-8", "replace")
        blank[i] = not any(v.strip() for v in text.split(delimiter))
    return blank, fields


def _first_bad_utf8(path):
    """(byte offset, line) of the first byte that is not UTF-8 text, or None."""
    pos, line, tail = 0, 1, b""
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_SCAN_BLOCK)
            data = tail + block
            if not data:
                return None
            try:
                data.decode("utf-8")
                tail = b""
            except UnicodeDecodeError as exc:
                if block and exc.reason == "unexpected end of data":
                    tail = data[exc.start:]       # a character cut by the block's end
                    data = data[:exc.start]
                else:
                    return pos + exc.start, line + data.count(b"\n", 0, exc.start)
            if not block:
                return None
            pos += len(data)
            line += data.count(b"\n")


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
    header = list(header)
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


def header_hint(header):
    """'' or the end of a "column not found" message when the header row holds numbers:
    a column name is rarely a number, so that row is probably data and the file has no
    header row (mixed rows of words and numbers pass _check_header's test)."""
    header = list(header)
    numbers = sum(_is_number(h) for h in header)
    if not numbers:
        return ""
    shown = ", ".join(header[:4]) + (", ..." if len(header) > 4 else "")
    return (f". The first row ({shown}) looks like data, not a header row ({numbers} of its "
            f"{len(header)} values are numbers): the file needs a first line naming the "
            "columns, e.g. `(echo 'age,income,...'; cat FILE) > WITH_HEADER.csv`")


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
        s = _arrow(col)
        present = ~_markers(s)
        if not present.any():
            raise CLIError(f"{table.name}: column {c!r} has no values (every cell is blank or "
                           "a missing marker); remove it or give a schema")
        is_num, values = _numbers(s)
        if 2 * int(is_num.sum()) > int(present.sum()):
            bad = np.flatnonzero(present & ~is_num)
            if bad.size:
                i = int(bad[0])
                raise CLIError(
                    f"{table.name}: non-numeric value {s[i].as_py()!r} in numeric column {c!r} "
                    f"({table.where(i)}; most cells of the column are numbers); correct "
                    "it, leave the cell blank (a missing value), or declare the column "
                    "categorical in a schema")
            x = values[is_num]
            lo, hi = float(x.min()), float(x.max())
            num[c] = (lo, hi if hi > lo else lo + 1.0)
        else:
            cat[c] = sorted(distinct_values(s.filter(pa.array(present))))
    if not num and not cat:
        raise CLIError(f"{table.name}: no feature columns besides the label {label!r}")
    try:
        return PublicSchema(num, cat, label=label)
    except ValueError as exc:
        raise CLIError(f"{table.name}: {exc}") from None


# ----------------------------------------------------------------------------- cells
# Every rule below is applied to whole columns by Arrow's compute functions: a cell is
# text with its surrounding spaces stripped (the reader does it), a missing value is a
# cell whose lower case is one of MISSING_MARKERS, a number is what _NUMBER matches.
def _case_forms(word):
    forms = [""]
    for ch in word:
        forms = [f + v for f in forms for v in dict.fromkeys((ch.lower(), ch.upper()))]
    return forms


# every spelling of a marker that lower() maps to it ("NA", "Na", "nA", "na", ...): one
# hash look-up a cell, no lower-case copy of the column
_MARKER_FORMS = pa.array(sorted({f for m in MISSING_MARKERS for f in _case_forms(m)}),
                         pa.string())


def _arrow(col):
    """A column of cells as Arrow strings (a list of str, e.g. the shipped Adult's,
    is converted)."""
    if isinstance(col, (pa.Array, pa.ChunkedArray)):
        return col
    return pa.array(col if isinstance(col, list) else list(col), pa.string())


def _np(arr):
    return arr.to_numpy(zero_copy_only=False)


def _markers(s):
    """bool array: the cell is a missing marker (compared case-insensitively)."""
    return _np(pc.is_in(s, value_set=_MARKER_FORMS))


def _numbers(s):
    """(bool array: the cell is a finite number, float array of those numbers)."""
    match = pc.match_substring_regex(s, _NUMBER)
    values = _np(pc.cast(pc.if_else(match, s, pa.scalar(None, pa.string())), pa.float64()))
    return np.isfinite(values), values


def distinct_values(col):
    """The distinct cells of a column, as a list of str."""
    return pc.unique(_arrow(col)).to_pylist()


def _first_unparsable(s):
    """Index of the first cell Arrow's cast to float64 refuses (there is one): bisection,
    each cast over a slice."""
    lo, hi = 0, len(s)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(s.slice(lo, mid - lo), pa.float64())
            lo = mid
        except (pa.ArrowInvalid, ValueError):
            hi = mid
    return lo


def _parse_numbers(s, finite=True):
    """(floats, NaN for a missing cell; index of the first cell that is neither a finite
    number nor a missing marker, or None; with finite=False +-inf are numbers). The
    common case is one cast of the column; markers are looked up only when the cast
    refuses a cell or gives NaN."""
    miss, end = None, None
    try:
        v = pc.cast(s, pa.float64())
    except (pa.ArrowInvalid, ValueError):
        miss = _markers(s)
        cells = pc.if_else(pa.array(miss), pa.scalar(None, pa.string()), s) if miss.any() else s
        try:
            v = pc.cast(cells, pa.float64())
        except (pa.ArrowInvalid, ValueError):
            end = _first_unparsable(cells)
            v = pc.cast(cells.slice(0, end), pa.float64())
    v = _np(v)
    odd = np.flatnonzero(~np.isfinite(v) if finite else np.isnan(v))
    if odd.size:     # NaN from a marker (or a null for one); anything else is an error
        listed = miss[odd] if miss is not None else _markers(s.take(pa.array(odd)))
        if not listed.all():
            return v, int(odd[np.argmin(listed)])
    return v, end


def numeric_cells(table, c, finite=True):
    """Column c as floats, NaN for a missing cell (a float column as it is); with
    finite=False +-inf are numbers. Returns (floats, index of the first cell that is
    not a number nor a missing marker, or None)."""
    col = table.columns[c]
    if isinstance(col, np.ndarray) and col.dtype.kind == "f":
        return col, None
    return _parse_numbers(_arrow(col), finite)


def _numeric_column(table, c):
    """Column c as floats (read-only when Arrow's buffer is used as it is), NaN for a
    missing cell; any other non-number is an error."""
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
        s = _arrow(col)
        out, i = _parse_numbers(s)
        if i is not None:
            raise CLIError(f"{table.name}: non-numeric value {s[i].as_py()!r} in numeric column "
                           f"{c!r} ({table.where(i)})")
    table._parsed[("num", c)] = out
    return out


def _codes_in(s, values):
    """(index of each cell in `values`, -1 where it is not; where it is not, whether the
    cell is a missing marker)."""
    codes = _np(pc.fill_null(pc.index_in(s, value_set=pa.array(list(values), pa.string())),
                             -1)).astype(np.intp)
    out = np.flatnonzero(codes == -1)
    marker = _markers(s.take(pa.array(out))) if out.size else np.zeros(0, dtype=bool)
    return codes, out, marker


def _category_column(table, c, categories):
    """Column c as dperm.schema.CategoryCodes: the index of each cell in the list, -1 for
    a cell outside it, -2 for a missing one (a missing marker that is not a category)."""
    key = ("cat", c, tuple(categories))
    s = _arrow(table.columns[c])
    if key not in table._parsed:
        codes, out, marker = _codes_in(s, categories)
        codes[out[marker]] = -2
        table._parsed[key] = codes
    return CategoryCodes(table._parsed[key], categories, lambda i: s[int(i)].as_py())


def _check_columns(table, schema):
    missing = [c for c in schema.columns if c not in table.columns]
    if missing:
        raise CLIError(f"{table.name}: column(s) {missing} of the schema are missing "
                       f"(the file has: {', '.join(table.header)}){header_hint(table.header)}")


def _cells(table, schema):
    """The values of the schema's columns, as PublicSchema.encode reads them."""
    _check_columns(table, schema)
    values = {c: _numeric_column(table, c) for c in schema.numeric}
    values.update({c: _category_column(table, c, cats) for c, cats in schema.categorical.items()})
    return values


def _label_missing(table, label, classes):
    y = _arrow(resolve_label(table, label))
    miss = np.zeros(len(y), dtype=bool)
    if not classes:
        return _markers(y)
    codes, out, marker = _codes_in(y, [str(v) for v in classes])
    table._parsed[_label_key(label, classes)] = codes     # label_codes reuses them
    miss[out[marker]] = True
    return miss


def _label_key(label, classes):
    return ("label", label, tuple(str(v) for v in classes))


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
    outside it is an error with unknown="error", the default of fit and predict,
    or an all-zero group with unknown="zero", `dperm predict --unknown zero`); each row is
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


def encode_rows_with_constant(table, schema, scale, out=None):
    """Dense rows [x, 1] * scale for the public encoding x of each row (encode_rows'
    dense X with a column of ones appended, times scale: the same bits), written into
    one array by :meth:`dperm.schema.PublicSchema.encode_with_constant`."""
    values = _cells(table, schema)
    try:
        return schema.encode_with_constant(values, scale=scale, describe_row=table.where,
                                           out=out)
    except ValueError as exc:
        raise CLIError(f"{table.name}: {exc}") from None


def resolve_label(table, label):
    if label not in table.columns:
        raise CLIError(f"{table.name}: label column {label!r} not found (the file has: "
                       f"{', '.join(table.header)}){header_hint(table.header)}")
    return table.columns[label]


def encode_labels(table, label, classes):
    """Labels as an array of str; every one must be in `classes`."""
    y = _arrow(resolve_label(table, label))
    label_codes(table, label, classes)
    return _np(y).astype(str)


def label_codes(table, label, classes):
    """Labels as int8: k for classes[k] (two classes: 0 negative, 1 positive); every
    label must be one of the classes (an error names the first row that is not)."""
    y = _arrow(resolve_label(table, label))
    if len(classes) > 127:
        raise CLIError(f"label column {label!r}: {len(classes)} classes; at most 127 are "
                       "supported")
    codes = table._parsed.get(_label_key(label, classes))
    if codes is not None:       # matched by missing_masks: not matched again
        bad = np.flatnonzero(codes < 0)
        if not bad.size:
            return codes.astype(np.int8)
        i = int(bad[0])
    else:
        k = pc.index_in(y, value_set=pa.array([str(c) for c in classes], pa.string()))
        i = int(np.flatnonzero(_np(pc.is_null(k)))[0]) if k.null_count else None
    if i is not None:
        v = y[i].as_py()
        what = "missing label" if v == "" else f"label {v!r}"
        raise CLIError(f"{table.name}: {what} in column {label!r} ({table.where(i)}) is not "
                       f"one of the classes {list(classes)}")
    return _np(k).astype(np.int8)


# ----------------------------------------------------------------------------- model JSON
# The model format belongs to the library (dperm.model_io: save_model / load_model);
# the command line reads it through load_model below, which words a bad file as a
# CLIError (exit status 2).


def load_model(path):
    """Read and check a model file for `dperm predict` (dperm.model_io.read_model, with
    categories and classes as text, as CSV cells are read); a bad file is a CLIError.
    A model saved without a schema (format version 4) is refused: its rows are not CSV
    cells a schema encodes."""
    try:
        obj = read_model(path, categories_as_text=True)
    except ModelFormatError as exc:
        raise CLIError(str(exc)) from None
    if obj["format_version"] == MODEL_FORMAT_VERSION_RAW:
        raise CLIError(f"model {path}: saved from an estimator without a schema (format "
                       f"version {MODEL_FORMAT_VERSION_RAW}): dperm predict encodes CSV cells "
                       "with a schema; predict in Python with dperm.load_model, or save a "
                       "Pipeline(PublicBoundsTransformer, estimator)")
    return obj
