"""`dperm bounds`: a schema file whose numeric bounds are differentially private.

    dperm bounds DATA.csv --epsilon E [--columns a,b] [--quantiles 0.01,0.99]
                 [--range LO,HI] [--schema BASE.json] [--label COLUMN]
                 [--task regression] [--categories-from-data] [--delimiter CHAR]
                 -o SCHEMA.json

The numeric columns' (low, high) are :func:`dperm.estimate_bounds` at epsilon E
(pure epsilon-DP; docs/user_guide/own_data.md, "Bounds you do not have to guess"); the written schema is
what ``dperm fit --schema`` reads.  Everything else in it is public input: the
category lists, label, classes and fill values of --schema BASE.json.  Anything the
command reads from the data outside the mechanism (which columns are numeric, with
neither --columns nor a base schema; category lists with --categories-from-data) is
announced by a PrivacyLeakWarning.

With ``--task regression --label COLUMN`` the label's range is released too, by the same
mechanism in the same call: the label is one more column of the even split (epsilon E
over k + 1 columns, one joint draw of both quantiles each, so the whole schema stays
E-DP), written as
``"label": {"column": COLUMN, "bounds": [low, high]}``; ``dperm fit --task regression``
then centres the label on (low + high) / 2 with label bound (high - low) / 2.
"""
import warnings

import numpy as np

from dperm.cli._common import _note, _UsageError, _write_text

__all__ = ["cmd_bounds"]


def _pair(text, what):
    parts = [p.strip() for p in str(text).split(",")]
    try:
        if len(parts) != 2:
            raise ValueError
        return float(parts[0]), float(parts[1])
    except ValueError:
        raise _UsageError(f"{what} must be two numbers separated by a comma (e.g. "
                          f"{'0.01,0.99' if what == '--quantiles' else '0,100'}), got "
                          f"{text!r}") from None


def _numbers(table, c):
    """Column c of the table as floats (NaN for a missing cell; +-inf are numbers)."""
    from dperm.cli._io import CLIError, numeric_cells

    out, i = numeric_cells(table, c, finite=False)
    if i is not None:
        raise CLIError(f"{table.name}: non-numeric value {table.columns[c][i].as_py()!r} in "
                       f"numeric column {c!r} ({table.where(i)}); correct it, leave the cell "
                       "blank (a missing value), or leave the column out of --columns")
    return np.asarray(out, dtype=np.float64)


def cmd_bounds(args):
    from dperm.cli._io import load_schema, model_to_json, read_csv
    from dperm.exceptions import PrivacyLeakWarning
    from dperm.privacy.quantiles import estimate_bounds

    if not args.output:
        raise _UsageError("-o/--output SCHEMA.json is required")
    params = bounds_params(args)          # checked before any data is read
    base = load_schema(args.schema) if args.schema is not None else None
    table = read_csv(args.data, delimiter=args.delimiter)
    label, regression = _label_column(args, base, table)
    leaks = []
    columns, inferred = _numeric_columns(args, base, table, label, leaks)
    categorical = _categories(args, base, table, label, columns, inferred, leaks)
    data = {c: _numbers(table, c) for c in columns}     # every check before the release
    released = list(columns)
    if regression:     # the label: one more column of the same mechanism and split
        data[label] = _numbers(table, label)
        released.append(label)
    if leaks:
        warnings.warn(
            f"{' and '.join(leaks)} were read from the private data, outside the privacy "
            "guarantee (which covers the numeric bounds only); name the numeric columns "
            "with --columns and give PUBLIC category lists in --schema BASE.json",
            PrivacyLeakWarning, stacklevel=2)
    bounds = estimate_bounds(data, args.epsilon, columns=released, random_state=args.seed,
                             **params)
    schema = _output_schema(base, bounds, columns, categorical, label, regression)
    _write_text(args.output, model_to_json(schema.to_dict()), "schema", atomic=True)
    _print_bounds(bounds, released, label)
    _note(f"schema written to {args.output}")
    return 0


def _label_column(args, base, table):
    """The label column (--label, else the base schema's) and whether its range is
    released too (--task regression)."""
    from dperm.cli._io import CLIError, header_hint

    label = args.label if args.label is not None else (base.label if base else None)
    regression = getattr(args, "task", "classification") == "regression"
    if regression and label is None:
        raise _UsageError("--task regression: name the label column with --label COLUMN (its "
                          "range is released with the features' bounds)")
    if label is not None and label not in table.header:
        raise CLIError(f"{table.name}: no label column {label!r} (columns: "
                       f"{', '.join(table.header[:12])}){header_hint(table.header)}")
    return label, regression


def _numeric_columns(args, base, table, label, leaks):
    """The columns whose bounds are released: --columns, else the base schema's numeric
    columns, else those the data's cells look numeric in (a leak, appended to leaks).
    Returns them and the schema inferred from the data (None when not read)."""
    from dperm.cli._io import CLIError, header_hint, infer_schema

    inferred = None
    if args.columns is not None:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        if not columns:
            raise _UsageError("--columns must name at least one column")
    elif base is not None and base.numeric:
        columns = list(base.numeric)
    else:
        inferred = infer_schema(table, label)
        columns = list(inferred.numeric)
        leaks.append("which columns are numeric")
        if not columns:
            raise CLIError(f"{table.name}: no numeric columns; name them with --columns")
    lacking = [c for c in columns if c not in table.header]
    if lacking:
        raise CLIError(f"{table.name}: no column(s) {lacking} (columns: "
                       f"{', '.join(table.header[:12])}){header_hint(table.header)}")
    if label in columns:
        raise _UsageError(f"--columns: {label!r} is the label column")
    return columns, inferred


def _categories(args, base, table, label, columns, inferred, leaks):
    """The category lists: the base schema's (public) for the columns not released as
    numeric, with --categories-from-data those the data show too (a leak)."""
    from dperm.cli._io import infer_schema

    categorical = {c: list(v) for c, v in (base.categorical.items() if base else ())
                   if c not in columns}
    if args.categories_from_data:
        inferred = inferred or infer_schema(table, label)
        for c, cats in inferred.categorical.items():
            if c not in columns and c not in categorical:
                categorical[c] = list(cats)
        leaks.append("category lists")
    return categorical


def _output_schema(base, bounds, columns, categorical, label, regression):
    """The written schema: the released bounds, and the base schema's public fill values
    and classes (the classes only for the same label, and not for a regression)."""
    from dperm.cli._io import CLIError
    from dperm.schema import PublicSchema

    fill = {c: v for c, v in (base.fill.items() if base else ())
            if c in columns or c in categorical}
    classes = list(base.classes) if base is not None and base.classes is not None \
        and (base.label == label) and not regression else None
    label_bounds = bounds[label] if regression else None
    try:
        return PublicSchema(numeric={c: bounds[c] for c in columns},
                            categorical=categorical, label=label,
                            classes=classes, fill=fill, label_bounds=label_bounds)
    except ValueError as exc:
        raise CLIError(f"the output schema: {exc}") from None


def _print_bounds(bounds, released, label):
    rec = bounds.privacy_
    print(f"private bounds: epsilon = {rec['epsilon']:g} (pure epsilon-DP), "
          f"{len(released)} column(s), each one joint draw of its quantiles "
          f"{rec['quantiles']} at epsilon {rec['epsilon_per_column']:.6g}; public range "
          f"[{rec['range'][0]:g}, {rec['range'][1]:g}]")
    for c in released:
        lo, hi = bounds[c]
        print(f"  {c}{' (label)' if c == label else ''}: [{lo:.6g}, {hi:.6g}]")


# ------------------------------------------------------------- dperm fit --bounds-share
def bounds_params(args):
    """--quantiles and --range of `dperm bounds` and `dperm fit --bounds-share`, parsed and
    checked (by estimate_bounds' own checks, so both commands say the same) before any data
    is read: estimate_bounds' keyword arguments ``quantiles`` and ``bounds_range``."""
    from dperm.privacy.quantiles import DEFAULT_QUANTILES, _check_quantiles, _check_range

    given = getattr(args, "quantiles", None)
    quantiles = DEFAULT_QUANTILES if given is None else _check_quantiles(
        _pair(given, "--quantiles"))
    bounds_range = None if getattr(args, "range", None) is None else _check_range(
        _pair(args.range, "--range"))
    return {"quantiles": quantiles, "bounds_range": bounds_range}


def check_bounds_share_args(args):
    """`dperm fit --bounds-share` and its companions (--categorical,
    --categories-from-data, --quantiles, --range): the combinations refused, before any
    data is read."""
    companions = _companions(args)
    if getattr(args, "bounds_share", None) is None:
        if companions:
            raise _UsageError(f"{', '.join(companions)} "
                              f"{'is' if len(companions) == 1 else 'are'} for --bounds-share "
                              "(without it, dperm fit reads a schema's PUBLIC bounds and lists)")
        return
    if getattr(args, "label_bound", None) is not None:
        raise _UsageError("--bounds-share cannot be combined with --label-bound: it releases "
                          "a regression label's range from the data; drop --label-bound, or run "
                          "`dperm bounds` then `dperm fit --schema` instead")
    _check_share_source(args, companions)
    bounds_params(args)


def _companions(args):
    """The options given that are for --bounds-share only."""
    return [o for o, on in (
        ("--categorical", bool(getattr(args, "categorical", None))),
        ("--categories-from-data", bool(getattr(args, "categories_from_data", False))),
        ("--quantiles", getattr(args, "quantiles", None) is not None),
        ("--range", getattr(args, "range", None) is not None)) if on]


def _check_share_source(args, companions):
    """Where --bounds-share reads the rows: DATA.csv in memory or streamed (lists from
    the data only in memory), or a --from-binary binary (whose bounds were released when
    it was written)."""
    streamed = [o for k, o in (("memory_budget", "--memory-budget"), ("work_dir", "--work-dir"),
                               ("keep_binary", "--keep-binary"), ("from_binary", "--from-binary"))
                if getattr(args, k, None) is not None]
    if "--categories-from-data" in companions and streamed:
        raise _UsageError(f"--categories-from-data cannot be combined with {streamed[0]}: it "
                          "reads the lists from the rows in memory; give PUBLIC lists with "
                          "--categorical COLUMN=V1,V2,... or in --schema BASE.json")
    if getattr(args, "from_binary", None) is not None:
        fixed = [o for o in ("--categorical", "--quantiles", "--range") if o in companions]
        if fixed:
            raise _UsageError(f"--from-binary: {', '.join(fixed)} cannot be given (the "
                              "binary's bounds were released when it was written)")
    elif args.data is None:
        raise _UsageError("--bounds-share needs DATA.csv (the shipped Adult data has public "
                          "bounds already: drop --bounds-share)")


def _categorical_option(specs):
    """--categorical (repeatable): COLUMN=V1,V2,... (a PUBLIC list) or A,B (column names
    whose lists come from --schema). Returns {column: list or None}."""
    out = {}
    for spec in specs or ():
        if "=" in spec:
            column, _, values = spec.partition("=")
            column = column.strip()
            cats = [v.strip() for v in values.split(",") if v.strip()]
            if not column or not cats:
                raise _UsageError(f"--categorical {spec!r}: give COLUMN=V1,V2,... (the "
                                  "column's PUBLIC category list) or column names A,B")
            out[column] = cats
        else:
            for column in (c.strip() for c in spec.split(",")):
                if column:
                    out.setdefault(column, None)
    return out


def _fit_categories(args, base, table, label, regression, leaks):
    """The PUBLIC category lists of `dperm fit --bounds-share` ({column: list}, the
    label's entry is the classes): --categorical's, else the base schema's; a column
    named without a list is read from the data only with --categories-from-data (a
    leak); anything else is an error naming the fix."""
    from dperm.exceptions import PrivacyLeakWarning

    cats, missing = _given_lists(args, base, label, regression)
    _check_category_columns(table, cats, missing, label, regression)
    if missing and not args.categories_from_data:
        what = ", ".join(f"--categorical {c}=V1,V2,..." for c in missing)
        raise _UsageError(
            f"--bounds-share: no PUBLIC category list for {missing} (the label's entry is its "
            f"classes, [negative, positive] for two): give {what}, or the lists in --schema "
            "BASE.json; --categories-from-data reads them from the private data, outside the "
            "guarantee (a PrivacyLeakWarning)")
    if missing:
        cats.update(_lists_from_data(table, label, missing))
        leaks.append("category lists")
        warnings.warn("category lists were read from the private data (--categories-from-"
                      "data), outside the privacy guarantee (which covers the numeric bounds "
                      "and the fit only); give PUBLIC lists with --categorical COLUMN=V1,V2,... "
                      "or in --schema BASE.json", PrivacyLeakWarning, stacklevel=3)
    return cats


def _given_lists(args, base, label, regression):
    """({column: PUBLIC list} from --categorical and the base schema, [columns named
    without a list, and a classification's label without classes])."""
    given = _categorical_option(args.categorical)
    cats = {c: list(v) for c, v in (base.categorical.items() if base else ())}
    if base is not None and base.classes is not None and base.label in (None, label) \
            and not regression:
        cats.setdefault(label, list(base.classes))
    cats.update({c: v for c, v in given.items() if v is not None})
    missing = [c for c, v in given.items() if v is None and c not in cats]
    if not regression and label not in cats and label not in missing:
        missing.append(label)
    return cats, missing


def _check_category_columns(table, cats, missing, label, regression):
    from dperm.cli._io import CLIError, header_hint

    lacking = [c for c in list(cats) + missing if c not in table.header]
    if lacking:
        raise CLIError(f"--categorical: no column(s) {lacking} in {table.name} (columns: "
                       f"{', '.join(table.header[:12])}){header_hint(table.header)}")
    if regression and (label in cats or label in missing):
        raise _UsageError(f"--categorical: {label!r} is the label of a regression (numeric); "
                          "leave it out")


def _lists_from_data(table, label, missing):
    """--categories-from-data: the lists of the `missing` columns read from the private
    data (the caller warns): the label's distinct values, the others' as infer_schema
    reads them."""
    from dperm.cli._io import CLIError, distinct_values, infer_schema, resolve_label

    inferred = infer_schema(table, label)
    out = {}
    for c in missing:
        if c == label:
            out[c] = sorted(distinct_values(resolve_label(table, label)))
        elif c in inferred.categorical:
            out[c] = list(inferred.categorical[c])
        else:
            raise CLIError(f"--categorical {c}: the column's cells are numbers; give its "
                           f"PUBLIC list as --categorical {c}=V1,V2,... or leave it out "
                           "(a numeric column, bounded privately)")
    return out


def _fit_numbers(table, c):
    from dperm.cli._io import CLIError, numeric_cells

    out, i = numeric_cells(table, c, finite=False)
    if i is not None:
        raise CLIError(f"{table.name}: non-numeric value {table.columns[c][i].as_py()!r} in "
                       f"column {c!r} ({table.where(i)}): with --bounds-share every column "
                       f"that is neither the label nor --categorical is numeric (its bounds "
                       f"are released); declare it with --categorical {c}=V1,V2,..., correct "
                       "the cell or leave it blank (a missing value)")
    return np.asarray(out, dtype=np.float64)


class _Plan:
    """What `dperm fit --bounds-share` decides from the public arguments and the header
    alone, before any cell is read: the label, the PUBLIC category lists and classes, the
    numeric columns and those whose bounds are released (a regression's label last), the
    budget split (dperm.pipeline.split_budget) and estimate_bounds' quantiles and range."""

    def __init__(self, args, table, leaks):
        from dperm.pipeline import split_budget

        self.base = _base_without_bounds(args)
        self.label, self.regression = _label_column(args, self.base, table)
        if self.label is None:
            raise _UsageError("fit: --label COLUMN is required (or give label.column in the "
                              "schema)")
        self.cats = _fit_categories(args, self.base, table, self.label, self.regression, leaks)
        self.classes = None if self.regression else self.cats.pop(self.label)
        self.numeric = [c for c in table.header if c != self.label and c not in self.cats]
        self.bounded = self.numeric + ([self.label] if self.regression else [])
        self.eps_bounds, self.eps_fit = split_budget(args.epsilon, args.bounds_share,
                                                     self.bounded)
        self.params = bounds_params(args)
        self.fill = _public_fill(self.base, self.numeric, self.cats)
        # the schema with placeholder bounds: the columns, lists and fill values are the
        # released schema's, so its missing-value rule, encoding width and chunk size are too
        self.schema = self.released({c: (0.0, 1.0) for c in self.numeric},
                                    (0.0, 1.0) if self.regression else None)

    def released(self, numeric_bounds, label_bounds):
        return _released_schema(numeric_bounds, self.cats, self.label, self.classes,
                                self.fill, label_bounds)

    def check_missing(self, args, table):
        """--missing error: the first missing value stops the command before the bounds are
        released (as the fit would stop after)."""
        from dperm.cli._io import missing_error, missing_masks

        if args.missing != "error":
            return
        masks = missing_masks(table, self.schema, self.label, self.classes)
        if masks:
            raise missing_error(table, masks, self.schema, self.label)

    def finish(self, args, numeric_bounds, label_bounds):
        """The released schema; prints the split and hands the fit its part."""
        from dperm.pipeline import budget_record

        schema = self.released(numeric_bounds, label_bounds)
        budget = budget_record(epsilon=args.epsilon, bounds_share=args.bounds_share,
                               epsilon_bounds=self.eps_bounds, epsilon_fit=self.eps_fit,
                               columns=self.bounded, label=self.label, task=args.task,
                               delta=args.delta if args.perturbation != "none" else 0.0)
        _print_split(budget, numeric_bounds, self.label, label_bounds)
        _hand_to_fit(args, budget)
        return schema


def _public_fill(base, numeric, cats):
    """The base schema's fill values of the fitted columns."""
    if base is None:
        return {}
    return {c: v for c, v in base.fill.items() if c in numeric or c in cats}


def release_for_fit(args, table, leaks):
    """`dperm fit DATA.csv --bounds-share S`: the PUBLIC schema of the fit, its numeric
    bounds (and a regression label's range) released from the same --epsilon by
    dperm.private_pipeline's rule (:func:`dperm.pipeline.split_budget`,
    :func:`dperm.pipeline.release_bounds`): S x epsilon on the bounds, the rest on the
    fit.  What is read from the data outside the guarantee (--categories-from-data) is
    warned about and appended to `leaks`.  Sets ``args.epsilon`` to the fit's share,
    ``args.budget`` to the split's record (written to the model file) and, with --seed
    S, seeds the fit with S + 1 (the bounds drew from S: no reused noise), so the model
    equals that of ``dperm bounds --seed S --epsilon (share) ...`` then ``dperm fit
    --seed S+1 --epsilon (rest)``, plus the split's record."""
    from dperm.pipeline import release_bounds

    plan = _Plan(args, table, leaks)
    data = {c: _fit_numbers(table, c) for c in plan.bounded}   # every check before the release
    plan.check_missing(args, table)
    numeric_bounds, label_bounds = release_bounds(
        data, plan.numeric, plan.label if plan.regression else None, plan.eps_bounds,
        random_state=args.seed, **plan.params)
    return plan.finish(args, numeric_bounds, label_bounds)


def plan_streamed_release(args, reader):
    """The plan of a streamed `dperm fit --bounds-share` (--memory-budget, --work-dir,
    --keep-binary): every check that needs no cell, from the header of `reader` (a
    CSVReader); its ``schema`` has placeholder bounds (the released schema's columns,
    lists and fill values)."""
    from dperm.cli._io import Table

    return _Plan(args, Table(reader.path, reader.header, dict.fromkeys(reader.header), 0), [])


def release_streamed(args, reader, plan, rows):
    """The streamed fit's bounds: one pass over `reader` in chunks of `rows` that adds up
    each released column's histogram on the public grid
    (dperm.privacy.quantiles.column_histogram: what estimate_bounds counts, so the counts
    are those of the whole file), then :func:`dperm.pipeline.release_bounds_from_histograms`
    (dperm.privacy.quantiles.bounds_from_histograms: the same law, draws, record and
    warnings as the in-memory fit's estimate_bounds on the same rows).  With --missing
    error the first missing value stops the pass before anything is released.  Returns
    the released schema (as :func:`release_for_fit`); the reader is rewound for the
    fit's pass."""
    from dperm.pipeline import release_bounds_from_histograms
    from dperm.privacy.quantiles import default_grid

    grid = default_grid(plan.params["bounds_range"])
    counts = _Counts(plan.bounded, grid)
    used = set(plan.schema.columns) | {plan.label}
    for table in reader.chunks(rows, usecols=used):
        data = {c: _fit_numbers(table, c) for c in plan.bounded}
        plan.check_missing(args, table)
        counts.add(data)
        del table, data
    reader.rewind()
    counts.warn_clipped()
    numeric_bounds, label_bounds = release_bounds_from_histograms(
        counts.histograms(), plan.numeric, plan.label if plan.regression else None,
        plan.eps_bounds, random_state=args.seed, **plan.params)
    return plan.finish(args, numeric_bounds, label_bounds)


class _Counts:
    """Each column's histogram on the public grid, added chunk by chunk: estimate_bounds'
    counting (missing values dropped, values outside the grid's range counted and clipped
    to its ends)."""

    def __init__(self, columns, grid):
        self.grid = grid
        self.atoms = {c: np.zeros(grid.size, dtype=np.int64) for c in columns}
        self.cells = {c: np.zeros(grid.size - 1, dtype=np.int64) for c in columns}
        self.outside = dict.fromkeys(columns, 0)
        self.n = dict.fromkeys(columns, 0)

    def add(self, data):
        from dperm.privacy.quantiles import column_histogram

        g = self.grid
        for c, v in data.items():
            v = v[~np.isnan(v)]
            over = (v < g[0]) | (v > g[-1])
            if over.any():
                self.outside[c] += int(np.count_nonzero(over))
                v = np.clip(v, g[0], g[-1])
            atoms, cells = column_histogram(v, g)
            self.atoms[c] += atoms
            self.cells[c] += cells
            self.n[c] += int(v.size)

    def warn_clipped(self):
        """estimate_bounds' ClippingWarning, for the whole file's counts."""
        from dperm.exceptions import ClippingWarning

        g = self.grid
        for c, outside in self.outside.items():
            if outside:
                every = " (all of them: the range misses the data)" if outside == self.n[c] \
                    else ""
                warnings.warn(
                    f"column {c!r}: {outside} value(s) outside the public range "
                    f"[{g[0]:g}, {g[-1]:g}]{every} were clipped to its ends; widen bounds_range "
                    "(a count of private rows, for the analyst only)", ClippingWarning,
                    stacklevel=2)

    def histograms(self):
        return {c: (self.atoms[c], self.cells[c]) for c in self.atoms}


def binary_budget(args, man, schema, where):
    """`dperm fit --from-binary DIR`: a binary written by a streamed `--bounds-share` fit
    holds rows encoded with bounds released from the data; its manifest's "budget" says
    at what cost.  Refitting from it is the same one command (the bounds are not drawn
    again: they are in the binary's schema): --epsilon and --bounds-share must be the
    ones it was written with, the fit gets the same share (a seed N again: the fit draws
    from N + 1) and the model file records the same split.  A binary of PUBLIC bounds
    refuses --bounds-share (nothing to release)."""
    from dperm.cli._io import CLIError
    from dperm.pipeline import budget_record

    written = man.get("budget")
    share = getattr(args, "bounds_share", None)
    if written is None:
        if share is not None:
            raise _UsageError(f"--bounds-share: {where} was written with PUBLIC bounds (from "
                              "the --schema it was streamed with), so there is nothing to "
                              "release: drop --bounds-share")
        return
    try:
        total, written_share = float(written["epsilon"]), float(written["bounds_share"])
        eps_bounds, eps_fit = float(written["epsilon_bounds"]), float(written["epsilon_fit"])
        columns, label = list(written["columns"]), written["label"]
    except (KeyError, TypeError, ValueError):
        raise CLIError(f"{where}: the manifest's \"budget\" is not understood") from None
    if share is None or share != written_share or not np.isclose(args.epsilon, total,
                                                                   rtol=1e-12, atol=0.0):
        raise _UsageError(
            f"{where} holds rows encoded with bounds released from the data at epsilon "
            f"{eps_bounds:.6g} (--bounds-share {written_share:g} of --epsilon "
            f"{total:g}): give --epsilon {total:g} --bounds-share {written_share:g}, so that "
            "the fit gets the rest and the model file records the whole release's cost")
    budget = budget_record(epsilon=total, bounds_share=written_share,
                           epsilon_bounds=eps_bounds, epsilon_fit=eps_fit, columns=columns,
                           label=label, task="classification",
                           delta=args.delta if args.perturbation != "none" else 0.0)
    _print_split(budget, dict(schema.numeric), label, None)
    _hand_to_fit(args, budget)


def _hand_to_fit(args, budget):
    """The fit's part: --epsilon becomes its share, the split goes to the model file,
    and a seed N becomes N + 1 (the bounds drew from N)."""
    args.budget = budget
    args.epsilon = budget.epsilon_fit
    if args.seed is not None:
        args.seed = args.seed + 1


def _base_without_bounds(args):
    """--schema BASE.json of --bounds-share: its categories, label, classes and fill;
    one that gives numeric bounds (or the label's) is refused."""
    from dperm.cli._io import load_schema

    base = load_schema(args.schema) if args.schema is not None else None
    if base is not None and (base.numeric or base.label_bounds is not None):
        raise _UsageError(f"--bounds-share releases the numeric bounds, but --schema "
                          f"{args.schema} gives them (numeric: {list(base.numeric)[:5]}"
                          f"{', label bounds' if base.label_bounds is not None else ''}): drop "
                          "--bounds-share to fit with those PUBLIC bounds, or keep only the "
                          "categorical, label and fill entries in the schema")
    return base


def _released_schema(numeric_bounds, cats, label, classes, fill, label_bounds):
    from dperm.cli._io import CLIError
    from dperm.schema import PublicSchema

    try:
        return PublicSchema(numeric=numeric_bounds, categorical=cats, label=label,
                            classes=classes, fill=fill, label_bounds=label_bounds)
    except ValueError as exc:
        raise CLIError(f"the released schema: {exc}") from None


def _print_split(budget, numeric_bounds, label, label_bounds):
    print(f"budget: epsilon {budget['epsilon']:g} = {budget['epsilon_bounds']:.6g} on the "
          f"bounds of {len(budget['columns'])} column(s) (share {budget['bounds_share']:g}) "
          f"+ {budget['epsilon_fit']:.6g} on the fit (basic composition)")
    for c, (lo, hi) in numeric_bounds.items():
        print(f"  {c}: [{lo:.6g}, {hi:.6g}]")
    if label_bounds is not None:
        print(f"  {label} (label): [{label_bounds[0]:.6g}, {label_bounds[1]:.6g}]")
