"""What the Runs, run detail and Compare screens show: asked of `ops.runs` (the questions
`hub runs list`, `show` and `compare` ask) and laid out as text for the screens' tables.
All functions here block (SQLite, files): call them from thread workers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgehub.ops.project import Project
    from edgehub.ops.runs import Comparison
    from edgehub.tracking.percentiles import PercentileCI
    from edgehub.tracking.records import RunRecord
    from edgehub.tui.accuracy_data import Accuracy


FILTER_KEYS = ("run_type", "runtime", "device", "status")
STATUSES = ("FINISHED", "FAILED", "KILLED", "RUNNING")
_LOG_TAIL = 2000

Row = tuple[str, str, str, str]  # key, a, b, a note (a ratio, a mark, a delta)


@dataclass
class RunDetail:
    """One run (`ops.runs.show_run`) as the detail screen shows it: params, metrics and
    artifacts (name -> path) by plain name, its log's last lines, its raw latencies (µs) and,
    for an EVAL run, what it found (`accuracy`)."""

    run: RunRecord
    params: dict[str, Any]
    metrics: dict[str, float]
    artifacts: dict[str, str]
    log_lines: list[str] = field(default_factory=list)
    samples_us: list[float] = field(default_factory=list)
    accuracy: Accuracy | None = None
    percentiles: list[PercentileCI] = field(default_factory=list)  # of the samples, with CIs


def filter_choices(project: Project) -> dict[str, list[str]]:
    """The values each filter can take in this project's store."""
    from edgehub.ops.runs import filter_values

    return {**filter_values(project), "status": list(STATUSES)}


def store_stamp(store_dir: Path) -> tuple[int, ...]:
    """What changes whenever any process writes the run store: the SQLite file's and its
    write-ahead log's size and modification time (two stats; cheap enough for the UI thread)."""
    stamp: list[int] = []
    for name in ("runs.db", "runs.db-wal"):
        try:
            found = (store_dir / name).stat()
        except OSError:
            stamp += [-1, -1]
        else:
            stamp += [found.st_size, found.st_mtime_ns]
    return tuple(stamp)


def matches(run: RunRecord, search: str) -> bool:
    """Whether lower-case ``search`` is part of the run's name, type, status, device or id."""
    fields = (run.name, run.run_type, run.status, run.device or "", run.run_id)
    return not search or any(search in value.lower() for value in fields)


def _plain(name: str) -> str:
    return name.lstrip("$")


def run_detail(project: Project, run_id: str) -> RunDetail:
    """A run with its log's last lines and, for a profile, the raw latencies `hub runs compare`
    would judge (none when they cannot enter a verdict: NaN, text, zero)."""
    from edgehub.ops.runs import latency_percentiles, latency_samples, show_run

    run = show_run(project, run_id)
    artifacts = {_plain(a.name or a.file_name): str(a.file_path) for a in run.all_artifacts}
    detail = RunDetail(
        run=run,
        params={_plain(k): v for k, v in run.params.items()},
        metrics={_plain(k): v for k, v in run.metrics.items()},
        artifacts=artifacts,
        samples_us=[1000.0 * s for s in latency_samples(run)],
        percentiles=latency_percentiles(run),
    )
    log = artifacts.get("log")
    if log and Path(log).is_file():
        detail.log_lines = Path(log).read_text(errors="replace").splitlines()[-_LOG_TAIL:]
    if run.run_type == "EVAL":
        from edgehub.tui.accuracy_data import accuracy_of

        detail.accuracy = accuracy_of(detail.params, detail.metrics, artifacts)
    return detail


def percentile_lines(percentiles: list[PercentileCI]) -> list[str]:
    """Each percentile with its CI as `hub runs show` gives them, one a line, then the notes
    of those resting on too few samples."""
    lines = [
        f"{p.label} {p.value:.4g} ms  "
        + ("CI -" if p.low is None else f"{100 * p.confidence:g} % CI {p.low:.4g} .. {p.high:.4g}")
        + f"  ({p.samples} runs)"
        for p in percentiles
    ]
    return lines + [f"! {p.note}" for p in percentiles if p.note]


def verdict_lines(comparison: Comparison) -> list[str]:
    """What decides, first: NOT COMPARABLE with its reasons (in `hub runs compare`'s words),
    what could not be compared and why, the verdict, then the conditions check's notes."""
    warning, notes = comparison.condition_lines()
    lines = warning + comparison.problems
    if comparison.paired_heading is not None:
        lines.append(f"{comparison.paired_heading} {comparison.verdict}")
    elif comparison.verdict is not None:
        lines.append(comparison.verdict)
    return lines + notes


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def comparison_sections(comparison: Comparison) -> dict[str, list[Row]]:
    """The comparison's rows by section: latency (median and p99, each delta with its CI and
    whether it is significant) and accuracy where measured, then metrics (with b/a), params
    and environment (differences marked ≠)."""
    sections: dict[str, list[Row]] = {}
    latency = comparison.latency
    if latency is not None:
        rows = []
        for label, q in (("median ms", latency.median), ("p99 ms", latency.p99)):
            low, high = q.ci_pct
            mark = "significant" if q.significant else "not significant"
            note = f"{q.delta_pct:+.1f}% [{low:+.1f}, {high:+.1f}] {mark}"
            rows.append((label, f"{q.a_ms:.4f}", f"{q.b_ms:.4f}", note))
        sections["latency"] = rows
    if comparison.accuracy is not None:
        sections["accuracy"] = [
            (d.name, _text(d.a), _text(d.b),
             f"{d.delta:+.4g} [{d.low:+.4g}, {d.high:+.4g}] "
             + ("significant" if d.significant else "not significant"))
            for d in comparison.accuracy.deltas
        ]  # fmt: skip
    runs = comparison.runs
    sections["metrics"] = sorted(
        (_plain(key), _text(m.a), _text(m.b), "" if m.ratio is None else f"{m.ratio:.3f}")
        for key, m in runs.metrics.items()
    )  # by the name shown: `$runtime` as `runtime`
    for name, values in (("params", runs.params), ("environment", runs.environment)):
        sections[name] = sorted(
            (_plain(key), _text(v.a), _text(v.b), "" if v.same else "≠")
            for key, v in values.items()
        )
    return sections
