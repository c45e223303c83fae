"""The ``trtexec`` providers: NVIDIA's ``trtexec`` on a device (a Jetson, a GPU box) over SSH.

Profiles are summarised into the same statistics as the other profilers
(`local.record_profile`); an invoke's outputs come back in the engine's own dtypes where the
build's layer information names them. ``trtexec_cli_args`` add to the flags edgehub sets; a flag
set by both is an error naming both.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.core.device.configs import TrtexecConfig
from edgehub.errors import (
    CompileError,
    InputDataError,
    InvokeError,
    ModelError,
    ProfileError,
    ProviderError,
    UsageError,
)
from edgehub.toolchains.local_session import log_input
from edgehub.toolchains.options import provides, read_options
from edgehub.toolchains.outputs import ProfilingMethod
from edgehub.toolchains.remote.device_tool import DeviceTool, device_file_name, device_tool
from edgehub.toolchains.tensorrt import components as trt
from edgehub.toolchains.tensorrt import trtexec_parse
from edgehub.toolchains.tensorrt.engine_record import engine_file
from edgehub.toolchains.tensorrt.shapes import runtime_shapes, shape_options, shapes_flag
from edgehub.user_files import link_or_copy_checked, regular_file

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext


RUNTIME = "tensorrt"
TOOL = "trtexec"
# the options each provider serves (the dispatch refuses a value given for another)
_COMPILE = ("tensorrt_version", "calib_path", "precision", "input_shape", "input_shape_range",
            "input_shapes", "workspace_mb")  # fmt: skip
_PROFILE = ("profiling_method", "iterations", "warm_up_ms", "input_shape")
_TYPES = {"fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16",
          "bf16": "bfloat16", "int8": "int8", "uint8": "uint8", "int32": "int32",
          "int64": "int64", "bool": "bool"}  # fmt: skip


def merge_args(ours: list[str], theirs: tuple[str, ...] | list[str]) -> list[str]:
    """``ours`` then ``theirs``; a ``--flag`` in both is a `ProviderError` naming both."""
    mine = {_flag(word): word for word in ours if word.startswith("--")}
    for word in theirs:
        if word.startswith("--") and _flag(word) in mine:
            raise ProviderError(
                f"trtexec_cli_args' {word!r} conflicts with {mine[_flag(word)]!r}, which edgehub "
                "sets for this step; remove it from cli_args in the device's [trtexec] settings"
            )
    return [*ours, *theirs]


def _flag(word: str) -> str:
    return word.split("=", 1)[0]


def _tool(
    ctx: HubContext, device: str | None, component: type, model: Path
) -> tuple[DeviceTool, TrtexecConfig]:
    tool, config = device_tool(ctx, device, component, TOOL, TrtexecConfig)
    log_input(ctx, RUNTIME, model)
    ctx.client.log_param("trtexec_path", str(config.trtexec_path))
    ctx.client.log_param("trtexec_cli_args", list(config.trtexec_cli_args))
    return tool, config


def _shape_flags(static: Any, shapes: Any) -> list[str]:
    """``input_shape`` and ``input_shape_range`` as ``--minShapes/--optShapes/--maxShapes`` (a
    plain shape is all three); trtexec takes shapes by input name only."""
    if static is not None and not isinstance(static, dict):
        raise UsageError(
            "trtexec takes shapes by input name: give input_shape=NAME:1x3x224x224 "
            '(or JSON {"NAME": [1, 3, 224, 224]})'
        )
    if shapes is not None and set(shapes) == {"min", "opt", "max"}:
        raise UsageError(
            "trtexec takes shapes by input name: give input_shape_range="
            "NAME:MINxDIMS/OPTxDIMS/MAXxDIMS (e.g. x:1x3x32x96/1x3x48x192/1x3x64x384)"
        )
    both = sorted(set(static or {}) & set(shapes or {}))
    if both:
        raise UsageError(
            f"input_shape and input_shape_range both give {', '.join(both)}: give each input "
            "one of the two"
        )
    shapes = {**(static or {}), **(shapes or {})}
    if not shapes:
        return []
    kinds: dict[str, list[str]] = {"min": [], "opt": [], "max": []}
    for name, entry in shapes.items():
        if any(c in str(name) for c in ",:"):
            raise UsageError(f"input name {name!r} contains ',' or ':', which trtexec cannot take")
        profile = entry if isinstance(entry, dict) else {k: entry for k in kinds}
        for kind in kinds:
            if kind not in profile:
                raise UsageError(f"input_shape_range for {name!r} needs min, opt and max")
            kinds[kind].append(f"{name}:{'x'.join(str(int(d)) for d in profile[kind])}")
    return [f"--{kind}Shapes={','.join(values)}" for kind, values in kinds.items()]


def _shapes_in(args: tuple[str, ...] | list[str]) -> bool:
    """Whether the device's own trtexec arguments already give shapes."""
    flags = ("--shapes", "--minShapes", "--optShapes", "--maxShapes")
    return any(_flag(arg) in flags for arg in args)


def _named_shapes(model: Path, static: Any, ranges: Any) -> Any:
    """``input_shape`` by input name (a plain shape is the first input's, read from the model
    here), and a one-line error for a dynamic input that no shape covers (trtexec would build
    it at 1 for every unknown dim)."""
    from edgehub.toolchains.onnx_wire import read_inputs
    from edgehub.toolchains.static_model import example_shapes, shown_dims

    inputs = read_inputs(model)
    if static is not None and not isinstance(static, dict) and inputs:
        static = {inputs[0].name: static}
    given = set(static or {}) | set(ranges or {})
    for entry in inputs:
        if entry.dynamic and entry.name not in given and not (ranges and "min" in ranges):
            raise ModelError(
                f"input {entry.name!r} of {model.name} is dynamic {shown_dims(entry.dims)} and "
                "trtexec needs its shape: "
                f"give --set input_shape={example_shapes(inputs)} (or input_shape_range)"
            )
    return static


@provides(trt.TensorRTCompiler, ProviderType.TRTEXEC, *_COMPILE)
def _compile(ctx: HubContext, onnx_path: Path, **options: Any) -> trt.TensorRTCompiledModel:
    o = read_options(trt.TensorRTCompiler, options)
    model = regular_file(onnx_path, "model")
    tool, config = _tool(ctx, o.device, trt.TensorRTCompiler, model)
    name = device_file_name(model.name, "model")
    with tool.staged() as stage:
        link_or_copy_checked(model, stage / name)
        if o.calib_path is not None:
            calib = regular_file(o.calib_path, "calib_path", InputDataError)
            link_or_copy_checked(calib, stage / "calibration.cache")
        remote = tool.push(stage, "build")
    engine = f"{device_file_name(model.stem, 'model')}.trt"
    old = o.tensorrt_version is not None and _version(o.tensorrt_version) < (8, 6)
    ours = ["--buildOnly" if old else "--skipInference", f"--onnx={remote / name}",
            f"--saveEngine={remote / engine}", f"--exportLayerInfo={remote / 'layer_info.json'}",
            "--profilingVerbosity=detailed"]  # fmt: skip
    if o.precision == "fp16":
        ours.append("--fp16")
    elif o.precision == "int8":
        ours.append("--int8")
    if o.calib_path is not None:
        ours.append(f"--calib={remote / 'calibration.cache'}")
    if o.workspace_mb is not None:
        ours.append(f"--memPoolSize=workspace:{int(o.workspace_mb)}M")
    static, ranges = shape_options(ctx, o.input_shape, o.input_shape_range, o.input_shapes)
    if not _shapes_in(config.trtexec_cli_args):
        static = _named_shapes(model, static, ranges)
    ours += _shape_flags(static, ranges)
    argv = [str(config.trtexec_path), *merge_args(ours, config.trtexec_cli_args)]
    ctx.client.log_params({"precision": o.precision, "tensorrt_version": o.tensorrt_version})
    result = tool.call(argv, failure=CompileError)
    version = trtexec_parse.parse_version(result.stdout)
    if version:
        ctx.client.log_environment({"tensorrt": version})
    built = ctx.artifact_dir / "build"
    tool.fetch(remote, built)
    if not (built / engine).is_file():
        raise CompileError(f"trtexec on device {tool.device.name!r} wrote no engine ({engine})")
    (built / name).unlink(missing_ok=True)  # the model came from here; keep the run small
    ctx.client.log_artifact(built / engine, name="path")
    if (built / "layer_info.json").is_file():
        ctx.client.log_artifact(built / "layer_info.json", name="layer_info")
    ctx.client.log_artifact(ctx.artifact_dir / "trtexec.stdout.txt", name="build_log")
    return trt.TensorRTCompiledModel.from_current_run(ctx)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@provides(trt.TensorRTProfiler, ProviderType.TRTEXEC, *_PROFILE)
def _profile(
    ctx: HubContext, model: trt.TensorRTCompiledModel, **options: Any
) -> trt.TensorRTProfilingResult:
    o = read_options(trt.TensorRTProfiler, options)
    from edgehub.toolchains.tensorrt.local import record_profile

    shapes = runtime_shapes(o.input_shape)

    engine = engine_file(ctx, model)
    method = ProfilingMethod(o.profiling_method)
    tool, config = _tool(ctx, o.device, trt.TensorRTProfiler, engine)
    remote_engine = tool.push_model(engine)
    out = tool.run_dir / "profile"
    ours = [f"--loadEngine={remote_engine}", f"--iterations={int(o.iterations)}",
            f"--warmUp={int(o.warm_up_ms)}", f"--exportTimes={out / 'times.json'}"]  # fmt: skip
    if method is ProfilingMethod.LAYERWISE:
        ours += [f"--exportProfile={out / 'layers.json'}", "--separateProfileRun"]
    ours += shapes_flag(shapes)
    argv = [str(config.trtexec_path), *merge_args(ours, config.trtexec_cli_args)]
    ctx.client.log_params({"profiling_method": method.value, "iterations": int(o.iterations)})
    ctx.client.log_param("shapes", shapes)
    result = tool.call(argv, failure=ProfileError, make_dirs=[out])
    files = tool.fetch(out, ctx.artifact_dir / "profile")
    (files / "trtexec.log").write_text(result.stdout)
    record_profile(ctx, files)
    return trt.TensorRTProfilingResult.from_current_run(ctx)


def binding_dtypes(model: trt.TensorRTCompiledModel) -> dict[str, str]:
    """Output dtypes from the build's layer information (detailed verbosity names each
    tensor's ``Format/Datatype``), when the engine came from a recorded build."""
    run = model.run_log
    info = run.artifacts.get("layer_info") if run is not None else None
    try:
        layers = json.loads(Path(info.local()).read_text()) if info is not None else {}
    except (OSError, ValueError, RuntimeError):  # missing, unreadable, or on a device
        return {}
    found: dict[str, str] = {}
    for layer in layers.get("Layers", []) if isinstance(layers, dict) else []:
        for tensor in layer.get("Outputs", []) if isinstance(layer, dict) else []:
            if isinstance(tensor, dict) and "Name" in tensor:
                kind = str(tensor.get("Format/Datatype", "")).split()[-1:] or [""]
                if kind[0].lower() in _TYPES:
                    found[str(tensor["Name"])] = _TYPES[kind[0].lower()]
    return found


@trt.TensorRTInvoker.provider(ProviderType.TRTEXEC)
def _invoke(
    ctx: HubContext,
    model: trt.TensorRTCompiledModel,
    input_data: dict[str, np.ndarray],
    *,
    device: str | None = None,
) -> trt.TensorRTInvocationResult:
    import numpy as np

    from edgehub.toolchains.tensors import save_npz

    if not isinstance(input_data, dict) or not input_data:
        raise InputDataError("the trtexec invoker needs input_data, a dict of input name -> array")
    engine = engine_file(ctx, model)
    tool, config = _tool(ctx, device, trt.TensorRTInvoker, engine)
    ctx.client.log_artifact(save_npz(ctx.artifact_dir / "input.npz", input_data), "input_data")
    # the raw inputs go up, trtexec runs, its export comes back: one round trip where offered
    remote = tool.run_dir
    loads: list[str] = []
    with tool.staged() as stage:
        (stage / "inputs").mkdir()
        (stage / "outputs").mkdir()
        for index, (name, array) in enumerate(input_data.items()):
            if any(c in str(name) for c in ",:"):
                raise InputDataError(
                    f"input name {name!r} contains ',' or ':', which trtexec splits on"
                )
            np.ascontiguousarray(array).tofile(stage / "inputs" / f"input_{index}.raw")
            loads.append(f"{name}:{remote / 'inputs' / f'input_{index}.raw'}")
        remote_engine = tool.push_model(engine)
        ours = [f"--loadEngine={remote_engine}", f"--loadInputs={','.join(loads)}",
                f"--exportOutput={remote / 'outputs' / 'output.json'}", "--iterations=1",
                "--warmUp=0", "--duration=0"]  # fmt: skip
        argv = [str(config.trtexec_path), *merge_args(ours, config.trtexec_cli_args)]
        back = tool.exchange(
            stage, argv, fetch="outputs", local=ctx.artifact_dir / "outputs", failure=InvokeError
        )
    exported = back / "output.json"
    if not exported.is_file():
        raise InvokeError(f"trtexec on device {tool.device.name!r} exported no outputs")
    exported = exported.replace(ctx.artifact_dir / "output.json")
    shutil.rmtree(back, ignore_errors=True)
    dtypes = binding_dtypes(model)
    try:
        outputs = trtexec_parse.parse_exported_outputs(exported.read_bytes(), dtypes)
    except ValueError as error:
        raise InvokeError(f"cannot read trtexec's exported outputs: {error}") from None
    if not dtypes:
        ctx.client.log_param("output_dtypes", "float32 (the engine's types were not recorded)")
    local = save_npz(ctx.artifact_dir / "output.npz", outputs)
    ctx.client.log_artifact(local, name="output_file")
    ctx.client.log_artifact(exported, name="output_json")
    return trt.TensorRTInvocationResult.from_current_run(ctx, output=outputs)
