"""A resident agent's answer to a job sent with its files, read from any byte stream.

The answer (``edgehub.agent.server.wire``) starts with a START line, or a REFUSED line when
nothing ran; then comes the job's output, ``FILES <size>`` and the tar of the folder asked
back, and ``EXIT <code>``. `Reply` turns it into the runner base's output: the job's output as
``stderr``, the tar as ``stdout`` (as the exec path of ``runners/exchange.py`` delivers them).
The Docker runner reads it from the agent's socket, the SSH runner from its relay channel.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence

from edgehub.agent.server.wire import EXIT, FILES, REFUSED, START

MAX_MARKER = 4096  # a marker line (START, FILES, EXIT) is never longer
# Bigger jobs go through an exec (`~edgehub.runners.exchange.exchange`), which streams their
# files to disk: the server holds a job's files in memory until the job starts (over SSH,
# models travel apart: ``toolchains/remote/ssh_agent.py``).
MAX_STAGE_BYTES = 256 << 20


class Refused(Exception):
    """The server did not take the job; nothing ran."""


def read_start(chunks: Iterable[bytes]) -> bytes:
    """Read the answer's start line from ``chunks``; the bytes after it. Raises `Refused`
    unless that line says the job started."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        if b"\n" in pending:
            break
    line, newline, rest = pending.partition(b"\n")
    if not newline:
        raise Refused("the server closed the connection")
    if line.startswith(REFUSED):
        raise Refused(line[len(REFUSED) :].decode("utf-8", "replace").strip())
    if not line.startswith(START):
        raise Refused("the server did not start the job")
    return rest


def staged_request(
    argv: Sequence[str], cwd: str, stage: bytes, fetch: str, links: str | None = None
) -> bytes:
    """A job as a server takes it with its files: the request line, then the tar ``stage``
    (``fetch``: its folder to send back; ``links``: see ``edgehub.agent.server.wire``).
    `Refused` where ``stage`` is over `MAX_STAGE_BYTES`."""
    if len(stage) > MAX_STAGE_BYTES:
        raise Refused(f"the job's files are over {MAX_STAGE_BYTES} bytes")
    files: dict[str, object] = {"size": len(stage), "fetch": fetch}
    if links is not None:
        files["links"] = links
    request = {"argv": [str(word) for word in argv], "cwd": cwd, "stage": files}
    return json.dumps(request).encode() + b"\n" + stage


class Reply:
    """The rest of an answer, after its start line; ``code`` is the exit code, once read."""

    def __init__(self) -> None:
        self.code: int | None = None

    def read(self, chunks: Iterable[bytes]) -> Iterator[tuple[str, bytes]]:
        """The job's output (``stderr``), then the returned tar (``stdout``), each passed on
        as it arrives: nothing is held but a marker line (at most `MAX_MARKER` bytes)."""
        buffer = b""
        files_left: int | None = None  # bytes of the tar still to come, once FILES is read
        for chunk in chunks:
            if files_left is not None:
                part = chunk[:files_left]
                if part:
                    files_left -= len(part)
                    yield "stdout", part
                buffer = (buffer + chunk[len(part) :])[:MAX_MARKER]
                continue
            buffer += chunk
            while buffer and files_left is None:
                cut = buffer.find(b"\0")
                if cut != 0:  # plain output up to the next marker, if any
                    yield "stderr", buffer if cut < 0 else buffer[:cut]
                    buffer = b"" if cut < 0 else buffer[cut:]
                    continue
                line, newline, rest = buffer.partition(b"\n")
                if not newline:
                    if len(buffer) <= MAX_MARKER:
                        break  # a marker line still coming
                    line, newline, rest = buffer[:1], b"", buffer[1:]  # a NUL in the output
                if line.startswith(FILES):
                    files_left = _integer(line[len(FILES) :]) or 0
                    part = rest[:files_left]
                    files_left -= len(part)
                    if part:
                        yield "stdout", part
                    buffer = rest[len(part) :][:MAX_MARKER]
                elif line.startswith(EXIT):
                    self.code = _integer(line[len(EXIT) :])
                    buffer = rest
                else:  # a NUL in the job's own output
                    yield "stderr", line + newline
                    buffer = rest
        if files_left is None:
            if buffer:
                yield "stderr", buffer
        elif files_left == 0 and buffer.startswith(EXIT):
            self.code = _integer(buffer[len(EXIT) :])


def _integer(text: bytes) -> int | None:
    text = text.strip()
    digits = text[1:] if text.startswith(b"-") else text
    return int(text) if digits.isdigit() else None


class ReplyJob:
    """The runner base's `~edgehub.runners.base.Process` for a job whose answer is read from
    ``_chunks`` (after its start line): the Docker channel's and the SSH relay's jobs."""

    _code: int | None = None

    def _chunks(self) -> Iterator[bytes]:
        raise NotImplementedError

    def read(self) -> Iterator[tuple[str, bytes]]:
        """The job's output (``stderr``), then the returned tar (``stdout``)."""
        reply = Reply()
        yield from reply.read(self._chunks())
        self._code = reply.code

    def wait(self) -> int:
        return -1 if self._code is None else self._code
