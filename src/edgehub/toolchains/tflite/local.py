"""The ``local`` providers of the TFLite components: the pinned tflite image + the agent. The
profiler's and invoker's are also their ``ssh`` providers (a plain provider type string: the
seeds fix ProviderType's members), whose `device_agent` is then the device's; compiling stays
on this host."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import CompileError, InvokeError, ModelError, ProfileError, UsageError
from edgehub.toolchains import local_session as session
from edgehub.toolchains.options import read_options, stability_request
from edgehub.toolchains.outputs import agent_figures, log_figures
from edgehub.toolchains.tensors import arrays_file, plain_shape
from edgehub.toolchains.tflite.benchmark_params import parse_benchmark_params
from edgehub.toolchains.tflite.components import (
    TFLiteCompiledModel,
    TFLiteCompiler,
    TFLiteInvocationResult,
    TFLiteInvoker,
    TFLiteProfiler,
    TFLiteProfilingResult,
)
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


RUNTIME = "tflite"
_TFLITE_MAGIC = b"TFL3"


def _is_tflite(path: Path) -> bool:
    if path.suffix.lower() == ".tflite":
        return True
    try:
        with path.open("rb") as stream:
            return stream.read(8)[4:8] == _TFLITE_MAGIC
    except OSError:
        return False


def _tflite_file(model: TFLiteCompiledModel, ctx: HubContext, component: str) -> Path:
    path = Path(model.path.to_local(ctx).local())
    if not path.is_file():
        raise ModelError(f"model {path} not found; check the path")
    if not _is_tflite(path):
        takes = (
            "an ONNX model goes to TFLiteCompiler first (or to the ONNX Runtime components)"
            if path.suffix.lower() == ".onnx"
            else "pass a .tflite file"
        )
        raise ModelError(f"{path.name} is not a TFLite model, but {component} takes one: {takes}")
    return path


def _files(path: Path, sidecar: Path | None) -> tuple[dict[str, Path], dict[str, Any]]:
    """The model (and its mapping ``sidecar``, where that is a file) to send, and the request
    fields naming them."""
    files = {path.name: path}
    request: dict[str, Any] = {"model": f"in/{path.name}"}
    if sidecar is not None and sidecar.is_file():
        files[sidecar.name] = sidecar
        request["mapping"] = f"in/{sidecar.name}"
    return files, request


def _model_files(
    ctx: HubContext, model: TFLiteCompiledModel, path: Path
) -> tuple[dict[str, Path], dict[str, Any]]:
    mapping = model.mapping
    return _files(path, Path(mapping.to_local(ctx).local()) if mapping is not None else None)


@TFLiteCompiler.provider(ProviderType.LOCAL)
def _compile_local(ctx: HubContext, onnx_path: Path, **options: Any) -> TFLiteCompiledModel:
    o = read_options(TFLiteCompiler, options)
    model = regular_file(onnx_path, "model")
    if _is_tflite(model):
        raise ModelError(
            f"{model.name} is a TFLite model, but TFLiteCompiler takes an ONNX model: profile "
            "or invoke it with TFLiteProfiler / TFLiteInvoker"
        )
    integer = o.calibration_data is not None or o.quantize_io
    chosen = o.precision or ("int8" if integer else "float32")
    session.log_input(ctx, RUNTIME, model)
    agent = session.local_agent(ctx, RUNTIME, o.device, TFLiteCompiler)
    output = f"compiled_{model.stem}.tflite"
    sidecar = f"compiled_{model.stem}.mapping.json"
    inputs = {model.name: model}
    request: dict[str, Any] = {
        "model": f"in/{model.name}",
        "output": f"out/{output}",
        "mapping": f"out/{sidecar}",
        "precision": chosen,
        "input_shape": plain_shape(o.input_shape),
        "quantize_io": bool(o.quantize_io),
        "per_channel": bool(o.per_channel),
    }
    if o.exclude_nodes:
        request["exclude_nodes"] = [str(name) for name in o.exclude_nodes]
    if o.param_replacement is not None:
        replacement = regular_file(
            Path(o.param_replacement).expanduser(), "param_replacement JSON", UsageError
        )
        inputs["param_replacement.json"] = replacement
        request["param_replacement"] = "in/param_replacement.json"
        ctx.client.log_artifact(replacement, name="param_replacement")  # kept for reruns
    session.stage_calibration(ctx, o.calibration_data, inputs, request)
    result = agent.call("tflite.compile", request, inputs=inputs, failure=CompileError)
    session.record_agent_result(ctx, result, skip=frozenset({"model", "output", "mapping"}))
    ctx.client.log_artifact(result.file(output), name="path")
    ctx.client.log_artifact(result.file(sidecar), name="mapping")
    return TFLiteCompiledModel.from_current_run(ctx)


@TFLiteProfiler.provider("ssh")
@TFLiteProfiler.provider(ProviderType.LOCAL)
def _profile_local(
    ctx: HubContext, model: TFLiteCompiledModel, **options: Any
) -> TFLiteProfilingResult:
    o = read_options(TFLiteProfiler, options)
    settings = parse_benchmark_params(o.benchmark_params)
    path = _tflite_file(model, ctx, "TFLiteProfiler")
    session.log_input(ctx, RUNTIME, path)
    for key, value in settings.params.items():
        ctx.client.log_param(f"benchmark.{key}", value)
    if settings.ignored:
        ctx.events.warning(
            f"benchmark_params {', '.join(settings.ignored)} do not apply to the local LiteRT "
            "interpreter; recorded, not used"
        )
    files, request = _model_files(ctx, model, path)
    request.update(
        {
            "runs": int(o.runs),
            "warmup": int(o.warmup),
            "cold_starts": int(o.cold_starts),
            "threads": o.threads,
            "xnnpack": bool(o.xnnpack),
            "input_shape": plain_shape(o.input_shape),
            "profile_json": "out/profile.json",
        }
    )
    request.update(settings.options)
    request.update(stability_request(o))
    given = arrays_file(
        o.input_data, ctx.artifact_dir / "input.npz", "input data", "an .npz or a dict"
    )
    if given is not None:
        files["input.npz"] = given
        request["input"] = "in/input.npz"
    agent = session.device_agent(ctx, RUNTIME, o.device, TFLiteProfiler)
    result = agent.call("tflite.profile", request, inputs=files, failure=ProfileError)
    session.record_agent_result(ctx, result, skip=frozenset({"model", "mapping", "profile_json"}))
    log_figures(ctx, agent_figures(result.metrics, load="load_ms"))
    ctx.client.log_artifact(result.file("profile.json"), name="output_file")
    return TFLiteProfilingResult.from_current_run(ctx)


@TFLiteInvoker.provider("ssh")
@TFLiteInvoker.provider(ProviderType.LOCAL)
def _invoke_local(
    ctx: HubContext, model: TFLiteCompiledModel, input_data: Any, **options: Any
) -> TFLiteInvocationResult:
    o = read_options(TFLiteInvoker, options)
    session.input_dict(input_data)
    path = _tflite_file(model, ctx, "TFLiteInvoker")
    session.log_input(ctx, RUNTIME, path)
    inputs = session.saved_inputs(ctx, input_data)
    files, request = _model_files(ctx, model, path)
    files["input.npz"] = inputs
    request.update(
        {
            "input": "in/input.npz",
            "output": "out/output.npz",
            "use_compiled_names": bool(o.use_compiled_names),
        }
    )
    agent = session.device_agent(ctx, RUNTIME, o.device, TFLiteInvoker)
    result = agent.call("tflite.invoke", request, inputs=files, failure=InvokeError)
    session.record_agent_result(
        ctx, result, skip=frozenset({"model", "mapping", "input", "output"})
    )
    return TFLiteInvocationResult.from_current_run(ctx, output=session.stored_outputs(ctx, result))


def inspect_model(ctx: HubContext, model: Path, device: str | None = None) -> dict[str, Any]:
    """A model's inputs and outputs (name, dtype, shape) as the TFLite invoker takes them: the
    ONNX names and layout for an ONNX model or a ``.tflite`` with its mapping beside it."""
    from edgehub.toolchains.tflite.components import mapping_sidecar

    path = Path(model).expanduser()
    if not path.exists():
        raise ModelError(f"model {path} not found; check the path")
    tflite = path.is_file() and _is_tflite(path)
    files, request = _files(path, mapping_sidecar(path) if tflite else None)
    return session.inspect_in_image(
        ctx, RUNTIME, device, TFLiteInvoker, "tflite.inspect", request, files
    )


def model_request(
    ctx: HubContext, model: TFLiteCompiledModel, component: str
) -> tuple[dict[str, Path], dict[str, Any]]:
    """A ``.tflite`` model's files (with its mapping sidecar) and the request fields naming
    them, for an agent command of ``component``."""
    return _model_files(ctx, model, _tflite_file(model, ctx, component))
