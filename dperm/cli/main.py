"""The `dperm` command line (also `python -m dperm`).

    dperm fit [DATA.csv] --label COLUMN [--schema SCHEMA.json] [--missing error|drop]
              [--delimiter CHAR] [--sparse auto|yes|no] -o MODEL.json
    dperm fit DATA.csv --schema SCHEMA.json --memory-budget SIZE [--work-dir DIR |
              --keep-binary DIR] -o MODEL.json          (streamed: larger than memory)
    dperm fit --from-binary DIR -o MODEL.json
    dperm bounds DATA.csv --epsilon E [--columns A,B] [--quantiles 0.01,0.99] -o SCHEMA.json
    dperm predict MODEL.json DATA.csv [--delimiter CHAR] [-o OUT.csv]
    dperm reproduce {table1,figure2,table2,figure3,tuning} [--quick] [--out DIR]
    dperm info

Errors in the user's files and options are reported as one line on stderr with exit
status 2; an unexpected exception (a bug in dperm) as "internal error", with where it
was raised, and exit status 1 (DPERM_DEBUG=1 shows the traceback).
"""
import os
import re
import sys
import warnings
from collections.abc import Sequence

from dperm.cli._common import EXIT_USAGE, _err, _show_warning, _UsageError, check_outputs
from dperm.cli.parser import build_parser

__all__ = ["main", "build_parser"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        check_outputs(args)    # before any work: never write over an input
    except _UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    from dperm.cli._common import CLIError
    from dperm.exceptions import BudgetExceededError, NotConvergedError

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _show_warning
        try:
            return args.func(args)
        except _UsageError as exc:
            _err(str(exc))
            return EXIT_USAGE
        except (CLIError, BudgetExceededError, NotConvergedError, OSError, ValueError,
                TypeError) as exc:
            if isinstance(exc, (ValueError, TypeError)) and not is_input_error(exc):
                if os.environ.get("DPERM_DEBUG"):
                    raise
                _err(internal_error_message(exc))
                return EXIT_INTERNAL
            # errors in the user's input, files or options (OSError: a file that cannot
            # be read or written), checked where the command line hands them on
            if os.environ.get("DPERM_DEBUG"):
                raise
            if isinstance(exc, BrokenPipeError):
                return _broken_pipe()
            _err(str(exc) if str(exc) else type(exc).__name__)
            return EXIT_USAGE
        except KeyboardInterrupt:
            _err("interrupted")
            return 130
        except Exception as exc:
            # anything else is a bug in dperm: say so, where it happened, how to report it
            if os.environ.get("DPERM_DEBUG"):
                raise
            _err(internal_error_message(exc))
            return EXIT_INTERNAL


EXIT_INTERNAL = 1
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# dperm's validation of what it is given: the modules that only check inputs, the
# functions named for checking, and the library's wording of such a message (the
# parameter first: "quantiles: need 0 <= low < high <= 1", "data_norm must be ...")
_VALIDATION_MODULES = (os.path.join("data", "validation.py"), "schema.py")
_VALIDATION_FUNCTION = re.compile(r"^_*(check|validate|resolve)")
_VALIDATION_MESSAGE = re.compile(r"^[A-Za-z_][\w.]*(\[[^\]]*\])?(: | must | has | lacks |=)")


def is_input_error(exc):
    """True for a ValueError or TypeError that dperm raised on purpose about its input
    (its own validation, exit status 2); False for one raised elsewhere (by numpy, SciPy,
    the standard library, ... inside dperm) or that reads like no validation message:
    a bug, reported as an internal error (exit status 1)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    name = os.path.abspath(last.filename)
    if not name.startswith(_PKG + os.sep):
        return False
    rel = os.path.relpath(name, _PKG)
    return (rel in _VALIDATION_MODULES
            or bool(_VALIDATION_FUNCTION.match(last.name))
            or bool(_VALIDATION_MESSAGE.match(str(exc))))


def internal_error_message(exc):
    """One line for an unexpected exception: what it was, where it was raised (the
    innermost frame inside dperm, as file:line in function), and how to report it."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    pkg = _PKG
    ours = [f for f in frames if os.path.abspath(f.filename).startswith(pkg + os.sep)]
    f = (ours or frames or [None])[-1]
    where = ""
    if f is not None:
        name = os.path.abspath(f.filename)
        shown = os.path.relpath(name, os.path.dirname(pkg)) if name.startswith(pkg) else name
        where = f" at {shown}:{f.lineno} in {f.name}()"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return (f"internal error: {type(exc).__name__}{': ' + text if text else ''}{where}. "
            "This is a bug in dperm, not a problem with your input: please report it with "
            "the command line, `dperm --version` and the traceback that DPERM_DEBUG=1 prints")


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

