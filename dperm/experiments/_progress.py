"""A dependency-free progress bar for long runs (writes to stderr)."""
import sys
import time
from typing import TextIO


def plural(k: int, noun: str) -> str:
    """'1 fold', '2 folds': counts in titles and reports."""
    return f"{k} {noun}" if k == 1 else f"{k} {noun}s"


class Progress:
    """Progress over `total` steps: `update(k)`, `close()`; silent when disabled.

    Redraws in place on a terminal; elsewhere (CI logs, pipes) prints a line at
    most every 10% so logs stay short.
    """

    def __init__(self, total: int, label: str = "", enabled: bool = True,
                 stream: TextIO | None = None) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self.start = time.perf_counter()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_decile = -1
        self._draw()

    def update(self, k: int = 1, note: str = "") -> None:
        self.done = min(self.total, self.done + k)
        self._draw(note)

    def _draw(self, note: str = "") -> None:
        if not self.enabled:
            return
        frac = self.done / self.total
        elapsed = time.perf_counter() - self.start
        # nothing done yet: no rate to extrapolate from, so no estimate (not "nan")
        left = f"~{elapsed / frac - elapsed:5.0f}s left" if frac > 0 else "time left: estimating"
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        line = (f"{self.label} [{bar}] {self.done}/{self.total} "
                f"{elapsed:6.1f}s elapsed, {left} {note}")
        if self._tty:
            self.stream.write("\r" + line[:120].ljust(120))
            self.stream.flush()
        elif int(10 * frac) != self._last_decile:
            self._last_decile = int(10 * frac)
            self.stream.write(line + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._tty:
            self.stream.write("\n")
            self.stream.flush()
