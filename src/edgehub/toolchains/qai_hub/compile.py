"""The ``qai_hub`` providers of `ONNXRuntimeCompiler` and `TFLiteCompiler`: with calibration data
a quantize job runs first and its model is compiled. The compiled model's tensor names, read
from the service's model spec, are recorded as name mappings (original -> compiled, by position).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import CompileError, UsageError
from edgehub.toolchains.onnxruntime.components import ONNXRuntimeCompiledModel, ONNXRuntimeCompiler
from edgehub.toolchains.options import provides, read_options
from edgehub.toolchains.outputs import CompiledWithNames
from edgehub.toolchains.qai_hub.assets import remember_download, uploaded_dataset, uploaded_model
from edgehub.toolchains.qai_hub.client import hub_call
from edgehub.toolchains.qai_hub.config import QAIHubConfig
from edgehub.toolchains.qai_hub.datasets import calibration_entries
from edgehub.toolchains.qai_hub.devices import start_on_device
from edgehub.toolchains.qai_hub.input_specs import format_specs, onnx_file, onnx_input_specs
from edgehub.toolchains.qai_hub.jobs import record_qairt, run_job
from edgehub.toolchains.qai_hub.session import current_plan, session_for
from edgehub.toolchains.qai_hub.uploads import dataset_hash
from edgehub.toolchains.tflite.components import TFLiteCompiledModel, TFLiteCompiler

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


def _output_names(path: Path) -> list[str]:
    import onnx

    model = onnx.load(str(onnx_file(path)), load_external_data=False)
    return [value.name for value in model.graph.output]


def _spec_names(model: Any, side: str) -> list[str] | None:
    """The compiled model's input or output names from the service's spec of it."""
    try:
        io_spec = getattr(model, f"{side}_spec", None)
    except Exception:  # an older service without specs: no mapping
        return None
    if not io_spec:
        return None
    graph = io_spec.get(None) if None in io_spec else next(iter(io_spec.values()))
    return [spec.name for spec in graph]


def _mapping(
    ctx: HubContext, what: str, original: list[str], compiled: list[str] | None
) -> dict[str, str] | None:
    if compiled is None or original == compiled:
        return None
    if len(original) != len(compiled):
        ctx.events.warning(
            f"the compiled model has {len(compiled)} {what}s, the original {len(original)}; "
            f"no {what} name mapping (compiled names: {', '.join(compiled)})"
        )
        return None
    mapping = dict(zip(original, compiled, strict=True))
    ctx.client.log_param(
        f"{what}_name_mapping", ", ".join(f"{a} -> {b}" for a, b in mapping.items())
    )
    return mapping


def _key(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _quantized_source(
    ctx: HubContext, source: Path, entries: dict[str, list[Any]], config: QAIHubConfig
) -> Any:
    """Run the quantize job; returns the quantized model on the service."""
    hub = session_for(ctx).hub
    weights = getattr(hub.QuantizeDtype, config.weights_dtype.upper())
    activations = getattr(hub.QuantizeDtype, config.activations_dtype.upper())
    ctx.client.log_param("num_calibration_samples", len(next(iter(entries.values()))))
    ctx.client.log_param("quantize_dtypes", f"w{config.weights_dtype} a{config.activations_dtype}")

    key = _key(str(source), dataset_hash(entries), config.weights_dtype, config.activations_dtype)
    job = run_job(
        ctx,
        "quantize",
        key,
        None,
        config,
        CompileError,
        hub.submit_quantize_job,
        lambda: {
            "model": uploaded_model(ctx, source, CompileError),
            "calibration_data": uploaded_dataset(ctx, entries, CompileError, "calibration data"),
        },
        weights_dtype=weights,
        activations_dtype=activations,
        name=f"{source.stem} quantize",
    )
    target = ctx.artifact_dir / f"quantized_{source.stem}.onnx"
    saved = hub_call(
        hub, CompileError, "downloading the quantized model", job.download_target_model, str(target)
    )
    if saved:
        ctx.client.log_artifact(Path(saved), name="quantized")
    return hub_call(hub, CompileError, "reading the quantized model", job.get_target_model)


def _ort_options(ctx: HubContext, o: Any) -> None:
    """What AI Hub does not offer of ONNX Runtime's quantization options."""
    if o.quantization == "dynamic":
        raise UsageError(
            "Qualcomm AI Hub offers no dynamic quantization; use quantization='static' with "
            "calibration_data, or 'none'"
        )
    if o.quantization == "none" and o.calibration_data is not None:
        ctx.events.warning("quantization='none': calibration_data is ignored")
        o.calibration_data = None
    if o.calibration_method is not None or o.per_channel:
        ctx.events.warning("calibration_method and per_channel are chosen by AI Hub; ignored")


def _register(
    component: type[Any],
    output_type: type[CompiledWithNames],
    target_runtime: str,
    suffix: str,
    serves: tuple[str, ...],
    check: Any = None,
) -> None:
    """``component``'s provider: ONNX -> its runtime's model compiled on AI Hub
    (``--target_runtime target_runtime``)."""

    @provides(component, ProviderType.QAI_HUB, *serves)
    def compile_on_qai_hub(ctx: HubContext, onnx_path: Path, **options: Any) -> Any:
        o = read_options(component, options)
        if check is not None:
            check(ctx, o)
        source = Path(onnx_path).expanduser()
        onnx_file(source)
        hub, config = start_on_device(ctx, o.device, component, CompileError)
        ctx.client.log_param("$runtime", target_runtime)
        ctx.client.log_artifact(source, name="input")
        specs = onnx_input_specs(source, o.input_shape)
        ctx.client.log_param("input_specs", format_specs(specs))
        job_options = config.job_options(
            "compile", target_runtime=target_runtime, quantize_io=o.quantize_io
        )
        ctx.client.log_param("qai_hub_compile_options", job_options)
        plan = current_plan()
        calibrated = o.calibration_data is not None
        if calibrated and (plan is None or "compile" not in plan.resume):
            entries = calibration_entries(o.calibration_data, specs)
            quantized = _quantized_source(ctx, source, entries, config)

            def model() -> Any:
                return quantized

        else:
            ctx.events.info("no calibration data: compiling the float model as it is")

            def model() -> Any:
                return uploaded_model(ctx, source, CompileError)

        job = run_job(
            ctx,
            "compile",
            _key(str(source), job_options, sorted(specs.items()), calibrated),
            o.device,
            config,
            CompileError,
            hub.submit_compile_job,
            lambda: {"model": model()},
            component,
            name=f"{source.stem} {target_runtime}",
            input_specs=specs,
            options=job_options,
        )
        compiled = hub_call(hub, CompileError, "reading the compiled model", job.get_target_model)
        wanted = ctx.artifact_dir / f"compiled_{source.stem}{suffix}"
        saved = hub_call(
            hub,
            CompileError,
            "downloading the compiled model",
            job.download_target_model,
            str(wanted),
        )
        if not saved or not Path(saved).exists():
            raise CompileError(
                f"qai_hub compile job {job.job_id} finished without a model to download ({job.url})"
            )
        remember_download(ctx, Path(saved), compiled)
        record_qairt(ctx, compiled, config)
        ctx.client.log_artifact(Path(saved), name="path")
        inputs = _spec_names(compiled, "input")
        outputs = _spec_names(compiled, "output")
        return output_type.from_current_run(
            ctx,
            input_name_mapping=_mapping(ctx, "input", list(specs), inputs),
            output_name_mapping=_mapping(ctx, "output", _output_names(source), outputs),
        )


_SHARED = ("input_shape", "calibration_data", "quantize_io")
_ORT = (*_SHARED, "calibration_method", "per_channel", "quantization")
_register(ONNXRuntimeCompiler, ONNXRuntimeCompiledModel, "onnx", ".onnx", _ORT, _ort_options)
_register(TFLiteCompiler, TFLiteCompiledModel, "tflite", ".tflite", _SHARED)
