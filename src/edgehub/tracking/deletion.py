"""Deleting runs from the store: their rows of every table in one transaction, then what they
alone kept on disk.

A stored artifact is content shared by every run that logged the same bytes, so its file goes
only once no remaining run refers to it; a run's folder (``runs/<name>``) is its own. Only paths
of the store's own forms are ever removed (``artifacts/<sha256>/<name>``, ``runs/<name>``),
whatever a row says, and links are removed themselves, never followed.
"""

from __future__ import annotations

import re
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from edgehub.tracking.staging import remove_staging

if TYPE_CHECKING:
    from edgehub.tracking.store import RunStore


_TABLES = ("params", "metrics", "tags", "environment", "artifacts")
_STORED = re.compile(r"artifacts/[0-9a-f]{64}/[^/\\\0]+")
_RUN_DIR = re.compile(r"runs/[^/\\\0]+")
_CHUNK = 500


def delete_runs(store: RunStore, run_ids: list[str]) -> list[Path]:
    """Delete the rows of ``run_ids`` (full ids) in one transaction; returns the files and
    folders they alone kept (stored artifacts no other run refers to, their run folders)."""
    paths: set[str] = set()
    folders: set[str] = set()
    with store.transaction("delete runs") as conn:
        for start in range(0, len(run_ids), _CHUNK):
            chunk = tuple(run_ids[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            for (path,) in conn.execute(
                f"SELECT DISTINCT path FROM artifacts WHERE run_id IN ({marks})"
                " AND device IS NULL AND sha256 IS NOT NULL",
                chunk,
            ):
                paths.add(str(path))
            for (folder,) in conn.execute(
                f"SELECT artifact_dir FROM runs WHERE id IN ({marks}) AND artifact_dir IS NOT NULL",
                chunk,
            ):
                folders.add(str(folder))
            for table in _TABLES:
                conn.execute(f"DELETE FROM {table} WHERE run_id IN ({marks})", chunk)
            conn.execute(f"DELETE FROM runs WHERE id IN ({marks})", chunk)
        still = {
            p
            for p in paths
            if conn.execute("SELECT 1 FROM artifacts WHERE path = ?", (p,)).fetchone()
        }
        shared = {
            f
            for f in folders
            if conn.execute("SELECT 1 FROM runs WHERE artifact_dir = ?", (f,)).fetchone()
        }
    found = [store.root / p for p in sorted(paths - still) if _STORED.fullmatch(p)]
    found += [store.root / f for f in sorted(folders - shared) if _own_folder(f)]
    return found


def _own_folder(folder: str) -> bool:
    return bool(_RUN_DIR.fullmatch(folder)) and folder not in ("runs/.", "runs/..")


def remove_stored(path: Path) -> None:
    """Remove a stored file or folder (a link itself, never what it points to), and its
    content folder once empty."""
    remove_staging(path)  # the same removal: never through a link
    if path.parent.parent.name == "artifacts":
        with suppress(OSError):
            path.parent.rmdir()  # the <sha256> folder, if nothing else is in it
