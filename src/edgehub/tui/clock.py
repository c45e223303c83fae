"""The clock the TUI reads times and durations with; tests inject a frozen one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo


@dataclass(frozen=True)
class Clock:
    """``now`` gives epoch seconds; ``tz`` is the zone times are shown in (None: local)."""

    now: Callable[[], float] = field(default=time.time)
    tz: tzinfo | None = None

    def when(self, timestamp: float | None) -> str:
        """``2024-05-01 12:30:05``, or ``-``."""
        if not timestamp:
            return "-"
        return datetime.fromtimestamp(timestamp, self.tz).strftime("%Y-%m-%d %H:%M:%S")

    def took(self, started: float | None, ended: float | None) -> str:
        """A run's duration; a running one's so far (``12.3s…``)."""
        if not started:
            return "-"
        if ended:
            return duration(ended - started)
        return duration(self.now() - started) + "…"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def frozen_clock(at: float) -> Clock:
    """A clock stopped at ``at``, showing times in UTC (for snapshot tests)."""
    return Clock(now=lambda: at, tz=timezone.utc)
