"""`stored_report`: an `EvalReport` read back from a stored EVAL run (`hub runs show`).

The figures come from the run's metrics (``<output>.<figure>``, ``<metric>`` and
``reference.<metric>``), the goals and worst samples from its params, each worst sample's
figures and the sample names from ``per_sample.json``, the layer table from ``layers.json``;
a file too large or unreadable leaves its part out rather than failing the show.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.ops.eval.goals import GoalResult
from edgehub.ops.eval.report import EvalReport
from edgehub.ops.reports import read_json
from edgehub.toolchains.metrics import OUTPUT_FIGURES

if TYPE_CHECKING:
    from edgehub.tracking.records import RunRecord


def stored_report(run: RunRecord) -> EvalReport:
    """The report of EVAL run ``run`` as `hub exec eval` printed it (per-sample lists aside)."""
    params, metrics = run.params, run.metrics
    outputs: dict[str, dict[str, float]] = {}
    tasks: dict[str, dict[str, Any]] = {}
    for key, value in metrics.items():
        output, _, figure = key.rpartition(".")
        if output and output != "reference" and figure in OUTPUT_FIGURES:
            outputs.setdefault(output, {})[figure] = value
    per_sample = _json(run, "per_sample") or {}
    first = next(iter(outputs), "")
    for metric in params.get("task_metrics") or []:
        if metric in metrics:
            against = "labels" if "labels" in run.artifacts else "reference"
            reference = metrics.get(f"reference.{metric}")
            tasks[metric] = {"model": metrics[metric], "reference": reference,
                             "against": against, "output": first}  # fmt: skip
    names: list[str] = list(per_sample.get("samples") or [])
    report = EvalReport(
        run_id=run.run_id,
        name=run.name,
        status=run.status,
        runtime=str(params.get("$runtime", params.get("runtime", ""))),
        device=run.device or "local",
        model=_path(run, "input"),
        reference=_path(run, "reference"),
        dataset=_path(run, "dataset"),
        dataset_sha256=str(params.get("dataset_sha256", "")),
        samples=int(metrics.get("samples", params.get("samples", 0)) or 0),
        sample_names=names,
        labels=_path(run, "labels") or None,
        compile_run_id=params.get("compile_run"),
        calibration=params.get("calibration"),
        outputs=outputs,
        tasks=tasks,
        goals=[_goal(g) for g in params.get("goal_results") or []],
        layers=_json(run, "layers"),
    )
    figures = per_sample.get("outputs") or {}
    for output, worst in (params.get("worst_samples") or {}).items():
        rows = []
        for sample in worst:
            index = names.index(sample) if sample in names else None
            values = figures.get(output, {})
            rows.append({
                "sample": sample,
                "cosine": _at(values.get("cosine"), index),
                "max_abs": _at(values.get("max_abs"), index),
            })  # fmt: skip
        report.worst[output] = rows
    return report


def _goal(stored: dict[str, Any]) -> GoalResult:
    return GoalResult(str(stored["goal"]), bool(stored["passed"]), list(stored.get("checks", [])))


def _path(run: RunRecord, name: str) -> str:
    artifact = run.artifacts.get(name)
    return "" if artifact is None else str(artifact.file_path)


def _json(run: RunRecord, name: str) -> Any:
    artifact = run.artifacts.get(name)
    return None if artifact is None else read_json(Path(str(artifact.file_path)))


def _at(values: Any, index: int | None) -> float:
    """``values[index]``, NaN where the file did not keep it."""
    if index is None or not isinstance(values, list) or index >= len(values):
        return float("nan")
    value = values[index]
    return float(value) if isinstance(value, (int, float)) else float("nan")
