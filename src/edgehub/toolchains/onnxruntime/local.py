"""The ``local`` providers of the ONNX Runtime components: the pinned ORT image + the agent."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import (
    CompileError,
    InputDataError,
    InvokeError,
    ProfileError,
    UsageError,
)
from edgehub.toolchains.local_session import inspect_in_image, record_agent_result
from edgehub.toolchains.npz_arrays import NpzArrays
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeCompiledModel,
    ONNXRuntimeCompiler,
    ONNXRuntimeInvocationResult,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
    ONNXRuntimeProfilingResult,
)
from edgehub.toolchains.outputs import ProfilingMethod
from edgehub.toolchains.remote.select import device_agent
from edgehub.toolchains.tensors import arrays_file
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext

__all__ = ["inspect_model"]

RUNTIME = "onnxruntime"
MODES = {"static": "quantize-static", "dynamic": "quantize-dynamic", "none": "optimize"}


def _model_file(path: Path | str) -> Path:
    return regular_file(path, "model")


def _shape(value: Any) -> Any:
    if value is None or isinstance(value, dict):
        return None if value is None else {k: list(v) for k, v in value.items()}
    return [int(d) for d in value]


@ONNXRuntimeCompiler.provider(ProviderType.LOCAL)
def _compile_local(
    ctx: HubContext,
    onnx_path: Path,
    *,
    device: str | None = None,
    input_shape: Any = None,
    calibration_data: Any = None,
    calibration_method: str | None = None,
    per_channel: bool = False,
    quantize_io: bool = False,
    quantization: str = "static",
    exclude_nodes: list[str] | None = None,
) -> ONNXRuntimeCompiledModel:
    model = _model_file(onnx_path)
    if quantization not in MODES:
        raise UsageError(f"quantization must be one of {', '.join(MODES)}, got {quantization!r}")
    ctx.client.log_param("$runtime", RUNTIME)
    ctx.client.log_artifact(model, name="input")
    agent = device_agent(ctx, RUNTIME, device, ONNXRuntimeCompiler)
    output = f"compiled_{model.stem}.onnx"
    inputs = {model.name: model}
    request: dict[str, Any] = {
        "model": f"in/{model.name}",
        "output": f"out/{output}",
        "mode": MODES[quantization],
        "input_shape": _shape(input_shape),
    }
    if quantization == "static":
        request["calibration_method"] = calibration_method or "minmax"
        request["per_channel"] = bool(per_channel)
        request["quantize_io"] = bool(quantize_io)
        if exclude_nodes:
            request["exclude_nodes"] = [str(name) for name in exclude_nodes]
        calibration = _data_file(ctx, calibration_data, "calibration")
        if calibration is not None:
            inputs[f"calibration{calibration.suffix}"] = calibration
            request["calibration"] = f"in/calibration{calibration.suffix}"
            ctx.client.log_artifact(calibration, name="calibration_data")  # kept for reruns
    elif calibration_data is not None or quantize_io or per_channel or exclude_nodes:
        ctx.events.warning(
            f"calibration_data, per_channel, quantize_io and exclude_nodes apply to static "
            f"quantization "
            f"only; ignored with quantization={quantization!r}"
        )
    result = agent.call("ort.compile", request, inputs=inputs, failure=CompileError)
    record_agent_result(ctx, result)
    ctx.client.log_artifact(result.file(output), name="path")
    return ONNXRuntimeCompiledModel.from_current_run(ctx)


def _data_file(ctx: HubContext, data: Any, what: str) -> Path | None:
    """``data`` (a dict of arrays, an .npz or a directory of samples) as a file or directory
    to stage; a dict is saved as ``<what>.npz`` in the run's directory."""
    accepted = "an .npz, a directory of samples, or a dict of arrays"
    return arrays_file(data, ctx.artifact_dir / f"{what}.npz", what, accepted)


def _stage_input_data(
    ctx: HubContext, data: Any, inputs: dict[str, Path], request: dict[str, Any]
) -> None:
    """Stage ``input_data`` for the agent (``in/input_data[.npz]``), kept with the run."""
    staged = _data_file(ctx, data, "input_data")
    if staged is None:
        return
    name = "input_data" if staged.is_dir() else f"input_data{staged.suffix}"
    inputs[name] = staged
    request["input_data"] = f"in/{name}"
    if staged.is_file():
        ctx.client.log_artifact(staged, name="input_data")
    else:
        ctx.client.log_param("input_data", str(staged))


@ONNXRuntimeProfiler.provider(ProviderType.LOCAL)
def _profile_local(
    ctx: HubContext,
    model: ONNXRuntimeCompiledModel,
    *,
    device: str | None = None,
    runs: int = 100,
    burn_ins: int = 10,
    cold_starts: int = 1,
    profiling_method: ProfilingMethod = ProfilingMethod.LAYERWISE,
    input_data: Any = None,
    input_shape: Any = None,
    until_stable: bool = False,
    stable_tolerance: float = 0.05,
    stable_max_s: float = 60.0,
    stable_window_s: float = 1.0,
    stable_max_other_share: float = 0.25,
) -> ONNXRuntimeProfilingResult:
    model_path = _model_file(model.path.to_local(ctx).local())
    method = ProfilingMethod(profiling_method)
    ctx.client.log_param("$runtime", RUNTIME)
    ctx.client.log_artifact(model_path, name="input")
    agent = device_agent(ctx, RUNTIME, device, ONNXRuntimeProfiler)
    request: dict[str, Any] = {
        "model": f"in/{model_path.name}",
        "runs": int(runs),
        "warmup": int(burn_ins),
        "cold_starts": int(cold_starts),
        "method": method.value,
        "profile_json": "out/profile.json",
        "input_shape": _shape(input_shape),
    }
    if until_stable:
        request.update(
            until_stable=True,
            stable_tolerance=float(stable_tolerance),
            stable_max_s=float(stable_max_s),
            stable_window_s=float(stable_window_s),
            stable_max_other_share=float(stable_max_other_share),
        )
    inputs = {model_path.name: model_path}
    _stage_input_data(ctx, input_data, inputs, request)
    result = agent.call("ort.profile", request, inputs=inputs, failure=ProfileError)
    record_agent_result(ctx, result)
    metrics = result.metrics
    ctx.client.log_metric("$latency", float(metrics["latency_median_ms"]))
    if "peak_rss_mb" in metrics:
        ctx.client.log_metric("$peak_memory_usage", float(metrics["peak_rss_mb"]))
    if "session_create_ms" in metrics:
        ctx.client.log_metric("$load_time", float(metrics["session_create_ms"]))
    if "fps" not in metrics:
        ctx.client.log_metric("fps", 1000.0 / float(metrics["latency_mean_ms"]))
    ctx.client.log_artifact(result.file("profile.json"), name="output_file")
    return ONNXRuntimeProfilingResult.from_current_run(ctx)


@ONNXRuntimeInvoker.provider(ProviderType.LOCAL)
def _invoke_local(
    ctx: HubContext,
    model: ONNXRuntimeCompiledModel,
    input_data: dict[str, np.ndarray] | None,
    *,
    device: str | None = None,
    use_compiled_names: bool = False,
    input_shape: Any = None,
) -> ONNXRuntimeInvocationResult:
    from edgehub.toolchains.tensors import save_npz

    if input_data is not None and not isinstance(input_data, dict):
        raise InputDataError(
            f"input_data must be a dict of input name -> array, got {type(input_data).__name__}"
        )
    model_path = _model_file(model.path.to_local(ctx).local())
    ctx.client.log_param("$runtime", RUNTIME)
    ctx.client.log_artifact(model_path, name="input")
    agent = device_agent(ctx, RUNTIME, device, ONNXRuntimeInvoker)
    request: dict[str, Any] = {"model": f"in/{model_path.name}", "output": "out/output.npz"}
    files = {model_path.name: model_path}
    if input_data is None:  # random inputs, made from the session's metadata where it runs
        request.update({"input_shape": _shape(input_shape), "inputs_out": "out/input.npz"})
    else:
        if input_shape is not None:
            raise UsageError("input_shape shapes random inputs; pass it without input_data")
        given = input_data.unread_file() if isinstance(input_data, NpzArrays) else None
        if given is not None:  # an .npz as the user gave it: passed on, and kept, as it is
            ctx.client.log_artifact(given, name="input_data", file_name="input.npz")
            files["input.npz"] = given
        else:
            inputs = save_npz(ctx.artifact_dir / "input.npz", input_data)
            ctx.client.log_artifact(inputs, name="input_data")
            files["input.npz"] = inputs
        request["input_data"] = "in/input.npz"
    result = agent.call("ort.invoke", request, inputs=files, failure=InvokeError)
    record_agent_result(ctx, result)
    if input_data is None:
        ctx.client.log_artifact(result.file("input.npz"), name="input_data")
    local = result.file("output.npz")
    stored = ctx.client.log_artifact(local, name="output_file")
    return ONNXRuntimeInvocationResult.from_current_run(
        ctx, output=NpzArrays(Path(stored.file_path))
    )


def inspect_model(ctx: HubContext, model: Path, device: str | None = None) -> dict[str, Any]:
    """A model's inputs and outputs (name, dtype, shape) read in the runtime's container."""
    path = _model_file(model)
    request = {"model": f"in/{path.name}"}
    return inspect_in_image(
        ctx, RUNTIME, device, ONNXRuntimeInvoker, "ort.inspect", request, {path.name: path}
    )
