"""The argument parser of `dperm`: its sub-commands, their options and help texts."""
import argparse
import math

from dperm.cli.bounds import cmd_bounds
from dperm.cli.fit import cmd_fit
from dperm.cli.predict import cmd_predict
from dperm.cli.reproduce import REPRODUCTION_NAMES, _reproduce_help, cmd_reproduce
from dperm.privacy.neighbouring import NEIGHBOURING  # light: dperm.privacy loads lazily

SCHEMA_FORMAT = """\
schema file (--schema SCHEMA.json): PUBLIC preprocessing, fixed before looking at the data
  {
    "numeric":     {"age": [17, 90], "hours": [0, 99]},
    "categorical": {"color": ["red", "green", "blue"]},
    "label":       {"column": "y", "classes": ["no", "yes"]},
    "fill":        {"hours": 40, "color": "red"}
  }
  numeric      column -> [low, high] (a single number H means [0, H]); values are
               clipped to [low, high] and mapped to [0, 1] by (v - low) / (high - low)
  categorical  column -> list of categories; one-hot encoded in that order. A value
               not in the list is an error naming the row, the column and the value
               (`dperm predict --unknown zero` encodes it as an all-zero group)
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
"""

SCHEMA_HELP = SCHEMA_FORMAT + """
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
  the data is read: --schema with the classes is required, or --bounds-share S,
  whose bounds come from one more pass that counts each numeric column on a
  public grid and releases them from S x --epsilon) and appends it to an
  on-disk binary: X.npy (dense) or data/indices/indptr.npy (CSR, --sparse), y.npy
  and a manifest design.json, in a temporary directory (--work-dir DIR: under
  DIR) deleted after the fit, or in --keep-binary DIR, kept. The solver then
  reads the binary through a memory map, in place. The model is the one the
  in-memory fit writes with the same options and --seed. Errors are the
  in-memory ones (naming the row and line of the file); a failure writes no
  model and removes the unfinished binary. --from-binary DIR fits again from a
  kept binary (other --epsilon, --alpha, --loss, ...; a binary written with
  --bounds-share keeps its split, and refits with the same --epsilon and
  --bounds-share as the same one command). The binary holds the
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

BOUNDS_HELP = SCHEMA_FORMAT + """
  dperm bounds writes this format: "numeric" holds the private bounds of the
  numeric columns (--columns, else those of --schema BASE.json, else the columns
  read as numeric from the data, with a PrivacyLeakWarning); "categorical",
  "label", "classes" and "fill" are copied from BASE.json (public input), and
  --categories-from-data adds category lists read from the data (NOT private).
  A blank or missing cell of a numeric column is left out of its quantiles; any
  other cell that is not a number is an error naming it.

privacy: each bound is a quantile released by the exponential mechanism over the
  PUBLIC --range (dperm.estimate_bounds); --epsilon is split evenly over the
  columns and the two quantiles (pure epsilon-DP, rows replaced, added or
  removed). Values outside --range are clipped to it. The
  budget is separate from the fit's: a model trained with the written schema is
  (epsilon_bounds + epsilon_fit)-DP in total. --seed makes the draws reproducible
  and the bounds NOT private.
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
A category not in the model's list is an error naming the row, line, column and
value, as in the Python pipeline (PublicSchema, unknown="error"); --unknown zero
encodes it as an all-zero group for that column instead (unknown="ignore").
Numeric values are clipped to the stored [low, high]. A missing cell
(blank, NA, NaN, ?, ...) takes the schema's "fill" value for its column; without one
it is an error naming the row and the column (rows are never dropped: there is one
output row per input row). --delimiter CHAR reads a file separated by CHAR.
"""


# ----------------------------------------------------------------------------- output

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

def _positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {s!r}")
    return v


def _alpha(s):
    if s in ("auto", "select"):
        return s
    try:
        float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number, 'auto' or 'select'") from None
    return _positive_float(s)


def _delta(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not (0.0 <= v < 1.0):
        raise argparse.ArgumentTypeError(f"must be in [0, 1) (0 for pure epsilon-DP), got {s!r}")
    return v


def _share(s):
    try:
        v = float(s)
    except ValueError:
        v = float("nan")
    if not (0.0 < v < 1.0):
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), the share of --epsilon "
                                         f"spent on the bounds (e.g. 0.1), got {s!r}")
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
    from dperm.cli._common import parse_delimiter

    try:
        return parse_delimiter(s)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("--delimiter ", "")) from None



class _ReproduceParser(argparse.ArgumentParser):
    """`dperm reproduce`'s parser: its epilog (the experiments' docstrings) is built from
    the registry when the help is shown, not when any command starts."""

    def format_help(self):
        if self.epilog is None:
            from dperm.experiments import REPRODUCTIONS

            self.epilog = _reproduce_help(REPRODUCTIONS)
        return super().format_help()




def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dperm",
        description="Differentially private empirical risk minimization (Chaudhuri, "
                    "Monteleoni & Sarwate 2011): train and apply private linear models "
                    "(classification, and regression with --task regression), estimate "
                    "private bounds for a schema, and reproduce the paper's experiments.",
        epilog="Run `dperm COMMAND --help` for the options of a command.")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    # fit
    f = sub.add_parser(
        "fit", help="train a private linear model (a classifier, or a regression with --task "
                    "regression) on a CSV file (or the shipped Adult data)",
        description="Train PrivateLinearClassifier (or, with --task regression,\n"
                    "PrivateLinearRegression) on DATA.csv (header row required) with\n"
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
    f.add_argument("--perturbation", choices=("objective", "output", "amp", "none", "adassp",
                                              "auto"),
                   default="objective",
                   help="objective (Algorithm 2, default), output (Algorithm 1), amp "
                        "(approximate minima perturbation: objective perturbation whose "
                        "guarantee holds for an approximate solution, plus a little Gaussian "
                        "output noise; needs --delta > 0), or none (non-private baseline); "
                        "--task regression also: adassp (needs --delta > 0) and auto (the "
                        "rule of PrivateLinearRegression(method='auto'))")
    f.add_argument("--alpha", type=_alpha, default="auto",
                   help="regularization strength Lambda, or 'auto' (default): a rule of public "
                        "quantities only (n, d, epsilon; see dperm.privacy.regularization.auto_alpha), "
                        "so it costs no privacy; the value used is printed and stored; or "
                        "'select': chosen privately among auto x 0.5, 1, 2 with every candidate "
                        "trained on all rows, within --epsilon (pure epsilon only; see "
                        "docs/user_guide/choosing_lambda.md)")
    f.add_argument("--h", type=_positive_float, default=None,
                   help="Huber / smoothed-hinge width (default 0.5; ignored for logistic); "
                        "with --task regression the pseudo-Huber width (default: "
                        "--label-bound)")
    f.add_argument("--task", choices=("classification", "regression"), default="classification",
                   help="classification (default) or regression: a numeric label column, "
                        "dperm.PrivateLinearRegression (pseudo-Huber ERM; --perturbation "
                        "objective, output or none); a CSV larger than memory streams with "
                        "--memory-budget / --work-dir (--schema or --bounds-share required; no "
                        "--keep-binary)")
    f.add_argument("--bounds-share", type=_share, default=None, metavar="S",
                   help="from nothing in one command: no --schema bounds needed; the numeric "
                        "columns' bounds (every column that is neither the label nor "
                        "--categorical) and, with --task regression, the label's range are "
                        "released privately from S x --epsilon (S in (0, 1), e.g. 0.1; "
                        "dperm.private_pipeline's rule), the fit gets the rest; the model file "
                        "records the split (\"budget\"). With --seed N the bounds draw from N "
                        "and the fit from N+1 (as dperm bounds --seed N, then dperm fit --seed "
                        "N+1). In memory, streamed (--memory-budget: one more pass counts the "
                        "columns for the bounds) or --from-binary of a binary written with "
                        "it. See docs/user_guide/from_nothing.md")
    f.add_argument("--categorical", action="append", default=None, metavar="SPEC",
                   help="with --bounds-share (repeatable): COLUMN=V1,V2,... a column's PUBLIC "
                        "category list (for a classification the label's entry is its "
                        "classes, [negative, positive] for two), or column names A,B whose "
                        "lists --schema gives")
    f.add_argument("--categories-from-data", action="store_true",
                   help="with --bounds-share: read the lists of the --categorical columns "
                        "named without one (and the classes) from the private data, OUTSIDE "
                        "the privacy guarantee (a PrivacyLeakWarning)")
    f.add_argument("--quantiles", default=None, metavar="LOW,HIGH",
                   help="with --bounds-share: the quantiles released as the bounds (default "
                        "0.01,0.99), as in dperm bounds")
    f.add_argument("--range", metavar="LO,HI", default=None,
                   help="with --bounds-share: the PUBLIC range of every released column "
                        "(default -1e9,1e9; write --range=-5,100 when LO is negative); values "
                        "outside are clipped to it, as in dperm bounds")
    f.add_argument("--label-bound", type=_positive_float, default=None, metavar="B",
                   help="--task regression: the PUBLIC bound B on |label| (labels beyond it "
                        "are clipped to [-B, B], with a warning); required")
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
    f.set_defaults(func=cmd_fit,
                   inputs=(("data", "DATA.csv"), ("schema", "--schema"), ("holdout", "--holdout"),
                           ("from_binary", "--from-binary")),
                   outputs=(("output", "-o/--output"), ("save_schema", "--save-schema")))

    # bounds
    b = sub.add_parser(
        "bounds", help="write a schema whose numeric bounds are differentially private",
        description="Estimate each numeric column's (low, high) quantiles of DATA.csv with\n"
                    "epsilon-DP (dperm.estimate_bounds) and write a schema file that\n"
                    "`dperm fit --schema` reads. Category lists, label, classes and fill\n"
                    "values come from --schema BASE.json (public input).",
        epilog=BOUNDS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("data", metavar="DATA.csv", help="the private data (CSV with a header row)")
    b.add_argument("--epsilon", type=_positive_float, required=True,
                   help="privacy budget of the bounds (split evenly over columns x quantiles)")
    b.add_argument("-o", "--output", metavar="SCHEMA.json", help="where to write the schema "
                   "(required)")
    b.add_argument("--columns", metavar="A,B,...", help="the numeric columns (default: those of "
                   "--schema, else read from the data, with a PrivacyLeakWarning)")
    b.add_argument("--quantiles", default="0.01,0.99", metavar="LOW,HIGH",
                   help="the quantiles released as bounds (default 0.01,0.99)")
    b.add_argument("--range", metavar="LO,HI", help="PUBLIC range of every column (default "
                   "-1e9,1e9; write --range=-5,100 when LO is negative); values outside are "
                   "clipped to it")
    b.add_argument("--schema", metavar="BASE.json", help="PUBLIC categories, label, classes "
                   "and fill values to keep (its numeric bounds are replaced)")
    b.add_argument("--label", metavar="COLUMN", help="the label column (never a feature)")
    b.add_argument("--task", choices=("classification", "regression"), default="classification",
                   help="regression: also release the label's (low, high) in the same "
                        "mechanism and epsilon split (one more column), written as "
                        "label.bounds for `dperm fit --task regression` (default classification)")
    b.add_argument("--categories-from-data", action="store_true",
                   help="add the other columns as categorical, with the values read from the "
                        "data (NOT private: a PrivacyLeakWarning)")
    b.add_argument("--delimiter", type=_delimiter, default=",", metavar="CHAR",
                   help="field separator of DATA.csv (default ',')")
    b.add_argument("--seed", type=int, default=None,
                   help="seed the draws: reproducible runs only, the bounds are then NOT private "
                        "(default: fresh OS entropy; the seed is never written to the schema)")
    b.set_defaults(func=cmd_bounds, inputs=(("data", "DATA.csv"), ("schema", "--schema")),
                   outputs=(("output", "-o/--output"),))

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
    pr.add_argument("--unknown", choices=("error", "zero"), default="error",
                    help="a category the model's schema does not list: error (default: name "
                         "the row, column and value) or zero (an all-zero group for that "
                         "column)")
    pr.set_defaults(func=cmd_predict, inputs=(("model", "MODEL.json"), ("data", "DATA.csv")),
                    outputs=(("output", "-o/--output"),))

    # reproduce (the registry, dperm.experiments, is imported only for its help text and
    # when the command runs: it imports the estimators and scikit-learn)
    r = sub.add_parser("reproduce", help="reproduce the paper's experiments (Adult, KDDCup99)",
                       description="Reproduce the paper's tables and figures on the shipped "
                                   "Adult and KDDCup99 (10% sample) data; writes CSV (and PNG "
                                   "plots when matplotlib is installed) to --out.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.__class__ = _ReproduceParser
    r.add_argument("what", choices=REPRODUCTION_NAMES,
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


