"""Output types shared by the runtimes, and `ProfilingMethod`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from edgehub.core.component.outputs import CompiledModel, ComponentOutput
from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext


class ProfilingMethod(str, Enum):
    """How latency is measured: wall clock around each run, the runtime's per-layer profiler,
    or the runtime's whole-model timing."""

    PYTHON = "python"
    LAYERWISE = "layerwise"
    MODEL = "model"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, kw_only=True)
class CompiledWithNames(CompiledModel):
    """A compiled model that records tensor renames made by the compiler (original → new)."""

    input_name_mapping: dict[str, str] | None = None
    output_name_mapping: dict[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class ProfilingResult(ComponentOutput):
    """Latency (ms, the median of the timed runs where the runtime gives samples), fps, the
    profile.json artifact, and the optional memory and load-time metrics."""

    latency: LoggedMetric
    fps: LoggedMetric
    output_file: LoggedArtifact | None = None
    peak_memory_usage: LoggedMetric | None = None
    load_time: LoggedMetric | None = None


def number(value: Any) -> float | None:
    """``value`` as a float where it is a number (an int or float, not a bool), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


OWN_FIGURES = frozenset({"latency", "peak_memory_usage", "load_time"})  # logged as '$' names


def log_figures(ctx: HubContext, figures: Mapping[str, Any]) -> None:
    """Log a profile's ``figures`` on the current run, `ProfilingResult`'s own (`OWN_FIGURES`)
    under '$' names (``latency`` as ``$latency``); a None figure is left out."""
    named = {(f"${k}" if k in OWN_FIGURES else k): v for k, v in figures.items()}
    ctx.client.log_metrics({k: float(v) for k, v in named.items() if v is not None})


def agent_figures(metrics: Mapping[str, Any], load: str = "session_create_ms") -> dict[str, Any]:
    """`ProfilingResult`'s figures from an agent's profile ``metrics``: the median latency, the
    peak RSS, the load time (metric ``load``), and fps from the mean where the agent gave none."""
    figures = {
        "latency": metrics["latency_median_ms"],
        "peak_memory_usage": metrics.get("peak_rss_mb"),
        "load_time": metrics.get(load),
    }
    if "fps" not in metrics:
        mean = float(metrics["latency_mean_ms"])
        figures["fps"] = 1000.0 / mean if mean > 0 else 0.0
    return figures


@dataclass(frozen=True, kw_only=True)
class InvocationResult(ComponentOutput):
    """The output tensors by name, and the saved output file."""

    output: dict[str, np.ndarray]
    output_file: LoggedArtifact
