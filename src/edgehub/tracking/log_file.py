"""`RunLogFile`: a run's ``run.log``, kept within `~edgehub.limits.LogLimits`.

Lines are written as they come until half the cap is used; after that only the latest lines
are kept (in memory, up to the other half), and closing the log writes a note of what was
dropped, then those last lines. So a run that floods its output still leaves a log of bounded
size with its beginning and its end, which is where the reasons for a failure are.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from edgehub.limits import LogLimits
from edgehub.runners.streaming import cut_line


class RunLogFile:
    """Appends lines to ``path`` (`write_line`, or `write` as a text file); `close` writes the
    kept tail. Not thread-safe: callers lock."""

    def __init__(self, path: Path, limits: LogLimits | None = None) -> None:
        limits = limits or LogLimits.from_env()
        self._file = path.open("a", encoding="utf-8")
        self._max_line = limits.max_line
        self._head_room = limits.max_total // 2
        self._tail_room = limits.max_total - self._head_room
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self._dropped_lines = 0
        self._dropped_chars = 0

    @property
    def closed(self) -> bool:
        return self._file.closed

    def write(self, text: str) -> int:
        """Write whole lines (a text file's ``write``)."""
        for line in text.removesuffix("\n").split("\n") if text else ():
            self.write_line(line)
        return len(text)

    def flush(self) -> None:
        """Lines are flushed as they are written."""

    def write_line(self, line: str) -> None:
        line = cut_line(line, self._max_line) + "\n"
        if not self._tail and len(line) <= self._head_room:
            self._file.write(line)
            self._file.flush()
            self._head_room -= len(line)
            return
        self._tail.append(line)
        self._tail_size += len(line)
        while self._tail_size > self._tail_room and self._tail:
            old = self._tail.popleft()
            self._tail_size -= len(old)
            self._dropped_lines += 1
            self._dropped_chars += len(old)

    def close(self) -> None:
        if self._file.closed:
            return
        if self._dropped_lines:
            self._file.write(
                f"[edgehub] ... {self._dropped_lines} lines ({self._dropped_chars} characters) "
                "dropped here: the run log keeps its head and tail; raise EDGEHUB_LOG_MAX_BYTES "
                "to keep more\n"
            )
        self._file.writelines(self._tail)
        self._tail.clear()
        self._file.close()
