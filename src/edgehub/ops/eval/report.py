"""`EvalReport`: what an evaluation found, as the front ends show it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgehub.ops.eval.goals import GoalResult
    from edgehub.ops.eval.layers import LayerRow


@dataclass
class EvalReport:
    """An EVAL run's figures. ``outputs``: output -> figure -> value (over the samples);
    ``tasks``: metric -> {"model", "reference", "output"}; ``worst``: output -> the samples of
    lowest cosine; ``per_sample``: every per-sample value, by output (figures) and by metric;
    ``layers``: the search for the first divergent layer (`layers.LayerSearch.to_dict`).
    ``layer_search``: its rows and first divergent one, for `fix` (not serialized).
    ``calibration``: what the compiled model was calibrated on: ``"dataset"`` (the samples
    evaluated), ``"given"`` (the compile's ``calibration_data``), ``"random"`` (random
    samples: its int8 accuracy is not the real one) or None (not calibrated).
    ``passed`` is None without goals."""

    run_id: str
    name: str
    status: str
    runtime: str
    device: str
    model: str
    reference: str
    dataset: str
    dataset_sha256: str
    samples: int
    sample_names: list[str]
    labels: str | None = None
    compile_run_id: str | None = None
    calibration: str | None = None
    outputs: dict[str, dict[str, float]] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    goals: list[GoalResult] = field(default_factory=list)
    worst: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    per_sample: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    layers: dict[str, Any] | None = None
    layer_search: tuple[list[LayerRow], LayerRow | None] | None = field(default=None, repr=False)

    @property
    def passed(self) -> bool | None:
        return None if not self.goals else all(g.passed for g in self.goals)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "type": "EVAL",
            "status": self.status,
            "runtime": self.runtime,
            "device": self.device,
            "model": self.model,
            "reference": self.reference,
            "dataset": self.dataset,
            "dataset_sha256": self.dataset_sha256,
            "labels": self.labels,
            "samples": self.samples,
            "compile_run_id": self.compile_run_id,
            "calibration": self.calibration,
            "outputs": self.outputs,
            "tasks": self.tasks,
            "goals": [g.to_dict() for g in self.goals],
            "passed": self.passed,
            "worst_samples": self.worst,
            "timings_ms": self.timings_ms,
            "layers": self.layers,
            "per_sample": {"samples": self.sample_names, **self.per_sample},
        }
