"""TFLite / LiteRT components: ONNX → ``.tflite`` (onnx2tf), profile and invoke in LiteRT."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from edgehub.core.component.base import NoProviderError
from edgehub.core.component.outputs import CompiledModel
from edgehub.core.values.shapes import InputShape
from edgehub.toolchains.options import STABILITY_BOUNDS, BuiltinComponent
from edgehub.toolchains.outputs import CompiledWithNames, InvocationResult, ProfilingResult
from edgehub.tracking.run_log import LoggedArtifact, LoggedParam, RunLog
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext


Precision = Literal["float32", "float16", "dynamic_int8", "int8", "int16x8"]
SIDECAR_SUFFIX = ".mapping.json"
T = TypeVar("T", bound="TFLiteCompiledModel")


def mapping_sidecar(model: Path) -> Path:
    """``dir/compiled_m.tflite`` -> ``dir/compiled_m.mapping.json`` (written by the compiler)."""
    return model.with_name(model.stem + SIDECAR_SUFFIX)


@dataclass(frozen=True, kw_only=True)
class TFLiteCompiledModel(CompiledWithNames):
    """A ``.tflite`` model, usually converted from ONNX.

    ``mapping`` is the JSON sidecar recording, per input and output, the ONNX name, the TFLite
    name, both shapes and the axis permutation (NCHW -> NHWC); ``input_name_mapping`` and
    ``output_name_mapping`` (ONNX name -> TFLite name) are read from it, and `io_mapping` gives
    it whole. A ``.tflite`` that edgehub did not produce has no mapping: it is then run with
    its own names and layout.
    """

    mapping: LoggedArtifact | None = None
    precision: LoggedParam | None = None

    @classmethod
    def from_run_log(cls: type[T], run_log: RunLog, **extra: Any) -> T:
        return super().from_run_log(run_log, **extra)._with_names()

    @classmethod
    def from_path(cls: type[T], path: Path | PurePosixPath | str, **extra: Any) -> T:
        """Wrap a ``.tflite`` file; its ``<stem>.mapping.json`` beside it is picked up."""
        model = super().from_path(path, **extra)
        target = model.path.file_path
        if isinstance(target, Path) and "mapping" not in extra:
            sidecar = mapping_sidecar(target)
            if sidecar.is_file():  # wrapped as a model file is, named as the compiler logs it
                artifact = CompiledModel.from_path(sidecar).path
                mapping = dataclasses.replace(artifact, name="$mapping")
                model = dataclasses.replace(model, mapping=mapping)
        return model._with_names()

    @property
    def io_mapping(self) -> dict[str, Any] | None:
        """The sidecar's content, or None for a model without one (or a remote one)."""
        if self.mapping is None or not isinstance(self.mapping.file_path, Path):
            return None
        try:
            data = json.loads(self.mapping.file_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    @property
    def signature(self) -> dict[str, list[dict[str, Any]]] | None:
        """``{"inputs": [{name, dtype, shape}], "outputs": [...]}`` in the ONNX names and layout
        the invoker takes by default, from the mapping (None without one)."""
        mapping = self.io_mapping
        if mapping is None:
            return None
        return {
            side: [
                {"name": t["onnx_name"], "dtype": t["onnx_dtype"], "shape": t["onnx_shape"]}
                for t in mapping.get(side, [])
            ]
            for side in ("inputs", "outputs")
        }

    def _with_names(self: T) -> T:
        mapping = self.io_mapping
        if mapping is None or self.input_name_mapping is not None:
            return self

        def names(side: str) -> dict[str, str]:
            return {str(t["onnx_name"]): str(t["tflite_name"]) for t in mapping.get(side, [])}

        return dataclasses.replace(
            self, input_name_mapping=names("inputs"), output_name_mapping=names("outputs")
        )


@dataclass(frozen=True, kw_only=True)
class TFLiteProfilingResult(ProfilingResult):
    """Profile of a ``.tflite`` model in the LiteRT interpreter."""


@dataclass(frozen=True, kw_only=True)
class TFLiteInvocationResult(InvocationResult):
    """Outputs of a ``.tflite`` model (by ONNX name and layout unless compiled names)."""


class TFLiteCompiler(BuiltinComponent):
    """Converts an ONNX model to TFLite / LiteRT.

    ``precision``: ``float32``, ``float16`` (float16 weights), ``dynamic_int8`` (int8 weights,
    float activations), ``int8`` (int8 weights and activations, calibrated) or ``int16x8``
    (int8 weights, int16 activations); by default ``int8`` when ``calibration_data`` or
    ``quantize_io`` is given, else ``float32``. ``calibration_data`` (an ``.npz`` keyed by input
    name with a leading samples axis, a directory of samples, or a dict of arrays) calibrates
    the integer precisions (random data, with a warning, when absent); ``quantize_io`` makes
    them take and return integer tensors. ``input_shape`` fixes dynamic input dimensions.
    ``exclude_nodes`` (ONNX node names; ``int8`` with float inputs and outputs) stay in float:
    their TFLite operators are left out of quantization (TensorFlow's selective quantization).
    ``param_replacement`` (a JSON file in onnx2tf's parameter replacement format) is passed to
    onnx2tf: its remedy where it converts a node with the wrong layout.
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
        quantize_io: bool = False,
        precision: Precision | None = None,
        per_channel: bool = True,
        exclude_nodes: list[str] | None = None,
        param_replacement: Path | None = None,
    ) -> TFLiteCompiledModel:
        """Convert ``onnx_path``; options override the constructor's."""
        raise NoProviderError


class TFLiteProfiler(BuiltinComponent):
    """Measures a ``.tflite`` model's latency in the LiteRT interpreter.

    ``warmup`` (or ``burn_ins``, ONNX Runtime's name) untimed runs, then ``runs`` timed ones,
    ``cold_starts`` fresh interpreters; ``threads`` (None: LiteRT's default), ``xnnpack`` (the
    default CPU delegate, or the builtin kernels). ``benchmark_params`` takes TFLite
    benchmark_model's documented parameters (``num_threads``, ``num_runs``, ``warmup_runs``,
    ``use_xnnpack``, ``enable_op_profiling``, ``max_secs``, ``run_delay``, ...); those entries take
    precedence over the options, the others are recorded and reported as not applicable, and unknown
    keys are an error. ``input_data`` (arrays by input name, or an ``.npz``) replaces the random
    inputs; ``input_shape`` sets the random inputs' shapes for dynamic dimensions.
    ``until_stable`` and its ``stable_*`` settings: as `ONNXRuntimeProfiler`'s.
    """

    run_type = RunType.PROFILE
    option_aliases = {"burn_ins": "warmup"}
    option_bounds = STABILITY_BOUNDS

    def run(
        self,
        ctx: HubContext,
        model: TFLiteCompiledModel,
        *,
        device: str | None = None,
        benchmark_params: dict[str, Any] | None = None,
        runs: int = 100,
        warmup: int = 10,
        burn_ins: int | None = None,
        cold_starts: int = 1,
        threads: int | None = None,
        xnnpack: bool = True,
        input_data: dict[str, np.ndarray] | Path | None = None,
        input_shape: InputShape | None = None,
        until_stable: bool = False,
        stable_tolerance: float = 0.05,
        stable_max_s: float = 60.0,
        stable_window_s: float = 1.0,
        stable_max_other_share: float = 0.25,
    ) -> TFLiteProfilingResult:
        """Profile ``model``; options override the constructor's."""
        raise NoProviderError


class TFLiteInvoker(BuiltinComponent):
    """Runs a ``.tflite`` model on input tensors.

    Inputs are keyed by the ONNX names in the ONNX layout, and outputs come back the same way
    (through the model's mapping; int8 tensors are quantized and dequantized at the edges), unless
    ``use_compiled_names``: then the TFLite names, layout and dtypes are used as they are.
    """

    run_type = RunType.INFERENCE

    def run(
        self,
        ctx: HubContext,
        model: TFLiteCompiledModel,
        input_data: dict[str, np.ndarray],
        *,
        device: str | None = None,
        use_compiled_names: bool = False,
    ) -> TFLiteInvocationResult:
        """Run ``model`` on ``input_data`` (input name → array)."""
        raise NoProviderError
