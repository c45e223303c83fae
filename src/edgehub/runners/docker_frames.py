"""Docker's multiplexed exec stream (non-TTY): reading its frames, and sending stdin."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

__all__ = ["frames", "send_and_close_write"]


def frames(raw: Any) -> Iterator[tuple[int, bytes]]:
    """(1 stdout | 2 stderr, payload) per frame, until the stream ends. A frame is an 8-byte
    header (stream, 3 padding bytes, big-endian size) and its payload; ``raw`` has ``recv``."""
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


def send_and_close_write(raw: Any, data: bytes) -> None:
    """Write ``data`` to the exec's stdin and signal end of input."""
    raw.sendall(data)
    try:
        raw.shutdown(socket.SHUT_WR)
    except (AttributeError, OSError):
        raw.shutdown_write()  # a paramiko channel (DOCKER_HOST=ssh://...)
