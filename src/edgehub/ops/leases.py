"""Exclusive device leases: one measurement on a device at a time, across processes and users.

A lease is an ``flock`` on ``<lease dir>/<device>.lock`` (``$EDGEHUB_LEASE_DIR``, else
``/tmp/edgehub-leases``, a sticky world-writable directory so that other users' processes
meet the same locks). The holder writes its pid, user, host, command and start time into the
file, so that a waiter can say for whom it waits. The kernel drops the lock when its holder
exits, however it ends, so a crashed holder never blocks anyone; what a dead holder wrote is
then stale and is reported as such. Leases key on the device name.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from edgehub.errors import DeviceBusyError, OperationCancelled

if TYPE_CHECKING:
    from edgehub.events import EventSink
    from edgehub.ops.labgrid_pool import PlaceInfo
    from edgehub.ops.project import Project

__all__ = [
    "LeaseHolder",
    "default_lease_dir",
    "device_lease",
    "lease_holder",
    "measurement_lease",
]

DEFAULT_TIMEOUT_S = 3600.0
_POLL_S = 0.25


def default_lease_dir() -> Path:
    env = os.environ.get("EDGEHUB_LEASE_DIR")
    return Path(env).expanduser() if env else Path("/tmp/edgehub-leases")


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds (or last held) a device's lease."""

    pid: int
    user: str
    host: str
    command: str
    since: float

    @property
    def alive(self) -> bool:
        """False when the holder ran on this host and its process is gone (stale record)."""
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def describe(self) -> str:
        started = time.strftime("%H:%M:%S", time.localtime(self.since))
        text = f"{self.user}@{self.host} pid {self.pid} ({self.command}) since {started}"
        return text if self.alive else f"{text} [that process is gone: stale record]"


def _lock_path(device: str, lease_dir: Path) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in device)
    return lease_dir / f"{safe}.lock"


def _prepare(lease_dir: Path) -> None:
    if not lease_dir.is_dir():
        lease_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            lease_dir.chmod(0o1777)


def lease_holder(device: str, lease_dir: Path | None = None) -> LeaseHolder | None:
    """What the lease file of ``device`` records (the holder, or the last one)."""
    path = _lock_path(device, lease_dir or default_lease_dir())
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return LeaseHolder(
            int(data["pid"]), str(data["user"]), str(data["host"]), str(data["command"]),
            float(data["since"]),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        return None


def _open(path: Path) -> IO[str]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o666)
    return os.fdopen(fd, "r+", encoding="utf-8")


def _record_self(handle: IO[str], command: str) -> None:
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getuid())
    record = {
        "pid": os.getpid(),
        "user": user,
        "host": socket.gethostname(),
        "command": command,
        "since": time.time(),
    }
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(record))
    handle.flush()


@contextlib.contextmanager
def device_lease(
    device: str,
    *,
    timeout: float | None = None,
    command: str | None = None,
    on_wait: Callable[[str], None] | None = None,
    cancelled: Callable[[float], bool] | None = None,
    lease_dir: Path | None = None,
) -> Iterator[None]:
    """Hold ``device`` exclusively for the ``with`` block.

    While another process (or thread) holds it, ``on_wait`` is told once whom we wait for;
    after ``timeout`` seconds (default one hour) `DeviceBusyError` is raised.
    ``cancelled(seconds)`` sleeps and returns True to give up (`OperationCancelled`)."""
    folder = lease_dir or default_lease_dir()
    _prepare(folder)
    path = _lock_path(device, folder)
    limit = DEFAULT_TIMEOUT_S if timeout is None else timeout
    handle = _open(path)
    try:
        deadline = time.monotonic() + limit
        told = False
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            holder = lease_holder(device, folder)
            who = holder.describe() if holder else "another process"
            if time.monotonic() >= deadline:
                raise DeviceBusyError(
                    f"device {device!r} is still held by {who} after {limit:g} s; try again "
                    "later or raise --lease-timeout"
                )
            if not told and on_wait is not None:
                on_wait(f"device {device!r} is held by {who}; waiting (up to {limit:g} s)")
                told = True
            if cancelled is not None:
                if cancelled(_POLL_S):
                    raise OperationCancelled("cancelled while waiting for a device")
            else:
                time.sleep(_POLL_S)
        _record_self(handle, command or " ".join(["hub", *sys.argv[1:]])[:200])
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                handle.seek(0)
                handle.truncate()  # no holder any more
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


@contextlib.contextmanager
def measurement_lease(
    project: Project,
    device: str,
    *,
    timeout: float | None,
    command: str,
    events: EventSink,
    cancelled: Callable[[float], bool],
) -> Iterator[PlaceInfo | None]:
    """What a measurement on ``device`` holds: a free place of its labgrid pool when hub.toml
    gives the device a ``labgrid`` table (yielded, with the board's SSH address), else the
    device's lease on this host (None)."""
    section = project.config.devices.get(device)
    if section is None or section.labgrid is None:
        with device_lease(
            device, timeout=timeout, command=command, on_wait=events.warning, cancelled=cancelled
        ):
            yield None
        return
    from edgehub.core.device.configs import LabgridConfig
    from edgehub.ops.labgrid_pool import hold_place, open_pool

    config = LabgridConfig(**section.labgrid.values)
    pool = open_pool(config)
    try:
        with hold_place(
            pool, config, timeout=timeout, on_wait=events.warning, cancelled=cancelled
        ) as place:
            where = f"{place.username or '?'}@{place.address}:{place.port or 22}"
            events.info(f"device {device!r}: holding labgrid place {place.name} ({where})")
            yield place
    finally:
        pool.close()
