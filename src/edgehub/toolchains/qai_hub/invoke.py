"""The ``qai_hub`` providers of `ONNXRuntimeInvoker` and `TFLiteInvoker`: one inference job on one
sample, with tensor names mapped to the compiled model's and back unless ``use_compiled_names``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import InputDataError, InvokeError
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeInvocationResult,
    ONNXRuntimeInvoker,
)
from edgehub.toolchains.options import provides, read_options
from edgehub.toolchains.outputs import InvocationResult
from edgehub.toolchains.qai_hub.assets import uploaded_dataset, uploaded_model
from edgehub.toolchains.qai_hub.client import hub_call
from edgehub.toolchains.qai_hub.datasets import sample_entries
from edgehub.toolchains.qai_hub.devices import start_on_device
from edgehub.toolchains.qai_hub.jobs import record_qairt, run_job
from edgehub.toolchains.qai_hub.profile import local_model
from edgehub.toolchains.qai_hub.session import session_for
from edgehub.toolchains.qai_hub.uploads import dataset_hash
from edgehub.toolchains.tflite.components import TFLiteInvocationResult, TFLiteInvoker

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from edgehub.core.context import HubContext


def remap_input_names(
    input_data: Mapping[str, Any], name_mapping: Mapping[str, str]
) -> dict[str, Any]:
    """Input keys from original to compiled names (compiled names pass through)."""
    compiled_names = set(name_mapping.values())
    remapped: dict[str, Any] = {}
    for name, array in input_data.items():
        if name in name_mapping:
            remapped[name_mapping[name]] = array
        elif name in compiled_names:
            remapped[name] = array
        else:
            raise InvokeError(
                f"input name {name!r} is neither an original input name "
                f"({', '.join(sorted(name_mapping))}) nor a compiled one "
                f"({', '.join(sorted(compiled_names))})"
            )
    return remapped


def flatten_outputs(dataset: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``{name: [sample]}`` from the service as ``{name: array}`` (the first sample)."""
    import numpy as np

    outputs: dict[str, np.ndarray] = {}
    for name, arrays in dataset.items():
        if isinstance(arrays, list) and arrays:
            outputs[name] = arrays[0]
        else:
            outputs[name] = np.asarray(arrays)
    return outputs


def inference_job(
    ctx: HubContext,
    path: Path,
    entries: Mapping[str, Any],
    device: str | None,
    component: type[Any],
    config: Any,
    label: str,
) -> tuple[Any, Any]:
    """Submit (or find again, by model, options and inputs) the inference job of model ``path``
    on the samples ``entries`` on ``device``, record it on the run and wait for it: the job and
    its downloaded outputs. ``label`` ends the job's name (``"inference"``, ``"eval"``)."""
    hub = session_for(ctx).hub
    options = config.job_options("inference")

    job = run_job(
        ctx,
        "inference",
        f"{path}|{options}|{dataset_hash(entries)}",
        device,
        config,
        InvokeError,
        hub.submit_inference_job,
        lambda: {
            "model": uploaded_model(ctx, path, InvokeError),
            "inputs": uploaded_dataset(ctx, entries, InvokeError, f"{label} inputs"),
        },
        component,
        name=f"{path.stem} {label}",
        options=options,
        profile=False,
    )
    return job, hub_call(hub, InvokeError, "downloading the outputs", job.download_output_data)


def _register(component: type[Any], output_type: type[InvocationResult], runtime: str) -> None:
    """``component``'s provider: its model run on AI Hub on one sample."""

    @provides(component, ProviderType.QAI_HUB, "use_compiled_names")
    def invoke_on_qai_hub(ctx: HubContext, model: Any, input_data: Any, **options: Any) -> Any:
        from edgehub.toolchains.tensors import save_npz

        o = read_options(component, options)
        if not isinstance(input_data, Mapping):
            raise InputDataError(
                f"input_data must be a dict of input name -> array, got {type(input_data).__name__}"
            )
        path = local_model(ctx, model)
        _, config = start_on_device(ctx, o.device, component, InvokeError)
        input_mapping = getattr(model, "input_name_mapping", None)
        output_mapping = getattr(model, "output_name_mapping", None)
        if not o.use_compiled_names and input_mapping:
            input_data = remap_input_names(input_data, input_mapping)
        ctx.client.log_param("$runtime", runtime)
        ctx.client.log_artifact(path, name="input")
        inputs = save_npz(ctx.artifact_dir / "input.npz", input_data)
        ctx.client.log_artifact(inputs, name="input_data")
        entries = sample_entries(input_data)
        ctx.client.log_param("qai_hub_inference_options", config.job_options("inference"))
        job, dataset = inference_job(ctx, path, entries, o.device, component, config, "inference")
        if dataset is None:
            raise InvokeError(f"qai_hub inference job {job.job_id} returned no outputs ({job.url})")
        record_qairt(ctx, getattr(job, "model", None), config)
        outputs = flatten_outputs(dataset)
        if not o.use_compiled_names and output_mapping:
            original = {compiled: name for name, compiled in output_mapping.items()}
            outputs = {original.get(name, name): array for name, array in outputs.items()}
        saved = save_npz(ctx.artifact_dir / "output.npz", outputs)
        ctx.client.log_artifact(saved, name="output_file")
        return output_type.from_current_run(ctx, output=outputs)


_register(ONNXRuntimeInvoker, ONNXRuntimeInvocationResult, "onnx")
_register(TFLiteInvoker, TFLiteInvocationResult, "tflite")
