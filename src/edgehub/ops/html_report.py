"""What `hub runs report` shows, read from the run store (headless; `ops.report_render` draws it).

Each run given goes to the section of its type: PROFILE runs are overlaid (their latency
samples with each percentile's 95 % CI from order statistics, their per-layer times on one axis
of layer names, the profiler's overhead, their recorded conditions, and each run's A/B verdict
against the first as `hub runs compare` gives it); an EVAL run shows its per-output figures, its
worst samples and its layer search (the divergence curve, the first divergent layer); a FIX run
its float32 / int8 / repaired models as accuracy against latency with their Pareto front; a
SWEEP its cells as models x devices per metric, and the Pareto front over latency and accuracy.

The profiler's overhead is stated where a profile has a per-layer trace: the headline latency
is measured without the profiler, the traced runs with it (``trace.model_run_mean_ms``), and
the layers' times are summed; the report gives both gaps.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError
from edgehub.ops.reports import read_json
from edgehub.toolchains.outputs import number

if TYPE_CHECKING:
    from collections.abc import Sequence

    from edgehub.ops.project import Project
    from edgehub.tracking.percentiles import PercentileCI
    from edgehub.tracking.records import RunRecord


REPORT_TYPES = ("PROFILE", "EVAL", "FIX", "SWEEP")


@dataclass(frozen=True)
class LayerTime:
    """One engine layer's mean time (ms) per traced run, and the ONNX node(s) it is drawn on
    (`ops.layer_nodes`: ``a+b`` for a fused group, ``name (unmapped)`` where none was found)
    with their graph position."""

    layer: str
    node: str
    op: str
    mean_ms: float
    position: int = 1 << 30
    mapped: bool = False


@dataclass(frozen=True)
class Overhead:
    """A per-layer profile reconciled with the end-to-end time (ms, means)."""

    headline_ms: float  # the timed loop, without the profiler
    traced_ms: float  # the runs the profiler traced, end to end
    layer_sum_ms: float  # the layers' times summed over one traced run

    def lines(self) -> list[str]:
        overhead = self.traced_ms - self.headline_ms
        gap = self.traced_ms - self.layer_sum_ms
        return [
            f"profiler overhead: traced runs {self.traced_ms:.4g} ms against "
            f"{self.headline_ms:.4g} ms untraced ({overhead:+.4g} ms, "
            f"{_percent(overhead, self.headline_ms)})",
            f"layer sum {self.layer_sum_ms:.4g} ms of the traced {self.traced_ms:.4g} ms: "
            f"{gap:.4g} ms ({_percent(gap, self.traced_ms)}) outside the layers",
        ]


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:+.1f} %" if whole > 0 else "n/a"


@dataclass
class ProfileSection:
    run_id: str
    label: str
    samples_ms: list[float]
    percentiles: list[PercentileCI]
    conditions: dict[str, str]
    layers: list[LayerTime] = field(default_factory=list)
    overhead: Overhead | None = None


@dataclass(frozen=True)
class Verdict:
    """Run ``other`` against the baseline (the first profile), as `hub runs compare` says."""

    baseline: str
    other: str
    verdict: str
    comparable: bool
    notes: list[str]


@dataclass
class EvalSection:
    run_id: str
    label: str
    outputs: dict[str, dict[str, float]]
    worst: dict[str, list[dict[str, Any]]]
    measured: list[dict[str, Any]]  # the layer search's measured layers, in graph order
    first: dict[str, Any] | None
    threshold: float | None


@dataclass(frozen=True)
class FixPoint:
    model: str  # float32, int8, repaired
    latency_ms: float | None
    accuracy: float | None
    passed: bool
    kept_in_float: list[str]


@dataclass
class FixSection:
    run_id: str
    reason: str
    points: list[FixPoint]


@dataclass(frozen=True)
class SweepCell:
    row: str  # the model with its varied settings
    device: str  # the device with its runtime
    status: str
    metrics: dict[str, float]  # median_ms, p99_ms, cosine_similarity, max_abs_error


@dataclass
class SweepSection:
    run_id: str
    cells: list[SweepCell]


@dataclass
class ReportData:
    title: str
    profiles: list[ProfileSection] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    evals: list[EvalSection] = field(default_factory=list)
    fixes: list[FixSection] = field(default_factory=list)
    sweeps: list[SweepSection] = field(default_factory=list)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indexes of the points (latency, accuracy) no other point beats on both (lower latency,
    higher accuracy), by latency."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front: list[int] = []
    for i in order:
        if not front or points[i][1] > points[front[-1]][1]:
            front.append(i)
    return front


def build_report(
    project: Project,
    refs: Sequence[str],
    *,
    sweeps: Sequence[str] = (),
    evals: Sequence[str] = (),
    fixes: Sequence[str] = (),
) -> ReportData:
    """The report of runs ``refs`` (each in the section of its type) and of the runs given as
    a sweep, an eval or a fix (refused when of another type)."""
    with closing(project.store()) as store:
        runs = [_typed(store.get_run(ref), None) for ref in refs]
        for wanted, given in (("SWEEP", sweeps), ("EVAL", evals), ("FIX", fixes)):
            runs.extend(_typed(store.get_run(ref), wanted) for ref in given)
    if not runs:
        raise UsageError("give the runs to report: hub runs report RUN... -o report.html")
    data = ReportData(title="edgehub report: " + ", ".join(r.run_id[:8] for r in runs))
    sections: dict[str, tuple[Any, list[Any]]] = {
        "PROFILE": (_profile, data.profiles),
        "EVAL": (_eval, data.evals),
        "FIX": (_fix, data.fixes),
        "SWEEP": (_sweep, data.sweeps),
    }
    for run in runs:
        read, section = sections[run.run_type]
        section.append(read(run))
    data.verdicts = _verdicts(project, data.profiles)
    return data


def _typed(run: RunRecord, wanted: str | None) -> RunRecord:
    if wanted is None and run.run_type not in REPORT_TYPES:
        takes = "a report takes " + ", ".join(REPORT_TYPES) + " runs"
    elif wanted is not None and run.run_type != wanted:
        takes = f"--{wanted.lower()} takes {wanted} runs"
    else:
        return run
    raise UsageError(f"run {run.run_id[:8]} is a {run.run_type} run; {takes}")


def _label(run: RunRecord) -> str:
    model = run.artifacts.get("input")
    what = model.file_name if model is not None else run.name
    return f"{run.run_id[:8]} {what} @ {run.device or 'local'}"


def _artifact_json(run: RunRecord, name: str) -> Any:
    artifact = run.artifacts.get(name)
    return None if artifact is None or not artifact.is_stored else read_json(artifact.local())


def _profile_document(run: RunRecord) -> dict[str, Any]:
    """The profile JSON that holds the run's samples (and, traced, its layers)."""
    for artifact in run.all_artifacts:
        if artifact.is_stored and artifact.file_name.endswith(".json"):
            document = read_json(artifact.local())
            if isinstance(document, dict) and "samples_us" in document:
                return document
    return {}


def _profile(run: RunRecord) -> ProfileSection:
    from edgehub.ops.runs import latency_percentiles, latency_samples
    from edgehub.tracking.comparability import conditions_of

    document = _profile_document(run)
    layers = _layers(run, document)
    return ProfileSection(
        run_id=run.run_id,
        label=_label(run),
        samples_ms=latency_samples(run),
        percentiles=latency_percentiles(run),
        conditions=conditions_of(run.environment),
        layers=layers,
        overhead=_overhead(run, document, layers),
    )


def _layers(run: RunRecord, document: dict[str, Any]) -> list[LayerTime]:
    """The traced layers, each on the ONNX node(s) of the run's model it came from
    (`ops.layer_nodes`); without a readable ONNX model, each on its own name, unmapped."""
    from edgehub.ops.layer_nodes import GraphNodes, load_graph_nodes

    rows = [
        row
        for row in document.get("layers") or []
        if isinstance(row, dict) and isinstance(row.get("mean_us"), (int, float))
    ]
    model = run.artifacts.get("input")
    graph = GraphNodes([], [], [], [])  # no readable ONNX model: every layer unmapped
    if rows and model is not None and model.is_stored:
        graph = load_graph_nodes(model.local()) or graph
    layers = []
    for row in rows:
        name, op = str(row["name"]), str(row.get("op_type", ""))
        group = graph.group(name, op)
        ms = float(row["mean_us"]) / 1000.0
        layers.append(LayerTime(name, group.label, op, ms, group.position, group.mapped))
    return layers


def _overhead(run: RunRecord, document: dict[str, Any], layers: list[LayerTime]) -> Overhead | None:
    trace = document.get("trace") or {}
    traced = trace.get("model_run_mean_ms") if isinstance(trace, dict) else None
    headline = run.metrics.get("latency_mean_ms")
    if not layers or not isinstance(traced, (int, float)) or headline is None:
        return None
    return Overhead(float(headline), float(traced), sum(layer.mean_ms for layer in layers))


def _verdicts(project: Project, profiles: list[ProfileSection]) -> list[Verdict]:
    from edgehub.ops.runs import compare_runs

    verdicts = []
    for other in profiles[1:]:
        base = profiles[0]
        found = compare_runs(project, base.run_id, other.run_id, strict=False)
        checked = found.comparability
        notes = [] if checked is None else [*checked.reasons, *checked.notes]
        verdict = found.verdict or "; ".join(found.problems) or "no verdict"
        verdicts.append(Verdict(base.label, other.label, verdict, found.comparable, notes))
    return verdicts


def _eval(run: RunRecord) -> EvalSection:
    from edgehub.ops.eval.stored import stored_report

    report = stored_report(run)
    layers = report.layers or {}
    measured = sorted(layers.get("measured") or [], key=lambda row: int(row.get("index", 0)))
    threshold = layers.get("threshold")
    return EvalSection(
        run_id=run.run_id,
        label=_label(run),
        outputs=report.outputs,
        worst=report.worst,
        measured=measured,
        first=layers.get("first_divergent"),
        threshold=float(threshold) if isinstance(threshold, (int, float)) else None,
    )


def _fix(run: RunRecord) -> FixSection:
    stored = _artifact_json(run, "fix") or {}
    points = [
        FixPoint(
            model=str(row.get("model", "?")),
            latency_ms=number(row.get("latency_median_ms")),
            accuracy=number(row.get("cosine")),
            passed=bool(row.get("passed")),
            kept_in_float=[str(n) for n in row.get("kept_in_float") or []],
        )
        for row in stored.get("table") or []
        if isinstance(row, dict)
    ]
    return FixSection(run.run_id, str(stored.get("reason", "")), points)


SWEEP_METRICS = ("median_ms", "p99_ms", "cosine_similarity", "max_abs_error")


def _sweep(run: RunRecord) -> SweepSection:
    stored = _artifact_json(run, "sweep") or {}
    cells = []
    for cell in stored.get("cells") or []:
        if not isinstance(cell, dict):
            continue
        settings = " ".join(f"{k}={v}" for k, v in sorted((cell.get("settings") or {}).items()))
        metrics = {m: v for m in SWEEP_METRICS if (v := number(cell.get(m))) is not None}
        cells.append(
            SweepCell(
                row=f"{cell.get('model', '?')} {settings}".strip(),
                device=f"{cell.get('device', '?')} {cell.get('runtime', '')}".strip(),
                status=str(cell.get("status", "")),
                metrics=metrics,
            )
        )
    return SweepSection(run.run_id, cells)


def write_report(
    project: Project,
    refs: Sequence[str],
    output: Path,
    *,
    sweeps: Sequence[str] = (),
    evals: Sequence[str] = (),
    fixes: Sequence[str] = (),
) -> Path:
    """Build the report of these runs and write it to ``output`` (one HTML file)."""
    from edgehub.ops.report_render import render_html

    if output.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"-o {output}: the report is an HTML file; name it e.g. report.html")
    page = render_html(build_report(project, list(refs), sweeps=sweeps, evals=evals, fixes=fixes))
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(page, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {output}: {error.strerror or error}") from None
    return output


def report_path(project: Project, refs: Sequence[str]) -> Path:
    """Where a front end without an ``-o`` writes the report of ``refs``: the store's
    ``reports/`` folder, named for the runs."""
    return project.store_dir / "reports" / ("report-" + "-".join(r[:8] for r in refs) + ".html")
