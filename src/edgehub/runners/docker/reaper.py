"""Cleaning up after processes that died without doing it themselves (SIGKILL, a crash).

`reap` removes edgehub's containers whose owning process (on this host) is gone, and stops the
jobs that dead processes left running inside shared warm containers (found by the owner marker
every exec carries, see ``docker/owner.py``). It is cheap enough to call at the start of every
command: the light client only (no docker SDK), one list call when there are no warm
containers, and it never raises — no daemon, a remote daemon or any API error mean "nothing
reaped".
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from edgehub.runners.docker.client import DockerAPIError, DockerClient, DockerNotFound
from edgehub.runners.docker.exec import KILL_SCRIPT, exec_quiet
from edgehub.runners.docker.owner import (
    MANAGED,
    OWNER_ENV,
    OWNER_HOST,
    OWNER_PID,
    OWNER_STARTED,
    WARM,
    owner_alive,
    parse_marker,
)

__all__ = ["ReapReport", "reap", "reap_orphans"]

_TIMEOUT_S = 5.0
# Prints the owner marker of every process in the container that has one.
_LIST_OWNERS = (
    "for d in /proc/[0-9]*; do "
    f"tr '\\0' '\\n' < $d/environ 2>/dev/null | grep -m1 '^{OWNER_ENV}='; done; exit 0"
)


@dataclass(frozen=True)
class ReapReport:
    """What `reap` did: containers removed, jobs stopped, and the pids of the dead owners
    (a run store can mark their runs KILLED)."""

    containers_removed: tuple[str, ...] = ()
    jobs_stopped: int = 0
    dead_owners: frozenset[int] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.containers_removed or self.jobs_stopped)


def reap(client: DockerClient | None = None, *, jobs: bool = True) -> ReapReport:
    """Remove containers of dead owners on this host; with ``jobs``, also stop dead owners'
    jobs in running warm containers. Never raises; without a local daemon, reaps nothing."""
    own = client is None
    if client is None:
        from edgehub.runners.docker.lite import LiteClient, local_socket

        path = local_socket()
        if path is None:
            return ReapReport()
        client = LiteClient(path, timeout=_TIMEOUT_S)
    try:
        return _reap(client, jobs)
    except (DockerAPIError, OSError, ValueError, KeyError):
        return ReapReport()
    finally:
        if own:
            client.close()


def _reap(client: DockerClient, jobs: bool) -> ReapReport:
    host = socket.gethostname()
    removed: list[str] = []
    dead: set[int] = set()
    stopped = 0
    for summary in client.containers([f"{MANAGED}=1"]):
        labels = summary.get("Labels") or {}
        if labels.get(WARM) == "1":
            if jobs and summary.get("State") == "running":
                count, owners = _stop_orphaned_jobs(client, str(summary["Id"]), host)
                stopped += count
                dead |= owners
            continue
        if labels.get(OWNER_HOST) != host or not labels.get(OWNER_PID, "").isdigit():
            continue
        pid = int(labels[OWNER_PID])
        if owner_alive(pid, labels.get(OWNER_STARTED)):
            continue
        try:
            client.remove_container(str(summary["Id"]))
        except DockerNotFound:
            continue
        removed.append(str(summary["Id"]))
        dead.add(pid)
    return ReapReport(tuple(removed), stopped, frozenset(dead))


def _stop_orphaned_jobs(client: DockerClient, container: str, host: str) -> tuple[int, set[int]]:
    """Kill the processes in a warm container whose owner (on this host) is dead."""
    code, out, _ = exec_quiet(client, container, ["sh", "-c", _LIST_OWNERS])
    if code != 0:
        return 0, set()
    markers: dict[str, int] = {}
    for line in out.splitlines():
        value = line.partition("=")[2]
        parsed = parse_marker(value)
        if parsed is None or parsed[0] != host or owner_alive(parsed[1], parsed[2]):
            continue
        markers[line] = parsed[1]
    if not markers:
        return 0, set()
    exec_quiet(client, container, ["sh", "-c", KILL_SCRIPT, "edgehub-reap", *markers])
    return len(out.splitlines() and [m for m in out.splitlines() if m in markers]), set(
        markers.values()
    )


def reap_orphans(client: DockerClient | None = None) -> list[str]:
    """Remove containers of dead owners on this host; their ids (see `reap`)."""
    return list(reap(client, jobs=False).containers_removed)
