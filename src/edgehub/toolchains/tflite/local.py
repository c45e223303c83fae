"""The ``local`` providers of the TFLite components: the pinned tflite image + the agent."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import (
    CompileError,
    InputDataError,
    InvokeError,
    ModelError,
    ProfileError,
    UsageError,
)
from edgehub.toolchains.agent_call import AgentResult
from edgehub.toolchains.local_session import (
    inspect_in_image,
    local_agent,
    record_agent_result,
)
from edgehub.toolchains.npz_arrays import NpzArrays
from edgehub.toolchains.remote.select import device_agent
from edgehub.toolchains.tensors import arrays_file, calibration_file
from edgehub.toolchains.tflite.benchmark_params import parse_benchmark_params
from edgehub.toolchains.tflite.components import (
    PRECISIONS,
    TFLiteCompiledModel,
    TFLiteCompiler,
    TFLiteInvocationResult,
    TFLiteInvoker,
    TFLiteProfiler,
    TFLiteProfilingResult,
)
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext

__all__ = ["inspect_model", "model_request"]

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


def _onnx_file(path: Path | str) -> Path:
    model = regular_file(path, "model")
    if _is_tflite(model):
        raise ModelError(
            f"{model.name} is a TFLite model, but TFLiteCompiler takes an ONNX model: profile "
            "or invoke it with TFLiteProfiler / TFLiteInvoker"
        )
    return model


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


def _shape(value: Any) -> Any:
    if value is None or isinstance(value, dict):
        return None if value is None else {k: [int(d) for d in v] for k, v in value.items()}
    return [int(d) for d in value]


def _log_toolchain(ctx: HubContext, result: AgentResult) -> None:
    versions = result.data.get("toolchain") or {}
    ctx.client.log_environment({k: v for k, v in versions.items() if v})


def _model_files(
    ctx: HubContext, model: TFLiteCompiledModel, path: Path
) -> tuple[dict[str, Path], dict[str, Any]]:
    """The model (and its mapping, when it has one) to send, and the request fields naming them."""
    files = {path.name: path}
    request: dict[str, Any] = {"model": f"in/{path.name}"}
    if model.mapping is not None:
        sidecar = Path(model.mapping.to_local(ctx).local())
        if sidecar.is_file():
            files[sidecar.name] = sidecar
            request["mapping"] = f"in/{sidecar.name}"
    return files, request


@TFLiteCompiler.provider(ProviderType.LOCAL)
def _compile_local(
    ctx: HubContext,
    onnx_path: Path,
    *,
    device: str | None = None,
    input_shape: Any = None,
    calibration_data: Any = None,
    quantize_io: bool = False,
    precision: str | None = None,
    per_channel: bool = True,
    exclude_nodes: list[str] | None = None,
    param_replacement: Any = None,
) -> TFLiteCompiledModel:
    model = _onnx_file(onnx_path)
    chosen = precision or ("int8" if calibration_data is not None or quantize_io else "float32")
    if chosen not in PRECISIONS:
        raise UsageError(f"precision must be one of {', '.join(PRECISIONS)}, got {chosen!r}")
    ctx.client.log_param("$runtime", RUNTIME)
    ctx.client.log_artifact(model, name="input")
    agent = local_agent(ctx, RUNTIME, device, TFLiteCompiler)
    output = f"compiled_{model.stem}.tflite"
    sidecar = f"compiled_{model.stem}.mapping.json"
    inputs = {model.name: model}
    request: dict[str, Any] = {
        "model": f"in/{model.name}",
        "output": f"out/{output}",
        "mapping": f"out/{sidecar}",
        "precision": chosen,
        "input_shape": _shape(input_shape),
        "quantize_io": bool(quantize_io),
        "per_channel": bool(per_channel),
    }
    if exclude_nodes:
        request["exclude_nodes"] = [str(name) for name in exclude_nodes]
    if param_replacement is not None:
        replacement = regular_file(
            Path(param_replacement).expanduser(), "param_replacement JSON", UsageError
        )
        inputs["param_replacement.json"] = replacement
        request["param_replacement"] = "in/param_replacement.json"
        ctx.client.log_artifact(replacement, name="param_replacement")  # kept for reruns
    calibration = calibration_file(ctx.artifact_dir, calibration_data)
    if calibration is not None:
        inputs[f"calibration{calibration.suffix}"] = calibration
        request["calibration"] = f"in/calibration{calibration.suffix}"
        ctx.client.log_artifact(calibration, name="calibration_data")  # kept for reruns
    result = agent.call("tflite.compile", request, inputs=inputs, failure=CompileError)
    record_agent_result(ctx, result, skip=frozenset({"model", "output", "mapping"}))
    _log_toolchain(ctx, result)
    ctx.client.log_artifact(result.file(output), name="path")
    ctx.client.log_artifact(result.file(sidecar), name="mapping")
    return TFLiteCompiledModel.from_current_run(ctx)


@TFLiteProfiler.provider(ProviderType.LOCAL)
def _profile_local(
    ctx: HubContext,
    model: TFLiteCompiledModel,
    *,
    device: str | None = None,
    benchmark_params: dict[str, Any] | None = None,
    runs: int = 100,
    warmup: int = 10,
    cold_starts: int = 1,
    threads: int | None = None,
    xnnpack: bool = True,
    input_data: Any = None,
    input_shape: Any = None,
    until_stable: bool = False,
    stable_tolerance: float = 0.05,
    stable_max_s: float = 60.0,
    stable_window_s: float = 1.0,
    stable_max_other_share: float = 0.25,
) -> TFLiteProfilingResult:
    settings = parse_benchmark_params(benchmark_params)
    path = _tflite_file(model, ctx, "TFLiteProfiler")
    ctx.client.log_param("$runtime", RUNTIME)
    ctx.client.log_artifact(path, name="input")
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
            "runs": int(runs),
            "warmup": int(warmup),
            "cold_starts": int(cold_starts),
            "threads": threads,
            "xnnpack": bool(xnnpack),
            "input_shape": _shape(input_shape),
            "profile_json": "out/profile.json",
        }
    )
    request.update(settings.options)
    if until_stable:
        request.update(
            until_stable=True,
            stable_tolerance=float(stable_tolerance),
            stable_max_s=float(stable_max_s),
            stable_window_s=float(stable_window_s),
            stable_max_other_share=float(stable_max_other_share),
        )
    if input_data is not None:
        files["input.npz"] = _input_file(ctx, input_data)
        request["input"] = "in/input.npz"
    agent = device_agent(ctx, RUNTIME, device, TFLiteProfiler)
    result = agent.call("tflite.profile", request, inputs=files, failure=ProfileError)
    record_agent_result(ctx, result, skip=frozenset({"model", "mapping", "profile_json"}))
    _log_toolchain(ctx, result)
    metrics = result.metrics
    ctx.client.log_metric("$latency", float(metrics["latency_median_ms"]))
    if metrics.get("peak_rss_mb") is not None:
        ctx.client.log_metric("$peak_memory_usage", float(metrics["peak_rss_mb"]))
    ctx.client.log_metric("$load_time", float(metrics["load_ms"]))
    ctx.client.log_artifact(result.file("profile.json"), name="output_file")
    return TFLiteProfilingResult.from_current_run(ctx)


def _input_file(ctx: HubContext, data: Any) -> Path:
    path = arrays_file(data, ctx.artifact_dir / "input.npz", "input data", "an .npz or a dict")
    assert path is not None
    return path


@TFLiteInvoker.provider(ProviderType.LOCAL)
def _invoke_local(
    ctx: HubContext,
    model: TFLiteCompiledModel,
    input_data: dict[str, np.ndarray],
    *,
    device: str | None = None,
    use_compiled_names: bool = False,
) -> TFLiteInvocationResult:
    from edgehub.toolchains.tensors import save_npz

    if not isinstance(input_data, dict):
        raise InputDataError(
            f"input_data must be a dict of input name -> array, got {type(input_data).__name__}"
        )
    path = _tflite_file(model, ctx, "TFLiteInvoker")
    ctx.client.log_param("$runtime", RUNTIME)
    ctx.client.log_artifact(path, name="input")
    inputs = save_npz(ctx.artifact_dir / "input.npz", input_data)
    ctx.client.log_artifact(inputs, name="input_data")
    files, request = _model_files(ctx, model, path)
    files["input.npz"] = inputs
    request.update(
        {
            "input": "in/input.npz",
            "output": "out/output.npz",
            "use_compiled_names": bool(use_compiled_names),
        }
    )
    agent = device_agent(ctx, RUNTIME, device, TFLiteInvoker)
    result = agent.call("tflite.invoke", request, inputs=files, failure=InvokeError)
    record_agent_result(ctx, result, skip=frozenset({"model", "mapping", "input", "output"}))
    _log_toolchain(ctx, result)
    local = result.file("output.npz")
    stored = ctx.client.log_artifact(local, name="output_file")
    return TFLiteInvocationResult.from_current_run(ctx, output=NpzArrays(Path(stored.file_path)))


def inspect_model(ctx: HubContext, model: Path, device: str | None = None) -> dict[str, Any]:
    """A model's inputs and outputs (name, dtype, shape) as the TFLite invoker takes them: the
    ONNX names and layout for an ONNX model or a ``.tflite`` with its mapping beside it."""
    from edgehub.toolchains.tflite.components import mapping_sidecar

    path = Path(model).expanduser()
    if not path.exists():
        raise ModelError(f"model {path} not found; check the path")
    files = {path.name: path}
    request: dict[str, Any] = {"model": f"in/{path.name}"}
    sidecar = mapping_sidecar(path)
    if path.is_file() and _is_tflite(path) and sidecar.is_file():
        files[sidecar.name] = sidecar
        request["mapping"] = f"in/{sidecar.name}"
    return inspect_in_image(ctx, RUNTIME, device, TFLiteInvoker, "tflite.inspect", request, files)


def model_request(
    ctx: HubContext, model: TFLiteCompiledModel, component: str
) -> tuple[dict[str, Path], dict[str, Any]]:
    """A ``.tflite`` model's files (with its mapping sidecar) and the request fields naming
    them, for an agent command of ``component``."""
    return _model_files(ctx, model, _tflite_file(model, ctx, component))
