"""The ``embedl_onnxruntime`` providers: the published ``embedl-onnxruntime`` CLI on a device.

Each call is at most one upload, one remote command and one download (an invoke, where the
runner offers `~edgehub.runners.protocol.SupportsExchange`, all three in one round trip): no
version probe, no ``mkdir`` or ``cp`` of its own (results are fetched where the CLI wrote
them), and a model already sent in this context is not sent again. Settings
come from `EmbedlONNXRuntimeConfig` (the device's, or a per-component override), whose
``cli_args`` go after ours, each one a separate quoted word.

What the CLI (2026.2.0) gives is what is reported: the latency is its two-decimal mean of
Python-timed ``session.run`` calls on zero-filled inputs (its ``onnxruntime`` profiling fails
on current ONNX Runtime), and inference takes the inputs given (no random inputs).

The CLI takes static shapes only: a model with dynamic input dims is profiled and run as a copy
fixed to ``input_shape`` (or the shapes of the inputs given), see
:mod:`edgehub.toolchains.static_model`.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.core.device.configs import EmbedlONNXRuntimeConfig
from edgehub.errors import CompileError, InputDataError, InvokeError, ModelError, ProfileError
from edgehub.toolchains.local_session import log_input
from edgehub.toolchains.onnxruntime import components as ort
from edgehub.toolchains.outputs import ProfilingMethod, log_figures
from edgehub.toolchains.remote.device_tool import DeviceTool, device_file_name, device_tool
from edgehub.toolchains.static_model import static_model
from edgehub.user_files import link_or_copy_checked

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext


RUNTIME = "onnxruntime"
TOOL = "embedl_onnxruntime"
CLI = "embedl-onnxruntime"
_SAVED = re.compile(r"Quantized model was saved to (?P<path>.+)\.\s*$", re.MULTILINE)
_AVERAGE = re.compile(r"Average inference time:\s+(?P<ms>[0-9.]+)\s*ms")


def _tool(
    ctx: HubContext, device: str | None, component: type, model: Path
) -> tuple[DeviceTool, EmbedlONNXRuntimeConfig]:
    tool, config = device_tool(ctx, device, component, TOOL, EmbedlONNXRuntimeConfig)
    log_input(ctx, RUNTIME, model)
    ctx.client.log_params(  # one transaction
        {
            "embedl_onnxruntime_path": str(config.embedl_onnxruntime_path),
            "cli_args": list(config.cli_args),
        }
    )
    return tool, config


def _model_file(path: Path | str) -> Path:
    model = Path(path).expanduser()
    if not model.is_file():
        raise ModelError(
            f"model {model} not found (embedl-onnxruntime takes one .onnx file); check the path"
        )
    return model


@ort.ONNXRuntimeCompiler.provider(ProviderType.EMBEDL_ONNXRUNTIME)
def _compile(
    ctx: HubContext,
    onnx_path: Path,
    *,
    device: str | None = None,
    calibration_data: Any = None,
    calibration_method: str | None = None,
    per_channel: bool = False,
    input_shape: Any = None,
) -> ort.ONNXRuntimeCompiledModel:
    model = _model_file(onnx_path)
    tool, config = _tool(ctx, device, ort.ONNXRuntimeCompiler, model)
    if input_shape is not None:  # quantize-static takes dynamic dims; fixed where asked
        model = static_model(ctx, model, input_shape, tool=CLI)
    # model and calibration samples go up together, in one transfer
    if calibration_method not in (None, "minmax", "entropy"):
        raise InputDataError(
            f"calibration_method must be minmax or entropy, got {calibration_method!r}"
        )
    name = device_file_name(model.name, "model")
    with tool.staged() as stage:
        link_or_copy_checked(model, stage / name)
        samples = _calibration_samples(calibration_data, stage / "calibration_data")
        method = (calibration_method or "minmax") if samples else "random"
        if not samples:
            ctx.events.warning(
                "no calibration_data: embedl-onnxruntime calibrates with one all-ones sample "
                "(--calib-method random); pass calibration_data for a usable INT8 model"
            )
        remote = tool.push(stage, "compile")
    argv = [str(config.embedl_onnxruntime_path), "quantize-static",
            "--model", str(remote / name), "--calib-method", method]  # fmt: skip
    if samples:
        argv += ["--calib-dir", str(remote / "calibration_data")]
    if per_channel:
        argv.append("--per-channel")
    argv += list(config.cli_args)
    ctx.client.log_params({"calib_method": method, "per_channel": bool(per_channel)})
    result = tool.call(argv, failure=CompileError)
    found = _SAVED.search(result.stdout)
    if found is None:
        raise CompileError(
            f"embedl-onnxruntime quantize-static on device {tool.device.name!r} did not say "
            "where it saved the model ('Quantized model was saved to ...' missing from its output)"
        )
    local = tool.fetch(
        PurePosixPath(found["path"].strip()), ctx.artifact_dir / f"compiled_{model.stem}.onnx"
    )
    ctx.client.log_artifact(local, name="path")
    return ort.ONNXRuntimeCompiledModel.from_current_run(ctx)


def _calibration_samples(data: Any, directory: Path) -> int:
    """Write ``data`` as the CLI's calibration directory (one ``.npy`` per sample: an array for
    a one-input model, a dict for several); returns the sample count (0 for none).

    ``data``: a dict of input name -> array (leading axis = samples, each kept with a batch
    axis of 1) or list of arrays, an ``.npz`` of the same, or a directory of ``.npy`` samples.
    """
    import numpy as np

    from edgehub.toolchains.tensors import load_npz

    if data is None:
        return 0
    if not isinstance(data, dict):
        path = Path(data).expanduser()
        if path.is_dir():
            files = sorted(path.glob("*.npy"))
            if not files:
                raise InputDataError(f"calibration directory {path} holds no .npy samples")
            directory.mkdir()
            for file in files:
                link_or_copy_checked(file, directory / file.name)
            return len(files)
        if path.suffix != ".npz" or not path.is_file():
            raise InputDataError(
                f"calibration data {path} is not an .npz or a directory of .npy samples"
            )
        data = load_npz(path)
    per_input: dict[str, list[Any]] = {}
    for key, value in data.items():
        if isinstance(value, (list, tuple)):
            per_input[str(key)] = [np.asarray(item) for item in value]
        else:
            array = np.asarray(value)
            per_input[str(key)] = [array[i : i + 1] for i in range(array.shape[0])]
    counts = {len(samples) for samples in per_input.values()}
    if len(counts) != 1 or 0 in counts:
        raise InputDataError(
            "calibration_data needs the same, non-zero number of samples for every input "
            f"(got {', '.join(f'{k}: {len(v)}' for k, v in per_input.items())})"
        )
    directory.mkdir()
    count = counts.pop()
    for index in range(count):
        sample = {key: samples[index] for key, samples in per_input.items()}
        if len(sample) == 1:
            np.save(directory / f"{index:05d}.npy", next(iter(sample.values())))
        else:  # the CLI reads several inputs as a pickled dict per sample
            np.save(directory / f"{index:05d}.npy", np.array(sample, dtype=object))
    return count


@ort.ONNXRuntimeProfiler.provider(ProviderType.EMBEDL_ONNXRUNTIME)
def _profile(
    ctx: HubContext,
    model: ort.ONNXRuntimeCompiledModel,
    *,
    device: str | None = None,
    runs: int = 100,
    burn_ins: int = 10,
    cold_starts: int = 1,
    profiling_method: ProfilingMethod = ProfilingMethod.LAYERWISE,
    input_shape: Any = None,
) -> ort.ONNXRuntimeProfilingResult:
    model_path = _model_file(model.path.to_local(ctx).local())
    tool, config = _tool(ctx, device, ort.ONNXRuntimeProfiler, model_path)
    model_path = static_model(ctx, model_path, input_shape, tool=CLI)
    if ProfilingMethod(profiling_method) is not ProfilingMethod.PYTHON:
        ctx.client.log_param("profiling_method_requested", ProfilingMethod(profiling_method).value)
    ctx.client.log_params(
        {"runs": int(runs), "burn_ins": int(burn_ins), "cold_starts": int(cold_starts),
         "profiling_method": "python"}
    )  # fmt: skip
    remote = tool.push_model(model_path)
    argv = [str(config.embedl_onnxruntime_path), "measure-latency", "--model", str(remote),
            "--runs", str(int(runs)), "--burn-ins", str(int(burn_ins)),
            "--cold-starts", str(int(cold_starts)), "--profiling-method", "python",
            *config.cli_args]  # fmt: skip
    result = tool.call(argv, failure=ProfileError)
    found = _AVERAGE.search(result.stdout)
    if found is None:
        raise ProfileError(
            f"embedl-onnxruntime measure-latency on device {tool.device.name!r} printed no "
            "'Average inference time: X ms' line"
        )
    mean_ms = float(found["ms"])
    fps = 1000.0 / mean_ms if mean_ms > 0 else 0.0
    log_figures(ctx, {"latency": mean_ms, "latency_mean_ms": mean_ms, "fps": fps})
    ctx.client.log_param("latency_resolution_ms", 0.01)
    return ort.ONNXRuntimeProfilingResult.from_current_run(ctx)


@ort.ONNXRuntimeInvoker.provider(ProviderType.EMBEDL_ONNXRUNTIME)
def _invoke(
    ctx: HubContext,
    model: ort.ONNXRuntimeCompiledModel,
    input_data: dict[str, np.ndarray] | None,
    *,
    device: str | None = None,
    use_compiled_names: bool = False,
    input_shape: Any = None,
) -> ort.ONNXRuntimeInvocationResult:
    import numpy as np

    from edgehub.toolchains.tensors import load_npz, save_npz

    model_path = _model_file(model.path.to_local(ctx).local())
    if input_data is not None and input_shape is not None:
        raise InputDataError("input_shape shapes random inputs; pass it without input_data")
    if input_data is not None and not isinstance(input_data, dict):
        raise InputDataError(
            "the embedl_onnxruntime invoker takes input_data as a dict of input name -> array, "
            f"got {type(input_data).__name__}"
        )
    tool, config = _tool(ctx, device, ort.ONNXRuntimeInvoker, model_path)
    if input_data is None and input_shape is not None:
        model_path = static_model(ctx, model_path, input_shape, tool=CLI)
        input_data = _random_inputs(model_path)
    else:  # random inputs without input_shape have 1 for each dynamic dim
        input_data = _random_inputs(model_path) if input_data is None else input_data
        shapes = {name: np.shape(value) for name, value in input_data.items()}
        model_path = static_model(ctx, model_path, shapes, tool=CLI, what="input_data")
    # the inputs are written where they are sent from (the staged run directory), and the
    # folder moves to the run's own directory once sent: no copy of them
    with tool.staged() as stage:
        staged_inputs = stage / "input"
        try:
            staged_inputs.mkdir()
            (stage / "output").mkdir()
            save_npz(staged_inputs / "data.npz", input_data)
            ctx.client.log_artifact(staged_inputs / "data.npz", name="input_data")
            remote_model = tool.push_model(model_path)
            # inputs up, run-inference, outputs back: one round trip where the runner offers it
            remote_inputs, remote_outputs = tool.run_dir / "input", tool.run_dir / "output"
            argv = [str(config.embedl_onnxruntime_path), "run-inference", "--model",
                    str(remote_model), "--input-dir", str(remote_inputs), "--output-dir",
                    str(remote_outputs), "--use-npz", *config.cli_args]  # fmt: skip
            outputs_dir = tool.exchange(
                stage, argv, fetch="output", local=ctx.artifact_dir / "output", failure=InvokeError
            )
        finally:
            if staged_inputs.is_dir():
                staged_inputs.replace(ctx.artifact_dir / "input")
    output: dict[str, Any] = {}
    files = sorted(outputs_dir.glob("*.npz"))
    for file in files:
        output.update(load_npz(file))
    if not output:
        raise InvokeError(
            f"embedl-onnxruntime run-inference on device {tool.device.name!r} wrote no .npz "
            f"output into {remote_outputs}"
        )
    local = ctx.artifact_dir / "output.npz"
    if len(files) == 1:  # read and checked above: kept as the device wrote it
        files[0].replace(local)
    else:
        save_npz(local, output)
    ctx.client.log_artifact(local, name="output_file")
    return ort.ONNXRuntimeInvocationResult.from_current_run(ctx, output=output)


def _random_inputs(model: Path) -> dict[str, Any]:
    """Random inputs (seed 0) from the model's declared inputs, read here with ``onnx`` (the
    device CLI cannot make any); dynamic dimensions become 1."""
    from edgehub.toolchains.qai_hub.input_specs import declared_inputs
    from edgehub.toolchains.tensors import random_inputs

    try:
        declared = declared_inputs(model)
    except ImportError:
        raise InputDataError(
            "the embedl_onnxruntime invoker needs input_data (or the onnx package here to make "
            "random inputs: pip install onnx)"
        ) from None
    signature = [{"name": name, "dtype": dtype, "shape": dims} for name, dims, dtype in declared]
    return random_inputs(signature, seed=0)
