"""Random identifiers, without the `uuid` module (whose import loads `platform`: a few ms of
every command's start-up)."""

from __future__ import annotations

import os


def uuid4_hex() -> str:
    """What ``uuid.uuid4().hex`` returns: 32 hex digits, random but for the version (4) and
    the RFC 4122 variant bits."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()


def random_hex(digits: int) -> str:
    """``digits`` random hex digits (a name's unique part)."""
    return os.urandom((digits + 1) // 2).hex()[:digits]
