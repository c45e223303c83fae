"""The agent server's idle timer: the server exits after ``--idle`` seconds without a job or a
connection waiting."""

from __future__ import annotations

import time


class IdleTimer:
    """Counts from the moment the server last became idle."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.since = time.monotonic()

    def restart(self) -> None:
        """The server has just become idle (its last job or connection is gone)."""
        self.since = time.monotonic()

    def deadline(self) -> float:
        return self.since + self.seconds

    def expired(self, now: float) -> bool:
        return now - self.since >= self.seconds
