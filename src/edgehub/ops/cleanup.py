"""Leftovers of `hub` processes that died (SIGKILL, a crash): their containers and their jobs
in warm containers are removed or stopped by the next edgehub process of any kind.

Their runs need no step here: the run store reads a RUNNING run whose process is gone as
KILLED when it opens.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgehub.runners.docker.client import DockerClient
    from edgehub.runners.docker.reaper import ReapReport


@dataclass(frozen=True)
class WarmContainer:
    """A toolchain container kept warm for the next job (it removes itself when idle)."""

    name: str
    image: str
    status: str


def warm_containers(client: DockerClient | None = None) -> list[WarmContainer]:
    """The warm containers on the Docker daemon `connect` reaches, local or remote (none
    without one)."""
    from edgehub.errors import DockerUnavailableError
    from edgehub.runners.docker import WARM, connect
    from edgehub.runners.docker.client import DockerAPIError

    own = client is None
    try:
        client = connect(timeout=10) if client is None else client
        found = client.containers([f"{WARM}=1"])
    except (DockerAPIError, DockerUnavailableError, OSError):
        return []
    finally:
        if own and client is not None:
            client.close()
    return [
        WarmContainer(
            name=str((c.get("Names") or ["?"])[0]).lstrip("/"),
            image=str(c.get("Image", "")),
            status=str(c.get("Status", "")),
        )
        for c in found
    ]


def reap_leftovers(
    *, when_recorded: bool = False, client: DockerClient | None = None
) -> ReapReport:
    """Remove dead owners' containers and stop their warm jobs; never raises. With
    ``when_recorded``, ask the daemon only if an owner record says a process of ours died
    (or the records cannot tell). Without ``client``, only a local daemon is asked."""
    from edgehub.runners.docker import ReapReport, reap
    from edgehub.runners.docker.owner import dead_owner_records, forget_owner_records

    records = dead_owner_records()
    if when_recorded and records == []:
        return ReapReport()
    report = reap(client)
    if report.complete:
        forget_owner_records(records or [])
    return report


def reap_leftovers_in_background() -> threading.Thread:
    """`reap_leftovers` (when an owner record calls for it) in a thread, so a command does
    not wait for it; join it before exit."""
    thread = threading.Thread(target=_reap_when_recorded, name="edgehub-reaper", daemon=True)
    thread.start()
    return thread


def _reap_when_recorded() -> None:
    """`reap_leftovers` where an owner record says a process of ours died (or the records
    cannot tell); without one, the reaper's modules are not even loaded."""
    from edgehub.runners.docker.owner import dead_owner_records

    if dead_owner_records() != []:
        reap_leftovers(when_recorded=True)
