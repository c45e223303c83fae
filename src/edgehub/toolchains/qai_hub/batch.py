"""`QAIHubBatchRunner`: a dataset through a compiled model in one AI Hub inference job, its
samples one service dataset (uploaded once per content) under the compiled model's input names,
its outputs back under the original names, stacked over the samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import InputDataError, InvokeError
from edgehub.toolchains.batch import BatchJob, BatchOutputs, BatchRunner
from edgehub.toolchains.onnxruntime.components import ONNXRuntimeInvoker
from edgehub.toolchains.qai_hub.devices import start_on_device
from edgehub.toolchains.qai_hub.invoke import inference_job, remap_input_names
from edgehub.toolchains.qai_hub.profile import local_model
from edgehub.toolchains.tflite.components import TFLiteInvoker

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.context import HubContext


def sample_lists(samples: Path, stacked: bool) -> dict[str, list[np.ndarray]]:
    """``{input name: [sample, ...]}`` of a directory of .npz samples or one stacked .npz."""
    from edgehub.toolchains.tensors import load_npz

    if stacked:
        arrays = load_npz(samples)
        return {name: [array[i] for i in range(array.shape[0])] for name, array in arrays.items()}
    entries: dict[str, list[np.ndarray]] = {}
    for file in sorted(samples.glob("*.npz")):
        for name, array in load_npz(file).items():
            entries.setdefault(name, []).append(array)
    if not entries:
        raise InputDataError(f"dataset {samples} holds no .npz samples for AI Hub")
    return entries


class QAIHubBatchRunner(BatchRunner):
    """Runs a compiled model (ONNX Runtime or TFLite) over a dataset on the AI Hub device
    ``device``, one inference job per model."""

    def __init__(
        self, ctx: HubContext, device: str | None, scratch: str | None = None, *, runtime: str
    ) -> None:
        self.ctx = ctx
        self.device = device
        self._component = TFLiteInvoker if runtime == "tflite" else ONNXRuntimeInvoker
        self._folder = ctx.artifact_dir / (scratch or "qai_hub_batch")

    def run_many(
        self, jobs: Sequence[BatchJob], samples: Path, *, stacked: bool, digest: str | None = None
    ) -> list[BatchOutputs]:
        """Every sample through each job's model, one inference job each."""
        entries = sample_lists(samples, stacked)
        return [self._job(index, job, entries) for index, job in enumerate(jobs)]

    def _job(self, index: int, job: BatchJob, entries: dict[str, list[Any]]) -> BatchOutputs:
        import numpy as np

        from edgehub.toolchains.tensors import save_npz

        if job.options:
            raise InvokeError(
                f"{', '.join(job.options)} cannot run on Qualcomm AI Hub; use a local or ssh device"
            )
        ctx = self.ctx
        path = local_model(ctx, job.model)
        _, config = start_on_device(ctx, self.device, self._component, InvokeError)
        inputs = getattr(job.model, "input_name_mapping", None)
        if inputs:
            entries = remap_input_names(entries, inputs)
        hub_job, data = inference_job(
            ctx, path, entries, self.device, self._component, config, "eval"
        )
        if not data:
            raise InvokeError(f"qai_hub inference job {hub_job.job_id} returned no outputs")
        count = len(next(iter(entries.values())))
        original = {
            v: k for k, v in (getattr(job.model, "output_name_mapping", None) or {}).items()
        }
        arrays: dict[str, np.ndarray] = {}
        for name, values in data.items():
            if not isinstance(values, list) or len(values) != count:
                raise InvokeError(
                    f"qai_hub inference job {hub_job.job_id} returned output {name!r} for "
                    f"{len(values) if isinstance(values, list) else 1} samples, not {count}"
                )
            arrays[original.get(name, name)] = np.stack([np.asarray(v) for v in values])
        self._folder.mkdir(parents=True, exist_ok=True)
        saved = save_npz(self._folder / f"outputs-{index}.npz", arrays)
        return BatchOutputs(arrays, {}, saved, {"job_id": hub_job.job_id})
