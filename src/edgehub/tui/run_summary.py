"""The lines a run pane ends with: the run's id, status, key metrics, the conditions a profile
ran under, or its error."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgehub.ops.reports import PipelineReport, RunReport

__all__ = ["shown_value", "summary_lines"]

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


def summary_lines(report: RunReport | PipelineReport | None, error: str | None) -> list[str]:
    from edgehub.ops.reports import PipelineReport

    if report is None:
        return [f"── ended: {error or 'no result'}"]
    if isinstance(report, PipelineReport):
        lines: list[str] = []
        for step, part in report.steps().items():
            lines += _run(step, part)
        for row in report.accuracy:
            lines.append(f"   accuracy: {shown_value(row.to_dict())}")
        return lines
    return _run(report.type.lower(), report)
