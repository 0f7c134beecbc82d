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

Errors in the user's files are reported as one line on stderr with exit status 2.
"""
import os
import sys
import warnings

from dperm.cli._common import EXIT_USAGE, _err, _show_warning, _UsageError, check_outputs
from dperm.cli.parser import build_parser

__all__ = ["main", "build_parser"]


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
    try:
        check_outputs(args)    # before any work: never write over an input
    except _UsageError as exc:
        _err(str(exc))
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

