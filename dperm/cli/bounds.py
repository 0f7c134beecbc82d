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
    quantiles = _pair(args.quantiles, "--quantiles")
    bounds_range = None if args.range is None else _pair(args.range, "--range")
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
    bounds = estimate_bounds(data, args.epsilon, columns=released, quantiles=quantiles,
                             bounds_range=bounds_range, random_state=args.seed)
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
def check_bounds_share_args(args):
    """`dperm fit --bounds-share`: the options it cannot be combined with, refused
    before any data is read."""
    given = [o for o, on in (
        ("--memory-budget/--work-dir/--keep-binary",
         any(getattr(args, k, None) is not None
             for k in ("memory_budget", "work_dir", "keep_binary"))),
        ("--from-binary", getattr(args, "from_binary", None) is not None),
        ("--label-bound", getattr(args, "label_bound", None) is not None)) if on]
    if given:
        raise _UsageError(f"--bounds-share cannot be combined with {', '.join(given)}: it "
                          "releases the numeric bounds (and a regression label's range) from "
                          "the data in memory; drop " + " and ".join(given) + " or run "
                          "`dperm bounds` then `dperm fit --schema` instead")
    if args.data is None:
        raise _UsageError("--bounds-share needs DATA.csv (the shipped Adult data has public "
                          "bounds already: drop --bounds-share)")
    if args.categories_from_data and args.bounds_share is None:
        raise _UsageError("--categories-from-data is for --bounds-share (without it, dperm "
                          "fit reads a schema's PUBLIC lists)")


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
    from dperm.pipeline import budget_record, release_bounds, split_budget

    base = _base_without_bounds(args)
    label, regression = _label_column(args, base, table)
    if label is None:
        raise _UsageError("fit: --label COLUMN is required (or give label.column in the schema)")
    cats = _fit_categories(args, base, table, label, regression, leaks)
    classes = None if regression else cats.pop(label)
    numeric = [c for c in table.header if c != label and c not in cats]
    bounded = numeric + ([label] if regression else [])
    eps_bounds, eps_fit = split_budget(args.epsilon, args.bounds_share, bounded)
    data = {c: _fit_numbers(table, c) for c in bounded}    # every check before the release
    numeric_bounds, label_bounds = release_bounds(data, numeric, label if regression else None,
                                                  eps_bounds, random_state=args.seed)
    fill = {c: v for c, v in (base.fill.items() if base else ()) if c in numeric or c in cats}
    schema = _released_schema(numeric_bounds, cats, label, classes, fill, label_bounds)
    budget = budget_record(epsilon=args.epsilon, bounds_share=args.bounds_share,
                           epsilon_bounds=eps_bounds, epsilon_fit=eps_fit, columns=bounded,
                           label=label, task=args.task,
                           delta=args.delta if args.perturbation != "none" else 0.0)
    _print_split(budget, numeric_bounds, label, label_bounds)
    _hand_to_fit(args, budget)
    return schema


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
