"""The command line's CSV reading: parse, missing-value masks and encoding against the
fit, and a ~1 GB CSV streamed against pyarrow's own reader (BENCHMARKS.md, "CSV reading
on the command line").

    python benchmarks/csv_read.py                  # 250,000 rows (~7 MB) and ~1 GB
    python benchmarks/csv_read.py --big-gb 0       # the 250,000-row part only
    python benchmarks/csv_read.py --before --write # and the encoding as before, side by side,
                                                   # and the pass writing the binary
    git show main:dperm/cli/_io.py > /tmp/old_io.py
    python benchmarks/csv_read.py --old-io /tmp/old_io.py [--old-big]

The table is census-shaped: Adult rows (the copy shipped in dperm/datasets/data) drawn
with replacement, columns age, workclass (with Adult's "?" cells: missing, filled by the
schema), education_num, sex, hours_per_week and the label income; the schema gives
public bounds, categories and classes. Both files are written to a temporary directory
and deleted at the end.

Every timing is wall time (time.perf_counter), the best of --reps runs (the 1 GB reads:
one run each), with the CPU time of the process (time.process_time, all threads) beside
it. pyarrow runs with its defaults (use_threads=True), as dperm's reader does.
--old-io FILE times another version of dperm/cli/_io.py (the one on main before the
pyarrow reader) on the same files, imported beside the installed dperm.
"""
import argparse
import importlib.util
import json
import lzma
import os
import pathlib
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

import dperm
from dperm.cli import _io
from dperm.cli import fit as cli_fit
from dperm.cli._stream import (
    SPARSE_DENSITY,
    DesignWriter,
    chunk_rows,
    design_rows,
    encoded_design_rows,
    parse_size,
)

COLUMNS = ("age", "workclass", "education_num", "sex", "hours_per_week", "income")
ADULT_FIELDS = (0, 1, 4, 9, 12, 14)   # their places in a line of adult.data
SCHEMA = {
    "numeric": {"age": [17, 90], "education_num": [1, 16], "hours_per_week": [1, 99]},
    "categorical": {"workclass": ["Federal-gov", "Local-gov", "Never-worked", "Private",
                                  "Self-emp-inc", "Self-emp-not-inc", "State-gov",
                                  "Without-pay"],
                    "sex": ["Female", "Male"]},
    "fill": {"workclass": "Private"},
    "label": {"column": "income", "classes": ["<=50K", ">50K"]},
}


def adult_lines(n, seed=0):
    """n CSV lines of the census table, Adult rows drawn with replacement."""
    path = pathlib.Path(dperm.__file__).parent / "datasets" / "data" / "adult.data.xz"
    rows = []
    with lzma.open(path, "rt") as fh:
        for line in fh:
            f = [v.strip() for v in line.split(",")]
            if len(f) >= 15:
                rows.append(",".join(f[j] for j in ADULT_FIELDS) + "\n")
    idx = np.random.default_rng(seed).integers(0, len(rows), n)
    return [rows[i] for i in idx]


def clock(fn, reps=1):
    """(best wall seconds, CPU seconds of that run, result)."""
    best = None
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        if best is None or w < best[0]:
            best = (w, c, out)
    return best


def load_io(path):
    spec = importlib.util.spec_from_file_location("dperm_old_io", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not hasattr(mod, "distinct_values"):   # fit.py imports it (it was set(column))
        mod.distinct_values = lambda col: list(set(col))
    return mod


def layout_of(schema):
    """The layout `dperm fit --sparse auto` picks for the schema."""
    return "csr" if schema.categorical and schema.density < SPARSE_DENSITY else "dense"


def in_memory(io, path, schema, reps):
    """Seconds (wall, cpu) of each stage of `dperm fit` before the fit, read in memory."""
    label, classes = "income", schema.classes
    sparse = layout_of(schema) == "csr"
    stages = {}
    w, c, table = clock(lambda: io.read_csv(path), reps)
    stages["read"] = (w, c)
    w, c, (table, _) = clock(lambda: io.apply_missing(table, schema, label, classes), reps)
    stages["missing values"] = (w, c)
    w, c, (X, _) = clock(lambda: io.encode_rows(table, schema, sparse=sparse), reps)
    stages["encode"] = (w, c)
    w, c, y = clock(lambda: io.label_codes(table, label, classes), reps)
    stages["labels"] = (w, c)
    return stages, X, y


def whole_fit(io, path, schema_path, out, reps, extra=()):
    """`dperm fit` in process, reading with `io` (put in sys.modules for the command's
    imports): (total wall, total cpu, fit wall, fit cpu) of the best run; the fit is
    _fit_and_write (the solver, the noise, writing the model)."""
    spent = []
    inner = cli_fit._fit_and_write
    sys.modules["dperm.cli._io"] = io

    def timed_fit(*a, **k):
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            return inner(*a, **k)
        finally:
            spent.append((time.perf_counter() - w0, time.process_time() - c0))

    cli_fit._fit_and_write = timed_fit
    devnull = open(os.devnull, "w")
    best = None
    try:
        for _ in range(reps):
            spent.clear()
            stdout, stderr = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = devnull
            try:
                w0, c0 = time.perf_counter(), time.process_time()
                code = dperm.cli.main(["fit", path, "--schema", schema_path, "--epsilon", "1",
                                       "--seed", "0", "-o", out, *extra])
                w, c = time.perf_counter() - w0, time.process_time() - c0
            finally:
                sys.stdout, sys.stderr = stdout, stderr
            assert code == 0, code
            if best is None or w < best[0]:
                best = (w, c) + spent[0]
    finally:
        cli_fit._fit_and_write = inner
        sys.modules["dperm.cli._io"] = _io
        devnull.close()
    return best


def streamed(io, path, schema, rows, level, write_to=None):
    """One pass of the streamed fit's per-chunk work, no binary written: level 0 the
    reader's chunks; 1 and the missing values (numbers parsed, categories and labels
    matched against the schema: typed columns); 2 and the encoding, the labels and the
    design rows (intercept, norm clip), all of _stream_rows but the write; 3 as 2 with
    the encoding as before the one-array rows (encode_rows, then design_rows). With
    write_to (a directory): level 2 and the rows and labels appended to a binary there
    (DesignWriter, as _stream_rows), which is deleted afterwards."""
    label, classes = "income", schema.classes
    sparse = layout_of(schema) == "csr"
    n, buf = 0, np.empty((rows, schema.n_features + 1))   # as _stream_rows reuses it
    writer = None
    if write_to is not None:
        os.makedirs(write_to)
        writer = DesignWriter(write_to, "csr" if sparse else "dense", "float64",
                              schema.n_features + 1)
    with io.CSVReader(path) as reader:
        for table in reader.chunks(rows, usecols=set(schema.columns) | {label}):
            if level >= 1:
                masks = io.missing_masks(table, schema, label, classes)
                assert not masks, sorted(masks)
            if level == 3 or level >= 2 and not hasattr(io, "encode_rows_with_constant"):
                # as before the one-array rows: the encoding, its augmented copy, the
                # norm checks of both (and, in an old _io, the labels matched again)
                if hasattr(io, "_label_key"):     # the labels matched again, as before
                    table._parsed.pop(io._label_key(label, classes), None)
                X, _ = io.encode_rows(table, schema, sparse=sparse)
                io.label_codes(table, label, classes)
                design_rows(X, True, "float64")
            elif level >= 2:
                Xa = encoded_design_rows(table, schema, True, "float64", sparse=sparse,
                                         out=None if sparse else buf)
                y = io.label_codes(table, label, classes)
                if writer is not None:
                    writer.append(Xa, y)
            n += table.n_rows
    if writer is not None:
        writer.finish({})
        shutil.rmtree(write_to)
    return n


def pyarrow_read(path, strings=False):
    convert = (pacsv.ConvertOptions(column_types=dict.fromkeys(COLUMNS, pa.string()))
               if strings else None)
    return sum(b.num_rows for b in pacsv.open_csv(path, convert_options=convert))


def row(label, w, c, ref=None):
    ratio = "" if ref is None else f"{w / ref:.2f}"
    print(f"| {label} | {w:.3f} | {c:.3f} | {ratio} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=250_000)
    ap.add_argument("--big-gb", type=float, default=1.0, help="size of the streamed file (0: skip)")
    ap.add_argument("--budget", default="256M", help="--memory-budget of the streamed pass")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--old-io", help="another dperm/cli/_io.py to time beside this one")
    ap.add_argument("--before", action="store_true",
                    help="also the streamed pass's encoding as before the one-array rows "
                         "(encode_rows, then design_rows)")
    ap.add_argument("--write", action="store_true",
                    help="also the streamed pass with the binary written (in the temporary "
                         "directory, deleted after)")
    ap.add_argument("--old-big", action="store_true", help="stream the big file with it too")
    args = ap.parse_args()
    ios = {"dperm": _io}
    if args.old_io:
        ios["old _io"] = load_io(args.old_io)
    print(f"dperm {dperm.__version__}, pyarrow {pa.__version__}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="dperm-csv-") as tmp:
        small = os.path.join(tmp, "census.csv")
        lines = adult_lines(args.rows)
        with open(small, "w") as fh:
            fh.write(",".join(COLUMNS) + "\n")
            fh.writelines(lines)
        schema_path = os.path.join(tmp, "schema.json")
        with open(schema_path, "w") as fh:
            json.dump(SCHEMA, fh)
        schema = _io.load_schema(schema_path)
        size = os.path.getsize(small)
        print(f"\n{args.rows} rows, {size / 1e6:.1f} MB, layout {layout_of(schema)}; "
              f"best of {args.reps}\n")
        print("| stage | wall s | cpu s | ratio |\n|---|---:|---:|---:|")
        w, c, _ = clock(lambda: pacsv.read_csv(small), args.reps)
        row("pyarrow.csv.read_csv (reference)", w, c)
        results = {}
        for name, io in ios.items():
            stages, X, y = in_memory(io, small, schema, args.reps)
            results[name] = (X, y)
            for stage, (w, c) in stages.items():
                row(f"{name}: {stage}", w, c)
            total = [sum(v[k] for v in stages.values()) for k in (0, 1)]
            row(f"{name}: read + missing values + encode + labels", *total)
        for name, (X, y) in results.items():
            ref_X, ref_y = results["dperm"]
            same = (abs(X - ref_X).max() == 0 if name != "dperm" else True) and \
                np.array_equal(y, ref_y)
            assert same, f"{name} encodes differently"
        for name, io in ios.items():
            for extra in ((), ("--alpha", "1e-4")):
                tw, tc, fw, fc = whole_fit(io, small, schema_path, os.path.join(tmp, "m.json"),
                                           args.reps, extra)
                opts = " ".join(extra) or "--alpha auto"
                row(f"{name}: dperm fit {opts}: the fit (_fit_and_write)", fw, fc)
                row(f"{name}: dperm fit {opts}: everything else", tw - fw, tc - fc)
                row(f"{name}: dperm fit {opts}: whole command", tw, tc)
        if args.big_gb <= 0:
            return
        big = os.path.join(tmp, "big.csv")
        copies = max(1, round(args.big_gb * 1e9 / (size - len(",".join(COLUMNS)) - 1)))
        body = "".join(lines)
        with open(big, "w") as fh:
            fh.write(",".join(COLUMNS) + "\n")
            for _ in range(copies):
                fh.write(body)
        del body
        budget = parse_size(args.budget)
        rows, per_row = chunk_rows(budget, schema, layout_of(schema), "float64", True)
        print(f"\n{copies * args.rows} rows, {os.path.getsize(big) / 1e9:.2f} GB; chunks of "
              f"{rows} rows (--memory-budget {args.budget}); one run each; ratio to "
              "pyarrow.csv.open_csv\n")
        print("| pass | wall s | cpu s | ratio |\n|---|---:|---:|---:|")
        w0, c0, n = clock(lambda: pyarrow_read(big))
        row("pyarrow.csv.open_csv, types inferred (reference)", w0, c0, w0)
        w, c, n2 = clock(lambda: pyarrow_read(big, strings=True))
        row("pyarrow.csv.open_csv, every column as text", w, c, w0)
        for name, io in ios.items():
            if name != "dperm" and not args.old_big:
                continue
            w, c, n3 = clock(lambda: streamed(io, big, schema, rows, 0))
            row(f"{name}: CSVReader.chunks (cells as text)", w, c, w0)
            assert n3 == n == n2 == copies * args.rows
            w, c, _ = clock(lambda: streamed(io, big, schema, rows, 1))
            row(f"{name}: + missing values (typed columns)", w, c, w0)
            w, c, _ = clock(lambda: streamed(io, big, schema, rows, 2))
            row(f"{name}: + encode, labels, design rows", w, c, w0)
            if name == "dperm" and args.write:
                w, c, _ = clock(lambda: streamed(io, big, schema, rows, 2,
                                                 os.path.join(tmp, "binary")))
                row(f"{name}: + the binary written (DesignWriter)", w, c, w0)
            if name == "dperm" and args.before:
                w, c, _ = clock(lambda: streamed(io, big, schema, rows, 3))
                row(f"{name}: + encode, labels, design rows as before", w, c, w0)
                w, c, _ = clock(lambda: pyarrow_read(big))
                row("pyarrow.csv.open_csv, types inferred (again)", w, c, w0)
        os.remove(big)


if __name__ == "__main__":
    main()
