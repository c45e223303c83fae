"""Docker's multiplexed exec stream (no TTY): an 8-byte header per frame, then its payload."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Protocol

__all__ = ["frames"]


class _Readable(Protocol):
    def recv(self, size: int) -> bytes: ...


def frames(raw: _Readable) -> Iterator[tuple[int, bytes]]:
    """(1 stdout | 2 stderr, payload) per frame, until the stream ends. The header is the
    stream number, 3 padding bytes and the payload size (big-endian)."""
    buffer = b""
    while True:
        while len(buffer) < 8:
            chunk = raw.recv(1 << 16)
            if not chunk:
                return
            buffer += chunk
        kind, size = buffer[0], struct.unpack(">I", buffer[4:8])[0]
        while len(buffer) < 8 + size:
            chunk = raw.recv(1 << 16)
            if not chunk:
                return
            buffer += chunk
        yield kind, buffer[8 : 8 + size]
        buffer = buffer[8 + size :]
