"""Two runs side by side: which params and environment entries differ, and metric deltas."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from edgehub.tracking.records import RunRecord

T = TypeVar("T")


@dataclass(frozen=True)
class ValueDiff:
    """One param or environment entry of runs A and B (``None`` where a run lacks it)."""

    a: Any
    b: Any

    @property
    def same(self) -> bool:
        return bool(self.a == self.b)

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "same": self.same}


@dataclass(frozen=True)
class MetricDelta:
    """One metric's last value in A and B, with ``b - a`` and ``b / a`` where defined."""

    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def ratio(self) -> float | None:
        return None if self.a in (None, 0) or self.b is None else self.b / self.a

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "delta": self.delta, "ratio": self.ratio}


@dataclass(frozen=True)
class RunComparison:
    """Runs A and B: every param, metric and environment key either has, in name order."""

    run_a: str
    run_b: str
    run_type_a: str
    run_type_b: str
    params: dict[str, ValueDiff]
    metrics: dict[str, MetricDelta]
    environment: dict[str, ValueDiff]

    @staticmethod
    def _differing(section: dict[str, ValueDiff]) -> dict[str, ValueDiff]:
        return {k: v for k, v in section.items() if not v.same}

    @property
    def differing_params(self) -> dict[str, ValueDiff]:
        return self._differing(self.params)

    @property
    def differing_environment(self) -> dict[str, ValueDiff]:
        return self._differing(self.environment)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.run_a,
            "b": self.run_b,
            "params": {k: v.to_dict() for k, v in self.params.items()},
            "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
            "environment": {k: v.to_dict() for k, v in self.environment.items()},
        }


def _side_by_side(
    a: dict[str, Any], b: dict[str, Any], pair: Callable[[Any, Any], T]
) -> dict[str, T]:
    return {k: pair(a.get(k), b.get(k)) for k in sorted(set(a) | set(b))}


def compare_runs(a: RunRecord, b: RunRecord) -> RunComparison:
    """Params, metrics and environment of ``a`` and ``b`` side by side."""
    return RunComparison(
        run_a=a.run_id,
        run_b=b.run_id,
        run_type_a=a.run_type,
        run_type_b=b.run_type,
        params=_side_by_side(a.params, b.params, ValueDiff),
        metrics=_side_by_side(a.metrics, b.metrics, MetricDelta),
        environment=_side_by_side(a.environment, b.environment, ValueDiff),
    )
