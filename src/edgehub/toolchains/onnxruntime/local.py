"""The ``local`` providers of the ONNX Runtime components: the pinned ORT image + the agent.
The same bodies are the ``ssh`` providers (a plain provider type string: the seeds fix
ProviderType's members), whose `device_agent` is then the device's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import CompileError, InvokeError, ProfileError, UsageError
from edgehub.toolchains.agent_call import AgentCall
from edgehub.toolchains.local_session import (
    device_agent,
    input_dict,
    inspect_in_image,
    log_input,
    record_agent_result,
    saved_inputs,
    stage_calibration,
    stored_outputs,
)
from edgehub.toolchains.npz_arrays import NpzArrays
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeCompiledModel,
    ONNXRuntimeCompiler,
    ONNXRuntimeInvocationResult,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
    ONNXRuntimeProfilingResult,
)
from edgehub.toolchains.options import read_options, stability_request
from edgehub.toolchains.outputs import ProfilingMethod, agent_figures, log_figures
from edgehub.toolchains.tensors import arrays_file, plain_shape
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


RUNTIME = "onnxruntime"
MODES = {"static": "quantize-static", "dynamic": "quantize-dynamic", "none": "optimize"}


@ONNXRuntimeCompiler.provider("ssh")
@ONNXRuntimeCompiler.provider(ProviderType.LOCAL)
def _compile_local(ctx: HubContext, onnx_path: Path, **options: Any) -> ONNXRuntimeCompiledModel:
    o = read_options(ONNXRuntimeCompiler, options)
    model = regular_file(onnx_path, "model")
    agent, inputs = _start(ctx, ONNXRuntimeCompiler, o.device, model)
    output = f"compiled_{model.stem}.onnx"
    request: dict[str, Any] = {
        "model": f"in/{model.name}",
        "output": f"out/{output}",
        "mode": MODES[o.quantization],
        "input_shape": plain_shape(o.input_shape),
    }
    if o.quantization == "static":
        request["calibration_method"] = o.calibration_method or "minmax"
        request["per_channel"] = bool(o.per_channel)
        request["quantize_io"] = bool(o.quantize_io)
        if o.exclude_nodes:
            request["exclude_nodes"] = [str(name) for name in o.exclude_nodes]
        stage_calibration(ctx, o.calibration_data, inputs, request)
    elif o.calibration_data is not None or o.quantize_io or o.per_channel or o.exclude_nodes:
        ctx.events.warning(
            "calibration_data, per_channel, quantize_io and exclude_nodes apply to static "
            f"quantization only; ignored with quantization={o.quantization!r}"
        )
    result = agent.call("ort.compile", request, inputs=inputs, failure=CompileError)
    record_agent_result(ctx, result)
    ctx.client.log_artifact(result.file(output), name="path")
    return ONNXRuntimeCompiledModel.from_current_run(ctx)


def _start(
    ctx: HubContext, component: type[Any], device: str | None, model: Path
) -> tuple[AgentCall, dict[str, Path]]:
    """Record the runtime and the input model; the device's agent and the files to send."""
    log_input(ctx, RUNTIME, model)
    return device_agent(ctx, RUNTIME, device, component), {model.name: model}


def _stage_input_data(
    ctx: HubContext, data: Any, inputs: dict[str, Path], request: dict[str, Any]
) -> None:
    """Stage ``input_data`` (a dict of arrays, saved as the run's ``input_data.npz``, an .npz or
    a directory of samples) for the agent (``in/input_data[.npz]``), kept with the run."""
    accepted = "an .npz, a directory of samples, or a dict of arrays"
    staged = arrays_file(data, ctx.artifact_dir / "input_data.npz", "input_data", accepted)
    if staged is None:
        return
    name = "input_data" if staged.is_dir() else f"input_data{staged.suffix}"
    inputs[name] = staged
    request["input_data"] = f"in/{name}"
    if staged.is_file():
        ctx.client.log_artifact(staged, name="input_data")
    else:
        ctx.client.log_param("input_data", str(staged))


@ONNXRuntimeProfiler.provider("ssh")
@ONNXRuntimeProfiler.provider(ProviderType.LOCAL)
def _profile_local(
    ctx: HubContext, model: ONNXRuntimeCompiledModel, **options: Any
) -> ONNXRuntimeProfilingResult:
    o = read_options(ONNXRuntimeProfiler, options)
    model_path = regular_file(model.path.to_local(ctx).local(), "model")
    method = ProfilingMethod(o.profiling_method)
    agent, inputs = _start(ctx, ONNXRuntimeProfiler, o.device, model_path)
    request: dict[str, Any] = {
        "model": f"in/{model_path.name}",
        "runs": int(o.runs),
        "warmup": int(o.burn_ins),
        "cold_starts": int(o.cold_starts),
        "method": method.value,
        "profile_json": "out/profile.json",
        "input_shape": plain_shape(o.input_shape),
        **stability_request(o),
    }
    _stage_input_data(ctx, o.input_data, inputs, request)
    result = agent.call("ort.profile", request, inputs=inputs, failure=ProfileError)
    record_agent_result(ctx, result)
    log_figures(ctx, agent_figures(result.metrics))
    ctx.client.log_artifact(result.file("profile.json"), name="output_file")
    return ONNXRuntimeProfilingResult.from_current_run(ctx)


@ONNXRuntimeInvoker.provider("ssh")
@ONNXRuntimeInvoker.provider(ProviderType.LOCAL)
def _invoke_local(
    ctx: HubContext, model: ONNXRuntimeCompiledModel, input_data: Any, **options: Any
) -> ONNXRuntimeInvocationResult:
    o = read_options(ONNXRuntimeInvoker, options)
    if input_data is not None:
        input_dict(input_data)
    model_path = regular_file(model.path.to_local(ctx).local(), "model")
    agent, files = _start(ctx, ONNXRuntimeInvoker, o.device, model_path)
    request: dict[str, Any] = {"model": f"in/{model_path.name}", "output": "out/output.npz"}
    if input_data is None:  # random inputs, made from the session's metadata where it runs
        request.update({"input_shape": plain_shape(o.input_shape), "inputs_out": "out/input.npz"})
    else:
        if o.input_shape is not None:
            raise UsageError("input_shape shapes random inputs; pass it without input_data")
        given = input_data.unread_file() if isinstance(input_data, NpzArrays) else None
        if given is not None:  # an .npz as the user gave it: passed on, and kept, as it is
            ctx.client.log_artifact(given, name="input_data", file_name="input.npz")
            files["input.npz"] = given
        else:
            files["input.npz"] = saved_inputs(ctx, input_data)
        request["input_data"] = "in/input.npz"
    result = agent.call("ort.invoke", request, inputs=files, failure=InvokeError)
    with ctx.client.batch():  # what the agent reported: one transaction
        record_agent_result(ctx, result)
        if input_data is None:
            ctx.client.log_artifact(result.file("input.npz"), name="input_data")
        output = stored_outputs(ctx, result)
    return ONNXRuntimeInvocationResult.from_current_run(ctx, output=output)


def inspect_model(ctx: HubContext, model: Path, device: str | None = None) -> dict[str, Any]:
    """A model's inputs and outputs (name, dtype, shape) read in the runtime's container."""
    path = regular_file(model, "model")
    request = {"model": f"in/{path.name}"}
    return inspect_in_image(
        ctx, RUNTIME, device, ONNXRuntimeInvoker, "ort.inspect", request, {path.name: path}
    )
