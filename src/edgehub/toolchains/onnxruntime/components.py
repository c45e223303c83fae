"""ONNX Runtime components: ONNX → (quantized) ONNX, profile, invoke."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from edgehub.core.component.base import NoProviderError
from edgehub.core.values.shapes import InputShape
from edgehub.toolchains.options import STABILITY_BOUNDS, BuiltinComponent
from edgehub.toolchains.outputs import (
    CompiledWithNames,
    InvocationResult,
    ProfilingMethod,
    ProfilingResult,
)
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext


CalibrationMethod = Literal["minmax", "entropy"]
Quantization = Literal["static", "dynamic", "none"]


@dataclass(frozen=True, kw_only=True)
class ONNXRuntimeCompiledModel(CompiledWithNames):
    """An ONNX model prepared for ONNX Runtime (INT8 QDQ, dynamic INT8, or optimized FP32)."""


@dataclass(frozen=True, kw_only=True)
class ONNXRuntimeProfilingResult(ProfilingResult):
    """Profile of an ONNX model in ONNX Runtime."""


@dataclass(frozen=True, kw_only=True)
class ONNXRuntimeInvocationResult(InvocationResult):
    """Outputs of an ONNX model run in ONNX Runtime."""


class ONNXRuntimeCompiler(BuiltinComponent):
    """Prepares an ONNX model for ONNX Runtime.

    ``quantization``: ``"static"`` (QDQ INT8, calibrated with ``calibration_data`` — an
    ``.npz``, a directory of samples, or a dict of arrays; random data with a warning when
    none), ``"dynamic"`` (INT8 weights) or ``"none"`` (validate and optimize only).
    ``input_shape`` fixes dynamic dimensions; ``quantize_io`` makes the model take and return
    quantized tensors; ``exclude_nodes`` (node names of the ONNX model) stay in float in
    static quantization (ONNX Runtime's ``nodes_to_exclude``).
    """

    run_type = RunType.COMPILE

    def run(
        self,
        ctx: HubContext,
        onnx_path: Path,
        *,
        device: str | None = None,
        input_shape: InputShape | None = None,
        calibration_data: Path | dict[str, np.ndarray] | None = None,
        calibration_method: CalibrationMethod | None = None,
        per_channel: bool = False,
        quantize_io: bool = False,
        quantization: Quantization = "static",
        exclude_nodes: list[str] | None = None,
    ) -> ONNXRuntimeCompiledModel:
        """Compile ``onnx_path``; options override the constructor's."""
        raise NoProviderError


class ONNXRuntimeProfiler(BuiltinComponent):
    """Measures an ONNX model's latency in ONNX Runtime: ``burn_ins`` (or ``warmup``, the name
    the other profilers use) warm-up runs, ``runs`` timed runs, ``cold_starts`` fresh sessions;
    per-node times with ``LAYERWISE``.

    ``input_data`` (a dict of arrays, an ``.npz``, or a directory of ``.npz`` samples cycled
    over the runs) is what the model runs on; without it, random data of the model's dtypes,
    at ``input_shape`` (a shape for a one-input model, or input name → shape) for dynamic
    dimensions, else with them set to 1. The run records the shapes and dtypes it ran on.

    ``until_stable``: the timed runs come in windows (``runs`` runs, repeated until the window has
    lasted ``stable_window_s``, default 1 s) until the last three windows (medians and means) agree
    within ``stable_tolerance`` (a fraction, default 0.05), with other processes taking at most
    ``stable_max_other_share`` (default 0.25, 1: no limit) of the CPUs in each, or ``stable_max_s``
    seconds pass; the metrics ``stable_converged`` (1/0: not converging does not fail the run),
    ``stable_windows`` and ``stable_spread_pct`` record how it went.
    """

    run_type = RunType.PROFILE
    option_aliases = {"warmup": "burn_ins"}
    option_bounds = STABILITY_BOUNDS

    def run(
        self,
        ctx: HubContext,
        model: ONNXRuntimeCompiledModel,
        *,
        device: str | None = None,
        runs: int = 100,
        burn_ins: int = 10,
        warmup: int | None = None,
        cold_starts: int = 1,
        profiling_method: ProfilingMethod = ProfilingMethod.LAYERWISE,
        input_data: Path | dict[str, np.ndarray] | None = None,
        input_shape: InputShape | None = None,
        until_stable: bool = False,
        stable_tolerance: float = 0.05,
        stable_max_s: float = 60.0,
        stable_window_s: float = 1.0,
        stable_max_other_share: float = 0.25,
    ) -> ONNXRuntimeProfilingResult:
        """Profile ``model``; options override the constructor's."""
        raise NoProviderError


class ONNXRuntimeInvoker(BuiltinComponent):
    """Runs an ONNX model on input tensors and returns the outputs by name.

    With ``input_data=None`` the inputs are random (seed 0) from the model's own input
    metadata, at ``input_shape`` for dynamic dimensions (else 1), made where the model runs
    and kept with the run as its ``input_data`` artifact.
    """

    run_type = RunType.INFERENCE

    def run(
        self,
        ctx: HubContext,
        model: ONNXRuntimeCompiledModel,
        input_data: dict[str, np.ndarray] | None,
        *,
        device: str | None = None,
        use_compiled_names: bool = False,
        input_shape: InputShape | None = None,
    ) -> ONNXRuntimeInvocationResult:
        """Run ``model`` on ``input_data`` (input name → array; None: random inputs)."""
        raise NoProviderError
