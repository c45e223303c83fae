"""Exclusive device leases: one measurement on a board at a time, across processes and users.

A lease is an ``flock`` on a lock file named after the board (`edgehub.acquire.boards.board_key`:
two device names for one host and port share it) in the lease directory
(`edgehub.acquire.lease_dir`: private to the user by default, ``$EDGEHUB_LEASE_DIR`` to share).
The kernel drops the lock when its holder exits, however it ends, so a crashed holder never
blocks anyone.

Lock files are opened without following links (a link planted at the path is refused, its
target untouched), must be plain files with one name, and are written only by their owner while
holding the lock: the holder's pid, user, host, command, device name and start time, so that a
waiter can say for whom it waits. What a waiter reads there is size-capped and cut to printable
text; what a dead holder wrote is reported as stale.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import getpass
import hashlib
import json
import math
import os
import socket
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgehub.errors import DeviceBusyError, EnvironmentProblem, OperationCancelled, UsageError
from edgehub.procid import owner_alive
from edgehub.text import visible

DEFAULT_TIMEOUT_S = 3600.0
_POLL_S = 0.25
_RECORD_MAX = 4096
_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK


def check_lease_timeout(seconds: float | None) -> float:
    """``seconds`` to wait for a lease (None: the default hour); negative, NaN and infinite
    values are a `UsageError`."""
    if seconds is None:
        return DEFAULT_TIMEOUT_S
    if not math.isfinite(seconds) or seconds < 0:
        raise UsageError(
            f"lease timeout must be a finite number of seconds >= 0, got {seconds!r}; "
            "give e.g. --lease-timeout 600"
        )
    return float(seconds)


@dataclass
class Wait:
    """A wait for a board or place that others hold, polled every ``poll_s`` seconds: each
    `turn` raises `DeviceBusyError` (``busy``) once ``limit`` seconds have passed, tells
    ``on_wait`` once (``waiting``), then sleeps; ``cancelled(seconds)`` sleeps instead and
    returns True to give up (`OperationCancelled`, while waiting for ``what``)."""

    limit: float
    what: str
    on_wait: Callable[[str], None] | None
    cancelled: Callable[[float], bool] | None
    poll_s: float = _POLL_S
    told: bool = False
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.limit

    def turn(self, busy: str, waiting: str) -> None:
        if time.monotonic() >= self.deadline:
            raise DeviceBusyError(busy)
        if not self.told and self.on_wait is not None:
            self.on_wait(waiting)
            self.told = True
        if self.cancelled is None:
            time.sleep(self.poll_s)
        elif self.cancelled(self.poll_s):
            raise OperationCancelled(f"cancelled while waiting for {self.what}")


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds (or last held) a board's lease, as its lock file says (printable text)."""

    pid: int
    user: str
    host: str
    command: str
    since: float
    device: str = ""

    @property
    def alive(self) -> bool:
        """False when the holder ran on this host and its process is gone (stale record)."""
        return self.host != socket.gethostname() or owner_alive(self.pid, None)

    def describe(self) -> str:
        started = time.strftime("%H:%M:%S", time.localtime(self.since)) if self.since else "?"
        text = f"{self.user}@{self.host} pid {self.pid} ({self.command}) since {started}"
        if self.device:
            text += f" for device {self.device!r}"
        return text if self.alive else f"{text} [that process is gone: stale record]"


def lease_path(board: str, lease_dir: Path | None = None) -> Path:
    """The lock file of ``board`` (a readable part of the key and a hash of all of it)."""
    from edgehub.acquire.lease_dir import lease_directory

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in board)[:60]
    digest = hashlib.sha256(board.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return (lease_dir or lease_directory()) / f"{safe}-{digest}.lock"


def lease_holder(board: str, lease_dir: Path | None = None) -> LeaseHolder | None:
    """What the lock file of ``board`` records (the holder, or the last one), if anything."""
    try:
        fd = os.open(lease_path(board, lease_dir), os.O_RDONLY | _OPEN)
    except OSError:
        return None
    try:
        return _read_record(fd)
    finally:
        os.close(fd)


def _text(value: Any, limit: int) -> str:
    """A field another process wrote, shown in messages: escaped, at most ``limit`` long."""
    return visible(str(value)[:limit])[:limit]


def _read_record(fd: int) -> LeaseHolder | None:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _RECORD_MAX:
            return None
        data = json.loads(os.pread(fd, _RECORD_MAX, 0).decode("utf-8") or "null")
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        since, pid = float(data["since"]), int(data["pid"])
        if not 0 < pid < 2**31:
            return None
        return LeaseHolder(
            pid=pid, user=_text(data["user"], 64), host=_text(data["host"], 255),
            command=_text(data["command"], 200),
            since=since if 0 < since < time.time() + 86400 else 0.0,  # 0: unknown
            device=_text(data.get("device", ""), 100),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


def _open_lock(path: Path) -> tuple[int, bool]:
    """The lock file at ``path``, opened (made if missing) without following a link; and
    whether we may write it (ours, one name)."""
    mode = 0o600 if not os.stat(path.parent).st_mode & 0o077 else 0o644
    writable = True
    for _ in range(10):
        try:
            try:
                fd = os.open(path, os.O_RDWR | _OPEN)
            except FileNotFoundError:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN, mode)
                os.fchmod(fd, mode)  # the file we just made: readable by all in a shared dir
            except PermissionError:  # another user's lock file: flock works on a read-only one
                fd, writable = os.open(path, os.O_RDONLY | _OPEN), False
        except FileExistsError:  # made by another process since: open it again
            continue
        except OSError as error:
            raise _refused(path, error) from error
        break
    else:
        raise EnvironmentProblem(f"lease file {path} keeps changing; check who writes there")
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        what = "is not a plain file" if not stat.S_ISREG(info.st_mode) else "has other names"
        raise EnvironmentProblem(
            f"lease file {path} {what} (a hard link, FIFO or device planted there?); edgehub will "
            f"not use it: remove it and check who can write {path.parent}"
        )
    return fd, writable and info.st_uid == os.getuid()


def _refused(path: Path, error: OSError) -> EnvironmentProblem:
    if error.errno == errno.ELOOP:
        return EnvironmentProblem(
            f"lease file {path} is a symbolic link; edgehub does not follow links there (one "
            f"planted there could make it write elsewhere): remove it and check who can write "
            f"{path.parent}"
        )
    return EnvironmentProblem(
        f"cannot open lease file {path}: {error.strerror}; set EDGEHUB_LEASE_DIR to a "
        "directory you can write"
    )


def _record_self(fd: int, command: str, device: str) -> None:
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getuid())
    record = {
        "pid": os.getpid(),
        "user": user,
        "host": socket.gethostname(),
        "command": command[:200],
        "device": device[:100],
        "since": time.time(),
    }
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode("utf-8")[:_RECORD_MAX], 0)


@contextlib.contextmanager
def device_lease(
    board: str,
    *,
    device: str | None = None,
    timeout: float | None = None,
    command: str | None = None,
    on_wait: Callable[[str], None] | None = None,
    cancelled: Callable[[float], bool] | None = None,
    lease_dir: Path | None = None,
) -> Iterator[None]:
    """Hold ``board`` (a `board_key`) exclusively for the ``with`` block, for ``device``.

    While another process (or thread) holds it, ``on_wait`` is told once whom we wait for;
    after ``timeout`` seconds (default one hour) `DeviceBusyError` is raised.
    ``cancelled(seconds)`` sleeps and returns True to give up (`OperationCancelled`)."""
    from edgehub.acquire.lease_dir import lease_directory, shared_directory

    limit = check_lease_timeout(timeout)
    name = device or board
    folder = shared_directory(lease_dir) if lease_dir is not None else lease_directory()
    fd, ours = _open_lock(lease_path(board, folder))
    try:
        wait = Wait(limit, "a device", on_wait, cancelled)
        while True:
            with contextlib.suppress(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            holder = _read_record(fd)
            who = holder.describe() if holder else "another process"
            if holder is not None and holder.device and holder.device != name:
                who += f" (the same board: {board})"
            wait.turn(
                f"device {name!r} is still held by {who} after {limit:g} s; try again "
                "later or raise --lease-timeout",
                f"device {name!r} is held by {who}; waiting (up to {limit:g} s)",
            )
        if ours:
            _record_self(fd, command or " ".join(["hub", *sys.argv[1:]]), name)
        try:
            yield
        finally:
            if ours:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)  # no holder any more
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
