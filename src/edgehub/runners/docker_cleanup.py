"""Which containers are edgehub's, and removing them when their owner is gone.

Every runner's container carries labels naming the owning process (pid and start time, so a
reused pid is not mistaken for it). `reap_orphans` removes those whose owner has died, and an
`atexit` hook closes the runners still open when the interpreter exits.
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgehub.runners.docker import DockerCommandRunner

__all__ = [
    "MANAGED",
    "OPEN_RUNNERS",
    "OPEN_RUNNERS_LOCK",
    "OWNER_HOST",
    "OWNER_PID",
    "OWNER_STARTED",
    "reap_orphans",
    "start_ticks",
]

MANAGED = "org.edgehub.managed"
OWNER_PID = "org.edgehub.owner-pid"
OWNER_HOST = "org.edgehub.owner-host"
OWNER_STARTED = "org.edgehub.owner-started"


def start_ticks(pid: int) -> str | None:
    """When a process started (clock ticks since boot), to tell a reused pid from its owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def _owner_alive(pid: int, started: str | None) -> bool:
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


def reap_orphans(client: Any | None = None) -> list[str]:
    """Remove managed containers of this host whose owning process is dead; returns their ids."""
    import docker.errors

    from edgehub.images import docker_client

    own = client is None
    client = docker_client() if client is None else client
    removed: list[str] = []
    try:
        filters = {"label": [f"{MANAGED}=1", f"{OWNER_HOST}={socket.gethostname()}"]}
        for summary in client.api.containers(all=True, filters=filters):
            labels = summary.get("Labels") or {}
            try:
                pid = int(labels.get(OWNER_PID, ""))
            except ValueError:
                continue
            if _owner_alive(pid, labels.get(OWNER_STARTED)):
                continue
            try:
                client.api.remove_container(summary["Id"], force=True)
            except docker.errors.NotFound:
                pass
            removed.append(str(summary["Id"]))
    finally:
        if own:
            client.close()
    return removed


OPEN_RUNNERS: set[DockerCommandRunner] = set()
OPEN_RUNNERS_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    with OPEN_RUNNERS_LOCK:
        runners = list(OPEN_RUNNERS)
    for runner in runners:
        try:
            runner.close()
        except Exception:  # best effort at interpreter exit
            pass
