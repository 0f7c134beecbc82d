"""`dperm reproduce`: run a registered experiment and print what it returned."""
import importlib.util
import inspect
import os
import time

from dperm.cli._common import _note, _UsageError

#: the names of dperm.experiments.REPRODUCTIONS, in its order, for the parser (which
#: does not import the registry: tests/cli/test_cli_start.py checks they agree)
REPRODUCTION_NAMES = ("table1", "figure2", "table2", "figure3", "tuning", "learning-curves",
                      "nips2008", "gaussian", "all")


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
    with _staged(args.out, args.pima) as stage:
        out = runner(**dict(kwargs, out=stage.dir))
        stage.commit()
    wall = time.perf_counter() - t0
    _print_outputs(_restage(out, stage.dir, args.out))
    print(f"wall time: {wall:.1f} s")
    return 0


class _staged:
    """The runner writes into a fresh hidden folder inside --out; only when it returns
    are its files renamed into place, one os.replace each (atomic, same file system).
    A failed or interrupted run leaves --out as it was (the folder is removed); an
    output that would replace the --pima input is refused before anything is moved."""

    def __init__(self, out, pima):
        self.out, self.pima = out, pima

    def __enter__(self):
        import tempfile

        try:
            os.makedirs(self.out, exist_ok=True)
            self.dir = tempfile.mkdtemp(prefix=".dperm-reproduce-", dir=self.out)
        except OSError as exc:
            from dperm.cli._common import CLIError

            raise CLIError(f"cannot write to --out {self.out!r}: {exc.strerror or exc}") from None
        return self

    def commit(self):
        """Move every staged file to the same place under --out."""
        from dperm._files import same_file

        moves = {}
        for root, _dirs, files in os.walk(self.dir):
            for f in files:
                src = os.path.join(root, f)
                moves[src] = os.path.join(self.out, os.path.relpath(src, self.dir))
        for dst in moves.values():
            if self.pima is not None and same_file(dst, self.pima):
                raise _UsageError(f"--out {self.out!r}: the run would write over the --pima "
                                  f"input {self.pima!r}; choose another --out")
        for src, dst in sorted(moves.items()):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(src, dst)

    def __exit__(self, kind, exc, tb):
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def _restage(out, stage, final):
    """The runner's return value with the staging folder's paths replaced by --out's."""
    if isinstance(out, str):
        return out.replace(stage, os.path.normpath(final))
    if isinstance(out, (list, tuple)):
        return type(out)(_restage(v, stage, final) for v in out)
    return out


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
