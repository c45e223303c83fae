"""The lines a run pane ends with: the run's id, status, key metrics, or its error."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgehub.ops.reports import PipelineReport, RunReport

__all__ = ["summary_lines"]


def _run(label: str, report: RunReport) -> list[str]:
    lines = [f"── {label}: run {report.run_id[:8]} {report.name} {report.status}"]
    latency = report.latency_ms
    if latency:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in latency.items() if isinstance(v, (int, float)))
        lines.append(f"   latency ms: {shown}")
    for key, value in sorted(report.metrics.items()):
        if not key.startswith("latency_"):
            lines.append(
                f"   {key}: {value:.4g}" if isinstance(value, float) else f"   {key}: {value}"
            )
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
            lines.append(f"   accuracy: {row.to_dict()}")
        return lines
    return _run(report.type.lower(), report)
