"""Printing: logs and progress on stderr, results (tables or JSON) on stdout."""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from edgehub.events import EventSink, LogEvent

__all__ = ["LogPrinter", "ProgressBar", "print_json", "table"]


class ProgressBar:
    """A one-line progress bar on a terminal; plain occasional lines otherwise."""

    def __init__(self, stream: TextIO | None = None, width: int = 28) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self._last_plain = -1.0
        self._shown = False

    def update(self, label: str, done: float, total: float | None) -> None:
        if total:
            fraction = max(0.0, min(1.0, done / total))
            if self.tty:
                filled = int(fraction * self.width)
                bar = "#" * filled + "-" * (self.width - filled)
                count = f"{done:g}/{total:g}"
                self.stream.write(f"\r[{bar}] {count:>9} {label[:60]:<60}")
                self.stream.flush()
                self._shown = True
            elif fraction >= 1.0 or fraction - self._last_plain >= 0.25:
                self._last_plain = fraction
                self.stream.write(f"{label}: {math.floor(fraction * 100)}%\n")
        elif self.tty:
            self.stream.write(f"\r{label[:90]:<90}")
            self._shown = True

    def clear(self) -> None:
        if self.tty and self._shown:
            self.stream.write("\r" + " " * 110 + "\r")
            self.stream.flush()
            self._shown = False


class LogPrinter:
    """Subscribes to an `EventSink` and prints tool output and messages on stderr."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.progress = ProgressBar(self.stream)
        self._lock = threading.Lock()

    def attach(self, sink: EventSink) -> Callable[[], None]:
        return sink.subscribe(self)

    def __call__(self, event: LogEvent) -> None:
        with self._lock:
            if event.kind == "progress":
                if not self.quiet:
                    self.progress.update(event.message, event.done or 0, event.total)
                return
            if self.quiet and event.kind not in ("warning",):
                return
            self.progress.clear()
            prefix = {"stdout": "  | ", "stderr": "  | ", "warning": "warning: ", "error": ""}
            if event.kind == "error":
                return  # the CLI prints the error itself, once
            self.stream.write(f"{prefix.get(event.kind, '')}{event.message}\n")
            self.stream.flush()

    def done(self) -> None:
        with self._lock:
            self.progress.clear()


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str, sort_keys=False)
    sys.stdout.write("\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value == 0 or 1e-3 <= abs(value) < 1e6:
            return f"{value:.4g}" if abs(value) < 1 else f"{value:,.3f}".rstrip("0").rstrip(".")
        return f"{value:.3e}"
    text = str(value)  # stored values can come from a device: no terminal control characters
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], stream: TextIO | None = None
) -> None:
    """Print an aligned plain-text table."""
    out = stream or sys.stdout
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for row in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() + "\n")
