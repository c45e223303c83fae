"""What an EVAL run found, read back from its record for the run detail's accuracy tab.

An EVAL run (`edgehub.ops.eval.measure`) keeps its figures as metrics (``<output>.<figure>``,
``<metric>`` and ``reference.<metric>``, ``goals_passed``), its goal results and worst samples'
names as params, the per-sample values as the ``per_sample`` artifact and the search for the
first divergent layer as ``layers``. Files that are missing or unreadable leave their part
empty. Blocking (files): call from a worker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_NOT_FIGURES = ("reference.", "layers.")


@dataclass(frozen=True)
class LayerTable:
    """The layer search: ``rows`` are the measured layers in graph order (dicts as
    `edgehub.ops.eval.layers.LayerRow.to_dict` writes them); ``first`` the first divergent
    layer's node name; ``fused`` the layers the compiled model fused or renamed."""

    threshold: float
    samples: int
    layers: int
    runs: int
    first: str | None
    rows: list[dict[str, Any]]
    fused: list[dict[str, Any]]


@dataclass(frozen=True)
class Accuracy:
    """``figures``: output -> figure -> value; ``tasks``: metric -> (model, reference);
    ``goals``: (goal, passed, what was checked); ``worst``: (output, sample, cosine, max abs);
    ``passed`` None without goals."""

    samples: int
    figures: dict[str, dict[str, float]] = field(default_factory=dict)
    tasks: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    goals: list[tuple[str, bool, str]] = field(default_factory=list)
    worst: list[tuple[str, str, float | None, float | None]] = field(default_factory=list)
    layers: LayerTable | None = None
    passed: bool | None = None


def _json(path: str | None) -> Any:
    if not path or not Path(path).is_file():
        return None
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def _check_text(check: dict[str, Any]) -> str:
    def number(value: Any) -> str:
        return f"{value:.4g}" if isinstance(value, (int, float)) else str(value)

    name = str(check.get("metric", ""))
    if check.get("output"):
        name += f" of {check['output']}"
    shown = f"{name} {number(check.get('value'))}"
    if "threshold" in check:
        shown += f" vs {number(check['threshold'])}"
    return shown.strip()


def _goals(raw: Any) -> list[tuple[str, bool, str]]:
    goals = []
    for goal in raw if isinstance(raw, list) else []:
        if isinstance(goal, dict):
            checks = [c for c in goal.get("checks", []) if isinstance(c, dict)]
            detail = "; ".join(_check_text(check) for check in checks)
            goals.append((str(goal.get("goal", "?")), bool(goal.get("passed")), detail))
    return goals


def _worst(names: Any, per_sample: Any) -> list[tuple[str, str, float | None, float | None]]:
    if not isinstance(names, dict):
        return []
    samples = per_sample.get("samples", []) if isinstance(per_sample, dict) else []
    outputs = per_sample.get("outputs", {}) if isinstance(per_sample, dict) else {}
    position = {name: i for i, name in enumerate(samples)} if isinstance(samples, list) else {}
    rows = []
    for output, listed in names.items():
        figures = outputs.get(output, {}) if isinstance(outputs, dict) else {}

        def value(figure: str, index: int | None, figures: Any = figures) -> float | None:
            values = figures.get(figure) if isinstance(figures, dict) else None
            if index is None or not isinstance(values, list) or index >= len(values):
                return None
            return float(values[index])

        for sample in listed if isinstance(listed, list) else []:
            index = position.get(sample)
            rows.append((output, str(sample), value("cosine", index), value("max_abs", index)))
    return rows


def _layers(raw: Any) -> LayerTable | None:
    if not isinstance(raw, dict):
        return None
    first = raw.get("first_divergent")
    try:
        return LayerTable(
            threshold=float(raw.get("threshold", 0.0)),
            samples=int(raw.get("samples", 0)),
            layers=int(raw.get("layers", 0)),
            runs=int(raw.get("runs", 0)),
            first=str(first["node"]) if isinstance(first, dict) and "node" in first else None,
            rows=[row for row in raw.get("measured", []) if isinstance(row, dict)],
            fused=[row for row in raw.get("fused_or_renamed", []) if isinstance(row, dict)],
        )
    except (TypeError, ValueError, AttributeError):  # not what `measure` writes: not shown
        return None


def accuracy_of(
    params: dict[str, Any], metrics: dict[str, float], artifacts: dict[str, str]
) -> Accuracy:
    """An EVAL run's accuracy from its params, metrics and artifacts (name -> path)."""
    tasks_asked = params.get("task_metrics")
    task_names = [str(n) for n in tasks_asked] if isinstance(tasks_asked, list) else []
    task_names += [n for n in metrics if f"reference.{n}" in metrics and n not in task_names]
    figures: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        output, dot, figure = key.rpartition(".")
        if dot and not key.startswith(_NOT_FIGURES) and key not in task_names:
            figures.setdefault(output, {})[figure] = value
    passed = metrics.get("goals_passed")
    return Accuracy(
        samples=int(metrics.get("samples", params.get("samples", 0)) or 0),
        figures=figures,
        tasks={n: (metrics[n], metrics.get(f"reference.{n}")) for n in task_names if n in metrics},
        goals=_goals(params.get("goal_results")),
        worst=_worst(params.get("worst_samples"), _json(artifacts.get("per_sample"))),
        layers=_layers(_json(artifacts.get("layers"))),
        passed=None if passed is None else passed == 1.0,
    )
