"""A run that filled the disk: one clear `StorageError`, and its partial copies removed.

Whatever ran out of space (the store copying an artifact, a device's results being unpacked
into the run's directory, the run's log), the run ends FAILED with one line naming the file
system and what to do, and everything in its directory but ``run.log`` is removed: those are
partial copies, and the space they free lets the store record the run's end.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from contextlib import suppress
from pathlib import Path

from edgehub.errors import StorageError
from edgehub.tracking.staging import remove_staging

_FULL = (errno.ENOSPC, errno.EDQUOT)


def _full_cause(error: BaseException) -> BaseException | None:
    """``error`` or the one it was raised from that is a full disk or quota, if any."""
    seen: BaseException | None = error
    for _ in range(8):  # a short chain of causes
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.errno in _FULL:
            return seen
        if isinstance(seen, sqlite3.OperationalError) and "disk is full" in str(seen):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def disk_full(error: BaseException) -> bool:
    """Whether ``error`` (or one it was raised from) is a full disk or quota."""
    return _full_cause(error) is not None


def _mount_point(path: Path) -> Path:
    path = path.absolute()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def full_disk_error(
    error: BaseException, run_dir: Path, store_root: Path, run: str
) -> StorageError:
    """The one-line error for a run that ran out of space (``error`` is a raw OS error)."""
    cause = _full_cause(error)
    name = getattr(cause, "filename", None)
    where = Path(name) if isinstance(name, str) else run_dir
    quota = isinstance(cause, OSError) and cause.errno == errno.EDQUOT
    what = "disk quota left" if quota else "space left"
    place = _mount_point(where)
    inside = where.absolute().is_relative_to(store_root)
    advice = (
        "free space there or move the store ([project] store in hub.toml, or EDGEHUB_STORE)"
        if inside
        else "free space there"
    )
    return StorageError(f"no {what} on {place} while storing {run} in {where}; {advice}")


def keep_only_log(run_dir: Path) -> None:
    """Remove the run's partial files, keeping ``run.log`` (links are removed, not followed)."""
    try:
        entries = list(run_dir.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name != "run.log":
            with suppress(OSError):
                remove_staging(entry)  # the same removal: never through a link
