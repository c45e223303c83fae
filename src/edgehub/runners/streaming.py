"""Turning a command's output chunks into lines, forwarded to the event sink as they arrive.

Output is bounded (`~edgehub.limits.LogLimits`): a line longer than the line cap is cut there
with a note of how much was dropped, and the text kept of a stream is its head and its tail
within the total cap, with a note of the lines dropped between them. The work is linear in
the output, however long its lines.
"""

from __future__ import annotations

import codecs
from collections import deque

from edgehub.events import EventSink
from edgehub.limits import LogLimits

MESSAGE_LINE = 400  # characters of a command's output quoted in an error message


def last_line(*texts: str) -> str:
    """The last non-empty line of the first of ``texts`` that has one, short enough to quote
    in a one-line message ("" if none has a line)."""
    for text in texts:
        lines = text.strip().splitlines()
        if lines:
            line = lines[-1]
            return line if len(line) <= MESSAGE_LINE else line[:MESSAGE_LINE] + " [...]"
    return ""


def cut_line(line: str, limit: int, dropped: int = 0) -> str:
    """``line`` cut to ``limit`` characters, with a note of what was cut (``dropped``: the
    characters already cut from it)."""
    if len(line) > limit:
        dropped += len(line) - limit
        line = line[:limit]
    if dropped:
        line += f" [... {dropped} more characters of this line dropped: EDGEHUB_LOG_MAX_LINE]"
    return line


class HeadTail:
    """The first and the last lines of a stream, up to ``limit`` characters in all."""

    def __init__(self, limit: int) -> None:
        self._head_room = limit // 2
        self._tail_room = limit - self._head_room
        self.head: list[str] = []
        self.tail: deque[str] = deque()
        self._tail_size = 0
        self.dropped_lines = 0
        self.dropped_chars = 0

    def add(self, line: str) -> None:
        size = len(line) + 1
        if not self.tail and size <= self._head_room:
            self.head.append(line)
            self._head_room -= size
            return
        self.tail.append(line)
        self._tail_size += size
        while self._tail_size > self._tail_room and self.tail:
            old = self.tail.popleft()
            self._tail_size -= len(old) + 1
            self.dropped_lines += 1
            self.dropped_chars += len(old) + 1

    def note(self) -> str:
        """The line standing for what was dropped ("" when nothing was)."""
        if not self.dropped_lines:
            return ""
        return (
            f"[... {self.dropped_lines} lines ({self.dropped_chars} characters) dropped here: "
            "the log keeps its head and tail; raise EDGEHUB_LOG_MAX_BYTES to keep more]"
        )

    def lines(self) -> list[str]:
        note = self.note()
        return [*self.head, *([note] if note else []), *self.tail]


class LineCollector:
    """Collects the lines of one stream (``kind`` "stdout" or "stderr") and forwards each to
    the sink (``None``: kept only) as soon as it is complete."""

    def __init__(self, kind: str, sink: EventSink | None, limits: LogLimits | None = None) -> None:
        self.kind = kind
        self.sink = sink
        self.run_id = sink.run_id if sink is not None else None
        self.limits = limits or LogLimits.from_env()
        self._kept = HeadTail(self.limits.max_total)
        self._partial: list[str] = []
        self._partial_size = 0
        self._cut = 0  # characters dropped from the line in progress
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    @property
    def lines(self) -> list[str]:
        """The lines kept (head, a note of what was dropped, tail)."""
        return self._kept.lines()

    def feed_bytes(self, data: bytes) -> None:
        """Accept raw output; UTF-8 split across chunks is decoded whole, bad bytes replaced."""
        self.feed_text(self._decoder.decode(data))

    def feed_text(self, text: str) -> None:
        """Accept a chunk that may hold several or partial lines."""
        start = 0
        while (end := text.find("\n", start)) >= 0:
            self._extend(text[start:end])
            self._end_line()
            start = end + 1
        self._extend(text[start:])

    def _extend(self, piece: str) -> None:
        room = self.limits.max_line + 1 - self._partial_size  # one more: a "\r" to strip
        if len(piece) > room:
            self._cut += len(piece) - max(room, 0)
            piece = piece[: max(room, 0)]
        if piece:
            self._partial.append(piece)
            self._partial_size += len(piece)

    def _end_line(self) -> None:
        line = "".join(self._partial).rstrip("\r")
        cut, self._cut = self._cut, 0
        self._partial, self._partial_size = [], 0
        line = cut_line(line, self.limits.max_line, cut)
        self._kept.add(line)
        if self.sink is not None:
            self.sink.line(self.kind, line, self.run_id)

    def close(self) -> None:
        """End of the stream: the last line counts even without its newline."""
        self.feed_text(self._decoder.decode(b"", final=True))
        if self._partial or self._cut:
            self._end_line()

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)
