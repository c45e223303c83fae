"""Reading runs: a `RunFilter` as SQL, and rows of ``runs`` as `RunRecord`s with their details.

The effective status (a ``RUNNING`` run of this host whose process is gone reads ``KILLED``) is
computed in SQL with the ``edgehub_pid_alive`` function the connection registers, so filtering
by status needs no Python pass over the rows and works on a read-only store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path, PurePosixPath
from typing import Any

from edgehub.errors import UsageError
from edgehub.tracking.records import RUN_STATUSES, RunFilter, RunRecord
from edgehub.tracking.refs import Query, parse_run_type
from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric

_DEAD = "(host = :host AND pid IS NOT NULL AND NOT edgehub_pid_alive(pid))"
_EFFECTIVE = f"CASE WHEN status = 'RUNNING' AND {_DEAD} THEN 'KILLED' ELSE status END"
_CHUNK = 500


def _status_clause(status: str) -> str:
    wanted = status.strip().upper()
    if wanted not in RUN_STATUSES:
        raise UsageError(f"unknown run status {status!r}; use one of {', '.join(RUN_STATUSES)}")
    if wanted == "KILLED":
        return f"(status = 'KILLED' OR (status = 'RUNNING' AND {_DEAD}))"
    if wanted == "RUNNING":
        return f"(status = 'RUNNING' AND NOT {_DEAD})"
    return f"status = '{wanted}'"


def run_filter_sql(filters: RunFilter, host: str) -> tuple[str, dict[str, Any]]:
    """The ``WHERE`` clause (or ``""``) and its named arguments for ``filters``."""
    clauses: list[str] = []
    args: dict[str, Any] = {"host": host}
    equal = {
        "type": parse_run_type(filters.run_type) if filters.run_type else None,
        "device": filters.device,
        "runtime": filters.runtime,
        "name": filters.name,
        "project": filters.project,
        "parent_id": filters.parent_run_id,
    }
    for column, value in equal.items():
        if value is not None:
            clauses.append(f"{column} = :{column}")
            args[column] = value
    if filters.status:
        clauses.append(_status_clause(filters.status))
    if filters.model_sha256:
        prefix = filters.model_sha256.strip().lower()
        clauses.append("model_sha256 >= :model AND substr(model_sha256, 1, :model_len) = :model")
        args.update(model=prefix, model_len=len(prefix))
    if filters.cached:
        clauses.append("id IN (SELECT run_id FROM tags WHERE name = 'cached_from')")
    if filters.started_after is not None:
        clauses.append("started_at >= :after")
        args["after"] = filters.started_after
    if filters.started_before is not None:
        clauses.append("started_at < :before")
        args["before"] = filters.started_before
    return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), args


def select_runs(
    query: Query, filters: RunFilter, host: str, resolve: Callable[[str], Path]
) -> list[RunRecord]:
    """The runs ``filters`` selects, newest first, as records (see `load_details`)."""
    where, args = run_filter_sql(filters, host)
    args["limit"] = -1 if filters.limit is None else filters.limit
    args["offset"] = filters.offset
    rows = query(
        f"SELECT *, {_EFFECTIVE} AS effective_status FROM runs {where}"
        " ORDER BY started_at DESC, rowid DESC LIMIT :limit OFFSET :offset",
        args,
    )
    return load_details(query, rows, resolve)


def select_run(query: Query, run_id: str, host: str, resolve: Callable[[str], Path]) -> RunRecord:
    """The run ``run_id`` (a full id) as a record."""
    rows = query(
        f"SELECT *, {_EFFECTIVE} AS effective_status FROM runs WHERE id = :id",
        {"id": run_id, "host": host},
    )
    return load_details(query, rows, resolve)[0]


def _by_run(query: Query, sql: str, run_ids: Sequence[str]) -> dict[str, list[sqlite3.Row]]:
    found: dict[str, list[sqlite3.Row]] = {}
    for start in range(0, len(run_ids), _CHUNK):
        chunk = tuple(run_ids[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        for row in query(sql.format(ids=marks), chunk):
            found.setdefault(row["run_id"], []).append(row)
    return found


def load_details(
    query: Query, rows: Sequence[sqlite3.Row], resolve: Callable[[str], Path]
) -> list[RunRecord]:
    """Rows of ``runs`` (with ``effective_status``) as records with everything they logged
    (one query per table for all of them)."""
    ids = [str(row["id"]) for row in rows]
    params = _by_run(query, "SELECT * FROM params WHERE run_id IN ({ids})", ids)
    metrics = _by_run(query, "SELECT * FROM metrics WHERE run_id IN ({ids}) ORDER BY rowid", ids)
    artifacts = _by_run(
        query, "SELECT * FROM artifacts WHERE run_id IN ({ids}) ORDER BY logged_at, rowid", ids
    )
    tags = _by_run(query, "SELECT * FROM tags WHERE run_id IN ({ids})", ids)
    environment = _by_run(query, "SELECT * FROM environment WHERE run_id IN ({ids})", ids)
    records = []
    for row in rows:
        run_id = str(row["id"])
        record = RunRecord(
            **{
                **_same_named(row, RunRecord),
                "run_id": run_id,
                "run_type": row["type"],
                "status": row["effective_status"],
                "parent_run_id": row["parent_id"],
                "artifact_dir": resolve(row["artifact_dir"]) if row["artifact_dir"] else None,
            }
        )
        record.params = {r["name"]: json.loads(r["value"]) for r in params.get(run_id, [])}
        for r in metrics.get(run_id, []):
            entry = LoggedMetric(r["name"], r["value"], r["step"], r["logged_at"])
            record.metric_history.setdefault(r["name"], []).append(entry)
        record.metrics = {k: v[-1].value for k, v in record.metric_history.items()}
        for r in artifacts.get(run_id, []):
            artifact = _artifact(r, resolve)
            if artifact.name:
                record.artifacts[artifact.name] = artifact
            else:
                record.unnamed_artifacts.append(artifact)
        record.tags = {r["name"]: r["value"] for r in tags.get(run_id, [])}
        record.environment = {r["key"]: r["value"] for r in environment.get(run_id, [])}
        records.append(record)
    return records


def _artifact(row: sqlite3.Row, resolve: Callable[[str], Path]) -> LoggedArtifact:
    path: Path | PurePosixPath = (
        PurePosixPath(row["path"]) if row["device"] else resolve(row["path"])
    )
    return LoggedArtifact(
        **_same_named(row, LoggedArtifact),
        file_size=row["size"],
        file_path=path,
        artifact_dir=path.parent if isinstance(path, Path) else None,
    )


def _same_named(row: sqlite3.Row, record: type[Any]) -> dict[str, Any]:
    """The columns of ``row`` that a field of the dataclass ``record`` is named after."""
    names = {f.name for f in fields(record)}
    return {k: row[k] for k in names.intersection(row.keys())}
