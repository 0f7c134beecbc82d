"""What the command line's modules share: exit status, messages on stderr, number
formatting, the usage error and atomic text output."""
import os
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
