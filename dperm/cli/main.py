"""The `dperm` command line (also `python -m dperm`).

    dperm fit [DATA.csv] --label COLUMN [--schema SCHEMA.json] [--missing error|drop]
              [--delimiter CHAR] [--sparse auto|yes|no] -o MODEL.json
    dperm fit DATA.csv --schema SCHEMA.json --memory-budget SIZE [--work-dir DIR |
              --keep-binary DIR] -o MODEL.json          (streamed: larger than memory)
    dperm fit --from-binary DIR -o MODEL.json
    dperm predict MODEL.json DATA.csv [--delimiter CHAR] [-o OUT.csv]
    dperm reproduce {table1,figure2,table2,figure3,tuning} [--quick] [--out DIR]
    dperm info

Errors in the user's files are reported as one line on stderr with exit status 2.
"""
import argparse
import importlib.util
import inspect
import math
import os
import sys
import time
import warnings

__all__ = ["main", "build_parser"]

EXIT_USAGE = 2

SCHEMA_HELP = """\
schema file (--schema SCHEMA.json): PUBLIC preprocessing, fixed before looking at the data
  {
    "numeric":     {"age": [17, 90], "hours": [0, 99]},
    "categorical": {"color": ["red", "green", "blue"]},
    "label":       {"column": "y", "classes": ["no", "yes"]},
    "fill":        {"hours": 40, "color": "red"}
  }
  numeric      column -> [low, high] (a single number H means [0, H]); values are
               clipped to [low, high] and mapped to [0, 1] by (v - low) / (high - low)
  categorical  column -> list of categories; one-hot encoded in that order. When
               fitting, a value not in the list is an error; when predicting it gives
               an all-zero group for that column
  label        the label column and its two classes [negative, positive] (--label
               and --positive override), or all K > 2 classes it may hold (a K-class
               model: one score per class); labels and categories are compared as text
  fill         optional: column -> PUBLIC value used for a missing cell of that
               column (a number for a numeric column, one of the listed categories
               for a categorical one), when fitting and when predicting
  Each row is then divided by sqrt(#numeric + #categorical), so every row has norm
  <= 1 (the public bound R = 1 of the privacy proofs); with the intercept (default)
  a constant feature is added and rows rescaled by the library. Columns of the CSV
  not named in the schema are ignored.

  Missing values: a blank cell, or one of NA, N/A, NaN, null, None, ?, #N/A (any
  case; in a categorical column only when the schema does not list it as a
  category). A column with a "fill" value takes it; otherwise --missing decides:
  error (default) stops at the first row with a missing value in a used column
  (the features and the label), naming the row and the column; drop removes
  those rows and prints how many (on stderr: a count about the private data, for
  the analyst). In a numeric column any other cell that is not a number is an
  error naming the cell.

  --delimiter CHAR  the field separator of DATA.csv and --holdout (default ","; e.g.
  ";" or "|", or "tab"). A header row read as one column that contains ";", a tab
  or "|" is reported with the delimiter to use.

  Without --schema, the bounds ([min, max] of each numeric column: one in which most
  non-missing cells are numbers), the category lists (distinct non-missing values of
  every other column) and the label set are READ FROM THE
  DATA: that leaks information outside the privacy guarantee, so a PrivacyLeakWarning
  is printed and the model records "schema_from_data": true. Use --save-schema to get
  a starting point, then replace what it read from the data by public knowledge.

  Without DATA.csv, `dperm fit` trains on the UCI Adult data shipped with dperm
  (label "income", classes ["<=50K", ">50K"], public bounds and categories).

streaming (a CSV larger than memory): --memory-budget SIZE reads DATA.csv in chunks
  of rows, the chunk size chosen from SIZE, the schema and the header alone (a
  note prints it), encodes each chunk with the public schema (no statistic of
  the data is read: --schema with the classes is required) and appends it to an
  on-disk binary: X.npy (dense) or data/indices/indptr.npy (CSR, --sparse), y.npy
  and a manifest design.json, in a temporary directory (--work-dir DIR: under
  DIR) deleted after the fit, or in --keep-binary DIR, kept. The solver then
  reads the binary through a memory map, in place. The model is the one the
  in-memory fit writes with the same options and --seed. Errors are the
  in-memory ones (naming the row and line of the file); a failure writes no
  model and removes the unfinished binary. --from-binary DIR fits again from a
  kept binary (other --epsilon, --alpha, --loss, ...). The binary holds the
  rows the solver reads: the encoding, with the intercept the constant column
  and the 1/sqrt(2) scaling. Besides the chunk, the fit itself needs a few
  float64 vectors of length n.

model file (-o MODEL.json): plain JSON, no pickle: "format", "format_version" (2;
  `dperm predict` also reads version 1 files), "dperm_version", "estimator" (loss,
  perturbation, epsilon, delta, neighbouring, n_public, alpha, h, fit_intercept),
  "classes" ([negative, positive] for two classes; the K labels otherwise), "label",
  "feature_names", "coef", "intercept" (two classes: a list of d numbers and a number,
  score = x.coef + intercept on the encoded row x, the prediction is the positive class
  iff score > 0; K > 2 classes: K lists of d numbers and K numbers, one score per class,
  the prediction is the class with the largest score), "schema" (the full schema, in
  the format above), "preprocessing" (how it is applied), "schema_from_data",
  "read_from_data", "privacy" (public values only: mechanism, noise ("l2_laplace" or
  "gaussian"), neighbouring, epsilon, delta (the (epsilon, delta) parameter, 0 for
  pure), epsilon', extra_l2 (the paper's extra regularizer Delta), beta, sigma,
  sigma_output, grid, Lambda, curvature, R, n (the normalising count), n_classes,
  multiclass, epsilon_total, delta_total; null where it does not apply), "training"
  (data file name, n, d).
  Nothing data-dependent besides the noisy coefficients is written: no seed, no
  timing, no solver diagnostics (those are printed for the analyst only).

privacy options: --epsilon and --delta give the guarantee ((epsilon, delta)-DP;
  --delta 0, the default, is pure epsilon-DP with the paper's Laplace-type noise,
  --delta > 0 uses Gaussian noise). --neighbouring replace_one (default) protects
  one row against being replaced; add_remove against being added or removed, with
  the objective normalised by --n-public N (a public count). --perturbation amp
  needs --delta > 0. With K > 2 classes: the logistic loss with --delta > 0 fits one
  multinomial (softmax) model with the whole epsilon and delta; otherwise K
  one-vs-rest models, each with epsilon/K and delta/K (their total is the guarantee).
"""

PREDICT_HELP = """\
Applies the model's stored preprocessing to DATA.csv (a header row is required; a
label column, if present, is ignored) and writes one output row per input row:
  prediction   the predicted class
  score        x.coef + intercept (positive means the positive class)
  probability  the probability of the positive class (logistic loss only)
A model of K > 2 classes writes prediction (the class with the largest score), then
score:CLASS for each class and, for the logistic loss, probability:CLASS (softmax of
the scores for a multinomial model; the one-vs-rest sigmoids normalised to sum to 1).
A category not in the model's list gives an all-zero group for that column (it is
not an error); numeric values are clipped to the stored [low, high]. A missing cell
(blank, NA, NaN, ?, ...) takes the schema's "fill" value for its column; without one
it is an error naming the row and the column (rows are never dropped: there is one
output row per input row). --delimiter CHAR reads a file separated by CHAR.
"""


# ----------------------------------------------------------------------------- output
def _err(msg):
    print(f"dperm: error: {msg}", file=sys.stderr)


def _note(msg):
    print(f"dperm: {msg}", file=sys.stderr)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"dperm: {category.__name__}: {message}", file=sys.stderr)


def _fmt(v):
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# ----------------------------------------------------------------------------- info
def _config_line():
    from dperm._config import get_config

    cfg = get_config()
    omp = "on" if cfg["openmp"] else "off"
    return (f"dperm {cfg['version']} (OpenMP {omp}, {cfg['default_n_threads']} thread(s) per fit, "
            f"{cfg['simd']} kernels; "
            f"numpy {cfg['numpy']}, Python {cfg['python']})")


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print the version and build configuration and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_config_line())
        parser.exit()


def cmd_info(args):
    from dperm._config import get_config

    for key, value in get_config().items():
        print(f"{key:>20}: {value}")
    return 0


# ----------------------------------------------------------------------------- reproduce
def cmd_reproduce(args):
    from dperm import experiments

    entry = experiments.REPRODUCTIONS[args.what]
    runner = experiments.get_runner(args.what)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise _UsageError(f"--out {args.out!r} exists and is not a directory")
    kwargs = dict(out=args.out, quick=args.quick, progress=not args.no_progress, seed=args.seed)
    try:
        accepted = inspect.signature(runner).parameters
    except (TypeError, ValueError):
        accepted = {"n_threads": None}
    if args.pima is not None:
        from dperm.datasets._pima import PIMA_ENV

        if not os.path.isfile(args.pima):
            raise _UsageError(f"--pima {args.pima!r} is not a file")
        if args.what not in ("nips2008", "all"):
            _note(f"--pima is not used by `reproduce {args.what}`")
        # the runners (and `all`'s report) read the Pima file from this variable
        os.environ[PIMA_ENV] = os.path.abspath(args.pima)
    if "n_threads" in accepted:
        kwargs["n_threads"] = args.threads
    elif args.threads is not None:
        _note(f"--threads is not used by `reproduce {args.what}`")
    print(f"Reproducing {entry.title} on {entry.dataset} "
          f"({'quick' if args.quick else 'full protocol'}, "
          f"seed {args.seed}); results go to {args.out}/", flush=True)
    t0 = time.perf_counter()
    out = runner(**kwargs)
    wall = time.perf_counter() - t0
    _print_outputs(out)
    print(f"wall time: {wall:.1f} s")
    return 0


def _print_outputs(out):
    """Print what a runner returned: its text (tables with the paper's numbers), else its
    CSV files as tables; then every file it wrote."""
    from dperm.experiments.report import csv_as_text, returned_files, returned_text

    parts = list(out[1:]) if isinstance(out, tuple) else [out]
    texts = [t for t in map(returned_text, parts) if t]
    files = returned_files(parts)
    for t in texts:
        print(t)
    if not texts:
        for f in files:
            if f.endswith(".csv") and csv_as_text(f, max_rows=60):
                print(csv_as_text(f, max_rows=60))
    for f in files:
        print(f"{'plot' if f.endswith('.png') else 'CSV' if f.endswith('.csv') else 'file'}: {f}")
    if not any(f.endswith(".png") for f in files) and not texts:
        if importlib.util.find_spec("matplotlib") is None:
            print("plot: not written (matplotlib is not installed; pip install 'dperm[plot]' "
                  "or pip install matplotlib)")
        else:
            print("plot: not written")


def _reproduce_help(reproductions):
    """The `dperm reproduce --help` list: one entry per registered experiment, with the
    first paragraph of its runner's docstring (what the full protocol and --quick do)."""
    import textwrap

    lines = ["experiments:"]
    for name, entry in reproductions.items():
        doc = inspect.getdoc(entry.run) or ""
        first = " ".join(doc.split("\n\n")[0].split())  # the first paragraph, one line
        text = f"{entry.title} on {entry.dataset}." + (f" {first}" if first else "")
        lines += textwrap.wrap(text, 78, initial_indent=f"  {name:<9} ",
                               subsequent_indent=" " * 12)
    lines += textwrap.wrap("--quick runs are seeded (--seed) and small (from seconds to about "
                           "two minutes each on 2 cores): they check the pipeline; their "
                           "numbers are noisy, not the paper's protocol.", 78)
    return "\n".join(lines)


# ----------------------------------------------------------------------------- fit
class _UsageError(Exception):
    """Bad combination of options (exit status 2)."""


def _adult_table():
    """The shipped Adult rows as a Table, with its public schema."""
    import numpy as np

    from dperm.cli._io import Table
    from dperm.datasets import (
        ADULT_COLUMNS,
        ADULT_NUMERIC_COLUMNS,
        ADULT_PUBLIC_BOUNDS,
        ADULT_PUBLIC_CATEGORIES,
        load_adult,
    )
    from dperm.schema import PublicSchema

    bunch = load_adult(preprocess="public", return_frame=True)
    frame = bunch.frame
    columns = {}
    for c in ADULT_COLUMNS:
        if c in ADULT_NUMERIC_COLUMNS:
            columns[c] = np.ascontiguousarray(frame[c], dtype=np.float64)
        else:
            columns[c] = [str(v) for v in frame[c]]
    columns["income"] = [">50K" if v > 0 else "<=50K" for v in frame["income"]]
    table = Table("Adult (shipped with dperm)", list(ADULT_COLUMNS) + ["income"], columns,
                  len(frame))
    schema = PublicSchema(
        numeric={c: (0.0, float(ADULT_PUBLIC_BOUNDS[c])) for c in ADULT_NUMERIC_COLUMNS},
        categorical={c: list(v) for c, v in ADULT_PUBLIC_CATEGORIES.items()},
        label="income", classes=["<=50K", ">50K"])
    return table, schema


def _resolve_classes(args, table, label, schema, leaks):
    """The classes as strings ([negative, positive] for two), from the schema or (with
    a warning) the data."""
    from dperm.cli._io import CLIError, resolve_label

    classes = schema.classes
    pos = args.positive
    if classes is None:
        values = sorted(set(resolve_label(table, label)))
        if len(values) < 2:
            raise CLIError(f"{table.name}: the label column {label!r} must hold at least two "
                           f"classes, found {len(values)}: {values}")
        leaks.append("classes")
        classes = values
        if pos is None and len(values) == 2:
            _note(f"positive class: {classes[1]!r}, the larger of the two labels in sort order "
                  "(no schema lists them): pass --positive LABEL, or give the schema "
                  "label.classes as [negative, positive]")
    return _positive_last(classes, pos)


def _positive_last(classes, pos):
    """--positive: the class put last (two classes only)."""
    from dperm.cli._io import CLIError

    classes = list(classes)
    if pos is not None:
        if len(classes) > 2:
            raise CLIError(f"--positive is for two classes; the label has {len(classes)} "
                           f"({classes}): a K-class model scores every class")
        if pos not in classes:
            raise CLIError(f"--positive {pos!r} is not one of the classes {classes}")
        classes = [c for c in classes if c != pos] + [pos]
    return classes


def _check_output(args):
    from dperm.cli._io import CLIError

    if args.output is None:
        raise _UsageError("fit: -o/--output MODEL.json is required (where to write the model)")
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise CLIError(f"cannot write the model to {args.output!r}: directory {out_dir!r} "
                       "does not exist")


def _resolve_label(args, schema, header, name):
    """The label column: --label and the schema's must agree; it must be in the file."""
    from dperm.cli._io import CLIError

    label = args.label
    if schema is not None and schema.label is not None:
        if label is not None and label != schema.label:
            raise CLIError(f"--label {label!r} differs from the schema's label column "
                           f"{schema.label!r}")
        label = schema.label
    if label is None:
        raise _UsageError("fit: --label COLUMN is required (or give label.column in the schema)")
    if label not in header:
        raise CLIError(f"{name}: label column {label!r} not found (the file has: "
                       f"{', '.join(header)})")
    return label


def _check_schema_columns(args, schema, label, header):
    from dperm.cli._io import CLIError

    if label in schema.columns:
        raise CLIError(f"the label column {label!r} is also a feature in the schema")
    ignored = [c for c in header if c != label and c not in schema.columns]
    if ignored and args.data is not None:
        _note(f"ignoring column(s) not in the schema: {', '.join(ignored)}")


def _layout(args, schema):
    """'csr' or 'dense' for --sparse auto|yes|no: auto is CSR when the schema has
    categorical columns and a row has at most SPARSE_DENSITY non-zeros (public:
    decided by the schema alone)."""
    from dperm.cli._stream import SPARSE_DENSITY

    choice = args.sparse or "auto"
    if choice == "auto":
        return "csr" if schema.categorical and schema.density < SPARSE_DENSITY else "dense"
    return "csr" if choice == "yes" else "dense"


def _check_privacy_args(args):
    """Combinations of --perturbation, --delta, --neighbouring and --n-public, checked
    before any data is read."""
    if args.perturbation == "amp" and args.delta == 0:
        raise _UsageError("--perturbation amp is an (epsilon, delta) mechanism: give --delta "
                          "> 0 (e.g. 1e-6, well below 1/n)")
    if args.n_public is not None and args.neighbouring != "add_remove":
        raise _UsageError("--n-public is only used with --neighbouring add_remove (under "
                          "replace_one the row count n is public and used as it is)")
    if args.perturbation == "none" and args.delta > 0:
        _note("--delta is not used by --perturbation none (no noise, no privacy)")


def _streaming(args):
    return any(v is not None for v in (args.memory_budget, args.work_dir, args.keep_binary))


def cmd_fit(args):
    from dperm.cli._io import (
        CLIError,
        encode_rows,
        infer_schema,
        label_codes,
        load_schema,
        model_to_json,
        read_csv,
        schema_to_json,
    )
    from dperm.cli._stream import design_rows
    from dperm.exceptions import PrivacyLeakWarning

    _check_output(args)
    _check_privacy_args(args)
    if args.from_binary is not None:
        return _fit_from_binary(args)
    if _streaming(args):
        return _fit_streamed(args)
    leaks = []
    if args.data is None:
        table, schema = _adult_table()
        if args.label not in (None, "income"):
            raise CLIError(f"the shipped Adult data has the label column 'income', not {args.label!r}")
        if args.schema is not None:
            schema = load_schema(args.schema)
            if schema.label is None:
                schema = schema.replace(label="income")
        source = "adult"
    else:
        table = read_csv(args.data, delimiter=args.delimiter)
        schema = load_schema(args.schema) if args.schema is not None else None
        source = os.path.basename(args.data)
    label = _resolve_label(args, schema, table.columns, table.name)
    if schema is None:
        schema = infer_schema(table, label)
        leaks += ["numeric bounds", "categories"]
    else:
        _check_schema_columns(args, schema, label, table.header)
    table = _missing_rows(table, schema, label, args.missing)
    classes = _resolve_classes(args, table, label, schema, leaks)
    schema = schema.replace(label=label, classes=classes)
    if leaks:
        warnings.warn(
            f"{', '.join(leaks)} were read from the private data (no --schema or an incomplete one): "
            "the released "
            "model is NOT differentially private with respect to them. Give PUBLIC bounds, "
            "categories and classes in a schema file (see dperm fit --help).",
            PrivacyLeakWarning, stacklevel=2)
    if args.save_schema:
        _write_text(args.save_schema, model_to_json(schema_to_json(schema)), "schema")
        _note(f"schema written to {args.save_schema}")
    layout = _layout(args, schema)
    X, names = encode_rows(table, schema, unknown="error", sparse=layout == "csr")
    y = label_codes(table, label, classes)
    if X.shape[0] < 2:
        raise CLIError(f"{table.name}: at least 2 data rows are needed, found {X.shape[0]}")
    shape = X.shape
    Xa = design_rows(X, not args.no_intercept, args.dtype or "float64")
    del X
    return _fit_and_write(args, Xa, y, schema, names, leaks, source, table.name, shape)


def _fit_and_write(args, Xa, y, schema, names, leaks, source, shown_name, shape):
    """Fit on the design rows Xa (intercept column included when fitting one) and int8
    labels y (k = classes[k]; two classes: 1 = the positive class); print the record,
    write the model."""
    import numpy as np

    from dperm._core._build_info import VERSION
    from dperm.cli._io import MODEL_FORMAT, MODEL_FORMAT_VERSION, model_to_json, schema_to_json
    from dperm.exceptions import PrivacyLeakWarning
    from dperm.sklearn.classifier import PrivateLinearClassifier, split_intercept

    classes = list(schema.classes)
    if args.perturbation == "none":
        warnings.warn("--perturbation none fits WITHOUT privacy (a non-private baseline)",
                      PrivacyLeakWarning, stacklevel=2)
    # The rows already carry the intercept's constant column (as the estimator would
    # append it), so the estimator fits them as they are: a memory-mapped binary is read
    # in place instead of copied to append a column.
    K = len(classes)
    delta = args.delta if args.perturbation != "none" else 0.0
    clf = PrivateLinearClassifier(
        loss=args.loss, perturbation=args.perturbation, epsilon=args.epsilon, delta=delta,
        neighbouring=args.neighbouring, n_public=args.n_public, alpha=args.alpha,
        h=args.h, data_norm=1.0, fit_intercept=False, classes=list(range(K)),
        n_threads=args.threads, random_state=args.seed)
    if args.neighbouring == "add_remove" and args.n_public is None \
            and args.perturbation != "none":
        warnings.warn(
            f"--n-public not given: under --neighbouring add_remove the objective is "
            f"normalised by the row count of the data ({shape[0]}), so the guarantee covers "
            "neighbouring data sets of that size only. Give --n-public N (a public count, "
            "e.g. the planned sample size) for the full add/remove guarantee.",
            PrivacyLeakWarning, stacklevel=2)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # the library's own wording of the warning above names its parameter, not the flag
        warnings.filterwarnings("ignore", message="n_public: not given")
        clf.fit(Xa, y)
    seconds = time.perf_counter() - t0
    W = np.asarray(clf.coef_, dtype=np.float64)          # (1, d') for two classes, (K, d')
    if args.no_intercept:
        coef, intercept = W, np.zeros(W.shape[0])
    else:
        coef, intercept = split_intercept(W, 1.0)
    coef = np.asarray(coef, dtype=np.float64).reshape(W.shape[0], -1)
    intercept = np.asarray(intercept, dtype=np.float64).reshape(-1)
    if K == 2:
        coef, intercept = coef[0], float(intercept[0])
    rec = clf.privacy_
    # No accuracy on the training rows is printed: it is a statistic of the private data
    # computed outside the mechanism, so publishing it would not be covered by epsilon.
    # (--holdout reports accuracy on a separate file the user declares public.)
    _print_privacy(rec, shown_name, shape)
    _print_diagnostics(clf.fit_diagnostics_, seconds)
    model = {
        "format": MODEL_FORMAT,
        "format_version": MODEL_FORMAT_VERSION,
        "dperm_version": VERSION,
        "estimator": {"class": "PrivateLinearClassifier", "loss": args.loss,
                      "perturbation": args.perturbation, "epsilon": args.epsilon,
                      "delta": delta, "neighbouring": args.neighbouring,
                      "n_public": args.n_public, "alpha": args.alpha, "h": args.h,
                      "fit_intercept": not args.no_intercept, "data_norm": 1.0},
        "label": schema.label,
        "classes": classes,
        "feature_names": names,
        "coef": coef.tolist(),
        "intercept": intercept if K == 2 else intercept.tolist(),
        "schema": schema_to_json(schema),
        "preprocessing": {
            "numeric": "clip to [low, high], then (v - low) / (high - low), in schema order",
            "categorical": "one-hot in the order of the schema's lists, after the numeric columns",
            "unknown_category": "error when fitting; all-zero group when predicting",
            "row_divisor": schema.row_divisor,
            "row_norm_bound": 1.0,
        },
        "schema_from_data": bool(leaks),
        "read_from_data": leaks,
        "privacy": _public_record(rec),
        # public sizes only: no seed (it regenerates the noise), no wall time (a side
        # channel on the data), no solver diagnostics (they differ between neighbours)
        "training": {"data": source, "n_samples": int(shape[0]), "n_features": int(shape[1])},
    }
    _write_text(args.output, model_to_json(model), "model", atomic=True)
    print(f"model written to {args.output} ({len(names)} features"
          f"{' + intercept' if not args.no_intercept else ''})")
    if args.holdout:
        _report_holdout(args.holdout, schema, coef, intercept, args)
    return 0


# ----------------------------------------------------------------------------- streaming
_STREAM_ONLY = (("memory_budget", "--memory-budget"), ("work_dir", "--work-dir"),
                ("keep_binary", "--keep-binary"))


def _fit_streamed(args):
    """DATA.csv read in chunks (sized by --memory-budget) into an on-disk binary of the
    design rows, then fitted from it in place; the binary is deleted unless kept."""
    from dperm.cli import _stream as st
    from dperm.cli._io import (
        CLIError,
        CSVReader,
        Table,
        _check_columns,
        load_schema,
        model_to_json,
        nothing_left_error,
        schema_to_json,
    )

    opt = next(o for k, o in _STREAM_ONLY if getattr(args, k) is not None)
    if args.data is None:
        raise _UsageError(f"{opt} streams a CSV file: give DATA.csv (the shipped Adult data "
                          "is fitted in memory)")
    if args.schema is None:
        raise CLIError(f"{opt}: streaming needs --schema SCHEMA.json with public bounds, "
                       "categories and classes; reading them from the data would take a pass "
                       "over the private rows outside the privacy guarantee")
    if args.keep_binary is not None and args.work_dir is not None:
        raise _UsageError("give --keep-binary DIR (a binary that stays) or --work-dir DIR (where "
                          "a temporary one goes), not both")
    budget = args.memory_budget or st.DEFAULT_BUDGET
    schema = load_schema(args.schema)
    reader = CSVReader(args.data, delimiter=args.delimiter)
    with reader:
        label = _resolve_label(args, schema, reader.header, reader.path)
        _check_schema_columns(args, schema, label, reader.header)
        _check_columns(Table(reader.path, reader.header, dict.fromkeys(reader.header), 0), schema)
        classes = schema.classes
        if classes is None:
            raise CLIError(f"{opt}: the schema must give the classes (\"label\": "
                           "{\"column\": ..., \"classes\": [negative, positive]}, or every "
                           "label for more than two); a streamed fit never reads them from "
                           "the data")
        classes = _positive_last(classes, args.positive)
        schema = schema.replace(label=label, classes=classes)
        if args.save_schema:
            _write_text(args.save_schema, model_to_json(schema_to_json(schema)), "schema")
            _note(f"schema written to {args.save_schema}")
        layout = _layout(args, schema)
        dtype = args.dtype or "float64"
        intercept = not args.no_intercept
        rows, per_row = st.chunk_rows(budget, schema, layout, dtype, intercept)
        directory, created = _binary_dir(args)
        _note(f"streaming {reader.path} in chunks of {rows} rows (--memory-budget "
              f"{st.format_size(budget)}, about {per_row} bytes a row) into a "
              f"{'CSR' if layout == 'csr' else 'dense'} {dtype} binary in {directory}")
        finished = False
        try:
            with _writing_binary(directory):
                writer = st.DesignWriter(directory, layout, dtype, schema.n_features + intercept)
            try:
                dropped, missing_cols = _stream_rows(reader, writer, rows, schema, layout,
                                                     dtype, intercept, args.missing, directory)
            except BaseException:
                writer.abort()
                raise
            n = writer.n_samples
            if n == 0 and dropped:
                raise nothing_left_error(reader.path, missing_cols)
            if dropped:
                _note_dropped(dropped, n, "training rows", reader.path)
            if n < 2:
                raise CLIError(f"{reader.path}: at least 2 data rows are needed, found {n}")
            with _writing_binary(directory):
                writer.finish({"schema": schema_to_json(schema), "label": label,
                               "classes": classes, "feature_names": schema.feature_names(),
                               "intercept_column": intercept,
                               "source": os.path.basename(args.data), "rows": _BINARY_ROWS})
            finished = True
            Xa, y, _ = st.open_design(directory)
            code = _fit_and_write(args, Xa, y, schema, schema.feature_names(), [],
                                  os.path.basename(args.data), reader.path,
                                  (n, schema.n_features))
            if args.keep_binary is not None:
                _note(f"binary kept in {directory} (it holds the private rows; refit with "
                      f"--from-binary {directory})")
            return code
        except BaseException:
            if args.keep_binary is not None and finished:
                _note(f"the binary in {directory} is complete and kept; fit from it with "
                      f"--from-binary {directory}")
            else:
                st.remove_binary(directory, created)
            raise
        finally:
            if args.keep_binary is None:
                st.remove_binary(directory, created)


def _stream_rows(reader, writer, rows, schema, layout, dtype, intercept, missing, directory):
    """One pass over the CSV in chunks of `rows`: missing values (error or drop), the
    public encoding, the labels, appended to the binary. Returns (rows dropped, the
    columns that had missing values)."""
    import numpy as np

    from dperm.cli import _stream as st
    from dperm.cli._io import encode_rows, label_codes, missing_error, missing_masks

    label, classes = schema.label, schema.classes
    dropped, missing_cols = 0, {}
    for table in reader.chunks(rows, usecols=set(schema.columns) | {label}):
        masks = missing_masks(table, schema, label, classes)
        if masks:
            if missing == "error":
                raise missing_error(table, masks, schema, label)
            drop = np.zeros(table.n_rows, dtype=bool)
            for m in masks.values():
                drop |= m
            missing_cols.update(dict.fromkeys(masks))
            dropped += int(drop.sum())
            table = table.take(np.flatnonzero(~drop))
            if table.n_rows == 0:
                continue
        X, _ = encode_rows(table, schema, unknown="error", sparse=layout == "csr")
        y = label_codes(table, label, classes)
        Xa = st.design_rows(X, intercept, dtype)
        del X
        with _writing_binary(directory):
            writer.append(Xa, y)
        # nothing of this chunk may stay alive while the next one is read
        del table, masks, Xa, y
    return dropped, missing_cols


class _writing_binary:
    """OSError while writing the binary (a full disk, mostly) -> a CLIError naming it."""

    def __init__(self, directory):
        self.directory = directory

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, OSError):
            from dperm.cli._io import CLIError

            raise CLIError(f"cannot write the binary in {self.directory!r}: "
                           f"{exc.strerror or exc} (give --work-dir DIR or --keep-binary DIR "
                           "on a disk with room for it)") from None
        return False


_BINARY_ROWS = ("each row: the schema's public encoding (norm <= 1); with the intercept, "
                "[x, 1] / sqrt(2); held to norm <= 1: the rows the solver reads")


def _binary_dir(args):
    """(directory for the binary, whether this run created it)."""
    import tempfile

    from dperm.cli._io import CLIError

    if args.keep_binary is not None:
        d = args.keep_binary
        if os.path.exists(d):
            if not os.path.isdir(d):
                raise CLIError(f"--keep-binary {d!r} exists and is not a directory")
            if os.listdir(d):
                raise CLIError(f"--keep-binary {d!r} is not empty (give a new or empty "
                               "directory; nothing is overwritten)")
            return d, False
        parent = os.path.dirname(os.path.abspath(d))
        if not os.path.isdir(parent):
            raise CLIError(f"--keep-binary {d!r}: directory {parent!r} does not exist")
        try:
            os.mkdir(d)
        except OSError as exc:
            raise CLIError(f"--keep-binary {d!r}: cannot create it: "
                           f"{exc.strerror or exc}") from None
        return d, True
    base = args.work_dir
    if base is not None and not os.path.isdir(base):
        raise CLIError(f"--work-dir {base!r} is not an existing directory")
    try:
        return tempfile.mkdtemp(prefix="dperm-binary-", dir=base), True
    except OSError as exc:
        raise CLIError(f"cannot create a temporary directory in "
                       f"{base or tempfile.gettempdir()!r}: {exc.strerror or exc}") from None


def _fit_from_binary(args):
    from dperm.cli import _stream as st
    from dperm.cli._io import CLIError, model_to_json, normalize_schema, schema_to_json

    fixed = [o for k, o in (("data", "DATA.csv"), ("schema", "--schema"), ("label", "--label"),
                            ("positive", "--positive"), ("sparse", "--sparse"),
                            ("dtype", "--dtype"), ("memory_budget", "--memory-budget"),
                            ("work_dir", "--work-dir"), ("keep_binary", "--keep-binary"))
             if getattr(args, k) is not None]
    if fixed:
        raise _UsageError(f"--from-binary: {', '.join(fixed)} cannot be given (the data, schema, "
                          "label, classes and layout were fixed when the binary was written)")
    Xa, y, man = st.open_design(args.from_binary)
    where = f"binary {args.from_binary}"
    try:
        schema = normalize_schema(man["schema"], where=f"{where}: schema")
    except CLIError as exc:
        raise CLIError(f"{exc}") from None
    if schema.label is None or schema.classes is None:
        raise CLIError(f"{where}: the schema lacks the label column or its classes")
    if man["feature_names"] != schema.feature_names():
        raise CLIError(f"{where}: feature_names do not match the schema")
    has_intercept = bool(man["intercept_column"])
    if Xa.shape[1] != schema.n_features + has_intercept:
        raise CLIError(f"{where}: {Xa.shape[1]} columns, the schema encodes "
                       f"{schema.n_features}{' + the intercept' if has_intercept else ''}")
    if has_intercept == bool(args.no_intercept):
        raise CLIError(f"{where} was written {'with' if has_intercept else 'without'} the "
                       f"intercept column; {'drop' if has_intercept else 'add'} --no-intercept "
                       "or write the binary again")
    if args.save_schema:
        _write_text(args.save_schema, model_to_json(schema_to_json(schema)), "schema")
        _note(f"schema written to {args.save_schema}")
    return _fit_and_write(args, Xa, y, schema, schema.feature_names(), [], man["source"],
                          where, (Xa.shape[0], schema.n_features))


def _missing_rows(table, schema, label, policy, what="training rows"):
    """--missing: stop at the first missing value, or drop the rows that have one."""
    from dperm.cli._io import apply_missing

    table, dropped = apply_missing(table, schema, label, schema.classes, policy)
    if dropped:
        _note_dropped(dropped, table.n_rows, what, table.name)
    return table


def _note_dropped(dropped, remain, what, name):
    _note(f"--missing drop: dropped {dropped} of {remain + dropped} {what} of "
          f"{name} with a missing value in a used column ({remain} remain; "
          "this count is about the private data: for your eyes, not for publication)")


def _public_record(rec):
    """The privacy record written to the model: the public keys of format version 2 only
    (a key the library might add later is not written until it is known to be public)."""
    from dperm.cli._io import PRIVACY_KEYS

    return {k: rec.get(k) for k in PRIVACY_KEYS}


_NEIGHBOURING_TEXT = {
    "replace_one": "replace_one (one row replaced by another; n public)",
    "add_remove": "add_remove (one row added or removed)",
}


def _print_privacy(rec, source, shape):
    """The guarantee, from the public record only (nothing data-dependent)."""
    mech = rec.get("mechanism")
    title = {"objective": "objective perturbation (Algorithm 2)",
             "output": "output perturbation (Algorithm 1)",
             "amp": "approximate minima perturbation (AMP)",
             "none": "NON-PRIVATE (no noise)"}.get(mech, str(mech))
    print(f"fit on {source}: {title}, {rec.get('loss')} loss, n = {shape[0]} rows, "
          f"d = {shape[1]} features")
    delta = rec.get("delta") or 0.0
    K = rec.get("n_classes") or 2
    split = rec.get("multiclass")
    rows = []
    if mech != "none":
        eps_total = rec.get("epsilon_total", rec.get("epsilon"))
        delta_total = rec.get("delta_total", delta)
        rows += [("epsilon", eps_total),
                 ("delta", f"{_fmt(float(delta_total))} "
                           f"({'pure epsilon-DP' if not delta_total else '(epsilon, delta)-DP'})"),
                 ("neighbouring", _NEIGHBOURING_TEXT.get(rec.get("neighbouring"),
                                                         str(rec.get("neighbouring"))))]
        if rec.get("noise") == "gaussian":
            noise = (f"Gaussian, sigma = {_fmt(rec.get('sigma'))} "
                     + ("(per coordinate of b in the objective's b.f/n)" if mech != "output"
                        else "(per coordinate of the coefficients)"))
        else:
            noise = "Laplace-type (density ~ exp(-beta ||b||))"
        rows.append(("noise", noise))
        if mech == "amp":
            rows.append(("sigma (output)", f"{_fmt(rec.get('sigma_output'))} (Gaussian noise "
                                           "added to the approximate minimizer)"))
    else:
        rows += [("epsilon", rec.get("epsilon"))]
    if mech in ("objective", "amp"):
        rows += [("epsilon'", rec.get("epsilon_prime")), ("Delta", rec.get("extra_l2"))]
    if rec.get("beta") is not None:
        rows.append(("beta", rec.get("beta")))
    if rec.get("grid") is not None:
        rows.append(("grid", f"{_fmt(rec.get('grid'))} (released coefficients are "
                             "multiples of it)"))
    rows += [("Lambda (alpha)", rec.get("alpha")), ("curvature c", rec.get("curvature")),
             ("row norm bound R", rec.get("data_norm")),
             ("n (normalising)", rec.get("n_samples"))]
    if K > 2:
        if mech == "none":
            rows.append(("classes", f"{K}: " + ("one-vs-rest, one binary model per class"
                                                if split == "ovr" else
                                                "one multinomial (softmax) model")))
        elif split == "ovr":
            rows.append(("classes", f"{K}: one-vs-rest, {K} binary models, each with "
                                    f"epsilon = {_fmt(rec.get('epsilon'))}, delta = "
                                    f"{_fmt(float(rec.get('delta') or 0.0))} (total "
                                    f"epsilon = {_fmt(rec.get('epsilon_total'))}, delta = "
                                    f"{_fmt(float(rec.get('delta_total') or 0.0))})"))
        else:
            rows.append(("classes", f"{K}: one multinomial (softmax) model: one release with "
                                    "the whole epsilon and delta"))
    for k, v in rows:
        print(f"  {k:<17} {_fmt(v)}")
    if K > 2 and split == "ovr" and mech != "none":
        print("  (epsilon', Delta, beta, sigma and Lambda above are those of each one-vs-rest "
              "model)")
    if mech == "objective" and not delta and (rec.get("extra_l2") or 0) > 0:
        print("  (Delta > 0: Lambda is small for this n and epsilon, so Algorithm 2 added "
              "Delta to the regularizer and used epsilon' = epsilon/2)")


def _print_diagnostics(diag, seconds):
    """Solver diagnostics for the analyst: data-dependent, so never written to the model."""
    print("analyst-only diagnostics (data-dependent: not in the model file, do not publish):")
    for k, v in (("final |grad|", diag.get("grad_norm")), ("converged", diag.get("converged")),
                 ("iterations", diag.get("n_iter")), ("rows clipped", diag.get("rows_clipped")),
                 ("wall time (s)", round(seconds, 3))):
        print(f"  {k:<17} {_fmt(v)}")
    if diag.get("converged") is False:
        _note("warning: the solver did not reach its gradient tolerance; the privacy proof "
              "assumes the exact minimizer (try a larger --alpha)")


def _report_holdout(path, schema, coef, intercept, args):
    """Accuracy on a labelled file the user declares public; read in chunks when
    streaming (the same --memory-budget), else at once."""
    import numpy as np

    from dperm.cli import _stream as st
    from dperm.cli._io import CLIError, CSVReader, encode_rows, label_codes
    from dperm.data.validation import apply_norm_bound

    label, classes = schema.label, list(schema.classes)
    layout = _layout(args, schema)
    rows = None
    if _streaming(args) or args.from_binary is not None:
        rows, _ = st.chunk_rows(args.memory_budget or st.DEFAULT_BUDGET, schema, layout,
                                "float64", False)
    right = total = dropped = 0
    with CSVReader(path, what="holdout file", delimiter=args.delimiter) as reader:
        for table in reader.chunks(rows, usecols=set(schema.columns) | {label}):
            n0 = table.n_rows
            table = _apply_missing_quiet(table, schema, label, args.missing)
            dropped += n0 - table.n_rows
            if table.n_rows == 0:
                continue
            X, _ = encode_rows(table, schema, unknown="zero", sparse=layout == "csr")
            y = label_codes(table, label, classes)
            score = np.asarray(apply_norm_bound(X, 1.0, "clip") @ np.transpose(coef)) + intercept
            pred = (score > 0) if np.ndim(coef) == 1 else np.argmax(score, axis=1)
            right += int((pred == y).sum())
            total += table.n_rows
    if dropped:
        _note_dropped(dropped, total, "holdout rows", path)
    if total == 0:
        raise CLIError(f"{path}: every holdout row has a missing value in a used column; "
                       "no rows left to score")
    print(f"holdout accuracy: {right / total:.4f} on {total} rows of {path} "
          "(a file you declared public; not covered by epsilon otherwise)")


def _apply_missing_quiet(table, schema, label, policy):
    from dperm.cli._io import apply_missing

    table, _ = apply_missing(table, schema, label, schema.classes, policy, allow_empty=True)
    return table


def _write_text(path, text, what, atomic=False):
    """Write `text` to `path`; atomic: through a temporary file in the same directory,
    renamed over `path` at the end, so a failure never leaves a half-written file."""
    from dperm.cli._io import CLIError

    target = path
    if atomic:
        path = os.path.join(os.path.dirname(os.path.abspath(target)),
                            f".{os.path.basename(target)}.{os.getpid()}.tmp")
    try:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        if atomic:
            os.replace(path, target)
    except OSError as exc:
        if atomic:
            try:
                os.remove(path)
            except OSError:
                pass
        raise CLIError(f"cannot write the {what} to {target!r}: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------- predict
def cmd_predict(args):
    import csv
    import io

    import numpy as np

    from dperm.cli._io import MISSING_HINT_PREDICT, apply_missing, encode_rows, load_model, read_csv

    model = load_model(args.model)
    table = read_csv(args.data, delimiter=args.delimiter)
    apply_missing(table, model["schema"], policy="error", hint=MISSING_HINT_PREDICT)
    X, _ = encode_rows(table, model["schema"], unknown="zero")
    coef = model["coef"]
    classes = model["classes"]
    logistic = model["estimator"]["loss"] == "logistic"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if coef.ndim == 1:
        score = X @ coef + model["intercept"]
        w.writerow(["prediction", "score"] + (["probability"] if logistic else []))
        if logistic:
            # stable sigmoid: P(positive class)
            e = np.exp(-np.abs(score))
            prob = np.where(score >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        for i, s in enumerate(score):
            row = [classes[1] if s > 0 else classes[0], repr(float(s))]
            if logistic:
                row.append(repr(float(prob[i])))
            w.writerow(row)
    else:
        # K > 2 classes: one score per class, the prediction is the largest
        score = np.asarray(X @ coef.T) + model["intercept"]
        pred = np.argmax(score, axis=1)
        w.writerow(["prediction"] + [f"score:{c}" for c in classes]
                   + ([f"probability:{c}" for c in classes] if logistic else []))
        if logistic:
            prob = _class_probabilities(score, (model.get("privacy") or {}).get("multiclass"))
        for i in range(score.shape[0]):
            row = [classes[pred[i]]] + [repr(float(v)) for v in score[i]]
            if logistic:
                row += [repr(float(v)) for v in prob[i]]
            w.writerow(row)
    if args.output in (None, "-"):
        sys.stdout.write(buf.getvalue())
        sys.stdout.flush()
    else:
        _write_text(args.output, buf.getvalue(), "predictions")
        _note(f"{table.n_rows} predictions written to {args.output}")
    return 0


def _class_probabilities(score, multiclass):
    """(n, K) probabilities of K > 2 classes, as PrivateLinearClassifier.predict_proba:
    softmax of the scores (multinomial model), or the K one-vs-rest sigmoids normalised
    to sum to 1."""
    import numpy as np
    from scipy.special import logsumexp

    s = -np.logaddexp(0.0, -score) if multiclass == "ovr" else score
    return np.exp(s - logsumexp(s, axis=1, keepdims=True))


# ----------------------------------------------------------------------------- parser
def _positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {s!r}")
    return v


def _alpha(s):
    return "auto" if s == "auto" else _positive_float(s)


def _delta(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not (0.0 <= v < 1.0):
        raise argparse.ArgumentTypeError(f"must be in [0, 1) (0 for pure epsilon-DP), got {s!r}")
    return v


def _positive_int(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {s!r}")
    return v


def _size(s):
    from dperm.cli._stream import parse_size

    try:
        return parse_size(s)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _delimiter(s):
    from dperm.cli._io import parse_delimiter

    try:
        return parse_delimiter(s)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("--delimiter ", "")) from None


def build_parser():
    from dperm.privacy.neighbouring import NEIGHBOURING

    p = argparse.ArgumentParser(
        prog="dperm",
        description="Differentially private empirical risk minimization (Chaudhuri, "
                    "Monteleoni & Sarwate 2011): train and apply private linear classifiers, "
                    "and reproduce the paper's experiments.",
        epilog="Run `dperm COMMAND --help` for the options of a command.")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    # fit
    f = sub.add_parser(
        "fit", help="train a private linear classifier on a CSV file (or the shipped Adult data)",
        description="Train PrivateLinearClassifier on DATA.csv (header row required) with\n"
                    "public preprocessing, print the privacy parameters used, and write the\n"
                    "model as JSON. The accuracy on the training rows is not printed: it would\n"
                    "be a release of the private data outside the privacy guarantee.",
        epilog=SCHEMA_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    f.add_argument("data", nargs="?", metavar="DATA.csv",
                   help="training data (CSV with a header row); default: the shipped Adult data")
    f.add_argument("--label", metavar="COLUMN",
                   help="the label column (two classes, or K > 2: a K-class model)")
    f.add_argument("-o", "--output", metavar="MODEL.json", help="where to write the model (required)")
    f.add_argument("--schema", metavar="SCHEMA.json",
                   help="PUBLIC bounds, category lists and classes (format below)")
    f.add_argument("--positive", metavar="LABEL", help="the positive class (default: the schema's "
                   "second class, or the larger of the two labels)")
    f.add_argument("--epsilon", type=_positive_float, default=1.0,
                   help="privacy parameter epsilon > 0 (default 1.0): the released model is "
                        "(epsilon, delta)-DP; a privacy-loss bound in nats (e^epsilon is the "
                        "largest ratio of output probabilities between neighbouring data sets)")
    f.add_argument("--delta", type=_delta, default=0.0,
                   help="privacy parameter delta in [0, 1) (default 0): 0 is pure epsilon-DP "
                        "with the paper's Laplace-type noise; delta > 0 is (epsilon, delta)-DP "
                        "with Gaussian noise (a probability of failure of the epsilon bound: "
                        "take it well below 1/n, e.g. 1e-6 for n = 10^5)")
    f.add_argument("--neighbouring", choices=NEIGHBOURING,
                   default="replace_one",
                   help="which data sets count as neighbours: replace_one (default, the "
                        "paper's: one row replaced by another, n is public) or add_remove "
                        "(one row added or removed: the row count is itself private, see "
                        "--n-public)")
    f.add_argument("--n-public", type=_positive_int, default=None, metavar="N",
                   help="with --neighbouring add_remove: a PUBLIC number of rows (e.g. the "
                        "planned sample size) that normalises the objective (sum of losses / "
                        "N); without it the actual row count is used and the guarantee covers "
                        "neighbours of that size only (a warning says so)")
    f.add_argument("--loss", choices=("logistic", "huber", "smooth_hinge"), default="logistic",
                   help="default logistic")
    f.add_argument("--perturbation", choices=("objective", "output", "amp", "none"),
                   default="objective",
                   help="objective (Algorithm 2, default), output (Algorithm 1), amp "
                        "(approximate minima perturbation: objective perturbation whose "
                        "guarantee holds for an approximate solution, plus a little Gaussian "
                        "output noise; needs --delta > 0), or none (non-private baseline)")
    f.add_argument("--alpha", type=_alpha, default="auto",
                   help="regularization strength Lambda, or 'auto' (default): a rule of public "
                        "quantities only (n, d, epsilon; see dperm.regularization.auto_alpha), "
                        "so it costs no privacy; the value used is printed and stored")
    f.add_argument("--h", type=_positive_float, default=0.5,
                   help="Huber / smoothed-hinge width (default 0.5; ignored for logistic)")
    f.add_argument("--no-intercept", action="store_true", help="fit without an intercept")
    f.add_argument("--seed", type=int, default=None,
                   help="seed the noise: reproducible runs only, the model is then NOT private "
                        "(default: fresh OS entropy; the seed is never written to the model)")
    f.add_argument("--threads", type=_positive_int, default=None, help="OpenMP threads for the solver")
    f.add_argument("--save-schema", metavar="SCHEMA.json",
                   help="also write the schema used (e.g. the one read from the data)")
    f.add_argument("--holdout", metavar="FILE.csv",
                   help="report accuracy on this separate, labelled file (which you consider "
                        "public: the number is released outside the privacy guarantee)")
    f.add_argument("--missing", choices=("error", "drop"), default="error",
                   help="a missing cell (blank, NA, NaN, ?, ...) in a used column without a "
                        "schema \"fill\" value: error (default: name the first such row) or "
                        "drop the rows that have one (the number dropped is printed)")
    f.add_argument("--delimiter", type=_delimiter, default=",", metavar="CHAR",
                   help="field separator of DATA.csv and --holdout (default ','; e.g. ';', '|', "
                        "or 'tab')")
    g = f.add_argument_group(
        "large files (see 'streaming' below)",
        "--memory-budget, --work-dir or --keep-binary read DATA.csv in chunks into an on-disk "
        "binary and fit from it in place; --from-binary fits from a kept binary")
    f.add_argument("--sparse", choices=("auto", "yes", "no"), default=None,
                   help="build the encoded rows as a CSR sparse matrix (one-hot columns are "
                        "never densified): auto (default) when the schema has categorical "
                        "columns and a row has at most 30%% non-zeros, yes, or no (dense)")
    f.add_argument("--dtype", choices=("float64", "float32"), default=None,
                   help="floating type of the encoded rows the solver reads (default float64; "
                        "float32 halves the memory or the binary, the model differs in the "
                        "last digits)")
    g.add_argument("--memory-budget", type=_size, default=None, metavar="SIZE",
                   help="stream DATA.csv: chunks sized so reading and encoding one stays "
                        "within SIZE (e.g. 256M, 2G; K/M/G are powers of 1024; default "
                        "256M when only --work-dir or --keep-binary is given)")
    g.add_argument("--work-dir", metavar="DIR", default=None,
                   help="stream, writing the temporary binary in DIR (default: the system's "
                        "temporary directory); it is deleted after the fit")
    g.add_argument("--keep-binary", metavar="DIR", default=None,
                   help="stream, writing the binary to DIR (new or empty) and keeping it; it "
                        "holds the private rows")
    g.add_argument("--from-binary", metavar="DIR", default=None,
                   help="fit from a binary written earlier with --keep-binary (its schema, "
                        "label, classes and layout are used; no DATA.csv)")
    f.set_defaults(func=cmd_fit)

    # predict
    pr = sub.add_parser("predict", help="apply a model to a CSV file",
                        description="Write predictions of MODEL.json for the rows of DATA.csv.",
                        epilog=PREDICT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    pr.add_argument("model", metavar="MODEL.json")
    pr.add_argument("data", metavar="DATA.csv")
    pr.add_argument("-o", "--output", metavar="OUT.csv", help="output file (default: stdout)")
    pr.add_argument("--delimiter", type=_delimiter, default=",", metavar="CHAR",
                    help="field separator of DATA.csv (default ','; e.g. ';', '|', or 'tab'); "
                         "the predictions are written comma-separated")
    pr.set_defaults(func=cmd_predict)

    # reproduce
    from dperm.experiments import REPRODUCTIONS

    r = sub.add_parser("reproduce", help="reproduce the paper's experiments (Adult, KDDCup99)",
                       description="Reproduce the paper's tables and figures on the shipped "
                                   "Adult and KDDCup99 (10% sample) data; writes CSV (and PNG "
                                   "plots when matplotlib is installed) to --out.",
                       epilog=_reproduce_help(REPRODUCTIONS),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("what", choices=tuple(REPRODUCTIONS),
                   help="the experiment (list below); table1/table2: the paper's Tables 1 and 2 "
                        "at epsilon = 0.1 (full protocol: 10-fold CV, 50 runs); figure2/figure3: "
                        "error against epsilon at the best Lambda; tuning: Algorithm 4 end to "
                        "end, learning curve")
    r.add_argument("--quick", action="store_true",
                   help="a reduced, seeded protocol (fewer folds and runs, a smaller KDDCup99 "
                        "subset: see the list below): a check of the pipeline with noisy "
                        "numbers, from seconds to about two minutes per experiment on 2 cores")
    r.add_argument("--out", default="dperm-results", metavar="DIR",
                   help="output directory (default: dperm-results)")
    r.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    r.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                   help="OpenMP threads (default: all cores)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--pima", default=None, metavar="CSV",
                   help="nips2008 / all: the Pima Indians Diabetes CSV (not shipped; default "
                        "$DPERM_PIMA; without it the Pima rows say 'not run')")
    r.set_defaults(func=cmd_reproduce)

    # info
    i = sub.add_parser("info", help="print the version and build configuration")
    i.set_defaults(func=cmd_info)
    return p


def main(argv=None):
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from dperm.cli._io import CLIError
    from dperm.exceptions import BudgetExceededError

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _show_warning
        try:
            return args.func(args)
        except _UsageError as exc:
            _err(str(exc))
            return EXIT_USAGE
        except (CLIError, ValueError, TypeError, BudgetExceededError, OSError) as exc:
            if os.environ.get("DPERM_DEBUG"):
                raise
            if isinstance(exc, BrokenPipeError):
                return _broken_pipe()
            _err(str(exc) if str(exc) else type(exc).__name__)
            return EXIT_USAGE
        except KeyboardInterrupt:
            _err("interrupted")
            return 130
        except Exception as exc:  # pragma: no cover - a bug, but still no traceback by default
            if os.environ.get("DPERM_DEBUG"):
                raise
            _err(f"internal error ({type(exc).__name__}: {exc}); set DPERM_DEBUG=1 for a "
                 "traceback and please report it")
            return 1


def _broken_pipe():
    # e.g. `dperm predict ... | head`: stop quietly
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
