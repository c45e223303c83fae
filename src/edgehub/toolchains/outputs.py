"""Output types shared by the runtimes, and `ProfilingMethod`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from edgehub.core.component.outputs import CompiledModel, ComponentOutput
from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CompiledWithNames", "InvocationResult", "ProfilingMethod", "ProfilingResult"]


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


@dataclass(frozen=True, kw_only=True)
class InvocationResult(ComponentOutput):
    """The output tensors by name, and the saved output file."""

    output: dict[str, np.ndarray]
    output_file: LoggedArtifact
