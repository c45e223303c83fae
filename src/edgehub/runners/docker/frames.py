"""Docker's multiplexed exec stream (no TTY): an 8-byte header per frame, then its payload."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from typing import Protocol


class _Readable(Protocol):
    def recv(self, size: int) -> bytes: ...


def frames(raw: _Readable) -> Iterator[tuple[int, bytes]]:
    """(1 stdout | 2 stderr, payload) per frame, until the stream ends. The header is the
    stream number, 3 padding bytes and the payload size (big-endian)."""
    buffer = b""
    while True:
        size = struct.unpack(">I", buffer[4:8])[0] if len(buffer) >= 8 else 0
        if len(buffer) >= 8 + size:
            yield buffer[0], buffer[8 : 8 + size]
            buffer = buffer[8 + size :]
            continue
        chunk = raw.recv(1 << 16)
        if not chunk:
            return
        buffer += chunk


def output(raw: _Readable) -> Iterator[tuple[str, bytes]]:
    """``("stdout" | "stderr", payload)`` per frame, as a `Process` reads them; a closed
    stream (OSError) ends the output."""
    with contextlib.suppress(OSError):
        for kind, payload in frames(raw):
            yield ("stdout" if kind == 1 else "stderr"), payload
