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
