"""Reading a process's stdout/stderr line by line while it runs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import IO

from edgehub.events import EventSink

__all__ = ["LineCollector"]


class LineCollector:
    """Collects lines of one stream and forwards each to the sink as it arrives."""

    def __init__(self, kind: str, sink: EventSink | None) -> None:
        self.kind = kind
        self.sink = sink
        self.run_id = sink.run_id if sink is not None else None
        self.lines: list[str] = []
        self._partial = ""

    def feed_line(self, line: str) -> None:
        self.lines.append(line)
        if self.sink is not None:
            self.sink.line(self.kind, line, self.run_id)

    def feed_text(self, text: str) -> None:
        """Accept a chunk that may hold several or partial lines."""
        text = self._partial + text
        *complete, self._partial = text.split("\n")
        for line in complete:
            self.feed_line(line.rstrip("\r"))

    def close(self) -> None:
        if self._partial:
            self.feed_line(self._partial.rstrip("\r"))
            self._partial = ""

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def pump(stream: IO[bytes], collector: LineCollector) -> threading.Thread:
    """Start a daemon thread that reads ``stream`` to EOF into ``collector``."""

    def _read(readline: Callable[[], bytes]) -> None:
        for raw in iter(readline, b""):
            collector.feed_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
        collector.close()

    thread = threading.Thread(target=_read, args=(stream.readline,), daemon=True)
    thread.start()
    return thread
