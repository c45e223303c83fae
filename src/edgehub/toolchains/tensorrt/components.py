"""TensorRT components (declared; providers arrive with the TensorRT issue)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgehub.core.component.base import Component, NoProviderError
from edgehub.core.component.outputs import CompiledModel
from edgehub.toolchains.outputs import (
    InvocationResult,
    ProfilingMethod,
    ProfilingResult,
)
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext

__all__ = [
    "TensorRTCompiledModel",
    "TensorRTCompiler",
    "TensorRTInvocationResult",
    "TensorRTInvoker",
    "TensorRTProfiler",
    "TensorRTProfilingResult",
]


@dataclass(frozen=True, kw_only=True)
class TensorRTCompiledModel(CompiledModel):
    """A serialized TensorRT engine."""


@dataclass(frozen=True, kw_only=True)
class TensorRTProfilingResult(ProfilingResult):
    """Profile of a TensorRT engine."""


@dataclass(frozen=True, kw_only=True)
class TensorRTInvocationResult(InvocationResult):
    """Outputs of a TensorRT engine."""


class TensorRTCompiler(Component):
    """Builds a TensorRT engine from an ONNX model."""

    run_type = RunType.COMPILE

    def __init__(
        self,
        *,
        name: str | None = None,
        device: str | None = None,
        tensorrt_version: str | None = None,
        calib_path: Path | None = None,
    ) -> None:
        super().__init__(
            name=name, device=device, tensorrt_version=tensorrt_version, calib_path=calib_path
        )

    def run(
        self,
        ctx: HubContext,
        onnx_path: Path,
        *,
        device: str | None = None,
        tensorrt_version: str | None = None,
        calib_path: Path | None = None,
    ) -> TensorRTCompiledModel:
        """Build an engine from ``onnx_path``."""
        raise NoProviderError


class TensorRTProfiler(Component):
    """Measures a TensorRT engine's latency."""

    run_type = RunType.PROFILE

    def __init__(
        self,
        *,
        name: str | None = None,
        device: str | None = None,
        profiling_method: ProfilingMethod = ProfilingMethod.LAYERWISE,
    ) -> None:
        super().__init__(name=name, device=device, profiling_method=profiling_method)

    def run(
        self,
        ctx: HubContext,
        model: TensorRTCompiledModel,
        *,
        device: str | None = None,
        profiling_method: ProfilingMethod = ProfilingMethod.LAYERWISE,
    ) -> TensorRTProfilingResult:
        """Profile ``model``."""
        raise NoProviderError


class TensorRTInvoker(Component):
    """Runs a TensorRT engine on input tensors."""

    run_type = RunType.INFERENCE

    def __init__(self, *, name: str | None = None, device: str | None = None) -> None:
        super().__init__(name=name, device=device)

    def run(
        self,
        ctx: HubContext,
        model: TensorRTCompiledModel,
        input_data: dict[str, np.ndarray],
        *,
        device: str | None = None,
    ) -> TensorRTInvocationResult:
        """Run ``model`` on ``input_data``."""
        raise NoProviderError
