"""What the command line's modules share: exit status, messages on stderr, number
formatting, the usage error and atomic text output."""
import sys

EXIT_USAGE = 2


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

class _UsageError(Exception):
    """Bad combination of options (exit status 2)."""



def _write_text(path, text, what, atomic=True):
    """Write `text` to `path` through a temporary file in the same folder, renamed over
    `path` at the end (dperm._files.atomic_write_text), so a failure never leaves a
    half-written file. `atomic` is kept for callers; every output is atomic."""
    from dperm._files import atomic_write_text
    from dperm.cli._io import CLIError

    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise CLIError(f"cannot write the {what} to {path!r}: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------- predict
