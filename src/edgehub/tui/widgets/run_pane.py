"""`RunPane`: one launched run: a status line, a progress bar and its log, streamed live.

The worker's subscriber pushes events into the pane's `LineBuffer` from any thread; the
buffer posts one `LinesReady` per batch and the pane drains it on the UI thread. A run that
waits for its device's lease shows WAITING (not RUNNING) until its next line.
"""

from __future__ import annotations

import os

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Log, ProgressBar

from edgehub.events import LogEvent
from edgehub.text import visible
from edgehub.tui.clock import Clock
from edgehub.tui.line_buffer import LineBuffer

LOG_LIMIT = 5000
_WAITING = "; waiting (up to "  # how a lease wait is told (acquire.leases)


def _line(event: LogEvent) -> str:
    """The pane's line for ``event``: a `Log` shows text as written (no markup) but passes
    escapes on to the terminal, so a device's line is shown with `visible`."""
    message = visible(event.message, lines=True)
    if event.kind in ("stdout", "info"):
        return message
    if _WAITING in message and f" pid {os.getpid()} " in message:  # another run of this TUI
        device = message.split(" is held by ", 1)[0]
        message = f"{device} is in use by another run of this hub-tui; waiting for it to end"
    return f"[{event.kind}] {message}"


class RunPane(Vertical):
    DEFAULT_CSS = """
    RunPane { height: 1fr; }
    RunPane > .status { height: auto; padding: 0 1; }
    RunPane > ProgressBar { height: 1; padding: 0 1; }
    RunPane > Log { height: 1fr; border: round $panel; }
    """

    def __init__(self, title: str, clock: Clock, *, id: str, buffer: LineBuffer) -> None:
        super().__init__(id=id)
        self.title = title
        self.clock = clock
        self.buffer = buffer
        self.started = clock.now()
        self.ended: float | None = None
        self.status = "RUNNING"
        self.lines_shown = 0

    def compose(self) -> ComposeResult:
        yield Label(self._status_text(), classes="status", markup=False)
        yield ProgressBar(total=None, show_eta=False)
        yield Log(max_lines=LOG_LIMIT, auto_scroll=True)

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        if self.ended is None:
            self.query_one(".status", Label).update(self._status_text())

    def _status_text(self) -> str:
        took = self.clock.took(self.started, self.ended)  # first: a narrow pane wraps the title
        return f"{self.status}  {took}  {self.title}"

    def drain(self) -> None:
        """Show the next batch of what the buffer holds (UI thread); the rest follows after the
        screen has refreshed."""
        if self._drain_batch():  # let the screen refresh between batches
            self.call_after_refresh(self.drain)

    def _drain_batch(self) -> bool:
        batch = self.buffer.drain()
        log = self.query_one(Log)
        if batch.dropped:  # arrived faster than shown, beyond the pane's limit
            log.write_line(f"… {batch.dropped} lines not shown (the pane keeps the last ones)")
        if batch.lines:
            log.write_lines([_line(e) for e in batch.lines])
            self.lines_shown += len(batch.lines)
            if self.status in ("RUNNING", "WAITING"):
                waiting = _WAITING in batch.lines[-1].message
                self.status = "WAITING" if waiting else "RUNNING"
                self._tick()
        if batch.progress is not None and batch.progress.total:
            bar = self.query_one(ProgressBar)
            bar.update(total=batch.progress.total, progress=batch.progress.done or 0)
        return batch.more

    def finish(self, status: str, summary: list[str]) -> None:
        while self._drain_batch():
            pass
        self.status = status
        self.ended = self.clock.now()
        bar = self.query_one(ProgressBar)
        bar.update(total=1, progress=1)
        self.query_one(".status", Label).update(self._status_text())
        log = self.query_one(Log)
        log.write_lines([visible(line, lines=True) for line in summary])
