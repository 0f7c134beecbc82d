"""`dperm fit`: in memory, streamed (larger than memory) or from a kept binary; the
privacy record and the solver diagnostics it prints."""
import contextlib
import os
import time
import warnings

from dperm.cli._common import _fmt, _note, _UsageError, _write_text


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


def _labelled_table(args, table, schema, leaks):
    """The label column, the schema (inferred from the data, with the leak noted in
    `leaks`, when none is given), the table with the missing-value rule applied and the
    count of rows read before it (public_rows)."""
    from dperm.cli._io import infer_schema

    label = _resolve_label(args, schema, table.columns, table.name)
    if schema is None:
        schema = infer_schema(table, label)
        leaks += ["numeric bounds", "categories"]
    else:
        _check_schema_columns(args, schema, label, table.header)
    n_read = table.n_rows if args.missing == "drop" else None
    return _missing_rows(table, schema, label, args.missing), schema, label, n_read


def _normalising_count(args, n_read):
    """The public count that normalises the fit (the estimator's n_public): --n-public
    when given; else, when rows with a missing value were dropped (--missing drop, now
    or when a binary was written: `n_read` is then the count of rows READ, before the
    drop), that count, so that a row whose missing cell drops it changes nothing
    released (docs/privacy_analysis.md, "Rows dropped for missing values"); else None
    (the estimator's rule: the row count)."""
    if args.n_public is not None:
        return args.n_public
    return None if n_read is None else int(n_read)


def _estimator_count(args, n_read, n_rows, needs_count=True):
    """The estimator's n_public: `_normalising_count`; under add_remove without one, the
    row count, resolved here (this command gives the count warning, naming --n-public,
    so the estimator gets the count it would read itself and gives no warning of its
    own).  A fit that needs no count (``needs_count`` False: AdaSSP, no noise) keeps
    None, so that its record holds none."""
    n_public = _normalising_count(args, n_read)
    if n_public is None and needs_count and args.neighbouring == "add_remove":
        return int(n_rows)
    return n_public


def _resolve_classes(args, table, label, schema, leaks):
    """The classes as strings ([negative, positive] for two), from the schema or (with
    a warning) the data."""
    from dperm.cli._io import CLIError, distinct_values, resolve_label

    classes = schema.classes
    pos = args.positive
    if classes is None:
        values = sorted(distinct_values(resolve_label(table, label)))
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
    from dperm.cli._io import CLIError, header_hint

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
                       f"{', '.join(header)}){header_hint(header)}")
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
    if args.perturbation in ("adassp", "auto") and getattr(args, "task", None) != "regression":
        raise _UsageError(f"--perturbation {args.perturbation} is for --task regression")
    if args.perturbation == "adassp" and args.delta == 0:
        raise _UsageError("--perturbation adassp is an (epsilon, delta) mechanism: give "
                          "--delta > 0")
    if args.perturbation == "amp" and args.delta == 0:
        raise _UsageError("--perturbation amp is an (epsilon, delta) mechanism: give --delta "
                          "> 0 (e.g. 1e-6, well below 1/n)")
    if args.n_public is not None and args.neighbouring != "add_remove":
        raise _UsageError("--n-public is only used with --neighbouring add_remove (under "
                          "replace_one the row count n is public and used as it is)")
    if args.perturbation == "none" and args.delta > 0:
        _note("--delta is not used by --perturbation none (no noise, no privacy)")


def _given_schema(args, table, leaks):
    """The schema of an in-memory fit: --schema's, or with --bounds-share the one whose
    bounds are released from --epsilon's share (dperm.cli.bounds.release_for_fit), or
    None (read from the data, a leak). What --bounds-share read from the data outside
    the guarantee (--categories-from-data, warned about there) is appended to leaks."""
    from dperm.cli._io import load_schema
    from dperm.cli.bounds import release_for_fit

    if getattr(args, "bounds_share", None) is not None:
        return release_for_fit(args, table, leaks)
    return load_schema(args.schema) if args.schema is not None else None


def _streaming(args):
    return any(v is not None for v in (args.memory_budget, args.work_dir, args.keep_binary))


def cmd_fit(args):
    from dperm.cli._io import (
        CLIError,
        label_codes,
        load_schema,
        model_to_json,
        read_csv,
        schema_to_json,
    )
    from dperm.cli._stream import encoded_design_rows
    from dperm.exceptions import PrivacyLeakWarning

    _check_output(args)
    _check_privacy_args(args)
    from dperm.cli.bounds import check_bounds_share_args

    check_bounds_share_args(args)
    if getattr(args, "task", "classification") == "regression":
        return _fit_regression(args)
    if args.h is None:
        args.h = 0.5
    if getattr(args, "label_bound", None) is not None:
        raise _UsageError("--label-bound is for --task regression")
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
        schema = _given_schema(args, table, leaks)
        source = os.path.basename(args.data)
    table, schema, label, n_read = _labelled_table(args, table, schema, leaks)
    classes = _resolve_classes(args, table, label, schema, leaks)
    schema = schema.replace(label=label, classes=classes)
    if leaks and getattr(args, "bounds_share", None) is None:   # else warned already
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
    Xa = encoded_design_rows(table, schema, not args.no_intercept, args.dtype or "float64",
                             sparse=layout == "csr")
    names = schema.feature_names()
    y = label_codes(table, label, classes)
    if Xa.shape[0] < 2:
        raise CLIError(f"{table.name}: at least 2 data rows are needed, found {Xa.shape[0]}")
    shape = (Xa.shape[0], schema.n_features)
    return _fit_and_write(args, Xa, y, schema, names, leaks, source, table.name, shape, n_read)


def _fit_and_write(args, Xa, y, schema, names, leaks, source, shown_name, shape, n_read):
    """Fit on the design rows Xa (intercept column included when fitting one) and int8
    labels y (k = classes[k]; two classes: 1 = the positive class); print the record,
    write the model."""
    import numpy as np

    from dperm.cli._io import model_to_json
    from dperm.exceptions import PrivacyLeakWarning
    from dperm.model_io import model_file
    from dperm.sklearn.classifier import PrivateLinearClassifier

    classes = list(schema.classes)
    if args.perturbation == "none":
        warnings.warn("--perturbation none fits WITHOUT privacy (a non-private baseline)",
                      PrivacyLeakWarning, stacklevel=2)
    # The rows already carry the intercept's constant column (as the estimator would
    # append it), so the estimator fits them as they are: a memory-mapped binary is read
    # in place instead of copied to append a column.
    K = len(classes)
    delta = args.delta if args.perturbation != "none" else 0.0
    n_public = _estimator_count(args, n_read, Xa.shape[0])
    clf = PrivateLinearClassifier(
        loss=args.loss, perturbation=args.perturbation, epsilon=args.epsilon, delta=delta,
        neighbouring=args.neighbouring, n_public=n_public, alpha=args.alpha,
        h=args.h, data_norm=1.0, fit_intercept=False, classes=list(range(K)),
        n_threads=args.threads, random_state=args.seed)
    if args.neighbouring == "add_remove" and args.n_public is None \
            and args.perturbation != "none":
        warnings.warn(
            f"--n-public not given: under --neighbouring add_remove the objective is "
            f"normalised by the row count of the data ({n_public or shape[0]}), so the guarantee covers "
            "neighbouring data sets of that size only. Give --n-public N (a public count, "
            "e.g. the planned sample size) for the full add/remove guarantee.",
            PrivacyLeakWarning, stacklevel=2)
    t0 = time.perf_counter()
    only = classes[int(y[0])] if len(y) and (np.asarray(y) == y[0]).all() else None
    if only is not None:
        warnings.warn(f"every label of {shown_name} is {only!r}: none of the other classes "
                      f"{[c for c in classes if c != only][:5]} "
                      "occurs, so the model learns to predict one class (plus noise); check "
                      "the label column and the rows (a notice about the private data: do not "
                      "publish it)", UserWarning, stacklevel=2)
    with warnings.catch_warnings():
        # the library's own wording of the warning above names its parameter, not the data
        warnings.filterwarnings("ignore", message="y: every label is")
        clf.fit(Xa, y)
    seconds = time.perf_counter() - t0
    coef, intercept = _classifier_coef(clf, args.no_intercept, K)
    rec = clf.privacy_
    # No accuracy on the training rows is printed: it is a statistic of the private data
    # computed outside the mechanism, so publishing it would not be covered by epsilon.
    # (--holdout reports accuracy on a separate file the user declares public.)
    _print_privacy(rec, shown_name, shape)
    _print_diagnostics(clf.fit_diagnostics_, seconds)
    model = model_file(
        task="classification",
        estimator={"class": "PrivateLinearClassifier", "loss": args.loss,
                   "perturbation": args.perturbation, "epsilon": args.epsilon,
                   "delta": delta, "neighbouring": args.neighbouring,
                   "n_public": args.n_public, "alpha": args.alpha, "h": args.h,
                   "fit_intercept": not args.no_intercept, "data_norm": 1.0},
        record=clf.release_record_, coef=coef, intercept=intercept, schema=schema,
        classes=classes, data=source, read_from_data=leaks,
        budget=getattr(args, "budget", None))
    _write_text(args.output, model_to_json(model), "model", atomic=True)
    print(f"model written to {args.output} ({len(names)} features"
          f"{' + intercept' if not args.no_intercept else ''})")
    if args.holdout:
        _report_holdout(args.holdout, schema, coef, intercept, args)
    return 0


def _classifier_coef(clf, no_intercept, K):
    """The fitted model as (coef, intercept): (d,) and a float for two classes, (K, d)
    and (K,) for K; the last column of the rows is the intercept's constant unless
    --no-intercept."""
    import numpy as np

    from dperm.sklearn.classifier import split_intercept

    W = np.asarray(clf.coef_, dtype=np.float64)          # (1, d') for two classes, (K, d')
    if no_intercept:
        coef, intercept = W, np.zeros(W.shape[0])
    else:
        coef, intercept = split_intercept(W, 1.0)
    coef = np.asarray(coef, dtype=np.float64).reshape(W.shape[0], -1)
    intercept = np.asarray(intercept, dtype=np.float64).reshape(-1)
    if K == 2:
        return coef[0], float(intercept[0])
    return coef, intercept


# ----------------------------------------------------------------------------- streaming
_STREAM_ONLY = (("memory_budget", "--memory-budget"), ("work_dir", "--work-dir"),
                ("keep_binary", "--keep-binary"))


def _fit_streamed(args):
    """DATA.csv read in chunks (sized by --memory-budget) into an on-disk binary of the
    design rows, then fitted from it in place; the binary is deleted unless kept."""
    from dperm.cli._io import CLIError, label_codes

    opt = _stream_option(args)
    if args.data is None:
        raise _UsageError(f"{opt} streams a CSV file: give DATA.csv (the shipped Adult data "
                          "is fitted in memory)")

    def fitted_schema(schema, label):
        classes = schema.classes
        if classes is None:
            raise CLIError(f"{opt}: the schema must give the classes (\"label\": "
                           "{\"column\": ..., \"classes\": [negative, positive]}, or every "
                           "label for more than two); a streamed fit never reads them from "
                           "the data")
        out = schema.replace(label=label, classes=_positive_last(classes, args.positive))
        return out, out        # the missing-value rule reads the classes as fitted

    def chunk(table, schema, encode):
        # the in-memory fit's order: the encoding's errors before the labels'
        Xa = encode(table)
        return Xa, label_codes(table, schema.label, schema.classes)

    with _streamed_design(args, opt, "public bounds, categories and classes", fitted_schema,
                          chunk) as (Xa, y, schema, n, n_read, shown_name):
        return _fit_and_write(args, Xa, y, schema, schema.feature_names(), [],
                              os.path.basename(args.data), shown_name,
                              (n, schema.n_features), n_read)


def _stream_option(args):
    """The option that asked for streaming (its name for the errors)."""
    return next(o for k, o in _STREAM_ONLY if getattr(args, k) is not None)


@contextlib.contextmanager
def _streamed_design(args, opt, needs, fitted_schema, chunk, *, regression=False):
    """DATA.csv streamed in chunks (sized by --memory-budget) into an on-disk binary of
    the design rows and targets, memory-mapped; what the two tasks share.

    The task's parts: `fitted_schema(schema, label)` -> (the schema the rows are encoded
    and fitted with, the schema the missing-value rule reads); `chunk(table, schema,
    encode)` -> (design rows, targets) of one chunk, `encode(table)` giving its design
    rows (the checks in the in-memory fit's order); `needs`, what the schema must give
    (for the error without --schema); `regression`, float targets in the binary.
    With --bounds-share the schema's bounds are released first, by one more pass over
    the file (dperm.cli.bounds.release_streamed), after every check that needs no cell.
    Yields (design rows, targets, fitted schema, rows kept, the count read before
    --missing drop or None, the data's name).  The binary is removed on leaving the
    block unless --keep-binary keeps it; a complete kept binary stays after an error in
    the block, with a note."""
    from dperm.cli import _stream as st
    from dperm.cli._io import CLIError, CSVReader, load_schema

    share = getattr(args, "bounds_share", None) is not None
    if args.schema is None and not share:
        raise CLIError(f"{opt}: streaming needs --schema SCHEMA.json with {needs} (or "
                       "--bounds-share S to release the bounds from --epsilon); reading them "
                       "from the data would take a pass over the private rows outside the "
                       "privacy guarantee")
    if args.keep_binary is not None and args.work_dir is not None:
        raise _UsageError("give --keep-binary DIR (a binary that stays) or --work-dir DIR (where "
                          "a temporary one goes), not both")
    budget = args.memory_budget or st.DEFAULT_BUDGET
    schema = None if share else load_schema(args.schema)
    reader = CSVReader(args.data, delimiter=args.delimiter)
    with reader:
        plan, schema, label, out, rule, layout, (rows, per_row) = _stream_setup(
            args, reader, schema, fitted_schema, budget)
        directory, created = _binary_dir(args)
        finished = False
        try:
            if plan is not None:      # the bounds: one pass of histograms, then the release
                from dperm.cli.bounds import release_streamed

                schema = release_streamed(args, reader, plan, rows)
                out, rule = fitted_schema(schema, label)
            _save_streamed_schema(args, out, regression)
            _note(f"streaming {reader.path} in chunks of {rows} rows (--memory-budget "
                  f"{st.format_size(budget)}, about {per_row} bytes a row) into a "
                  f"{'CSR' if layout == 'csr' else 'dense'} {args.dtype or 'float64'} binary "
                  f"in {directory}")
            n, dropped = _write_binary(args, reader, directory, rows, out, rule, layout, chunk,
                                       regression)
            finished = True
            Xa, y, _ = st.open_design(directory)
            # --missing drop: the objective is normalised by the count READ, before the
            # drop (public under replace-one; docs/privacy_analysis.md, section 15)
            yield Xa, y, out, n, n + dropped if args.missing == "drop" else None, reader.path
            if args.keep_binary is not None:
                _note(f"binary kept in {directory} (it holds the private rows; refit with "
                      f"--from-binary {directory})")
        except BaseException:
            if args.keep_binary is not None and finished:
                _note(f"the binary in {directory} is complete and kept; fit from it with "
                      f"--from-binary {directory}")
            else:
                st.remove_binary(directory, created)
            raise
        finally:
            # without --keep-binary the binary goes; its memory maps keep the rows
            # readable after its files are removed
            if args.keep_binary is None:
                st.remove_binary(directory, created)


def _stream_setup(args, reader, schema, fitted_schema, budget):
    """The checks of a streamed fit that need the header only: (the --bounds-share plan or
    None, the schema (placeholder bounds under a plan), the label, the fitted schema, the
    missing-value rule's schema, the layout, the rows per chunk)."""
    from dperm.cli import _stream as st
    from dperm.cli._io import Table, _check_columns

    plan = None
    if schema is None:
        from dperm.cli.bounds import plan_streamed_release

        plan = plan_streamed_release(args, reader)
        schema = plan.schema
    label = _resolve_label(args, schema, reader.header, reader.path)
    _check_schema_columns(args, schema, label, reader.header)
    _check_columns(Table(reader.path, reader.header, dict.fromkeys(reader.header), 0), schema)
    out, rule = fitted_schema(schema, label)
    layout = _layout(args, out)
    chunking = st.chunk_rows(budget, out, layout, args.dtype or "float64", not args.no_intercept)
    return plan, schema, label, out, rule, layout, chunking


def _save_streamed_schema(args, out, regression):
    """--save-schema of a streamed classification (a regression writes it after the
    pass, as its in-memory fit does)."""
    from dperm.cli._io import model_to_json, schema_to_json

    if args.save_schema and not regression:
        _write_text(args.save_schema, model_to_json(schema_to_json(out)), "schema")
        _note(f"schema written to {args.save_schema}")


def _write_binary(args, reader, directory, rows, out, rule, layout, chunk, regression):
    """The pass that writes the binary of the design rows and targets; returns (rows
    kept, rows dropped)."""
    from dperm.cli import _stream as st
    from dperm.cli._io import CLIError, nothing_left_error, schema_to_json
    from dperm.privacy.record import record_to_dict

    dtype = args.dtype or "float64"
    intercept = not args.no_intercept
    with _writing_binary(directory):
        writer = st.DesignWriter(directory, layout, dtype, out.n_features + intercept,
                                 regression=regression)
    try:
        dropped, missing_cols = _stream_rows(reader, writer, rows, out, rule, layout,
                                             dtype, intercept, args.missing, directory, chunk)
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
    budget = getattr(args, "budget", None)
    with _writing_binary(directory):
        writer.finish({"schema": schema_to_json(out), "label": out.label,
                       "classes": out.classes, "feature_names": out.feature_names(),
                       "intercept_column": intercept,
                       "source": os.path.basename(args.data), "rows": _BINARY_ROWS,
                       # the rows read before --missing drop: the public count
                       # a later --from-binary fit normalises by
                       "rows_read": n + dropped, "missing": args.missing,
                       # --bounds-share: what the bounds in the schema cost (a later
                       # --from-binary fit records the same split)
                       **({} if budget is None else {"budget": record_to_dict(budget)})})
    return n, dropped


def _stream_rows(reader, writer, rows, schema, rule, layout, dtype, intercept, missing,
                 directory, chunk):
    """One pass over the CSV in chunks of `rows`, each chunk as the in-memory fit treats
    the whole table: the missing-value rule (the schema `rule`'s columns and the label:
    "error" stops at the first, "drop" removes the rows), then `chunk(table, schema,
    encode)`: the design rows (the public encoding with the intercept's constant column,
    `encoded_design_rows`: the bits of design_rows(encode_rows(...))) and the task's
    targets, appended to the binary.  Every step maps a row on its own, so the binary
    holds exactly the in-memory fit's rows and targets.  Returns (rows dropped, the
    columns that had missing values)."""
    import numpy as np

    from dperm.cli import _stream as st
    from dperm.cli._io import missing_error, missing_masks

    label = schema.label
    dropped, missing_cols, buf = 0, {}, None

    def encode(table):
        nonlocal buf
        if buf is None and layout == "dense" and intercept:   # reused by every chunk
            buf = np.empty((rows, schema.n_features + 1))
        return st.encoded_design_rows(table, schema, intercept, dtype, sparse=layout == "csr",
                                      out=buf)

    for table in reader.chunks(rows, usecols=set(schema.columns) | {label}):
        masks = missing_masks(table, rule, label, rule.classes)
        if masks:
            if missing == "error":
                raise missing_error(table, masks, rule, label)
            drop = np.zeros(table.n_rows, dtype=bool)
            for m in masks.values():
                drop |= m
            missing_cols.update(dict.fromkeys(masks))
            dropped += int(drop.sum())
            table = table.take(np.flatnonzero(~drop))
            if table.n_rows == 0:
                continue
        Xa, y = chunk(table, schema, encode)
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
    from dperm.cli.bounds import binary_budget

    binary_budget(args, man, schema, where)     # a --bounds-share binary: the same split
    if args.save_schema:
        _write_text(args.save_schema, model_to_json(schema_to_json(schema)), "schema")
        _note(f"schema written to {args.save_schema}")
    # a binary written with --missing drop holds the rows left after it: the fit is
    # normalised by the count read before it, as the streamed fit that wrote it was
    n_read = man.get("rows_read") if man.get("missing") == "drop" else None
    return _fit_and_write(args, Xa, y, schema, schema.feature_names(), [], man["source"],
                          where, (Xa.shape[0], schema.n_features), n_read)


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


_NEIGHBOURING_TEXT = {
    "replace_one": "replace_one (one row replaced by another; n public)",
    "add_remove": "add_remove (one row added or removed)",
}


_MECHANISM_TITLE = {"objective": "objective perturbation (Algorithm 2)",
                    "output": "output perturbation (Algorithm 1)",
                    "amp": "approximate minima perturbation (AMP)",
                    "none": "NON-PRIVATE (no noise)"}


def _print_privacy(rec, source, shape):
    """The guarantee, from the public record only (nothing data-dependent): a title line,
    the rows of the guarantee, the mechanism, the fit's constants and the classes, then
    the footnotes."""
    mech = rec.get("mechanism")
    print(f"fit on {source}: {_MECHANISM_TITLE.get(mech, str(mech))}, {rec.get('loss')} loss, "
          f"n = {shape[0]} rows, d = {shape[1]} features")
    rows = (_guarantee_rows(rec, mech) + _mechanism_rows(rec, mech) + _constant_rows(rec)
            + _classes_rows(rec, mech))
    for k, v in rows:
        print(f"  {k:<17} {_fmt(v)}")
    _print_footnotes(rec, mech)


def _guarantee_rows(rec, mech):
    """epsilon, delta, the neighbouring relation and the noise (epsilon alone without
    noise)."""
    if mech == "none":
        return [("epsilon", rec.get("epsilon"))]
    delta_total = rec.get("delta_total", rec.get("delta") or 0.0)
    kind = "pure epsilon-DP" if not delta_total else "(epsilon, delta)-DP"
    rows = [("epsilon", rec.get("epsilon_total", rec.get("epsilon"))),
            ("delta", f"{_fmt(float(delta_total))} ({kind})"),
            ("neighbouring", _NEIGHBOURING_TEXT.get(rec.get("neighbouring"),
                                                    str(rec.get("neighbouring")))),
            ("noise", _noise_text(rec, mech))]
    if mech == "amp":
        rows.append(("sigma (output)", f"{_fmt(rec.get('sigma_output'))} (Gaussian noise "
                                       "added to the approximate minimizer)"))
    return rows


def _noise_text(rec, mech):
    if rec.get("noise") != "gaussian":
        return "Laplace-type (density ~ exp(-beta ||b||))"
    where = ("(per coordinate of b in the objective's b.f/n)" if mech != "output"
             else "(per coordinate of the coefficients)")
    return f"Gaussian, sigma = {_fmt(rec.get('sigma'))} {where}"


def _mechanism_rows(rec, mech):
    """epsilon' and Delta (objective perturbation, AMP), beta, the output grid."""
    rows = []
    if mech in ("objective", "amp"):
        rows += [("epsilon'", rec.get("epsilon_prime")), ("Delta", rec.get("extra_l2"))]
    if rec.get("beta") is not None:
        rows.append(("beta", rec.get("beta")))
    if rec.get("grid") is not None:
        rows.append(("grid", f"{_fmt(rec.get('grid'))} (released coefficients are "
                             "multiples of it)"))
    return rows


def _constant_rows(rec):
    return [("Lambda (alpha)", rec.get("alpha")), ("curvature c", rec.get("curvature")),
            ("row norm bound R", rec.get("data_norm")),
            ("n (normalising)", rec.get("n_samples"))]


def _classes_rows(rec, mech):
    """K > 2 classes: one-vs-rest or one multinomial model (nothing for two)."""
    K = rec.get("n_classes") or 2
    if K <= 2:
        return []
    ovr = rec.get("multiclass") == "ovr"
    if mech == "none":
        text = "one-vs-rest, one binary model per class" if ovr else \
            "one multinomial (softmax) model"
    elif ovr:
        text = (f"one-vs-rest, {K} binary models, each with epsilon = "
                f"{_fmt(rec.get('epsilon'))}, delta = {_fmt(float(rec.get('delta') or 0.0))} "
                f"(total epsilon = {_fmt(rec.get('epsilon_total'))}, delta = "
                f"{_fmt(float(rec.get('delta_total') or 0.0))})")
    else:
        text = "one multinomial (softmax) model: one release with the whole epsilon and delta"
    return [("classes", f"{K}: {text}")]


def _print_footnotes(rec, mech):
    """What the rows above mean for one-vs-rest, and why Delta > 0."""
    if (rec.get("n_classes") or 2) > 2 and rec.get("multiclass") == "ovr" and mech != "none":
        print("  (epsilon', Delta, beta, sigma and Lambda above are those of each one-vs-rest "
              "model)")
    if mech == "objective" and not rec.get("delta") and (rec.get("extra_l2") or 0) > 0:
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
    counts = np.zeros(len(classes), dtype=np.int64)     # per class: the majority baseline
    with CSVReader(path, what="holdout file", delimiter=args.delimiter) as reader:
        for table in reader.chunks(rows, usecols=set(schema.columns) | {label}):
            n0 = table.n_rows
            table = _apply_missing_quiet(table, schema, label, args.missing)
            dropped += n0 - table.n_rows
            if table.n_rows == 0:
                continue
            X, _ = encode_rows(table, schema, unknown="error", sparse=layout == "csr")
            y = label_codes(table, label, classes)
            score = np.asarray(apply_norm_bound(X, 1.0, "clip") @ np.transpose(coef)) + intercept
            pred = (score > 0) if np.ndim(coef) == 1 else np.argmax(score, axis=1)
            right += int((pred == y).sum())
            counts += np.bincount(np.asarray(y, dtype=np.intp), minlength=len(classes))
            total += table.n_rows
    if dropped:
        _note_dropped(dropped, total, "holdout rows", path)
    if total == 0:
        raise CLIError(f"{path}: every holdout row has a missing value in a used column; "
                       "no rows left to score")
    print(f"holdout accuracy: {right / total:.4f} on {total} rows of {path} "
          "(a file you declared public; not covered by epsilon otherwise)")
    top = int(np.argmax(counts))
    print(f"majority-class baseline: {counts[top] / total:.4f} (always predicting "
          f"{classes[top]!r}, on the same rows)")


def _apply_missing_quiet(table, schema, label, policy):
    from dperm.cli._io import apply_missing

    table, _ = apply_missing(table, schema, label, schema.classes, policy, allow_empty=True)
    return table




# ----------------------------------------------------------------------------- regression
def _regression_labels(table, label):
    """The label column as finite floats (a regression target), parsed by the CSV reader's
    vectorised number parser; an error names the first bad cell's row and line."""
    import numpy as np

    from dperm.cli._io import CLIError, numeric_cells, resolve_label

    column = resolve_label(table, label)
    y, bad = numeric_cells(table, label, finite=False)
    if bad is not None:
        raise CLIError(f"{table.name}: --task regression needs a numeric label column; "
                       f"{label!r} holds {str(column[bad])!r} ({table.where(bad)})")
    nonfinite = np.flatnonzero(~np.isfinite(y))
    if nonfinite.size:
        i = int(nonfinite[0])
        raise CLIError(f"{table.name}: the label column {label!r} holds a missing or non-finite "
                       f"value {str(column[i])!r} ({table.where(i)})")
    return np.array(y, dtype=np.float64)


def _regression_rows(args):
    """The in-memory regression fit's rows: (design rows, targets, schema, feature names,
    (n, d), the data's name, what was read from the data)."""
    from dperm.cli._io import CLIError, encode_rows, read_csv
    from dperm.cli._stream import design_rows

    leaks = []
    table = read_csv(args.data, delimiter=args.delimiter)
    schema = _given_schema(args, table, leaks)
    table, schema, label, n_read = _labelled_table(args, table, schema, leaks)
    schema = schema.replace(label=label, classes=None)
    y = _regression_labels(table, label)
    X, names = encode_rows(table, schema, unknown="error", sparse=_layout(args, schema) == "csr")
    if X.shape[0] < 2:
        raise CLIError(f"{table.name}: at least 2 data rows are needed, found {X.shape[0]}")
    Xa = design_rows(X, not args.no_intercept, args.dtype or "float64")
    return Xa, y, schema, names, X.shape, table.name, leaks, n_read


def _streamed_regression_rows(args):
    """_regression_rows for --memory-budget / --work-dir: DATA.csv streamed in chunks
    into a temporary binary (_streamed_design: the same rows and targets),
    memory-mapped; the binary's files are removed once mapped."""
    def fitted_schema(schema, label):
        # the missing-value rule reads the schema as given, as _labelled_table does
        return schema.replace(label=label, classes=None), schema.replace(label=label)

    def chunk(table, schema, encode):
        # the in-memory fit's order: the targets' errors before the encoding's
        y = _regression_labels(table, schema.label)
        return encode(table), y

    with _streamed_design(args, _stream_option(args), "public bounds and categories",
                          fitted_schema, chunk, regression=True) as rows:
        Xa, y, schema, n, n_read, shown_name = rows
    return (Xa, y, schema, schema.feature_names(), (n, schema.n_features), shown_name, [],
            n_read)


def _fit_regression(args):
    """`dperm fit --task regression`: PrivateLinearRegression on the encoded rows (in
    memory, or streamed from a CSV larger than memory with --memory-budget / --work-dir),
    the model file with task "regression" (format version 3)."""
    from dperm.cli._io import (
        model_to_json,
        schema_to_json,
    )
    from dperm.exceptions import PrivacyLeakWarning
    from dperm.sklearn.regressor import PrivateLinearRegression, resolve_method

    _check_regression_args(args)
    Xa, y, schema, names, shape, shown, leaks, n_read = (
        _streamed_regression_rows if _streaming(args) else _regression_rows)(args)
    if leaks and getattr(args, "bounds_share", None) is None:   # else warned already
        warnings.warn(
            f"{', '.join(leaks)} were read from the private data (no --schema or an incomplete "
            "one): the released model is NOT differentially private with respect to them. "
            "Give PUBLIC bounds and categories in a schema file (see dperm fit --help).",
            PrivacyLeakWarning, stacklevel=2)
    if args.save_schema:
        _write_text(args.save_schema, model_to_json(schema_to_json(schema)), "schema")
        _note(f"schema written to {args.save_schema}")
    if args.perturbation == "none":
        warnings.warn("--perturbation none fits WITHOUT privacy (a non-private baseline)",
                      PrivacyLeakWarning, stacklevel=2)
    delta = args.delta if args.perturbation != "none" else 0.0
    label_bound, label_bounds = _regression_label_range(args, schema)
    B = label_bound if label_bound is not None else (label_bounds[1] - label_bounds[0]) / 2.0
    h = args.h if args.h is not None else B
    method = resolve_method(args.perturbation, n=int(Xa.shape[0]), d=int(Xa.shape[1]),
                            epsilon=args.epsilon, delta=delta)
    n_public = _estimator_count(args, n_read, Xa.shape[0],
                                needs_count=method in ("objective", "output"))
    est = PrivateLinearRegression(
        method=args.perturbation, epsilon=args.epsilon, delta=delta,
        neighbouring=args.neighbouring, n_public=n_public, alpha=args.alpha, h=h,
        label_bound=label_bound, label_bounds=label_bounds, data_norm=1.0,
        fit_intercept=False, n_threads=args.threads, random_state=args.seed)
    t0 = time.perf_counter()
    if args.neighbouring == "add_remove" and args.n_public is None \
            and args.perturbation != "none":
        warnings.warn(
            f"--n-public not given: under --neighbouring add_remove the objective is "
            f"normalised by the row count of the data ({n_public or shape[0]}), so the guarantee "
            "covers neighbouring data sets of that size only. Give --n-public N.",
            PrivacyLeakWarning, stacklevel=2)
    est.fit(Xa, y)
    seconds = time.perf_counter() - t0
    coef, intercept = _regression_coef(est, args.no_intercept)
    _print_regression(est, shown, shape, seconds)
    model = _regression_model(args, est, coef, intercept, schema, leaks, delta=delta, h=h,
                              label_bound=label_bound, label_bounds=label_bounds)
    _write_text(args.output, model_to_json(model), "model", atomic=True)
    print(f"model written to {args.output} ({len(names)} features"
          f"{' + intercept' if not args.no_intercept else ''})")
    return 0


def _check_regression_args(args):
    """The options --task regression refuses (before any data is read)."""
    if args.label_bound is None and args.schema is None \
            and getattr(args, "bounds_share", None) is None:
        raise _UsageError("fit: --task regression needs --label-bound B, a PUBLIC bound on "
                          "|label|, or a --schema with the label's public bounds (dperm bounds "
                          "--task regression --label COLUMN writes them), or --bounds-share S "
                          "to release the label's range from --epsilon")
    if args.perturbation == "amp":
        raise _UsageError("--perturbation amp is not available for --task regression "
                          "(objective, output or none)")
    if args.positive is not None:
        raise _UsageError("--positive is for classification")
    if args.from_binary is not None or args.keep_binary is not None:
        raise _UsageError("--keep-binary and --from-binary are for classification (--task "
                          "regression streams a CSV file with --memory-budget / --work-dir)")
    if args.data is None:
        raise _UsageError("fit: --task regression needs DATA.csv (the shipped Adult data has "
                          "a class label)")


def _regression_label_range(args, schema):
    """The label's public range as (label_bound, label_bounds), one of them None:
    --label-bound B ([-B, B], no centre), else the schema's label.bounds (dperm bounds
    --task regression), centred on (low + high) / 2 with bound (high - low) / 2
    (PrivateLinearRegression(label_bounds=...))."""
    label_bounds = schema.label_bounds
    if args.label_bound is not None:
        if label_bounds is not None:
            _note(f"--label-bound {args.label_bound:g} overrides the schema's label bounds "
                  f"[{label_bounds[0]:g}, {label_bounds[1]:g}] (no centring)")
        return args.label_bound, None
    if label_bounds is None:
        raise _UsageError(f"fit: --task regression needs --label-bound B, a PUBLIC bound on "
                          f"|label|: the schema {args.schema} has no label bounds (write them "
                          f"with dperm bounds --task regression --label COLUMN, or add "
                          f"\"bounds\": [low, high] to its label)")
    return None, [float(v) for v in label_bounds]


def _regression_coef(est, no_intercept):
    """The fitted model as (coef, intercept): the last column of the rows is the
    intercept's constant (unless --no-intercept), plus the public label centre."""
    import numpy as np

    from dperm.sklearn.classifier import split_intercept

    W = np.asarray(est.coef_, dtype=np.float64)
    if no_intercept:     # est.intercept_: 0.0, or the public label centre
        return W, float(est.intercept_)
    coef, intercept = split_intercept(W, 1.0)
    return coef, float(intercept) + est.intercept_


def _print_regression(est, shown, shape, seconds):
    """The privacy record, the label bound and the analyst-only diagnostics."""
    rec = est.privacy_
    _print_privacy(rec, shown, shape)
    if rec.get("label_centre") is None:
        print(f"  {'label bound B':<17} {_fmt(rec['label_bound'])} (targets clipped to [-B, B]; "
              f"pseudo-Huber h = {_fmt(rec['h'])})")
    else:
        print(f"  {'label bound B':<17} {_fmt(rec['label_bound'])} around the centre "
              f"c = {_fmt(rec['label_centre'])} from the schema's label bounds (targets "
              f"clipped to [c - B, c + B], fitted as label - c; pseudo-Huber h = "
              f"{_fmt(rec['h'])})")
    diag = dict(est.fit_diagnostics_)
    _print_diagnostics(diag, seconds)
    print(f"  {'labels clipped':<17} {_fmt(diag.get('labels_clipped'))}")


def _regression_model(args, est, coef, intercept, schema, leaks, *, delta, h, label_bound,
                      label_bounds):
    """The model file's content (task "regression")."""
    import numpy as np

    from dperm.model_io import model_file

    return model_file(
        task="regression",
        estimator={"class": "PrivateLinearRegression", "loss": "pseudo_huber",
                   "method": args.perturbation, "epsilon": args.epsilon, "delta": delta,
                   "neighbouring": args.neighbouring, "n_public": args.n_public,
                   "alpha": args.alpha, "h": h, "label_bound": label_bound,
                   "fit_intercept": not args.no_intercept, "data_norm": 1.0,
                   **({} if label_bounds is None else {"label_bounds": label_bounds})},
        record=est.release_record_, coef=np.asarray(coef, dtype=np.float64).reshape(-1),
        intercept=float(intercept), schema=schema, data=os.path.basename(args.data),
        read_from_data=leaks, budget=getattr(args, "budget", None))
