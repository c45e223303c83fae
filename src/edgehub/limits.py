"""How much edgehub accepts from a device: archives, logs and results, each capped.

A device (an SSH board, a container) is not trusted: what it sends back is bounded so that a
faulty or hostile one cannot exhaust the host's memory or disk. Each cap has a default and an
environment variable to raise it; the error that reports a breach names the variable. Sizes
take a plain number of bytes or a number with a K, M, G or T suffix (powers of 1024).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from edgehub.errors import ConfigError, DeviceOutputError

_SIZE = re.compile(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def env_size(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    """The size (or count) in environment variable ``name``, else ``default``."""
    text = (os.environ if environ is None else environ).get(name, "").strip()
    if not text:
        return default
    match = _SIZE.fullmatch(text)
    if match is None or int(match.group(1)) <= 0:
        raise ConfigError(
            f"{name}={text!r} is not a positive size; give a number, optionally with K, M, G "
            "or T (e.g. 16G)"
        )
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def env_seconds(name: str, default: float = 0.0) -> float:
    """The seconds (a finite number >= 0) in environment variable ``name``, else ``default``;
    anything else is refused naming the variable, never read as the default."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ConfigError(f"{name}={text!r} is not a number of seconds >= 0; e.g. {name}=300")
    return value


def human_size(size: int) -> str:
    """``size`` bytes for a message: "512 bytes", "1.5 MiB", "16 GiB"."""
    if size < 1024:
        return f"{size} bytes"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f}".rstrip("0").rstrip(".") + f" {unit}"


_Limits = TypeVar("_Limits", bound="FetchLimits")


@dataclass(frozen=True)
class FetchLimits:
    """Caps on an archive from a device: the total size of its files, the size of any one
    file (both as the files' full sizes, holes of sparse files included), the number of
    entries and the depth of their paths. Each is raised by ``<PREFIX>_MAX_BYTES``,
    ``_MAX_MEMBER_BYTES``, ``_MAX_<COUNTED>`` and ``_MAX_DEPTH`` (`BundleLimits`: the same
    caps, its own defaults and variables)."""

    PREFIX: ClassVar[str] = "EDGEHUB_FETCH"
    COUNTED: ClassVar[str] = "FILES"

    max_bytes: int = 16 << 30
    max_member_bytes: int = 8 << 30
    max_files: int = 10_000
    max_depth: int = 32

    @classmethod
    def variable(cls, cap: str) -> str:
        """The environment variable of ``cap`` (``bytes``, ``member_bytes``, ``files``,
        ``depth``)."""
        return f"{cls.PREFIX}_MAX_{cls.COUNTED if cap == 'files' else cap.upper()}"

    @classmethod
    def from_env(cls: type[_Limits]) -> _Limits:
        return cls(
            max_bytes=env_size(cls.variable("bytes"), cls.max_bytes),
            max_member_bytes=env_size(cls.variable("member_bytes"), cls.max_member_bytes),
            max_files=env_size(cls.variable("files"), cls.max_files),
            max_depth=env_size(cls.variable("depth"), cls.max_depth),
        )

    def check_member(self, size: int, what: str) -> None:
        """Refuse (`DeviceOutputError`) file ``what`` of ``size`` bytes over the cap on one
        file, naming the variable that raises it."""
        if size > self.max_member_bytes:
            raise DeviceOutputError(
                f"{what} is over the limit of {human_size(self.max_member_bytes)} a file; raise "
                f"{self.variable('member_bytes')} to accept it"
            )

    def check_total(self, total: int, what: str) -> None:
        """Refuse (`DeviceOutputError`) ``what`` of ``total`` bytes over the cap on the
        whole, naming the variable that raises it."""
        if total > self.max_bytes:
            raise DeviceOutputError(
                f"{what} is over the limit of {human_size(self.max_bytes)}; raise "
                f"{self.variable('bytes')} to accept more"
            )


@dataclass(frozen=True)
class BundleLimits(FetchLimits):
    """Caps on a run bundle being imported (`hub runs import`): ``EDGEHUB_BUNDLE_MAX_*``."""

    PREFIX: ClassVar[str] = "EDGEHUB_BUNDLE"
    COUNTED: ClassVar[str] = "MEMBERS"

    max_files: int = 100_000


@dataclass(frozen=True)
class DeviceFarmLimits(FetchLimits):
    """Caps on what AWS Device Farm sends back, read into memory: the artifact zip as
    downloaded and each file read from it (``EDGEHUB_AWS_ARTIFACTS_MAX_*``)."""

    PREFIX: ClassVar[str] = "EDGEHUB_AWS_ARTIFACTS"

    max_bytes: int = 256 << 20
    max_member_bytes: int = 16 << 20


@dataclass(frozen=True)
class LogLimits:
    """Caps on a command's output: the characters kept of one line, and the characters kept
    of a whole stream (and of a run's log file): its head and its tail, with a note of what
    was dropped between them."""

    max_line: int = 64 << 10
    max_total: int = 16 << 20

    @classmethod
    def from_env(cls) -> LogLimits:
        return cls(
            max_line=env_size("EDGEHUB_LOG_MAX_LINE", cls.max_line),
            max_total=env_size("EDGEHUB_LOG_MAX_BYTES", cls.max_total),
        )


@dataclass(frozen=True)
class ResultLimits:
    """Caps on a JSON document from a device (an agent's ``result.json``): size and nesting."""

    max_bytes: int = 16 << 20
    max_depth: int = 64

    @classmethod
    def from_env(cls) -> ResultLimits:
        return cls(
            max_bytes=env_size("EDGEHUB_RESULT_MAX_BYTES", cls.max_bytes),
            max_depth=env_size("EDGEHUB_RESULT_MAX_DEPTH", cls.max_depth),
        )
