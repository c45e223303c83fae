"""The lines a run pane ends with: the run's id, status, key metrics, the conditions a profile
ran under, or its error."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgehub.ops.eval import EvalReport
    from edgehub.ops.reports import PipelineReport, RunReport


# the recorded conditions (agent/conditions.py) worth a glance, in this order
CONDITIONS = ("other_cpu_share", "load_1m", "governor", "cpu_quota", "cpuset", "cpu_affinity")


def shown_value(value: object) -> str:
    """A metric for people: whole numbers in full, others to 4 digits, tables as k=v."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={shown_value(v)}" for k, v in value.items())
    return str(value)


def _run(label: str, report: RunReport) -> list[str]:
    lines = [f"── {label}: run {report.run_id[:8]} {report.name} {report.status}"]
    latency = report.latency_ms
    if latency:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in latency.items() if isinstance(v, (int, float)))
        lines.append(f"   latency ms: {shown}")
    for key, value in sorted(report.metrics.items()):
        if not key.startswith("latency_"):
            lines.append(f"   {key}: {shown_value(value)}")
    env = report.environment
    found = [f"{k} {env[f'conditions.{k}']}" for k in CONDITIONS if f"conditions.{k}" in env]
    if found:
        lines.append(f"   conditions: {', '.join(found)}")
    return lines


def _eval(report: EvalReport) -> list[str]:
    verdict = {None: "", True: "; goals passed", False: "; goals MISSED"}[report.passed]
    lines = [
        f"── eval: run {report.run_id[:8]} {report.name} {report.status}: "
        f"{report.samples} samples{verdict}"
    ]
    for goal in report.goals:
        lines.append(f"   goal {goal.goal}: {'passed' if goal.passed else 'MISSED'}")
    for metric, values in sorted(report.tasks.items()):
        lines.append(
            f"   {metric}: {shown_value(values['model'])} "
            f"(reference {shown_value(values['reference'])})"
        )
    for output, figures in sorted(report.outputs.items()):
        shown = ", ".join(f"{k} {shown_value(v)}" for k, v in figures.items())
        lines.append(f"   {output}: {shown}")
    if report.layers is not None:
        first = report.layers.get("first_divergent")
        lines.append(f"   first divergent layer: {first['node'] if first else 'none'}")
    lines.append("   its accuracy tab: Runs (3), then enter on the run")
    return lines


def summary_lines(
    report: RunReport | PipelineReport | EvalReport | None, error: str | None
) -> list[str]:
    from edgehub.ops.reports import PipelineReport, RunReport

    if report is None:
        return [f"── ended: {error or 'no result'}"]
    if isinstance(report, PipelineReport):
        lines: list[str] = []
        for step, part in report.steps().items():
            lines += _run(step, part)
        for row in report.accuracy:
            lines.append(f"   accuracy: {shown_value(row.to_dict())}")
        return lines
    if isinstance(report, RunReport):
        return _run(report.type.lower(), report)
    return _eval(report)  # ops.eval is not imported for the other kinds
