"""Unfinished copies in the artifact store, named by the process that writes them.

`ArtifactStore.add` copies into ``.incoming-<host>:<pid>:<ticks>-<random>/`` and moves the
finished copy to its place. The name says who writes it (`edgehub.procid`: a reused pid is
told apart by its start time), so `hub doctor --repair` removes only the copies of processes
that have ended, never one a running `hub` is still writing. Copies named by an older release
(``.incoming-<random>``) carry no owner: they are removed only once nothing in them changed for
a day. Nothing here follows a symbolic link: a link found among them is removed itself.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import time
from contextlib import suppress
from pathlib import Path

from edgehub.procid import ProcessId, owner_alive, this_process

PREFIX = ".incoming-"
LEGACY_AGE_S = 24 * 3600.0


def _safe_host(host: str) -> str:
    return "".join(c if c.isalnum() or c in ".-_" else "_" for c in host) or "_"


_marker: tuple[int, str] | None = None  # (pid, marker): a forked child names itself anew


def _own_marker() -> str:
    """This process's part of the name (found once per process: the host name and the
    process's start time do not change while it runs)."""
    global _marker
    pid = os.getpid()
    if _marker is None or _marker[0] != pid:
        me = this_process()
        _marker = pid, f"{_safe_host(me.host)}:{me.pid}:{me.started or ''}"
    return _marker[1]


def make_staging(root: Path) -> Path:
    """A new empty folder in ``root`` for this process's copy, named by this process."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{_own_marker()}-", dir=root))


def _owner(name: str) -> ProcessId | None:
    marker, _, _ = name[len(PREFIX) :].rpartition("-")
    return ProcessId.parse(marker) if marker else None


def _newest_change(path: Path) -> float:
    """The latest modification time in ``path`` and below (links not followed)."""
    newest = path.lstat().st_mtime
    if path.is_dir() and not path.is_symlink():
        for folder, dirs, files in os.walk(path):
            for name in dirs + files:
                with suppress(OSError):
                    newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
    return newest


class Staging:
    """An unfinished copy: ``removable`` once its writer has ended, and why (``reason``).
    (A plain class: this module is imported on every run's way to the store.)"""

    __slots__ = ("path", "reason", "removable")

    def __init__(self, path: Path, removable: bool, reason: str) -> None:
        self.path = path
        self.removable = removable
        self.reason = reason

    def __repr__(self) -> str:
        return f"Staging(path={self.path!r}, removable={self.removable!r}, reason={self.reason!r})"


def inspect_staging(path: Path) -> Staging:
    """Whether the unfinished copy ``path`` may be removed: its owner ended (or, for an
    older release's copy, it has not changed for a day); a symbolic link always may."""
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return Staging(path, True, "a symbolic link among the unfinished copies (not followed)")
    owner = _owner(path.name)
    if owner is None:
        age = time.time() - _newest_change(path)
        if age > LEGACY_AGE_S:
            return Staging(path, True, "an older release's unfinished copy, unchanged for a day")
        return Staging(
            path, False, "an unfinished copy of an older release (may still be written; "
            "removed once it is a day old)"
        )  # fmt: skip
    if owner.host != _safe_host(socket.gethostname()):
        return Staging(
            path, False, f"being copied by pid {owner.pid} on host {owner.host}, which cannot "
            "be checked from here; remove it by hand once no hub runs there"
        )  # fmt: skip
    if owner_alive(owner.pid, owner.started):
        return Staging(path, False, f"being copied by a running process (pid {owner.pid})")
    return Staging(path, True, f"an unfinished copy of a process that ended (pid {owner.pid})")


def remove_staging(path: Path) -> None:
    """Remove an unfinished copy without following links (a link is removed itself)."""
    with suppress(FileNotFoundError):  # removed meanwhile (another `hub doctor --repair`)
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path)
