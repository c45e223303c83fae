"""Printing: logs and progress on stderr, results (tables or JSON) on stdout.

Tables and the progress bar are drawn by Rich, as the TUI draws its own (a bold header over a
rule, no borders; the same bar); Rich is imported only when one is printed, so ``hub --help``
does not load it. On a pipe a table has no colours and one line per row, however wide, and is
drawn without Rich where its cells allow (`edgehub.cli.plain_table`: the same text).
"""

from __future__ import annotations

import io
import json
import math
import shutil
import sys
import threading
from collections.abc import Sequence
from typing import Any, TextIO

from edgehub.cli.plain_table import plain_table
from edgehub.cli.terminal import raw
from edgehub.events import LogEvent
from edgehub.text import visible

_PREFIXES = {"stdout": "  | ", "stderr": "  | ", "warning": "warning: "}


class ProgressBar:
    """A one-line progress bar on a terminal (Rich's bar); plain occasional lines otherwise."""

    def __init__(self, stream: TextIO | None = None, width: int = 28) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self._last_plain = -1.0
        self._shown = False

    def _bar(self, fraction: float) -> str:
        """The bar drawn by Rich, with the terminal's colours."""
        from rich.console import Console
        from rich.progress_bar import ProgressBar as Bar

        out = io.StringIO()
        console = Console(file=out, force_terminal=True, width=self.width, legacy_windows=False)
        console.print(Bar(total=1.0, completed=fraction, width=self.width), end="")
        return out.getvalue()

    def update(self, label: str, done: float, total: float | None) -> None:
        label = visible(label)  # may name a file or a device; the bar writes raw below
        if total:
            fraction = max(0.0, min(1.0, done / total))
            if self.tty:
                count = f"{done:g}/{total:g}"
                raw(self.stream).write(f"\r{self._bar(fraction)} {count:>9} {label[:60]:<60}")
                self.stream.flush()
                self._shown = True
            elif fraction >= 1.0 or fraction - self._last_plain >= 0.25:
                self._last_plain = fraction
                self.stream.write(f"{label}: {math.floor(fraction * 100)}%\n")
        elif self.tty:
            raw(self.stream).write(f"\r{label[:90]:<90}")
            self._shown = True

    def clear(self) -> None:
        if self.tty and self._shown:
            raw(self.stream).write("\r" + " " * 110 + "\r")
            self.stream.flush()
            self._shown = False


class LogPrinter:
    """Subscribes to an `EventSink` and prints tool output and messages on stderr."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.progress = ProgressBar(self.stream)
        self._lock = threading.Lock()

    def __call__(self, event: LogEvent) -> None:
        with self._lock:
            if event.kind == "progress":
                if not self.quiet:
                    self.progress.update(event.message, event.done or 0, event.total)
                return
            if self.quiet and event.kind != "warning":
                return
            self.progress.clear()
            if event.kind == "error":
                return  # the CLI prints the error itself, once
            # a device's output line, or a message quoting one: shown escaped, never obeyed
            message = visible(event.message, lines=True)
            raw(self.stream).write(f"{_PREFIXES.get(event.kind, '')}{message}\n")
            self.stream.flush()

    def done(self) -> None:
        with self._lock:
            self.progress.clear()

    def __enter__(self) -> LogPrinter:
        return self

    def __exit__(self, *_: object) -> None:
        self.done()


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
    return visible(str(value))  # stored values can come from a device or a bundle


class _Drawn(io.StringIO):
    """Where Rich draws: text kept here, with the encoding of the stream it goes to (so Rich
    draws rules in ASCII for a stream that cannot take box characters)."""

    def __init__(self, encoding: str | None) -> None:
        super().__init__()
        self._target_encoding = encoding or "utf-8"

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._target_encoding


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], stream: TextIO | None = None
) -> None:
    """Print a table (see the module docstring); cells are text, never Rich markup."""
    out = stream or sys.stdout
    tty = out.isatty()
    cells = [[_cell(value) for value in row] for row in rows]
    if not tty:  # Rich's layout on a pipe, drawn without importing Rich where it can be
        plain = plain_table(headers, cells, getattr(out, "encoding", None) or "utf-8")
        if plain is not None:
            raw(out).write(plain)
            return
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    grid = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold", highlight=False
    )
    for header in headers:
        grid.add_column(header, no_wrap=not tty)
    for row in cells:
        grid.add_row(*(Text(cell) for cell in row))
    drawn = _Drawn(getattr(out, "encoding", None))
    width = shutil.get_terminal_size().columns if tty else 1 << 16
    Console(file=drawn, force_terminal=tty, width=width, legacy_windows=False).print(grid)
    # the cells are escaped; what else is drawn is Rich's own (colours on a terminal)
    raw(out).write("".join(line.rstrip() + "\n" for line in drawn.getvalue().splitlines()))
