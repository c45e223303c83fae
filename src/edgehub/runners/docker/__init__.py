"""Docker: the `DockerCommandRunner`, the clients it speaks through, and the reaper.

Modules: ``client`` (the typed API protocol and `connect`), ``lite`` and ``sdk`` (its two
implementations), ``frames`` (the exec stream), ``exec`` (commands as processes), ``files``
(put/get), ``exchange`` (upload + run + download in one exec), ``container`` (settings,
hardening, start/remove), ``oneshot`` (a cold job as a container of its own), ``warm``
(shared warm containers), ``channel`` (the host's direct line to a warm container's resident
agent), ``owner`` (labels and markers naming the owning process), ``reaper`` (clean-up after
dead processes), ``runner``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.lazy import names_from

if TYPE_CHECKING:
    from edgehub.runners.docker.client import connect
    from edgehub.runners.docker.container import DEFAULT_MEMORY, DEFAULT_PIDS
    from edgehub.runners.docker.owner import (
        MANAGED,
        OWNER_PID,
        OWNER_STARTED,
        WARM,
        owner_alive,
    )
    from edgehub.runners.docker.reaper import ReapReport, reap, reap_orphans
    from edgehub.runners.docker.runner import DockerCommandRunner

__all__ = [
    "DEFAULT_MEMORY",
    "DEFAULT_PIDS",
    "MANAGED",
    "OWNER_PID",
    "OWNER_STARTED",
    "WARM",
    "DockerCommandRunner",
    "ReapReport",
    "connect",
    "owner_alive",
    "reap",
    "reap_orphans",
]

# each name loads its own module on first use: a warm job's runner does not load the reaper
__getattr__ = names_from(
    __name__,
    {
        "connect": "client",
        "DEFAULT_MEMORY": "container",
        "DEFAULT_PIDS": "container",
        "MANAGED": "owner",
        "OWNER_PID": "owner",
        "OWNER_STARTED": "owner",
        "WARM": "owner",
        "owner_alive": "owner",
        "ReapReport": "reaper",
        "reap": "reaper",
        "reap_orphans": "reaper",
        "DockerCommandRunner": "runner",
    },
)
