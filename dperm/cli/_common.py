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


_DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}


def parse_delimiter(s):
    """--delimiter: one character, or tab / comma / semicolon / pipe / \\t. (Here, not in
    _io: argparse converts the default "," at every start, and _io imports pyarrow.)"""
    d = _DELIMITER_NAMES.get(s.lower(), s) if isinstance(s, str) else s
    if not (isinstance(d, str) and len(d) == 1) or d in "\"\r\n" or d.isalnum() or d == " ":
        raise ValueError(f"--delimiter must be one character such as ';' or '|' (or 'tab'), "
                         f"got {s!r}")
    return d



class CLIError(Exception):
    """A user-facing error: printed as one line on stderr, exit status 2. (Defined here,
    re-exported by _io, so that main can catch it without importing pyarrow.)"""


class _UsageError(Exception):
    """Bad combination of options (exit status 2)."""



def check_outputs(args):
    """Refuse (a _UsageError, exit 2) an output path that names an input or another
    output of the same command: the same file, also through a hard or symbolic link
    (dperm._files.same_file). Each sub-command declares its file arguments in the
    parser (``set_defaults(inputs=..., outputs=...)``: pairs (dest, option name)); an
    input that is a directory (--from-binary) counts with every file in it. Run once,
    after parsing and before any work, so nothing is read, computed or written."""
    import os

    from dperm._files import same_file

    def given(pairs):
        for dest, name in pairs:
            value = getattr(args, dest, None)
            if value not in (None, "", "-"):
                yield name, value

    inputs = []
    for name, path in given(getattr(args, "inputs", ())):
        inputs.append((name, path, path))
        if os.path.isdir(path):
            try:
                entries = sorted(os.listdir(path))
            except OSError:
                entries = []
            inputs += [(name, path, os.path.join(path, e)) for e in entries]
    seen = []
    for out_name, out in given(getattr(args, "outputs", ())):
        for in_name, shown, path in inputs:
            if same_file(out, path) or os.path.abspath(out) == os.path.abspath(path):
                what = "" if shown == path else f" (a file of {in_name} {shown!r})"
                raise _UsageError(
                    f"{out_name} {out!r} is the same file as {in_name} {path!r}{what}: "
                    "refusing to write over an input; choose another output path")
        for other_name, other in seen:
            if same_file(out, other) or os.path.abspath(out) == os.path.abspath(other):
                raise _UsageError(f"{out_name} {out!r} and {other_name} {other!r} are the same "
                                  "file; give each output its own path")
        seen.append((out_name, out))


def _write_text(path, text, what, atomic=True):
    """Write `text` to `path` through a temporary file in the same folder, renamed over
    `path` at the end (dperm._files.atomic_write_text), so a failure never leaves a
    half-written file. `atomic` is kept for callers; every output is atomic."""
    from dperm._files import atomic_write_text

    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise CLIError(f"cannot write the {what} to {path!r}: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------- predict
