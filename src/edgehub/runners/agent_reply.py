"""A resident agent's answer to a job sent with its files, read from any byte stream.

The answer (``edgehub.agent.server.wire``) starts with a START line, or a REFUSED line when
nothing ran; then comes the job's output, ``FILES <size>`` and the tar of the folder asked
back, and ``EXIT <code>``. `Reply` turns it into the runner base's output: the job's output as
``stderr``, the tar as ``stdout`` (as the exec path of ``runners/exchange.py`` delivers them).
The Docker runner reads it from the agent's socket, the SSH runner from its relay channel.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from edgehub.agent.server.wire import EXIT, FILES, REFUSED, START

__all__ = ["Refused", "Reply", "check_start"]


class Refused(Exception):
    """The server did not take the job; nothing ran."""


def check_start(line: bytes) -> None:
    """Raise `Refused` unless ``line`` (the answer's first line) says the job started."""
    if line.startswith(REFUSED):
        raise Refused(line[len(REFUSED) :].decode("utf-8", "replace").strip())
    if not line.startswith(START):
        raise Refused("the server did not start the job")


class Reply:
    """The rest of an answer, after its start line; ``code`` is the exit code, once read."""

    def __init__(self) -> None:
        self.code: int | None = None

    def read(self, chunks: Iterable[bytes]) -> Iterator[tuple[str, bytes]]:
        """The job's output (``stderr``), then the returned tar (``stdout``)."""
        buffer = b""
        files: bytearray | None = None
        size = 0
        for chunk in chunks:
            if files is not None:
                files += chunk
                continue
            buffer += chunk
            while buffer and files is None:
                cut = buffer.find(b"\0")
                if cut != 0:  # plain output up to the next marker, if any
                    yield "stderr", buffer if cut < 0 else buffer[:cut]
                    buffer = b"" if cut < 0 else buffer[cut:]
                    continue
                line, newline, rest = buffer.partition(b"\n")
                if not newline:
                    break  # a marker line still coming
                if line.startswith(FILES):
                    size = _integer(line[len(FILES) :]) or 0
                    files, buffer = bytearray(rest), b""
                elif line.startswith(EXIT):
                    self.code = _integer(line[len(EXIT) :])
                    buffer = rest
                else:  # a NUL in the job's own output
                    yield "stderr", line + newline
                    buffer = rest
        if buffer:
            yield "stderr", buffer
        if files is not None and len(files) >= size:
            yield "stdout", bytes(files[:size])
            tail = bytes(files[size:])
            if tail.startswith(EXIT):
                self.code = _integer(tail[len(EXIT) :])


def _integer(text: bytes) -> int | None:
    text = text.strip()
    digits = text[1:] if text.startswith(b"-") else text
    return int(text) if digits.isdigit() else None
