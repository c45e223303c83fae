"""Which process owns something: host, pid and start time, so a reused pid is not the owner.

A process is named by its host, its pid and when it started (clock ticks since boot, from
``/proc/<pid>/stat``). The marker ``host:pid:ticks`` names it in container labels, in the
environment of a command and in the names of files it is still writing; `ProcessId.alive`
tells whether that very process still runs (``None`` for another host's: it cannot be known
from here).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


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
    except PermissionError:
        pass  # it runs, as another user
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    if started:
        current = start_ticks(pid)
        if current is not None and current != started:
            return False
    return True


def parse_marker(value: str) -> tuple[str, int, str | None] | None:
    """(host, pid, ticks) from a marker's value, ``None`` if it is not one."""
    host, _, rest = value.rpartition(":")
    host, _, pid = host.rpartition(":")
    if not host or not pid.isdigit() or not (rest.isdigit() or rest == ""):
        return None
    return host, int(pid), rest or None


@dataclass(frozen=True)
class ProcessId:
    """One process: ``host``, ``pid`` and ``started`` (its start time in ticks, if known)."""

    host: str
    pid: int
    started: str | None

    @property
    def marker(self) -> str:
        return f"{self.host}:{self.pid}:{self.started or ''}"

    @classmethod
    def parse(cls, marker: str) -> ProcessId | None:
        parts = parse_marker(marker)
        return None if parts is None else cls(*parts)

    def alive(self) -> bool | None:
        """True while it runs, False once it ended; None for a process of another host."""
        if self.host != socket.gethostname():
            return None
        return owner_alive(self.pid, self.started)


def this_process() -> ProcessId:
    pid = os.getpid()
    return ProcessId(socket.gethostname(), pid, start_ticks(pid))
