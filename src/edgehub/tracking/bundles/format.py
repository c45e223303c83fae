"""The bundle format: its names, limits and contents, and a run's rows of every table as
JSON-ready data (read from one store, inserted into another)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgehub.limits import BundleLimits
from edgehub.tracking.records import IMPORTED_TAG

__all__ = [
    "ARTIFACT_COLUMNS",
    "IMPORTED_TAG",
    "MANIFEST",
    "RUN_COLUMNS",
    "BundleContents",
    "BundleLimits",
    "ImageLock",
    "ImportResult",
    "insert_runs",
    "run_rows",
    "same_rows",
    "unmarked",
]

FORMAT = "edgehub-bundle"
VERSION = 1
MANIFEST = "edgehub-bundle.json"

RUN_COLUMNS = (
    "id", "project", "name", "type", "component", "status", "parent_id", "started_at",
    "ended_at", "host", "pid", "artifact_dir", "output_type", "error", "device", "runtime",
    "model_sha256",
)  # fmt: skip
ARTIFACT_COLUMNS = (
    "id", "run_id", "name", "file_name", "sha256", "size", "path", "device", "logged_at",
)  # fmt: skip
TABLES = {
    "params": ("run_id", "name", "value", "logged_at"),
    "metrics": ("run_id", "name", "step", "value", "logged_at"),
    "tags": ("run_id", "name", "value"),
    "environment": ("run_id", "key", "value"),
}
SECRET = re.compile(r"pass(word)?|secret|token|api_?key|credential|private_?key", re.I)
RUN_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")
SHA = re.compile(r"[0-9a-f]{64}")
IMAGE_DIR = re.compile(r"(edgehub-[a-z0-9-]+)_([0-9a-f]{12})")
IMAGE_FILES = ("Dockerfile", "requirements.lock")


@dataclass(frozen=True)
class ImageLock:
    """The Dockerfile and lock file that built image ``tag`` (``edgehub-<runtime>:<12 hex>``)."""

    tag: str
    dockerfile: bytes
    lock: bytes

    @property
    def folder(self) -> str:
        return self.tag.replace(":", "_")


@dataclass
class BundleContents:
    """What goes into a bundle: each run's rows, the stored artifacts by hash, image locks."""

    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    artifacts: dict[str, Path] = field(default_factory=dict)  # "<sha256>/<name>" -> stored copy
    images: dict[str, ImageLock] = field(default_factory=dict)
    dropped_secrets: int = 0


@dataclass
class ImportResult:
    """What an import did: runs added, runs already there, artifacts and image locks added."""

    imported: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)
    artifacts_added: int = 0
    images_added: list[str] = field(default_factory=list)


# -- exporting ---------------------------------------------------------------------------------


def run_rows(
    query: Callable[[str, tuple[Any, ...]], list[sqlite3.Row]],
    run_id: str,
    scrub: Callable[[str], str],
) -> tuple[dict[str, Any], int]:
    """Run ``run_id``'s rows of every table as JSON-ready data, strings passed through
    ``scrub`` (local paths made relative) and entries named like secrets left out; returns
    the rows and how many entries were left out."""
    (row,) = query("SELECT * FROM runs WHERE id = ?", (run_id,))
    run = {column: row[column] for column in RUN_COLUMNS}
    if run["error"] is not None:
        run["error"] = scrub(run["error"])
    dropped = 0
    data: dict[str, Any] = {"run": run}
    for table, columns in TABLES.items():
        kept = []
        for r in query(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY rowid", (run_id,)):
            values = [r[c] for c in columns]
            if table != "metrics" and SECRET.search(str(values[1])):
                dropped += 1
                continue
            kept.append([scrub(v) if isinstance(v, str) and i > 1 else v
                         for i, v in enumerate(values)])  # fmt: skip
        data[table] = kept
    artifacts = []
    for r in query("SELECT * FROM artifacts WHERE run_id = ? ORDER BY logged_at, rowid", (run_id,)):
        entry = {c: r[c] for c in ARTIFACT_COLUMNS}
        if entry["device"] is None:
            entry["path"] = scrub(entry["path"])
            if entry["path"].startswith("/"):  # not stored, and outside the places scrubbed
                entry["path"] = entry["file_name"]
        artifacts.append(entry)
    data["artifacts"] = artifacts
    return data, dropped


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def insert_runs(conn: sqlite3.Connection, runs: Iterable[dict[str, Any]]) -> None:
    """Insert the rows of ``runs`` (as `run_rows` made them) in the open transaction."""
    for data in runs:
        conn.execute(_insert("runs", RUN_COLUMNS), [data["run"][c] for c in RUN_COLUMNS])
        for table, columns in TABLES.items():
            conn.executemany(_insert(table, columns), [list(r) for r in data[table]])
        artifacts = [[a[c] for c in ARTIFACT_COLUMNS] for a in data["artifacts"]]
        conn.executemany(_insert("artifacts", ARTIFACT_COLUMNS), artifacts)


def _insert(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({','.join(columns)}) VALUES ({','.join('?' * len(columns))})"


def unmarked(data: dict[str, Any]) -> dict[str, Any]:
    """A run's rows without the `IMPORTED_TAG` an import set (it says how a store got the
    run, not what the run did)."""
    return {**data, "tags": [t for t in data["tags"] if t[1] != IMPORTED_TAG]}


def same_rows(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two runs' rows say the same (a run imported before, unchanged), whichever
    store imported them."""
    return _canonical(unmarked(a)) == _canonical(unmarked(b))
