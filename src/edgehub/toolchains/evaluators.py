"""`ONNXRuntimeEvaluator`, `TFLiteEvaluator` and `TensorRTEvaluator`: a compiled model's accuracy
on a dataset, one EVAL run (providers ``local``, ``ssh`` and ``qai_hub``; TensorRT's ``local``
only). Every sample runs through ``model`` on the device and through the float reference on this
host's ONNX Runtime; ``hub exec eval`` adds goals, the layer search and the repair on top.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.base import Component, NoProviderError
from edgehub.core.component.outputs import CompiledModel, ComponentOutput
from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import UsageError
from edgehub.toolchains.options import BuiltinComponent, read_options
from edgehub.tracking.run_log import LoggedArtifact
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


PROVIDERS = (ProviderType.LOCAL, "ssh", ProviderType.QAI_HUB)  # "ssh": a plain string type


@dataclass(frozen=True, kw_only=True)
class EvaluationResult(ComponentOutput):
    """``outputs``: output -> figure (cosine, max_abs, snr_db...) -> value over the samples;
    ``tasks``: metric -> {"model", "reference", "output", "against"}; ``worst``: output ->
    the samples of lowest cosine; ``samples``: how many ran. ``output_file``: the model's
    outputs stacked over the samples (.npz)."""

    outputs: dict[str, dict[str, float]]
    tasks: dict[str, dict[str, Any]]
    worst: dict[str, list[dict[str, Any]]]
    samples: int
    output_file: LoggedArtifact


def _run(
    self: Component,
    ctx: HubContext,
    model: CompiledModel,
    dataset: Path,
    *,
    device: str | None = None,
    reference: Path | None = None,
    labels: Path | None = None,
    metrics: list[str] | None = None,
    worst: int = 5,
) -> EvaluationResult:
    """Evaluate ``model`` on ``dataset``; options override the constructor's."""
    raise NoProviderError


class ONNXRuntimeEvaluator(BuiltinComponent):
    """Evaluates an ONNX Runtime model on a dataset against its float reference.

    ``dataset``: a directory of ``.npz`` samples or one ``.npz`` with a leading samples axis;
    ``labels`` (``.npz`` or ``.json``, per sample) are the targets of the task ``metrics``
    (``top1``, ``top5``, ``iou``, ``mse`` or an ``edgehub.metrics`` entry point), else the
    reference's outputs are; ``worst``: how many samples of lowest cosine to name.
    """

    run_type = RunType.EVAL
    run = _run


class TFLiteEvaluator(BuiltinComponent):
    """Evaluates a ``.tflite`` model on a dataset against its float ONNX reference (the same
    options as `ONNXRuntimeEvaluator`; samples are given in the ONNX model's layout)."""

    run_type = RunType.EVAL
    run = _run


class TensorRTEvaluator(BuiltinComponent):
    """Evaluates a TensorRT engine on a dataset against its float ONNX reference, on this
    host's NVIDIA GPU (the same options as `ONNXRuntimeEvaluator`; without a GPU the run fails
    with `GpuUnavailableError` before anything starts)."""

    run_type = RunType.EVAL
    run = _run


def _reference(ctx: HubContext, model: CompiledModel, reference: Path | None) -> Path:
    """``reference``, else the ONNX model ``model`` was compiled from."""
    if reference is not None:
        path = Path(reference)
    elif model.input is not None:
        path = Path(model.input.to_local(ctx).local())
    else:
        raise UsageError(
            "the evaluator needs the float ONNX model to compare with: pass reference=PATH "
            "(this compiled model records none)"
        )
    if not path.is_file() or path.suffix != ".onnx":
        raise UsageError(f"reference {path} is not an ONNX model file; pass the float .onnx")
    return path


def _evaluate(
    runtime: str, ctx: HubContext, model: CompiledModel, dataset: Path, **options: Any
) -> EvaluationResult:
    """The provider of every evaluator of ``runtime`` (the runner differs by device)."""
    from edgehub.toolchains.batch import BatchJob
    from edgehub.toolchains.datasets import load_dataset, tensor_specs
    from edgehub.toolchains.evaluation import (
        batch_runner,
        check_figures,
        model_signature,
        pair_outputs,
        run_both,
        score_outputs,
    )
    from edgehub.toolchains.metrics import task_metric
    from edgehub.toolchains.onnxruntime.batch import ORTBatchRunner

    opts = read_options(ONNXRuntimeEvaluator, options)  # the three evaluators' options agree
    names = list(dict.fromkeys(opts.metrics or []))
    for metric in names:
        task_metric(metric)  # unknown names fail before anything runs
    source = _reference(ctx, model, opts.reference)
    signature = model_signature(ctx, source)
    data = load_dataset(Path(dataset), tensor_specs(signature["inputs"]), opts.labels)
    ctx.client.log_params(
        {"$runtime": runtime, "dataset_sha256": data.sha256, "samples": len(data),
         "task_metrics": names}
    )  # fmt: skip
    ctx.client.log_artifact(source, name="reference")
    runner = batch_runner(ctx, runtime, opts.device)
    local = ctx.device(opts.device or "local").provider_type == ProviderType.LOCAL
    same = isinstance(runner, ORTBatchRunner) and local
    runners = (runner, runner if same else ORTBatchRunner(ctx, None, "reference"))
    jobs = (BatchJob(model, "model"), BatchJob(source, "reference"))
    with data.watch():  # failed on a dataset cut short: recorded as that
        model_out, reference_out = run_both(runners, jobs, data.path, data.stacked, data.sha256)
        ctx.client.log_artifact(model_out.path, name="output_file", file_name="outputs.npz")
        ctx.client.log_artifact(
            reference_out.path, name="reference_outputs", file_name="reference_outputs.npz"
        )
        scores = score_outputs(pair_outputs(ctx, model_out.arrays, reference_out.arrays), data,
                               names, opts.worst)  # fmt: skip
        data.check_unchanged()
    figures: dict[str, float] = {"$samples": float(len(data))}
    for output, values in scores.outputs.items():
        figures.update({f"{output}.{k}": v for k, v in values.items()})
    for metric, values in scores.tasks.items():
        figures[metric] = float(values["model"])
        figures[f"reference.{metric}"] = float(values["reference"])
    ctx.client.log_metrics(check_figures(figures))
    path = ctx.artifact_dir / "per_sample.json"
    path.write_text(json.dumps({"samples": data.names, **scores.per_sample}))
    ctx.client.log_artifact(path, name="per_sample")
    return EvaluationResult.from_current_run(
        ctx, outputs=scores.outputs, tasks=scores.tasks, worst=scores.worst, samples=len(data)
    )


for _provider_type in PROVIDERS:
    ONNXRuntimeEvaluator.provider(_provider_type)(partial(_evaluate, "onnxruntime"))
    TFLiteEvaluator.provider(_provider_type)(partial(_evaluate, "tflite"))
del _provider_type
TensorRTEvaluator.provider(ProviderType.LOCAL)(partial(_evaluate, "tensorrt"))
