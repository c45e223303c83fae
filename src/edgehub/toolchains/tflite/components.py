"""TFLite / LiteRT components (declared; providers arrive with the TFLite issue)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.base import Component, NoProviderError
from edgehub.toolchains.outputs import CompiledWithNames, InvocationResult, ProfilingResult
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext

__all__ = [
    "TFLiteCompiledModel",
    "TFLiteCompiler",
    "TFLiteInvocationResult",
    "TFLiteInvoker",
    "TFLiteProfiler",
    "TFLiteProfilingResult",
]


@dataclass(frozen=True, kw_only=True)
class TFLiteCompiledModel(CompiledWithNames):
    """A ``.tflite`` model converted from ONNX."""


@dataclass(frozen=True, kw_only=True)
class TFLiteProfilingResult(ProfilingResult):
    """Profile of a ``.tflite`` model."""


@dataclass(frozen=True, kw_only=True)
class TFLiteInvocationResult(InvocationResult):
    """Outputs of a ``.tflite`` model."""


class TFLiteCompiler(Component):
    """Converts an ONNX model to TFLite / LiteRT."""

    run_type = RunType.COMPILE

    def __init__(
        self,
        *,
        name: str | None = None,
        device: str | None = None,
        input_shape: tuple[int, ...] | None = None,
        calibration_data: Path | dict[str, np.ndarray] | None = None,
        quantize_io: bool = False,
    ) -> None:
        super().__init__(
            name=name,
            device=device,
            input_shape=input_shape,
            calibration_data=calibration_data,
            quantize_io=quantize_io,
        )

    def run(
        self,
        ctx: HubContext,
        onnx_path: Path,
        *,
        device: str | None = None,
        input_shape: tuple[int, ...] | None = None,
        calibration_data: Path | dict[str, np.ndarray] | None = None,
        quantize_io: bool = False,
    ) -> TFLiteCompiledModel:
        """Convert ``onnx_path``."""
        raise NoProviderError


class TFLiteProfiler(Component):
    """Measures a ``.tflite`` model's latency (benchmark_model parameters as a dict)."""

    run_type = RunType.PROFILE

    def __init__(
        self,
        *,
        name: str | None = None,
        device: str | None = None,
        benchmark_params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(name=name, device=device, benchmark_params=benchmark_params)

    def run(
        self,
        ctx: HubContext,
        model: TFLiteCompiledModel,
        *,
        device: str | None = None,
        benchmark_params: dict[str, Any] | None = None,
    ) -> TFLiteProfilingResult:
        """Profile ``model``."""
        raise NoProviderError


class TFLiteInvoker(Component):
    """Runs a ``.tflite`` model on input tensors."""

    run_type = RunType.INFERENCE

    def __init__(
        self,
        *,
        name: str | None = None,
        device: str | None = None,
        use_compiled_names: bool = False,
    ) -> None:
        super().__init__(name=name, device=device, use_compiled_names=use_compiled_names)

    def run(
        self,
        ctx: HubContext,
        model: TFLiteCompiledModel,
        input_data: dict[str, np.ndarray],
        *,
        device: str | None = None,
        use_compiled_names: bool = False,
    ) -> TFLiteInvocationResult:
        """Run ``model`` on ``input_data``."""
        raise NoProviderError
