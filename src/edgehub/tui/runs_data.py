"""Everything the TUI reads from the run store, in one place: pages of typed `RunRecord`s
(filters and ordering in SQL), one run's details with its raw latencies, two runs compared.
All functions here block (SQLite, files): call them from thread workers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgehub.tracking.records import RunRecord
    from edgehub.tracking.store import RunStore
    from edgehub.tui.accuracy_data import Accuracy

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
    """One run: its row, params, metrics, artifacts (name -> path), log tail, raw latencies
    and, for an EVAL run, what it found (`accuracy_data`)."""

    row: RunRow
    error: str | None
    params: dict[str, Any]
    metrics: dict[str, float]
    artifacts: dict[str, str]
    environment: dict[str, str]
    log_lines: list[str] = field(default_factory=list)
    samples_us: list[float] = field(default_factory=list)
    accuracy: Accuracy | None = None


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side: (key, a, b, note) rows per section; note is a ratio or a mark.
    ``verdict``: for two profile runs, what changed and whether it counts, in one line."""

    a: RunRow
    b: RunRow
    sections: dict[str, list[tuple[str, str, str, str]]]
    verdict: str = ""


def _row(record: RunRecord) -> RunRow:
    return RunRow(
        run_id=record.run_id,
        name=record.name,
        run_type=record.run_type,
        status=record.status,
        started_at=record.started_at,
        ended_at=record.ended_at,
        runtime=record.runtime,
        device=record.device,
    )


def list_runs(store: RunStore, filters: RunFilters, *, limit: int, offset: int = 0) -> list[RunRow]:
    """A page of runs, newest first."""
    from edgehub.tracking.records import RunFilter

    page = RunFilter(
        run_type=filters.run_type,
        runtime=filters.runtime,
        device=filters.device,
        status=filters.status,
        limit=limit,
        offset=offset,
    )
    return [_row(record) for record in store.query_runs(page)]


def filter_choices(store: RunStore) -> dict[str, list[str]]:
    """The values each filter can take in this store."""
    return {
        "run_type": store.distinct_values("type"),
        "runtime": store.distinct_values("runtime"),
        "device": store.distinct_values("device"),
        "status": list(STATUSES),
    }


def _plain(name: str) -> str:
    return name.lstrip("$")


def run_detail(store: RunStore, run_id: str) -> RunDetail:
    """A run with its log's last lines and, for profile runs, the raw latency samples."""
    record = store.get_run(run_id)
    artifacts: dict[str, str] = {}
    for artifact in record.all_artifacts:
        artifacts[_plain(artifact.name or artifact.file_name)] = str(artifact.file_path)
    detail = RunDetail(
        row=_row(record),
        error=record.error,
        params={_plain(k): v for k, v in record.params.items()},
        metrics={_plain(k): v for k, v in record.metrics.items()},
        artifacts=artifacts,
        environment=dict(record.environment),
    )
    log = artifacts.get("log")
    if log and Path(log).is_file():
        detail.log_lines = Path(log).read_text(errors="replace").splitlines()[-_LOG_TAIL:]
    detail.samples_us = _samples(artifacts.get("output_file"))
    if record.run_type == "EVAL":
        from edgehub.tui.accuracy_data import accuracy_of

        detail.accuracy = accuracy_of(detail.params, detail.metrics, artifacts)
    return detail


def _samples(path: str | None) -> list[float]:
    """The raw per-run latencies (µs) a profile run keeps in its profile.json."""
    if not path or not path.endswith(".json") or not Path(path).is_file():
        return []
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return []
    from edgehub.tracking.verdict_numbers import number_problem

    samples = data.get("samples_us") if isinstance(data, dict) else None
    if not isinstance(samples, list) or number_problem(samples) is not None:  # NaN, text, 0
        return []
    return [float(s) for s in samples]


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
    latency, verdict = _latency_rows(store, a.row, b.row)
    if latency:
        sections = {"latency": latency, **sections}
    return Comparison(a.row, b.row, sections, verdict)


def _latency_rows(
    store: RunStore, a: RunRow, b: RunRow
) -> tuple[list[tuple[str, str, str, str]], str]:
    """For two profile runs: median and p99 from their raw samples, each delta with its 95 %
    confidence interval, and whether it is significant; and the verdict."""
    if not a.run_type == b.run_type == "PROFILE":
        return [], ""
    from edgehub.errors import EdgehubError, InvalidMeasurementError
    from edgehub.tracking.profile_compare import compare_profiles

    try:
        result = compare_profiles(store.get_run(a.run_id), store.get_run(b.run_id))
    except InvalidMeasurementError as error:  # NaN, text, zero: refused as `hub runs compare`
        return [], str(error)
    except EdgehubError:
        return [], ""  # no raw samples stored: the metrics rows still compare them
    rows = []
    for label, q in (("median ms", result.median), ("p99 ms", result.p99)):
        low, high = q.ci_pct
        mark = "significant" if q.significant else "not significant"
        note = f"{q.delta_pct:+.1f}% [{low:+.1f}, {high:+.1f}] {mark}"
        rows.append((label, f"{q.a_ms:.4f}", f"{q.b_ms:.4f}", note))
    return rows, result.verdict
