"""Files the library writes: always through a temporary file in the target's folder,
renamed into place, so a failed or interrupted write never leaves a half-written file
and never truncates what was there before.

Used by the command line (models, schemas, predictions) and by ``dperm.save_model``.
"""
from __future__ import annotations

import os
import tempfile


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` atomically.

    The text goes to a uniquely named temporary file in the same folder (so the final
    rename never crosses a file system), is flushed and synced, then renamed over
    ``path`` with :func:`os.replace`. On any error the temporary file is removed and the
    ``OSError`` propagates; ``path`` is unchanged.
    """
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """True when ``a`` and ``b`` name the same file (also through links); False when
    either does not exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
