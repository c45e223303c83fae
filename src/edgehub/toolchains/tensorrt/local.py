"""The ``local`` providers of the TensorRT components: the tensorrt-rtx image builds engines
with or without a GPU (int8 from ``calibration_data`` quantizes the model to QDQ in the
onnxruntime image first); profile and invoke run trtexec in the full tensorrt image on this
host's NVIDIA GPU, and without one fail before starting anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.agent.trt.engine_file import engine_problem
from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import (
    CompileError,
    InputDataError,
    InvokeError,
    ProfileError,
    ToolchainError,
    UsageError,
)
from edgehub.limits import ResultLimits
from edgehub.toolchains.agent_call import AgentCall
from edgehub.toolchains.host_gpu import require_host_gpu
from edgehub.toolchains.local_session import (
    CONTAINER_WORK,
    input_dict,
    inspect_in_image,
    local_agent,
    log_input,
    record_agent_result,
    saved_inputs,
    stage_calibration,
)
from edgehub.toolchains.options import read_options, stability_request
from edgehub.toolchains.outputs import ProfilingMethod, agent_figures, log_figures
from edgehub.toolchains.tensorrt import timing_cache, trtexec_parse
from edgehub.toolchains.tensorrt.components import (
    TensorRTCompiledModel,
    TensorRTCompiler,
    TensorRTInvocationResult,
    TensorRTInvoker,
    TensorRTProfiler,
    TensorRTProfilingResult,
)
from edgehub.toolchains.tensorrt.engine_record import engine_file, recorded_engine
from edgehub.toolchains.tensorrt.gpu import FULL_IMAGE, RTX_IMAGE, detect_gpu
from edgehub.toolchains.tensorrt.shapes import runtime_shapes, shape_options
from edgehub.user_files import regular_file

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


RUNTIME = "tensorrt"
# request keys that are container paths, not settings worth recording
_PATH_KEYS = frozenset(
    {"model", "output", "layer_info", "build_log", "timing_cache_in", "timing_cache_out"}
)


def _check_calib_path(calib_path: Any) -> None:
    if calib_path is None:
        return
    path = Path(calib_path).expanduser()
    if not path.is_file():
        raise InputDataError(f"calib_path {path} not found; give an INT8 calibration cache file")
    raise UsageError(
        "calib_path (an INT8 calibration cache) is for full TensorRT's implicit INT8 through "
        "trtexec (the trtexec provider over SSH); the local TensorRT-for-RTX builder takes int8 "
        "only from a QDQ model: pass calibration_data (or an ONNXRuntimeCompiler QDQ model)"
    )


def _quantize_first(
    ctx: HubContext, model: Path, device: str | None, data: Any, exclude: list[str]
) -> Path:
    """A QDQ copy of ``model`` made by ONNX Runtime's static quantization in its image; the
    nodes ``exclude`` names get no Q/DQ (kept in float)."""
    request: dict[str, Any] = {
        "model": f"in/{model.name}",
        "output": f"out/qdq_{model.name}",
        "mode": "quantize-static",
    }
    if exclude:
        request["exclude_nodes"] = exclude
    inputs = {model.name: model}
    stage_calibration(ctx, data, inputs, request)
    ctx.events.info("int8: quantizing to QDQ with ONNX Runtime (symmetric activations)")
    agent = local_agent(ctx, "onnxruntime", device, TensorRTCompiler)
    result = agent.call("ort.compile", request, inputs=inputs, failure=CompileError)
    qdq = result.file(f"qdq_{model.name}")
    ctx.client.log_artifact(qdq, name="qdq_model")
    return qdq


@TensorRTCompiler.provider(ProviderType.LOCAL)
def _compile_local(ctx: HubContext, onnx_path: Path, **options: Any) -> TensorRTCompiledModel:
    o = read_options(TensorRTCompiler, options)
    model = regular_file(onnx_path, "model")
    _check_calib_path(o.calib_path)
    static, shapes = shape_options(ctx, o.input_shape, o.input_shape_range, o.input_shapes)
    if o.calibration_data is not None and o.precision != "int8":
        raise UsageError("calibration_data applies to precision 'int8' only")
    exclude = [str(name) for name in o.exclude_nodes or []]
    if exclude and o.calibration_data is None:
        raise UsageError(
            "exclude_nodes keeps nodes in float while the model is quantized: give "
            "calibration_data (precision int8), or drop exclude_nodes"
        )
    log_input(ctx, RUNTIME, model)
    source = model
    if o.calibration_data is not None:
        source = _quantize_first(ctx, model, o.device, o.calibration_data, exclude)
    agent = local_agent(ctx, RTX_IMAGE, o.device, TensorRTCompiler)
    engine = f"{model.stem}.trt"
    run = ctx.client.current_run_log
    digest = run.environment.get("image_digest") if run is not None else None
    cache = timing_cache.stored(ctx.store.root, digest, o.target)
    inputs = {source.name: source}
    if cache is not None:
        inputs["timing.cache"] = cache
    request = {
        "model": f"in/{source.name}",
        "output": f"out/{engine}",
        "precision": o.precision,
        "target": o.target,
        "shapes": shapes,
        "input_shape": static,
        "workspace_mb": o.workspace_mb,
        "tensorrt_version": o.tensorrt_version,
        "layer_info": "out/layer_info.json",
        "build_log": "out/build.log",
        "timing_cache_in": "in/timing.cache" if cache is not None else None,
        "timing_cache_out": "out/timing.cache",
    }
    try:
        result = agent.call("trt.build", request, inputs=inputs, failure=CompileError)
    except (ToolchainError, UsageError):  # a failed build keeps TensorRT's log with the run
        logs = sorted(agent.local_dir.glob("*-trt_build/out/build.log"))
        if logs:
            ctx.client.log_artifact(logs[-1], name="build_log")
        raise
    record_agent_result(ctx, result, skip=_PATH_KEYS)
    ctx.client.log_param("calib_path", None)
    ctx.client.log_artifact(result.file(engine), name="path")
    ctx.client.log_artifact(result.file(f"{engine}.json"), name="engine_info")
    returned = result.files / "timing.cache"
    if returned.is_file():
        version = str(result.params.get("tensorrt_version"))
        timing_cache.keep(ctx.store.root, digest, version, o.target, returned)
    ctx.client.log_artifact(result.file("layer_info.json"), name="layer_info")
    if exclude:  # which layers the nodes kept in float became, and a warning for each problem
        from edgehub.toolchains.tensorrt.precision import float_layers

        info = json.loads(result.file("layer_info.json").read_text(encoding="utf-8"))
        found = float_layers(info.get("layers") or [], exclude)
        ctx.client.log_params({"excluded_nodes": exclude, "float_layers": found.layers})
        for problem in found.problems:
            ctx.events.warning(problem)
    ctx.client.log_artifact(result.file("build.log"), name="build_log")
    return TensorRTCompiledModel.from_current_run(ctx)


def gpu_agent(ctx: HubContext, device: str | None) -> AgentCall:
    """An agent in the full tensorrt image with the GPU passed through."""
    from edgehub import images

    image = ctx.image_tags.get(FULL_IMAGE) or images.require_image(FULL_IMAGE).tag
    runner = ctx.docker_runner(image, gpus="all")
    ctx.client.log_environment({"image": image, "runtime": RUNTIME, "gpu": detect_gpu().describe()})
    return AgentCall(
        runner, CONTAINER_WORK / ctx.artifact_dir.name, ctx.artifact_dir, device=device or "local"
    )


def _engine_agent(
    ctx: HubContext, model: TensorRTCompiledModel, device: str | None, component: str
) -> tuple[Path, AgentCall]:
    """The engine (a wrong file is the user's to fix first, before the GPU is looked for),
    recorded, and an agent on the GPU."""
    engine = engine_file(ctx, model)
    require_host_gpu(
        f"{component} runs the engine",
        "Run it on a GPU device through the 'trtexec' provider over SSH (a hub.toml device with "
        "provider 'trtexec'), which needs no GPU here, or on a host with a GPU and the full "
        "tensorrt image",
    )
    log_input(ctx, RUNTIME, engine)
    return engine, gpu_agent(ctx, device)


@TensorRTProfiler.provider(ProviderType.LOCAL)
def _profile_local(
    ctx: HubContext, model: TensorRTCompiledModel, **options: Any
) -> TensorRTProfilingResult:
    o = read_options(TensorRTProfiler, options)
    shapes = runtime_shapes(o.input_shape)
    engine, agent = _engine_agent(ctx, model, o.device, "TensorRTProfiler")
    method = ProfilingMethod(o.profiling_method)
    request: dict[str, Any] = {
        "engine": f"in/{engine.name}",
        "iterations": int(o.iterations),
        "warmup_ms": int(o.warm_up_ms),
        "method": method.value,
        "log": "out/trtexec.log",
        "times_json": "out/times.json",
        "profile_json": "out/layers.json" if method is ProfilingMethod.LAYERWISE else None,
        "shapes": shapes,
        "engine_record": recorded_engine(ctx, engine),
        **stability_request(o),
    }
    result = agent.call("trt.profile", request, inputs={engine.name: engine}, failure=ProfileError)
    record_agent_result(
        ctx,
        result,
        skip=frozenset({"engine", "log", "times_json", "profile_json", "engine_record"}),
    )
    record_profile(ctx, result.files)
    return TensorRTProfilingResult.from_current_run(ctx)


def record_profile(ctx: HubContext, files: Path) -> None:
    """Record a trtexec profile run's figures (`profile_document` of ``files``), its
    ``profile.json`` and its log on the current run."""
    document = profile_document(files)
    metrics = document["metrics"]
    log_figures(ctx, {**metrics, **agent_figures(metrics)})
    profile = files / "profile.json"
    profile.write_text(json.dumps(document, indent=1))
    ctx.client.log_artifact(profile, name="output_file")
    ctx.client.log_artifact(files / "trtexec.log", name="trtexec_log")


def _device_file(path: Path, *, tail: bool = False) -> bytes:
    """A file trtexec wrote, up to ``EDGEHUB_RESULT_MAX_BYTES`` of it: an export over that is
    refused, a log (``tail``) is read from its end, where its summary is."""
    limit = ResultLimits.from_env().max_bytes
    size = path.stat().st_size
    if size <= limit:
        return path.read_bytes()
    if not tail:
        raise ProfileError(
            f"trtexec's {path.name} is {size} bytes, over the limit of {limit}; raise "
            "EDGEHUB_RESULT_MAX_BYTES to read it"
        )
    with path.open("rb") as handle:
        handle.seek(size - limit)
        return handle.read(limit)


def profile_document(files: Path) -> dict[str, Any]:
    """Metrics and details from a trtexec profile run's log and exports in ``files``: the
    per-query samples give the statistics (type-7 percentiles, as the other profilers);
    trtexec's own summary lines are kept under ``trtexec_*``."""
    from edgehub.agent.stats import latency_stats
    from edgehub.tracking.verdict_numbers import number_problem

    log = _device_file(files / "trtexec.log", tail=True)
    summary = trtexec_parse.parse_summary(log.decode("utf-8", "replace"))
    metrics: dict[str, float] = {
        f"trtexec_{k}": v for k, v in trtexec_parse.summary_metrics(summary).items()
    }
    times = files / "times.json"
    try:
        samples = trtexec_parse.parse_times(_device_file(times)) if times.is_file() else {}
    except ValueError as error:  # text where a time should be, or no JSON
        raise ProfileError(
            f"trtexec's times export cannot be read ({error}); the measurement is invalid"
        ) from None
    for name, values in samples.items():  # no NaN, inf or negative time reaches a verdict
        problem = number_problem(values, f"{name} times", positive=name == "latency")
        if problem is not None:
            raise ProfileError(
                f"trtexec's times export has {problem}; the measurement is invalid, so its "
                "run is recorded FAILED"
            )
        stats = latency_stats([int(v * 1e6) for v in values])
        prefix = "latency" if name == "latency" else name
        for key, value in stats.items():
            if key.startswith("latency_"):
                metrics[prefix + key[len("latency") :]] = value
    if "latency_median_ms" not in metrics and "latency" in summary.statistics:
        stat = summary.statistics["latency"]
        metrics.update({"latency_median_ms": stat.median, "latency_mean_ms": stat.mean})
    if "latency_median_ms" not in metrics:
        raise ProfileError("trtexec printed no latency statistics; see its log (trtexec_log)")
    if summary.throughput_qps is not None:
        metrics["throughput_qps"] = summary.throughput_qps
    layers_file = files / "layers.json"
    layers = (
        trtexec_parse.parse_layer_profile(_device_file(layers_file))
        if layers_file.is_file()
        else []
    )
    if layers:
        metrics["num_layers"] = float(len(layers))
    return {
        "metrics": metrics,
        "samples_ms": samples,
        "layers": layers,
        "trtexec_version": summary.version,
        "trtexec_warnings": summary.warnings,
    }


@TensorRTInvoker.provider(ProviderType.LOCAL)
def _invoke_local(
    ctx: HubContext, model: TensorRTCompiledModel, input_data: Any, *, device: str | None = None
) -> TensorRTInvocationResult:
    from edgehub.toolchains.tensors import save_npz

    input_dict(input_data)
    engine, agent = _engine_agent(ctx, model, device, "TensorRTInvoker")
    files = {engine.name: engine, "input.npz": saved_inputs(ctx, input_data)}
    request = {
        "engine": f"in/{engine.name}",
        "input": "in/input.npz",
        "output_json": "out/output.json",
        "log": "out/trtexec.log",
        "engine_record": recorded_engine(ctx, engine),
    }
    result = agent.call("trt.invoke", request, inputs=files, failure=InvokeError)
    record_agent_result(ctx, result, skip=frozenset(request))
    exported = result.file("output.json").read_bytes()
    outputs = trtexec_parse.parse_exported_outputs(exported, result.data.get("output_dtypes"))
    local = save_npz(result.files / "output.npz", outputs)
    ctx.client.log_artifact(local, name="output_file")
    return TensorRTInvocationResult.from_current_run(ctx, output=outputs)


def inspect_model(ctx: HubContext, model: Path, device: str | None = None) -> dict[str, Any]:
    """An ONNX model's (or, on a GPU, an engine's) inputs and outputs, read in the
    tensorrt-rtx container."""
    path = regular_file(model, "model")
    request: dict[str, Any] = {"model": f"in/{path.name}"}
    if engine_problem(path.name) is None:
        request["engine_record"] = recorded_engine(ctx, path)
    return inspect_in_image(
        ctx, RTX_IMAGE, device, TensorRTInvoker, "trt.inspect", request, {path.name: path}
    )
