"""The store's tables, their version (``PRAGMA user_version``) and the migrations between them.

Version 1 (user_version 0) is the layout of the releases before versioning. Version 2 adds the
summary columns ``device``, ``runtime`` and ``model_sha256`` (filled from the reserved param
``device``, the param ``$runtime`` or environment ``runtime``, and the artifact ``input``),
indexes for the filters, and paths relative to the store root so a store can be moved.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

SCHEMA_VERSION = 2

_TABLES = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    component TEXT,
    status TEXT NOT NULL,
    parent_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    host TEXT,
    pid INTEGER,
    artifact_dir TEXT,
    output_type TEXT,
    error TEXT
);
CREATE TABLE IF NOT EXISTS params (
    run_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, logged_at REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT NOT NULL, name TEXT NOT NULL, step INTEGER, value REAL NOT NULL,
    logged_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS metrics_run ON metrics(run_id, name);
CREATE TABLE IF NOT EXISTS artifacts (
    id TEXT PRIMARY KEY, run_id TEXT NOT NULL, name TEXT, file_name TEXT NOT NULL,
    sha256 TEXT, size INTEGER NOT NULL, path TEXT NOT NULL, device TEXT, logged_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS artifacts_run ON artifacts(run_id);
CREATE TABLE IF NOT EXISTS tags (
    run_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, name)
);
CREATE TABLE IF NOT EXISTS environment (
    run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, key)
);
"""

_V2_COLUMNS = ("device", "runtime", "model_sha256")

_V2_INDEXES = """
CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at);
CREATE INDEX IF NOT EXISTS runs_type ON runs(type, started_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE INDEX IF NOT EXISTS runs_device ON runs(device);
CREATE INDEX IF NOT EXISTS runs_runtime ON runs(runtime);
CREATE INDEX IF NOT EXISTS runs_model ON runs(model_sha256);
"""

_STORED_ARTIFACT = re.compile(r"(?:^|/)(artifacts/[0-9a-f]{64}/.+)$")
_RUN_DIR = re.compile(r"(?:^|/)(runs/[^/]+)/?$")


def schema_version(conn: sqlite3.Connection) -> int:
    """The store's schema version; 1 for a store of the releases before versioning."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version:
        return version
    has_runs = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'"
    ).fetchone()
    return 1 if has_runs else 0


def create_or_migrate(conn: sqlite3.Connection) -> int:
    """Bring the database to `SCHEMA_VERSION` in one transaction; returns the version found.

    The caller checks first that the version is not newer than this code knows."""
    found = schema_version(conn)
    if found >= SCHEMA_VERSION:
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = schema_version(conn)  # another process may have done it meanwhile
        if found < SCHEMA_VERSION:
            _execute_script(conn, _TABLES)
            for column in _V2_COLUMNS:
                conn.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
            if found == 1:
                _migrate_v1_to_v2(conn)
            _execute_script(conn, _V2_INDEXES)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return found


def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Statement by statement: ``executescript`` would commit the open transaction."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _migrate_v1_to_v2(conn: sqlite3.Connection) -> None:
    """Fill the summary columns (the caller added them) and make paths relative."""
    summary: dict[str, dict[str, Any]] = {}
    for run_id, name, value in conn.execute(
        "SELECT run_id, name, value FROM params WHERE name IN ('device', '$runtime')"
    ):
        decoded = json.loads(value)
        column = "device" if name == "device" else "runtime"
        summary.setdefault(run_id, {})[column] = None if decoded is None else str(decoded)
    for run_id, value in conn.execute(
        "SELECT run_id, value FROM environment WHERE key = 'runtime'"
    ):
        summary.setdefault(run_id, {}).setdefault("runtime", value)
    for run_id, sha in conn.execute(
        "SELECT run_id, sha256 FROM artifacts WHERE name = 'input' AND sha256 IS NOT NULL"
    ):
        summary.setdefault(run_id, {})["model_sha256"] = sha
    conn.executemany(
        "UPDATE runs SET device = ?, runtime = ?, model_sha256 = ? WHERE id = ?",
        [
            (v.get("device"), v.get("runtime"), v.get("model_sha256"), run_id)
            for run_id, v in summary.items()
        ],
    )
    # absolute (or cwd-relative) paths into the store become relative to its root
    _relative(conn, "artifacts", "path", _STORED_ARTIFACT, "device IS NULL AND sha256 IS NOT NULL")
    _relative(conn, "runs", "artifact_dir", _RUN_DIR, "artifact_dir IS NOT NULL")


def _relative(
    conn: sqlite3.Connection, table: str, column: str, form: re.Pattern[str], where: str
) -> None:
    """``column`` of the rows of ``table`` that ``where`` selects: the part ``form`` finds."""
    rows = conn.execute(f"SELECT id, {column} FROM {table} WHERE {where}").fetchall()
    found = ((form.search(path), row_id) for row_id, path in rows)
    updates = [(match.group(1), row_id) for match, row_id in found if match]
    conn.executemany(f"UPDATE {table} SET {column} = ? WHERE id = ?", updates)
