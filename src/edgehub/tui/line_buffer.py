"""`LineBuffer`: collects a run's events from any thread; the UI drains them in batches.

The event sink calls `push` from worker threads (a runner's reader threads included). Only
the push that finds the buffer empty asks for a wake-up, so however fast lines arrive the UI
gets one message per drain, not one per line. The buffer keeps at most ``limit`` events;
older ones are dropped and counted (a pane shows only its last lines anyway).
`benchmarks/bench_tui.py` (c) keeps the UI loop's longest stall under a flood of lines.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from edgehub.events import LogEvent


@dataclass(slots=True)
class Drained:
    """What one drain returns: the lines, the latest progress event, how many were dropped,
    and whether more lines wait (the caller drains again after the screen has refreshed)."""

    lines: list[LogEvent]
    progress: LogEvent | None
    dropped: int
    more: bool


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

    def drain(self, most: int = 1000) -> Drained:
        """Up to ``most`` of the oldest lines pushed since the last drain (UI thread). While
        ``more`` is true the buffer stays due, so pushes do not post further wake-ups."""
        with self._lock:
            dropped = self._pushed - self._drained - len(self._lines)
            take = min(most, len(self._lines))
            lines = [self._lines.popleft() for _ in range(take)]
            self._drained += dropped + take
            progress, self._progress = self._progress, None
            more = bool(self._lines)
            self._pending = more
        return Drained(lines, progress, dropped, more)
