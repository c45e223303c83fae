"""The run store: one SQLite database (WAL) beside the content-addressed artifacts.

Writes are short transactions, so several processes can record runs at once; a process killed
mid-run leaves its run ``RUNNING`` with its pid, which readers report as ``KILLED``.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from edgehub.errors import RunNotFoundError, StoreError
from edgehub.tracking.artifacts import ArtifactStore
from edgehub.tracking.run_log import RunLog

__all__ = ["RunStore"]

_SCHEMA = """
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
CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at);
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

HOSTNAME = socket.gethostname()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def _init_lock(path: Path) -> Iterator[None]:
    """Serialize opening the store across processes (the WAL switch and the schema)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: _set_up's retries have to do
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _set_up(conn: sqlite3.Connection, patience_s: float = 30.0) -> None:
    """Switch to WAL and create the tables. Two processes opening a new store at once can get
    "database is locked" here even with a busy timeout (the journal-mode switch does not wait),
    so this retries for a while."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class RunStore:
    """Reads and writes runs under ``root`` (``runs.db`` + ``artifacts/`` + ``runs/``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        try:
            (self.root / "artifacts").mkdir(parents=True, exist_ok=True)
            (self.root / "runs").mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot create the run store at {self.root}: {error.strerror}; "
                "choose another place with [project] store in hub.toml"
            ) from error
        self.artifacts = ArtifactStore(self.root / "artifacts")
        self._lock = threading.Lock()
        self._conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        path = self.root / "runs.db"
        try:
            with _init_lock(self.root / ".init.lock"):
                conn = sqlite3.connect(
                    str(path), timeout=30.0, check_same_thread=False, isolation_level=None
                )
                conn.execute("PRAGMA busy_timeout=30000")
                _set_up(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as error:
            raise StoreError(
                f"run store {path} cannot be opened ({error}); move it aside to start afresh"
            ) from error
        return conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    # -- writing -------------------------------------------------------------------------
    def create_run(
        self,
        *,
        run_id: str,
        project: str,
        name: str,
        run_type: str,
        component: str | None,
        parent_id: str | None,
        artifact_dir: Path,
        started_at: float,
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO runs (id, project, name, type, component, status, parent_id,"
                " started_at, host, pid, artifact_dir) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    project,
                    name,
                    run_type,
                    component,
                    "RUNNING",
                    parent_id,
                    started_at,
                    HOSTNAME,
                    os.getpid(),
                    str(artifact_dir),
                ),
            )

    def end_run(
        self,
        run_id: str,
        status: str,
        *,
        ended_at: float | None = None,
        output_type: str | None = None,
        error: str | None = None,
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET status=?, ended_at=?, output_type=?, error=? WHERE id=?",
                (status, ended_at or time.time(), output_type, error, run_id),
            )

    def log_param(self, run_id: str, name: str, value: Any, logged_at: float) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO params VALUES (?,?,?,?)",
                (run_id, name, json.dumps(value, default=str), logged_at),
            )

    def log_metric(
        self, run_id: str, name: str, value: float, step: int | None, logged_at: float
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO metrics VALUES (?,?,?,?,?)", (run_id, name, step, value, logged_at)
            )

    def log_metrics(self, run_id: str, values: dict[str, float], logged_at: float) -> None:
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO metrics VALUES (?,?,?,?,?)",
                [(run_id, name, None, float(v), logged_at) for name, v in values.items()],
            )

    def log_artifact(
        self,
        *,
        artifact_id: str,
        run_id: str,
        name: str | None,
        file_name: str,
        sha256: str | None,
        size: int,
        path: str,
        device: str | None,
        logged_at: float,
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO artifacts VALUES (?,?,?,?,?,?,?,?,?)",
                (artifact_id, run_id, name, file_name, sha256, size, path, device, logged_at),
            )

    def log_tag(self, run_id: str, name: str, value: str) -> None:
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO tags VALUES (?,?,?)", (run_id, name, value))

    def log_environment(self, run_id: str, values: dict[str, str]) -> None:
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO environment VALUES (?,?,?)",
                [(run_id, key, str(value)) for key, value in values.items()],
            )

    # -- reading -------------------------------------------------------------------------
    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            self._conn.row_factory = sqlite3.Row
            try:
                return list(self._conn.execute(sql, args).fetchall())
            finally:
                self._conn.row_factory = None

    def effective_status(self, row: sqlite3.Row) -> str:
        """``RUNNING`` runs whose process died on this host read as ``KILLED``."""
        status = str(row["status"])
        mine = row["host"] == HOSTNAME and row["pid"] is not None
        if status == "RUNNING" and mine and not _pid_alive(int(row["pid"])):
            return "KILLED"
        return status

    def list_runs(
        self,
        *,
        limit: int | None = 50,
        project: str | None = None,
        status: str | None = None,
        run_type: str | None = None,
    ) -> list[dict[str, Any]]:
        """Newest first, each as a dict with the run's columns and ``status`` made effective."""
        clauses, args = [], []
        if project:
            clauses.append("project = ?")
            args.append(project)
        if run_type:
            clauses.append("type = ?")
            args.append(run_type.upper())
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = f"SELECT * FROM runs {where} ORDER BY started_at DESC"
        rows = [self._row_dict(row) for row in self._query(sql, tuple(args))]
        if status:
            rows = [row for row in rows if row["status"] == status.upper()]
        return rows[:limit] if limit else rows

    def _row_dict(self, row: sqlite3.Row) -> dict[str, Any]:
        data = dict(row)
        data["status"] = self.effective_status(row)
        return data

    def resolve_id(self, run_id: str) -> str:
        """The full id for a full id, a unique prefix, or ``latest``."""
        if run_id == "latest":
            rows = self._query("SELECT id FROM runs ORDER BY started_at DESC LIMIT 1")
            if not rows:
                raise RunNotFoundError("the run store is empty; run `hub exec ...` first")
            return str(rows[0]["id"])
        rows = self._query("SELECT id FROM runs WHERE id LIKE ? LIMIT 3", (run_id + "%",))
        if not rows:
            raise RunNotFoundError(f"no run matches {run_id!r}; see `hub runs list`")
        if len(rows) > 1:
            raise RunNotFoundError(f"run id prefix {run_id!r} is ambiguous; give more characters")
        return str(rows[0]["id"])

    def get_run(self, run_id: str) -> dict[str, Any]:
        """One run with ``params``, ``metrics`` (last value per name), ``metric_history``,
        ``artifacts``, ``tags`` and ``environment``."""
        full = self.resolve_id(run_id)
        run = self._row_dict(self._query("SELECT * FROM runs WHERE id = ?", (full,))[0])
        run["params"] = {
            r["name"]: json.loads(r["value"])
            for r in self._query("SELECT name, value FROM params WHERE run_id = ?", (full,))
        }
        history: dict[str, list[dict[str, Any]]] = {}
        for r in self._query(
            "SELECT name, step, value, logged_at FROM metrics WHERE run_id = ? ORDER BY rowid",
            (full,),
        ):
            history.setdefault(r["name"], []).append(dict(r))
        run["metric_history"] = history
        run["metrics"] = {name: entries[-1]["value"] for name, entries in history.items()}
        run["artifacts"] = [
            dict(r)
            for r in self._query(
                "SELECT * FROM artifacts WHERE run_id = ? ORDER BY logged_at", (full,)
            )
        ]
        run["tags"] = {
            r["name"]: r["value"]
            for r in self._query("SELECT name, value FROM tags WHERE run_id = ?", (full,))
        }
        run["environment"] = {
            r["key"]: r["value"]
            for r in self._query("SELECT key, value FROM environment WHERE run_id = ?", (full,))
        }
        return run

    def run_log(self, run_id: str) -> RunLog:
        """A stored run as a `RunLog`, so outputs can be rebuilt from it (``--from-run``)."""
        from pathlib import PurePosixPath

        from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric, LoggedParam

        record = self.get_run(run_id)
        log = RunLog(
            run_id=record["id"],
            name=record["name"],
            run_type=record["type"],
            status=record["status"],
            project=record["project"],
            component=record["component"],
            parent_run_id=record["parent_id"],
            started_at=record["started_at"],
            ended_at=record["ended_at"],
            artifact_dir=Path(record["artifact_dir"]) if record["artifact_dir"] else None,
            output_type=record["output_type"],
            error=record["error"],
        )
        log.params = {k: LoggedParam(k, v) for k, v in record["params"].items()}
        log.metrics = {k: LoggedMetric(k, v) for k, v in record["metrics"].items()}
        log.tags = dict(record["tags"])
        log.environment = dict(record["environment"])
        for row in record["artifacts"]:
            path: Path | PurePosixPath = (
                PurePosixPath(row["path"]) if row["device"] else Path(row["path"])
            )
            artifact = LoggedArtifact(
                id=row["id"],
                file_name=row["file_name"],
                file_size=row["size"],
                logged_at=row["logged_at"],
                file_path=path,
                name=row["name"],
                device=row["device"],
                artifact_dir=path.parent if isinstance(path, Path) else None,
                sha256=row["sha256"],
            )
            if artifact.name:
                log.artifacts[artifact.name] = artifact
            else:
                log.unnamed_artifacts.append(artifact)
        return log

    def compare(self, run_a: str, run_b: str) -> dict[str, Any]:
        """Side-by-side params, metrics and environment of two runs, with metric ratios."""
        a, b = self.get_run(run_a), self.get_run(run_b)
        out: dict[str, Any] = {"a": a["id"], "b": b["id"]}
        for section in ("params", "environment"):
            keys = sorted(set(a[section]) | set(b[section]))
            out[section] = {
                k: {
                    "a": a[section].get(k),
                    "b": b[section].get(k),
                    "same": a[section].get(k) == b[section].get(k),
                }
                for k in keys
            }
        metrics: dict[str, dict[str, Any]] = {}
        for k in sorted(set(a["metrics"]) | set(b["metrics"])):
            va, vb = a["metrics"].get(k), b["metrics"].get(k)
            ratio = vb / va if va not in (None, 0) and vb is not None else None
            metrics[k] = {"a": va, "b": vb, "ratio": ratio}
        out["metrics"] = metrics
        return out
