"""Two EVAL runs on one dataset, figure by figure: `hub runs compare` of evals.

Each figure kept per sample (per output: cosine, max/mean abs error, SNR, PSNR; each task
metric's model value) is compared as the mean of B minus the mean of A, with a 95 % confidence
interval from a paired bootstrap over the samples (the same samples in both runs, resampled
together); a delta is significant when its interval excludes 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.tracking.records import RunRecord


RESAMPLES = 2000
MAX_PER_SAMPLE_BYTES = 512 << 20


@dataclass
class FigureDelta:
    name: str
    a: float
    b: float
    low: float
    high: float

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def significant(self) -> bool:
        return not self.low <= 0.0 <= self.high

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "a": self.a,
            "b": self.b,
            "delta": self.delta,
            "ci95": [self.low, self.high],
            "significant": self.significant,
        }


@dataclass
class AccuracyComparison:
    run_a: str
    run_b: str
    samples: int
    deltas: list[FigureDelta]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "samples": self.samples,
            "figures": [d.to_dict() for d in self.deltas],
        }


def _per_sample(run: RunRecord) -> dict[str, Any]:
    artifact = run.artifacts.get("per_sample")
    if artifact is None or not isinstance(artifact.file_path, Path):
        raise UsageError(f"run {run.run_id[:8]} kept no per-sample values; rerun its eval")
    path = artifact.file_path
    if path.stat().st_size > MAX_PER_SAMPLE_BYTES:
        raise UsageError(f"the per-sample values of run {run.run_id[:8]} are too large to compare")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _series(data: dict[str, Any]) -> dict[str, list[float]]:
    found = {
        f"{output}.{figure}": values
        for output, figures in data.get("outputs", {}).items()
        for figure, values in figures.items()
    }
    found.update({name: values["model"] for name, values in data.get("tasks", {}).items()})
    return found


def compare_evals(a: RunRecord, b: RunRecord, *, seed: int = 0) -> AccuracyComparison:
    """Every figure both EVAL runs kept per sample, B against A (same dataset required)."""
    import numpy as np

    if a.params.get("dataset_sha256") != b.params.get("dataset_sha256"):
        raise UsageError(
            f"runs {a.run_id[:8]} and {b.run_id[:8]} evaluated different datasets; per-sample "
            "deltas need the same samples"
        )
    series_a, series_b = _series(_per_sample(a)), _series(_per_sample(b))
    rng = np.random.default_rng(seed)
    deltas = []
    count = 0
    for name in [n for n in series_a if n in series_b]:
        first = np.asarray(series_a[name], dtype=np.float64)
        second = np.asarray(series_b[name], dtype=np.float64)
        if first.size != second.size or first.size == 0:
            continue
        count = first.size
        picks = rng.integers(0, count, size=(RESAMPLES, count))
        means = (second - first)[picks].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        deltas.append(
            FigureDelta(name, float(first.mean()), float(second.mean()), float(low), float(high))
        )
    return AccuracyComparison(a.run_id, b.run_id, count, deltas)
