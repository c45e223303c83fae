"""Everything the TUI reads from the run store, in one place.

This adapter is written against today's `RunStore` (dict rows, one SQL query for a page with
the runtime and device params joined in). When the store's typed records land (`RunRecord`,
`list_runs` with filters and offset, `ProfileComparison`), only this module changes.
All functions here block (SQLite, files): call them from thread workers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgehub.tracking.store import RunStore

__all__ = [
    "FILTER_KEYS",
    "Comparison",
    "RunDetail",
    "RunFilters",
    "RunRow",
    "compare_runs",
    "filter_choices",
    "list_runs",
    "run_detail",
]

FILTER_KEYS = ("run_type", "runtime", "device", "status")
STATUSES = ("FINISHED", "FAILED", "KILLED", "RUNNING")
_LOG_TAIL = 2000


@dataclass(frozen=True)
class RunRow:
    """One line of the run history."""

    run_id: str
    name: str
    run_type: str
    status: str
    started_at: float
    ended_at: float | None
    runtime: str | None
    device: str | None


@dataclass(frozen=True)
class RunFilters:
    """Only runs matching every given value (None: any)."""

    run_type: str | None = None
    runtime: str | None = None
    device: str | None = None
    status: str | None = None


@dataclass
class RunDetail:
    """One run: its row, params, metrics, artifacts (name -> path), log tail, raw latencies."""

    row: RunRow
    error: str | None
    params: dict[str, Any]
    metrics: dict[str, float]
    artifacts: dict[str, str]
    environment: dict[str, str]
    log_lines: list[str] = field(default_factory=list)
    samples_us: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side: (key, a, b, note) rows per section; note is a ratio or a mark."""

    a: RunRow
    b: RunRow
    sections: dict[str, list[tuple[str, str, str, str]]]


_PAGE_SQL = """
SELECT r.*,
  (SELECT value FROM params p WHERE p.run_id = r.id AND p.name = '$runtime') AS runtime,
  (SELECT value FROM params p WHERE p.run_id = r.id AND p.name = 'device') AS device
FROM runs r {where} ORDER BY r.started_at DESC LIMIT ? OFFSET ?
"""


def _param_text(raw: Any) -> str | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return str(raw)
    return None if value is None else str(value)


def _row(store: RunStore, record: Any) -> RunRow:
    return RunRow(
        run_id=record["id"],
        name=record["name"],
        run_type=record["type"],
        status=store.effective_status(record),
        started_at=record["started_at"],
        ended_at=record["ended_at"],
        runtime=_param_text(record["runtime"]),
        device=_param_text(record["device"]),
    )


def list_runs(store: RunStore, filters: RunFilters, *, limit: int, offset: int = 0) -> list[RunRow]:
    """A page of runs, newest first."""
    clauses: list[str] = []
    args: list[Any] = []
    if filters.run_type:
        clauses.append("r.type = ?")
        args.append(filters.run_type)
    for name, value in (("$runtime", filters.runtime), ("device", filters.device)):
        if value:
            clauses.append(
                "EXISTS (SELECT 1 FROM params p WHERE p.run_id = r.id AND p.name = ? "
                "AND p.value = ?)"
            )
            args += [name, json.dumps(value)]
    if filters.status:  # a RUNNING row whose process died reads KILLED: filter after
        clauses.append(
            "r.status IN (?, 'RUNNING')" if filters.status == "KILLED" else "r.status = ?"
        )
        args.append(filters.status)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    records = store._query(_PAGE_SQL.format(where=where), (*args, limit, offset))
    rows = [_row(store, record) for record in records]
    return [row for row in rows if not filters.status or row.status == filters.status]


def filter_choices(store: RunStore) -> dict[str, list[str]]:
    """The values each filter can take in this store."""
    types = [r["type"] for r in store._query("SELECT DISTINCT type FROM runs ORDER BY type")]

    def params(name: str) -> list[str]:
        sql = "SELECT DISTINCT value FROM params WHERE name = ? ORDER BY value"
        values = (_param_text(r["value"]) for r in store._query(sql, (name,)))
        return [v for v in values if v]

    return {
        "run_type": types,
        "runtime": params("$runtime"),
        "device": params("device"),
        "status": list(STATUSES),
    }


def _plain(name: str) -> str:
    return name.lstrip("$")


def run_detail(store: RunStore, run_id: str) -> RunDetail:
    """A run with its log's last lines and, for profile runs, the raw latency samples."""
    record = store.get_run(run_id)
    full = store._query(_PAGE_SQL.format(where="WHERE r.id = ?"), (record["id"], 1, 0))[0]
    artifacts: dict[str, str] = {}
    for artifact in record["artifacts"]:
        artifacts[_plain(artifact["name"] or artifact["file_name"])] = artifact["path"]
    detail = RunDetail(
        row=_row(store, full),
        error=record["error"],
        params={_plain(k): v for k, v in record["params"].items()},
        metrics={_plain(k): v for k, v in record["metrics"].items()},
        artifacts=artifacts,
        environment=dict(record["environment"]),
    )
    log = artifacts.get("log")
    if log and Path(log).is_file():
        detail.log_lines = Path(log).read_text(errors="replace").splitlines()[-_LOG_TAIL:]
    detail.samples_us = _samples(artifacts.get("output_file"))
    return detail


def _samples(path: str | None) -> list[float]:
    """The raw per-run latencies (µs) a profile run keeps in its profile.json."""
    if not path or not path.endswith(".json") or not Path(path).is_file():
        return []
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return []
    samples = data.get("samples_us") if isinstance(data, dict) else None
    return [float(s) for s in samples] if isinstance(samples, list) else []


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def compare_runs(store: RunStore, run_a: str, run_b: str) -> Comparison:
    """Metrics (with b/a), params and environment of two runs."""
    a, b = run_detail(store, run_a), run_detail(store, run_b)
    sections: dict[str, list[tuple[str, str, str, str]]] = {}
    metric_rows = []
    for key in sorted(set(a.metrics) | set(b.metrics)):
        va, vb = a.metrics.get(key), b.metrics.get(key)
        ratio = f"{vb / va:.3f}" if va and vb is not None else ""
        metric_rows.append((key, _text(va), _text(vb), ratio))
    sections["metrics"] = metric_rows
    for name in ("params", "environment"):
        left: dict[str, Any] = getattr(a, name)
        right: dict[str, Any] = getattr(b, name)
        sections[name] = [
            (
                key,
                _text(left.get(key)),
                _text(right.get(key)),
                "" if left.get(key) == right.get(key) else "≠",
            )
            for key in sorted(set(left) | set(right))
        ]
    return Comparison(a.row, b.row, sections)
