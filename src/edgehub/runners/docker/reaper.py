"""Cleaning up after processes that died without doing it themselves (SIGKILL, a crash).

`reap` removes edgehub's containers whose owning process (on this host) is gone, stops the
jobs that dead processes left running inside shared warm containers (the daemon lists a
container's execs, and a warm job's arguments name its owner), and removes the channel folders
of warm containers that have expired. It is cheap enough to call at the start of every
command: the light client only (no docker SDK), plain API calls (an exec only to kill), and it
never raises — no daemon or any API error mean "nothing reaped". A remote daemon is reaped only
through a client handed in (a runner's, `hub doctor`'s), never on its own.
"""

from __future__ import annotations

import shutil
import socket
import time
from dataclasses import dataclass, field

from edgehub.errors import EdgehubError
from edgehub.paths import existing_cache_subdir
from edgehub.runners.docker.client import (
    DockerAPIError,
    DockerClient,
    DockerNotFound,
    local_client,
)
from edgehub.runners.docker.exec import KILL_SCRIPT, exec_quiet
from edgehub.runners.docker.owner import (
    MANAGED,
    OWNER_ENV,
    OWNER_HOST,
    OWNER_PID,
    OWNER_STARTED,
    WARM,
    WARM_KEY,
    owner_alive,
    parse_marker,
)
from edgehub.runners.docker.warm import JOB_WRAPPER

_TIMEOUT_S = 5.0
CHANNEL_GRACE_S = 300.0


@dataclass(frozen=True)
class ReapReport:
    """What `reap` did: containers removed, jobs stopped, and the pids of the dead owners
    (a run store can mark their runs KILLED)."""

    containers_removed: tuple[str, ...] = ()
    jobs_stopped: int = 0
    dead_owners: frozenset[int] = field(default_factory=frozenset)
    complete: bool = True  # False: the daemon could not be asked (or not about everything)

    def __bool__(self) -> bool:
        return bool(self.containers_removed or self.jobs_stopped)


def reap(client: DockerClient | None = None, *, jobs: bool = True) -> ReapReport:
    """Remove containers of dead owners on this host; with ``jobs``, also stop dead owners'
    jobs in running warm containers. Never raises; without a local daemon, reaps nothing."""
    own = client is None
    if client is None:
        try:
            client = local_client(_TIMEOUT_S)
        except EdgehubError:  # a malformed $DOCKER_HOST: the command itself says so
            client = None
        if client is None:
            return ReapReport(complete=False)
    try:
        return _reap(client, jobs)
    except (DockerAPIError, OSError, ValueError, KeyError):
        return ReapReport(complete=False)
    finally:
        if own:
            client.close()


def _reap(client: DockerClient, jobs: bool) -> ReapReport:
    host = socket.gethostname()
    removed: list[str] = []
    dead: set[int] = set()
    stopped = 0
    summaries = client.containers([f"{MANAGED}=1"])
    if client.local:  # the channel folders belong to this machine's daemon
        _tidy_channels({str((s.get("Labels") or {}).get(WARM_KEY)) for s in summaries})
    for summary in summaries:
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


def _tidy_channels(live: set[str]) -> None:
    """Remove the channel folders of warm containers that are gone (they leave their socket,
    log and agent copy behind); a folder touched in the last `CHANNEL_GRACE_S` may belong to
    a container being started."""
    try:
        base = existing_cache_subdir("warm")  # checked: never listed through a link
        folders = list(base.iterdir()) if base is not None else []
    except (OSError, EdgehubError):
        return  # a folder that does not check out is not ours to tidy
    now = time.time()
    for folder in folders:
        try:
            if folder.name in live or now - folder.stat().st_mtime < CHANNEL_GRACE_S:
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _stop_orphaned_jobs(client: DockerClient, container: str, host: str) -> tuple[int, set[int]]:
    """Kill the jobs in a warm container whose owner (on this host) is dead: the daemon lists
    the container's execs, and a job's arguments name its owner (``docker/warm.py``)."""
    dead: dict[str, int] = {}
    stopped = 0
    for exec_id in client.inspect_container(container).get("ExecIDs") or []:
        try:
            info = client.exec_inspect(exec_id)
        except DockerNotFound:
            continue
        process = info.get("ProcessConfig") or {}
        arguments = process.get("arguments") or []
        if not info.get("Running") or arguments[:2] != ["-c", JOB_WRAPPER] or len(arguments) < 3:
            continue
        owner = parse_marker(str(arguments[2]))
        if owner is None or owner[0] != host or owner_alive(owner[1], owner[2]):
            continue
        dead[f"{OWNER_ENV}={arguments[2]}"] = owner[1]
        stopped += 1
    if dead:
        exec_quiet(client, container, ["sh", "-c", KILL_SCRIPT, "edgehub-reap", *dead])
    return stopped, set(dead.values())


def reap_orphans(client: DockerClient | None = None) -> list[str]:
    """Remove containers of dead owners on this host; their ids (see `reap`)."""
    return list(reap(client, jobs=False).containers_removed)
