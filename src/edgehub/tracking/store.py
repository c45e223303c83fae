"""The run store: one SQLite database (WAL) beside the content-addressed artifacts.

Writes are short transactions, so several processes can record runs at once. A process killed
mid-run leaves its run ``RUNNING`` with its pid; readers see it ``KILLED`` (computed in SQL) and
the next process that can write records it so. Failures of the disk, permissions or locks are
`StorageError`s; a store that cannot be written still opens read-only for reading the history.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from edgehub.errors import StorageError, UsageError
from edgehub.tracking.artifacts import ArtifactStore
from edgehub.tracking.db import (
    OPENED_READ_ONLY,
    Database,
    Problem,
    configure,
    diagnose,
    open_database,
    retry_while_locked,
    storage_error,
    translate_storage_errors,
    unwritable_folder,
)
from edgehub.tracking.modes import create_private_file, make_private_dir, tighten
from edgehub.tracking.run_log import RunLog
from edgehub.tracking.run_type import RunType
from edgehub.tracking.schema import SCHEMA_VERSION, create_or_migrate, schema_version

if TYPE_CHECKING:  # reads and deletions load their modules when asked for (not on a run's writes)
    from edgehub.tracking.compare import RunComparison
    from edgehub.tracking.records import RunFilter, RunRecord


HOSTNAME = socket.gethostname()
DEFAULT_PATIENCE_S = float(os.environ.get("EDGEHUB_STORE_LOCK_TIMEOUT") or 30.0)


@contextmanager
def _init_lock(path: Path) -> Iterator[None]:
    """Serialize opening the store across processes (the WAL switch and migrations)."""
    try:
        import fcntl

        create_private_file(path)
        handle = path.open("a")
    except (ImportError, OSError):  # not POSIX, or not writable: retries have to do
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class RunStore:
    """Reads and writes runs under ``root`` (``runs.db`` + ``artifacts/`` + ``runs/``).

    ``patience_s`` is how long a write waits for a lock another process holds."""

    def __init__(
        self, root: Path, *, patience_s: float = DEFAULT_PATIENCE_S, read_only: bool = False
    ) -> None:
        self.root = Path(root).absolute()
        self.patience_s = patience_s
        self.db_path = self.root / "runs.db"
        if not read_only:
            try:
                make_private_dir(self.root / "artifacts")
                make_private_dir(self.root / "runs")
                create_private_file(self.db_path)  # SQLite's journal files copy its mode
                tighten(self.root)
            except OSError as error:
                if not self.db_path.exists():
                    raise storage_error(error, self.root, "create the run store") from error
        self.artifacts = ArtifactStore(self.root / "artifacts")
        self._lock = threading.Lock()
        self._batch = threading.local()  # .writes: this thread's open `batch`
        self._db = self._open(read_only)
        self.reap_dead_runs()

    # -- opening -------------------------------------------------------------------------
    def _open(self, read_only: bool) -> Database:
        lock = _init_lock(self.root / ".init.lock") if not read_only else nullcontext()
        forced = OPENED_READ_ONLY if read_only else None
        with translate_storage_errors(self.db_path, "open the run store"), lock:
            db = open_database(self.db_path, patience_s=self.patience_s, read_only=forced)
            if db.writable:
                try:
                    self._prepare(db.conn)
                except sqlite3.OperationalError as error:
                    if "locked" in str(error) or not self.db_path.exists():
                        raise
                    db.conn.close()  # e.g. a full disk: read what is there
                    problem = diagnose(error, self.db_path)
                    db = open_database(self.db_path, patience_s=self.patience_s, read_only=problem)
            version = schema_version(db.conn)
            if version > SCHEMA_VERSION:
                db.conn.close()
                raise StorageError(
                    f"run store {self.db_path} has schema version {version}, newer than "
                    f"this edgehub reads ({SCHEMA_VERSION}); upgrade edgehub"
                )
            if version < SCHEMA_VERSION:  # read-only: migrate a copy in memory
                db.conn = _migrated_copy(db.conn)
        db.conn.row_factory = sqlite3.Row
        return db

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the current schema (retried while another process sets them up)."""
        retry_while_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"), self.patience_s)
        retry_while_locked(lambda: create_or_migrate(conn), self.patience_s)
        conn.execute("PRAGMA synchronous=NORMAL")

    @property
    def writable(self) -> bool:
        return self._db.writable

    @property
    def read_only_reason(self) -> str | None:
        """Why this store cannot be written (``None`` when it can)."""
        problem = self._db.read_only
        return None if problem is None else problem.what

    @property
    def read_only_problem(self) -> Problem | None:
        """Why this store cannot be written and what to do about it (``None`` when it can):
        its database, or the folders of its artifacts and runs."""
        if self._db.read_only is not None:
            return self._db.read_only
        for folder in (self.artifacts.root, self.root / "runs"):
            if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
                return unwritable_folder(folder)
        return None

    def damage(self) -> str | None:
        """What SQLite's quick check finds wrong in the database (``None``: nothing), as a
        one-line `StorageError` message with what to do."""
        try:
            rows = self._query("PRAGMA quick_check(1)")
        except StorageError as error:
            return str(error)
        found = [str(row[0]) for row in rows]
        if found == ["ok"]:
            return None
        first = " ".join(found[0].replace("*** in database main ***", "").split())
        damaged = sqlite3.DatabaseError(f"database disk image is malformed: {first}")
        return str(storage_error(damaged, self.db_path, "check the run store"))

    def close(self) -> None:
        with self._lock:
            self._db.conn.close()

    # -- paths ---------------------------------------------------------------------------
    def _abs(self, text: str) -> Path:
        path = Path(text)
        return path if path.is_absolute() else self.root / path

    def _rel(self, path: Path) -> str:
        try:
            return path.absolute().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    # -- writing -------------------------------------------------------------------------
    @contextmanager
    def batch(self) -> Iterator[None]:
        """The records this thread writes inside the block (runs, params, metrics, tags,
        artifacts, environment) go to the store together, in one transaction, when the block
        ends, by an exception too; an inner block joins the outer one. Only for a burst of
        records: a process killed inside the block leaves none of them."""
        if getattr(self._batch, "writes", None) is not None:
            yield
            return
        writes = self._batch.writes = _Writes()
        try:
            yield
        except BaseException:
            self._batch.writes = None
            with suppress(StorageError):  # the error on its way out says more
                self._commit(writes)
            raise
        self._batch.writes = None
        self._commit(writes)

    def _commit(self, writes: _Writes) -> None:
        if not writes.calls:
            return
        with self._transaction(writes.doing()) as conn:
            for sql, args, many in writes.calls:
                if many:
                    conn.executemany(sql, args)
                else:
                    conn.execute(sql, args)

    @contextmanager
    def _write(self, doing: str) -> Iterator[_Writer]:
        """One record's writes: its own transaction, or the open `batch`'s."""
        if self._db.read_only is not None:
            raise self._db.read_only.error(doing)
        writes: _Writes | None = getattr(self._batch, "writes", None)
        if writes is None:
            with self._transaction(doing) as conn:
                yield conn
            return
        mark = len(writes.calls), len(writes.doings)
        try:
            yield writes.doing_now(doing)
        except BaseException:  # a record that failed to build leaves nothing
            del writes.calls[mark[0] :], writes.doings[mark[1] :]
            raise

    @contextmanager
    def _transaction(self, doing: str) -> Iterator[sqlite3.Connection]:
        if self._db.read_only is not None:
            raise self._db.read_only.error(doing)
        with self._lock, translate_storage_errors(self.db_path, doing):
            conn = self._db.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def create_run(
        self,
        *,
        run_id: str,
        project: str,
        name: str,
        run_type: str,
        component: str | None,
        parent_run_id: str | None,
        artifact_dir: Path,
        started_at: float,
        device: str | None = None,
    ) -> None:
        with self._write("record a new run") as conn:
            conn.execute(
                "INSERT INTO runs (id, project, name, type, component, status, parent_id,"
                " started_at, host, pid, artifact_dir, device)"
                " VALUES (?,?,?,?,?,'RUNNING',?,?,?,?,?,?)",
                (
                    run_id,
                    project,
                    name,
                    run_type,
                    component,
                    parent_run_id,
                    started_at,
                    HOSTNAME,
                    os.getpid(),
                    self._rel(artifact_dir),
                    device,
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
        with self._write("record the end of a run") as conn:
            conn.execute(
                "UPDATE runs SET status=?, ended_at=?, output_type=?, error=? WHERE id=?",
                (status, ended_at or time.time(), output_type, error, run_id),
            )

    def log_param(self, run_id: str, name: str, value: Any, logged_at: float) -> None:
        with self._write(f"record param {name!r}") as conn:
            conn.execute(
                "INSERT OR REPLACE INTO params VALUES (?,?,?,?)",
                (run_id, name, json.dumps(value, default=str), logged_at),
            )
            column = {"device": "device", "$runtime": "runtime"}.get(name)
            if column is not None and value is not None:
                conn.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (str(value), run_id))

    def log_metric(
        self, run_id: str, name: str, value: float, step: int | None, logged_at: float
    ) -> None:
        with self._write(f"record metric {name!r}") as conn:
            conn.execute(
                "INSERT INTO metrics VALUES (?,?,?,?,?)", (run_id, name, step, value, logged_at)
            )

    def log_metrics(self, run_id: str, values: dict[str, float], logged_at: float) -> None:
        with self._write("record metrics") as conn:
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
        path: Path | PurePosixPath | str,
        device: str | None,
        logged_at: float,
    ) -> None:
        """Record an artifact (insert, or update the row ``artifact_id`` once it is stored)."""
        text = self._rel(path) if isinstance(path, Path) else str(path)
        with self._write(f"record artifact {file_name!r}") as conn:
            conn.execute(
                "INSERT OR REPLACE INTO artifacts VALUES (?,?,?,?,?,?,?,?,?)",
                (artifact_id, run_id, name, file_name, sha256, size, text, device, logged_at),
            )
            if name == "input" and sha256 is not None and device is None:
                conn.execute("UPDATE runs SET model_sha256 = ? WHERE id = ?", (sha256, run_id))

    def log_tag(self, run_id: str, name: str, value: str) -> None:
        with self._write(f"record tag {name!r}") as conn:
            conn.execute("INSERT OR REPLACE INTO tags VALUES (?,?,?)", (run_id, name, value))

    def log_environment(self, run_id: str, values: dict[str, str]) -> None:
        with self._write("record the run's environment") as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO environment VALUES (?,?,?)",
                [(run_id, key, str(value)) for key, value in values.items()],
            )
            if values.get("runtime"):
                conn.execute(
                    "UPDATE runs SET runtime = ? WHERE id = ? AND runtime IS NULL",
                    (str(values["runtime"]), run_id),
                )

    def reap_dead_runs(self) -> list[str]:
        """Record ``KILLED`` for this host's ``RUNNING`` runs whose process is gone; returns
        their ids. Does nothing on a read-only store (readers compute the status anyway)."""
        dead = "status = 'RUNNING' AND host = ? AND NOT edgehub_pid_alive(pid)"
        rows = self._query(f"SELECT id FROM runs WHERE {dead}", (HOSTNAME,))
        found = [str(row["id"]) for row in rows]
        if not found or not self.writable:
            return found
        with (  # busy or full: the status is computed on reading all the same
            suppress(StorageError),
            self._write("record runs of dead processes as KILLED") as conn,
        ):
            conn.execute(
                f"UPDATE runs SET status = 'KILLED', ended_at = COALESCE(ended_at, ?),"
                f" error = COALESCE(error, 'its process ended without closing the run')"
                f" WHERE {dead}",
                (time.time(), HOSTNAME),
            )
        return found

    # -- reading -------------------------------------------------------------------------
    def _flush_batch(self) -> None:
        """Commit what this thread's open `batch` holds so far (a read sees it; a transaction
        comes after it)."""
        writes: _Writes | None = getattr(self._batch, "writes", None)
        if writes is not None:
            self._commit(writes)
            writes.clear()

    def _query(self, sql: str, args: tuple[Any, ...] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        self._flush_batch()
        with self._lock, translate_storage_errors(self.db_path, "read the run store"):
            return list(self._db.conn.execute(sql, args).fetchall())

    def resolve_id(self, ref: str, run_type: RunType | str | None = None) -> str:
        """The full id for a full id, a unique literal prefix, ``latest`` (the newest run of
        ``run_type`` if given) or ``latest:<type>`` (``latest:compile``, ``latest:profile``...)."""
        from edgehub.tracking.refs import resolve_run_ref

        return resolve_run_ref(self._query, ref, run_type)

    def distinct_values(self, column: str) -> list[str]:
        """The values a filterable column (type, device, runtime, status) takes, sorted."""
        if column not in ("type", "device", "runtime", "status"):
            raise ValueError(f"not a filterable column: {column!r}")
        sql = f"SELECT DISTINCT {column} AS v FROM runs WHERE {column} IS NOT NULL ORDER BY v"
        return [str(row["v"]) for row in self._query(sql)]

    def query_runs(self, filters: RunFilter) -> list[RunRecord]:
        """Runs matching ``filters``, newest first, with everything they logged."""
        from edgehub.tracking.store_reads import select_runs

        return select_runs(self._query, filters, HOSTNAME, self._abs)

    def list_runs(
        self,
        *,
        limit: int | None = 50,
        offset: int = 0,
        project: str | None = None,
        status: str | None = None,
        run_type: RunType | str | None = None,
        device: str | None = None,
        runtime: str | None = None,
        model_sha256: str | None = None,
        name: str | None = None,
        parent_run_id: str | None = None,
        started_after: float | None = None,
        started_before: float | None = None,
    ) -> list[RunRecord]:
        """`query_runs` with the filters as keywords (see `RunFilter`)."""
        from edgehub.tracking.records import RunFilter

        return self.query_runs(
            RunFilter(
                run_type=str(run_type) if run_type is not None else None,
                status=status,
                device=device,
                runtime=runtime,
                model_sha256=model_sha256,
                name=name,
                project=project,
                parent_run_id=parent_run_id,
                started_after=started_after,
                started_before=started_before,
                limit=limit,
                offset=offset,
            )
        )

    def compare(self, ref_a: str, ref_b: str) -> RunComparison:
        """Params, metrics and environment of two runs side by side."""
        from edgehub.tracking.compare import compare_runs

        return compare_runs(self.get_run(ref_a), self.get_run(ref_b))

    def get_run(self, ref: str, run_type: RunType | str | None = None) -> RunRecord:
        """One run (by any reference `resolve_id` takes) with everything it logged."""
        from edgehub.tracking.store_reads import select_run

        return select_run(self._query, self.resolve_id(ref, run_type), HOSTNAME, self._abs)

    def rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """The rows of a read-only query (for modules that read tables whole: bundles)."""
        return self._query(sql, args)

    @contextmanager
    def transaction(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction; ``doing`` names it in a storage error."""
        self._flush_batch()  # what this thread recorded before comes first
        with self._transaction(doing) as conn:
            yield conn

    def run_log(
        self, ref: str, run_type: RunType | str | None = None, *, imported_ok: bool = False
    ) -> RunLog:
        """A stored run as a `RunLog`, so outputs can be rebuilt from it (``--from-run``).
        A run imported from a bundle is refused (its outputs were made on another machine and
        would be run here as they are) unless ``imported_ok`` (it is only read)."""
        from edgehub.tracking.records import IMPORTED_TAG

        record = self.get_run(ref, run_type)
        mark = record.tags.get(IMPORTED_TAG)
        if mark is not None and not imported_ok:
            model = record.artifacts.get("path")
            where = f" ({model.file_path})" if model is not None and model.is_stored else ""
            raise UsageError(
                f"run {record.run_id[:8]} was imported from a bundle ({mark}), so its outputs "
                "were made elsewhere and are not used from the run; compile the model here "
                f"(`hub runs rerun {record.run_id[:8]}`), or, if you trust whoever made it, "
                f"give its file as the MODEL{where}"
            )
        return record.to_run_log()

    def delete_runs(self, run_ids: list[str]) -> list[Path]:
        """Delete the runs ``run_ids`` (full ids) and everything they logged in one
        transaction; returns their stored artifact files that no other run refers to, and
        their run folders, for the caller to remove."""
        from edgehub.tracking.deletion import delete_runs

        return delete_runs(self, run_ids)


class _Writer(Protocol):
    """What a record's writes use of a connection."""

    def execute(self, sql: str, parameters: Any = (), /) -> object: ...

    def executemany(self, sql: str, parameters: Any, /) -> object: ...


class _Writes:
    """A `RunStore.batch`'s writes, in order, and what each record was (for its error)."""

    __slots__ = ("calls", "doings")

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, bool]] = []
        self.doings: list[str] = []

    def doing_now(self, doing: str) -> _Writes:
        self.doings.append(doing)
        return self

    def doing(self) -> str:
        more = len(self.doings) - 1
        return self.doings[0] + (f" (and {more} more records)" if more > 0 else "")

    def clear(self) -> None:
        self.calls.clear()
        self.doings.clear()

    def execute(self, sql: str, parameters: Any = (), /) -> None:
        self.calls.append((sql, parameters, False))

    def executemany(self, sql: str, parameters: Any, /) -> None:
        self.calls.append((sql, list(parameters), True))


def _migrated_copy(conn: sqlite3.Connection) -> sqlite3.Connection:
    """An in-memory copy of a read-only store of an older schema, migrated, to read from."""
    memory = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.backup(memory)
    conn.close()
    configure(memory, 0.0)
    create_or_migrate(memory)
    return memory
