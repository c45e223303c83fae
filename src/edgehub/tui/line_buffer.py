"""`LineBuffer`: collects a run's events from any thread; the UI drains them in batches.

The event sink calls `push` from worker threads (a runner's reader threads included). Only
the push that finds the buffer empty asks for a wake-up, so however fast lines arrive the UI
gets one message per drain, not one per line. The buffer keeps at most ``limit`` events;
older ones are dropped and counted (a pane shows only its last lines anyway).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from edgehub.events import LogEvent

__all__ = ["Drained", "LineBuffer"]


class Drained:
    """What one drain returns: the lines, the latest progress event, how many were dropped."""

    __slots__ = ("dropped", "lines", "progress")

    def __init__(self, lines: list[LogEvent], progress: LogEvent | None, dropped: int) -> None:
        self.lines = lines
        self.progress = progress
        self.dropped = dropped


class LineBuffer:
    def __init__(self, wake: Callable[[], None], limit: int = 50_000) -> None:
        self._wake = wake
        self._lock = threading.Lock()
        self._lines: deque[LogEvent] = deque(maxlen=limit)
        self._progress: LogEvent | None = None
        self._pending = False
        self._pushed = 0
        self._drained = 0

    def push(self, event: LogEvent) -> None:
        """Add one event (any thread); wakes the UI if it is not already due to drain."""
        with self._lock:
            if event.kind == "progress":
                self._progress = event
            else:
                self._lines.append(event)
                self._pushed += 1
            wake, self._pending = not self._pending, True
        if wake:
            self._wake()

    def drain(self) -> Drained:
        """Everything pushed since the last drain (UI thread)."""
        with self._lock:
            lines = list(self._lines)
            self._lines.clear()
            progress, self._progress = self._progress, None
            dropped = self._pushed - self._drained - len(lines)
            self._drained = self._pushed
            self._pending = False
        return Drained(lines, progress, dropped)
