"""Turning a command's output chunks into lines, forwarded to the event sink as they arrive."""

from __future__ import annotations

import codecs

from edgehub.events import EventSink

__all__ = ["LineCollector"]


class LineCollector:
    """Collects the lines of one stream (``kind`` "stdout" or "stderr") and forwards each to
    the sink (``None``: kept only) as soon as it is complete."""

    def __init__(self, kind: str, sink: EventSink | None) -> None:
        self.kind = kind
        self.sink = sink
        self.run_id = sink.run_id if sink is not None else None
        self.lines: list[str] = []
        self._partial = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed_line(self, line: str) -> None:
        self.lines.append(line)
        if self.sink is not None:
            self.sink.line(self.kind, line, self.run_id)

    def feed_bytes(self, data: bytes) -> None:
        """Accept raw output; UTF-8 split across chunks is decoded whole, bad bytes replaced."""
        self.feed_text(self._decoder.decode(data))

    def feed_text(self, text: str) -> None:
        """Accept a chunk that may hold several or partial lines."""
        text = self._partial + text
        *complete, self._partial = text.split("\n")
        for line in complete:
            self.feed_line(line.rstrip("\r"))

    def close(self) -> None:
        """End of the stream: the last line counts even without its newline."""
        self.feed_text(self._decoder.decode(b"", final=True))
        if self._partial:
            self.feed_line(self._partial.rstrip("\r"))
            self._partial = ""

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)
