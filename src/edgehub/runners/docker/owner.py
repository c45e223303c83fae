"""Who owns a container or a job: the labels and the environment marker naming a process.

A process is named by host, pid and start time (clock ticks since boot), so a reused pid is not
mistaken for the owner. Containers carry the owner in labels; every command exec'd into a
container carries it in ``EDGEHUB_OWNER`` (``host:pid:ticks``), which is how the reaper finds
the jobs a dead process left running in a shared warm container.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = [
    "MANAGED",
    "OWNER_ENV",
    "OWNER_HOST",
    "OWNER_PID",
    "OWNER_STARTED",
    "WARM",
    "WARM_KEY",
    "owner_alive",
    "owner_labels",
    "owner_marker",
    "parse_marker",
    "start_ticks",
]

MANAGED = "org.edgehub.managed"
OWNER_PID = "org.edgehub.owner-pid"
OWNER_HOST = "org.edgehub.owner-host"
OWNER_STARTED = "org.edgehub.owner-started"
WARM = "org.edgehub.warm"
WARM_KEY = "org.edgehub.warm-key"
OWNER_ENV = "EDGEHUB_OWNER"


def start_ticks(pid: int) -> str | None:
    """When a process started (clock ticks since boot), to tell a reused pid from its owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def owner_alive(pid: int, started: str | None) -> bool:
    """Whether process ``pid`` of this host, started at ``started`` ticks, still runs."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if started:
        current = start_ticks(pid)
        if current is not None and current != started:
            return False
    return True


def owner_labels() -> dict[str, str]:
    """The labels naming this process as a container's owner."""
    labels = {MANAGED: "1", OWNER_PID: str(os.getpid()), OWNER_HOST: socket.gethostname()}
    started = start_ticks(os.getpid())
    if started:
        labels[OWNER_STARTED] = started
    return labels


def owner_marker() -> str:
    """``EDGEHUB_OWNER=host:pid:ticks`` for this process, for the environment of an exec."""
    return f"{OWNER_ENV}={socket.gethostname()}:{os.getpid()}:{start_ticks(os.getpid()) or ''}"


def parse_marker(value: str) -> tuple[str, int, str | None] | None:
    """(host, pid, ticks) from a marker's value, ``None`` if it is not one."""
    host, _, rest = value.rpartition(":")
    host, _, pid = host.rpartition(":")
    if not host or not pid.isdigit():
        return None
    return host, int(pid), rest or None
