"""Who owns a container or a job: the labels and the environment marker naming a process.

A process is named by host, pid and start time (`edgehub.procid`), so a reused pid is not
mistaken for the owner. Containers carry the owner in labels; every command exec'd into a
container carries it in ``EDGEHUB_OWNER`` (``host:pid:ticks``), which is how the reaper finds
the jobs a dead process left running in a shared warm container.

A process that labels a container or an exec as its own also leaves an owner record (an empty
file named by its marker in ``owners`` of the cache folder, `edgehub.paths.cache_subdir`),
removed by the reaper once it has cleaned up after that owner's death. So the reaper that runs
at the start of every command asks the daemon only when a recorded owner has died
(`dead_owner_records`).
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

from edgehub.errors import EdgehubError
from edgehub.paths import cache_subdir, existing_cache_subdir
from edgehub.procid import owner_alive, parse_marker, start_ticks

__all__ = [
    "MANAGED",
    "OWNER_ENV",
    "OWNER_HOST",
    "OWNER_PID",
    "OWNER_STARTED",
    "WARM",
    "WARM_KEY",
    "dead_owner_records",
    "forget_owner_records",
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


_recorded: set[int] = set()


def _own_marker() -> str:
    """``host:pid:ticks`` of this process, which leaves its owner record (``owners`` in the
    cache folder, `edgehub.paths.cache_subdir`) once; see the module docstring."""
    pid = os.getpid()
    marker = f"{socket.gethostname()}:{pid}:{start_ticks(pid) or ''}"
    if pid not in _recorded:
        # an unwritable folder: `dead_owner_records` says "unknown" for it too
        with contextlib.suppress(OSError):
            (cache_subdir("owners") / marker).touch()
            _recorded.add(pid)
    return marker


def dead_owner_records() -> list[Path] | None:
    """The records of owners on this host that have died; None when the records cannot tell
    (no folder yet, or one this process cannot write): the daemon must be asked then."""
    try:
        folder = existing_cache_subdir("owners")
    except EdgehubError:
        return None  # refused where this process records (`_own_marker`), in one line
    if folder is None or not os.access(folder, os.W_OK | os.X_OK):
        return None
    host = socket.gethostname()
    dead = []
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in names:
        owner = parse_marker(name)
        if owner is not None and owner[0] == host and not owner_alive(owner[1], owner[2]):
            dead.append(folder / name)
    return dead


def forget_owner_records(records: list[Path]) -> None:
    """After a complete clean-up: remove the records of the owners it covered, and make the
    folder where there is none, so that from now on the records can tell."""
    with contextlib.suppress(OSError, EdgehubError):
        cache_subdir("owners")  # the reaper never raises; this process's own use refuses it
    for record in records:
        with contextlib.suppress(OSError):
            record.unlink()


def owner_labels() -> dict[str, str]:
    """The labels naming this process as a container's owner (recorded as an owner)."""
    host, pid, started = _own_marker().rsplit(":", 2)
    labels = {MANAGED: "1", OWNER_PID: pid, OWNER_HOST: host}
    if started:
        labels[OWNER_STARTED] = started
    return labels


def owner_marker() -> str:
    """``EDGEHUB_OWNER=host:pid:ticks`` for this process, for the environment of an exec
    (recorded as an owner)."""
    return f"{OWNER_ENV}={_own_marker()}"
