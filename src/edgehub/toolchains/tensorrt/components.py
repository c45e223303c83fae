"""TensorRT components: ONNX → serialized engine, profile and invoke an engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from edgehub.core.component.base import NoProviderError
from edgehub.core.component.outputs import CompiledModel
from edgehub.core.values.shapes import InputShape, InputShapeRange
from edgehub.toolchains.options import STABILITY_BOUNDS, BuiltinComponent
from edgehub.toolchains.outputs import InvocationResult, ProfilingMethod, ProfilingResult
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext

Precision = Literal["fp32", "fp16", "int8"]


@dataclass(frozen=True, kw_only=True)
class TensorRTCompiledModel(CompiledModel):
    """A serialized TensorRT engine."""


@dataclass(frozen=True, kw_only=True)
class TensorRTProfilingResult(ProfilingResult):
    """Profile of a TensorRT engine."""


@dataclass(frozen=True, kw_only=True)
class TensorRTInvocationResult(InvocationResult):
    """Outputs of a TensorRT engine."""


class TensorRTCompiler(BuiltinComponent):
    """Builds a TensorRT engine from an ONNX model.

    ``tensorrt_version``: the TensorRT version to build with; it must prefix the version the
    provider has (the one found is recorded either way). ``calib_path``: an INT8 calibration
    cache (trtexec's ``--calib``), for full TensorRT's implicit INT8. ``precision``: ``fp32``,
    ``fp16`` (float32 tensors converted to float16, I/O kept float32) or ``int8`` (from a QDQ
    model such as ONNXRuntimeCompiler's output, or quantized first from ``calibration_data``).
    ``target``: the compute capability to build for (``"sm86"``, ``"8.9"``, several comma
    separated; default: the GPU present). ``input_shape``: the static shape to build for (the
    first input's, or input name → shape); ``input_shape_range``: input name → ``{"min": ...,
    "opt": ..., "max": ...}`` for an engine that takes a range of shapes (``input_shapes``, its
    old name, still works). ``workspace_mb``: the builder's workspace limit. ``exclude_nodes``
    (ONNX node names; int8 from ``calibration_data``) stay in float: they get no Q/DQ when the
    model is quantized, so the strongly typed network computes them in float32.
    """

    run_type = RunType.COMPILE
    option_aliases = {"input_shapes": "input_shape_range"}  # the old name, deprecated

    def run(
        self,
        ctx: HubContext,
        onnx_path: Path,
        *,
        device: str | None = None,
        tensorrt_version: str | None = None,
        calib_path: Path | None = None,
        precision: Precision = "fp32",
        target: str | None = None,
        input_shape: InputShape | None = None,
        input_shape_range: InputShapeRange | None = None,
        input_shapes: InputShapeRange | None = None,
        workspace_mb: int | None = None,
        calibration_data: Path | dict[str, np.ndarray] | None = None,
        exclude_nodes: list[str] | None = None,
    ) -> TensorRTCompiledModel:
        """Build an engine from ``onnx_path``."""
        raise NoProviderError


class TensorRTProfiler(BuiltinComponent):
    """Measures a TensorRT engine's latency as trtexec does: ``iterations`` timed queries after
    ``warm_up_ms`` of warm-up; latency, enqueue, H2D, GPU compute and D2H statistics, and
    per-layer times with ``LAYERWISE``; ``input_shape`` (by input name: ``x:1x3x48x192``) the
    shapes an engine built for a range of shapes runs at. Needs a GPU where it runs.
    ``until_stable`` (local provider): trtexec runs in windows of ``iterations`` until the last
    three windows (medians and means) agree within ``stable_tolerance`` or ``stable_max_s`` pass,
    recorded as ``stable_converged``, ``stable_windows`` and ``stable_spread_pct``."""

    run_type = RunType.PROFILE
    option_bounds = {k: STABILITY_BOUNDS[k] for k in ("stable_tolerance", "stable_max_s")}

    def run(
        self,
        ctx: HubContext,
        model: TensorRTCompiledModel,
        *,
        device: str | None = None,
        profiling_method: ProfilingMethod = ProfilingMethod.LAYERWISE,
        iterations: int = 100,
        warm_up_ms: int = 200,
        input_shape: InputShape | None = None,
        until_stable: bool = False,
        stable_tolerance: float = 0.05,
        stable_max_s: float = 60.0,
    ) -> TensorRTProfilingResult:
        """Profile ``model``."""
        raise NoProviderError


class TensorRTInvoker(BuiltinComponent):
    """Runs a TensorRT engine on input tensors; outputs keep the engine's dtypes. Needs a GPU
    where it runs."""

    run_type = RunType.INFERENCE

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
