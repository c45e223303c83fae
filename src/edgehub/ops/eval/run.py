"""`evaluate`: a model's accuracy on a dataset against its float reference, judged by goals.

Every sample runs through the compiled model (ONNX Runtime or TFLite, on the chosen device,
one agent call for the whole dataset) and through the reference (the original ONNX model in
float32 on this host's ONNX Runtime); the outputs are compared per output and scored by task
metrics, and goals decide whether the model passes. The dataset is checked against the
reference's inputs before any run starts, so bad data leaves no run behind. The EVAL run keeps
the dataset and labels (stored by content, once), both models' outputs (``outputs``,
``reference_outputs``: .npz stacked over the samples), every figure as a metric, the
per-sample values as ``per_sample.json`` and the layer search as ``layers.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import InputDataError, ModelError, UsageError
from edgehub.ops.cancel import Cancellation
from edgehub.ops.eval.dataset import Dataset, load_dataset, tensor_specs
from edgehub.ops.eval.goals import Goal, check_goal, parse_goal
from edgehub.ops.eval.metrics import output_figures, score, summarize_figures, task_metric
from edgehub.ops.eval.report import EvalReport
from edgehub.ops.project import Project, Subscriber

if TYPE_CHECKING:
    import numpy as np

    from edgehub.core.component.outputs import CompiledModel
    from edgehub.core.context import HubContext
    from edgehub.toolchains.batch import BatchJob, BatchOutputs, BatchRunner
    from edgehub.toolchains.registry import Runtime
    from edgehub.tracking.run_log import RunLog

__all__ = ["EVAL_RUNTIMES", "EvalRequest", "evaluate"]

EVAL_RUNTIMES = ("onnxruntime", "tflite")
EVAL_PROVIDERS = ("local", "ssh")
REFERENCE_RUNTIME = "onnxruntime"


@dataclass
class EvalRequest:
    """Evaluate ``runtime``'s compilation of ``model`` (or the model of compile run
    ``from_run``) on ``dataset``. ``options`` are the compiler's; ``metrics`` the task metrics
    to compute (those the goals name are added); ``worst`` how many samples to name.
    ``layers`` (ONNX Runtime) is the threshold of the search for the first divergent layer
    (see `layers`), run on the first ``layer_samples`` samples; None: no search.
    ``reference``: None or ``"onnxruntime"`` (the original ONNX model in float32 here), or
    an EVAL run on the same dataset whose model's outputs serve as the reference."""

    runtime: str
    dataset: Path
    model: Path | None = None
    from_run: str | None = None
    labels: Path | None = None
    metrics: list[str] = field(default_factory=list)
    goals: list[str] = field(default_factory=list)
    device: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    worst: int = 5
    layers: float | None = None
    layer_samples: int = 4
    reference: str | None = None


def _plan(request: EvalRequest) -> tuple[list[Goal], list[str]]:
    """The goals and the task metrics to compute; usage errors before anything runs."""
    if request.runtime not in EVAL_RUNTIMES:
        raise UsageError(
            f"hub exec eval does not support {request.runtime!r} yet; runtimes: "
            f"{', '.join(EVAL_RUNTIMES)}"
        )
    if (request.model is None) == (request.from_run is None):
        raise UsageError("hub exec eval needs a MODEL path or --from-run COMPILE_RUN (one)")
    if request.model is not None and not request.model.is_file():
        raise ModelError(f"model {request.model} not found; check the path")
    if not request.dataset.exists():
        raise InputDataError(
            f"dataset {request.dataset} not found; pass a directory of .npz or one .npz"
        )
    if request.labels is not None and not request.labels.is_file():
        raise InputDataError(f"labels {request.labels} not found; pass an .npz or .json")
    if request.layers is not None:
        if request.runtime != "onnxruntime":
            raise UsageError("--layers compares ONNX Runtime models so far; drop it for tflite")
        if not request.layers > 0 or request.layer_samples < 1:
            raise UsageError("--layers takes a positive threshold (relative L2), e.g. 0.2")
    if _stored_reference(request) and request.layers is not None:
        raise UsageError("--layers runs the reference model; drop --reference RUN_ID for it")
    goals = [parse_goal(text) for text in request.goals]
    names: list[str] = []
    for name in [*request.metrics, *(m for g in goals for m in g.task_metrics)]:
        if name not in names:
            task_metric(name)  # unknown names fail here
            names.append(name)
    if any(g.degradation is not None for g in goals) and not names:
        raise UsageError(
            "max-degradation compares task metrics; name one with --metric (e.g. top1)"
        )
    return goals, names


def evaluate(
    project: Project,
    request: EvalRequest,
    *,
    subscriber: Subscriber | None = None,
    cancel: Cancellation | None = None,
) -> EvalReport:
    """Run ``request`` on ``project``; the compile run (if any) and the EVAL run are recorded."""
    from edgehub.toolchains.registry import get_runtime

    runtime = get_runtime(request.runtime)
    goals, metric_names = _plan(request)
    cancel = cancel or Cancellation()
    with _context(project, request, subscriber, cancel) as ctx:
        provider = ctx.device(request.device or "local").provider_type
        if provider not in EVAL_PROVIDERS:
            raise UsageError(
                f"hub exec eval runs on devices of the providers {', '.join(EVAL_PROVIDERS)} so "
                f"far; device {request.device!r} uses {provider!r}"
            )
        reference, compiled, compile_run = _models(ctx, request, runtime, check_only=True)
        inspect = get_runtime(REFERENCE_RUNTIME).inspect
        assert inspect is not None  # ONNX Runtime reads any ONNX model's signature
        signature = inspect(ctx, reference, None)
        outputs = [str(o["name"]) for o in signature.get("outputs", [])]
        for goal in goals:
            if goal.output is not None and goal.output not in outputs:
                raise UsageError(
                    f"goal {goal.text!r}: the model has no output {goal.output!r}; outputs: "
                    f"{', '.join(outputs)}"
                )
        dataset = load_dataset(request.dataset, tensor_specs(signature["inputs"]), request.labels)
        ctx.events.info(f"dataset: {len(dataset)} samples checked against {reference.name}")
        stored = _reference_run(ctx, request, dataset)
        cancel.check()
        if compiled is None:
            reference, compiled, compile_run = _models(ctx, request, runtime)
            cancel.check()
        assert compiled is not None
        with _device_lease(project, ctx, request, cancel):
            return _eval_run(
                ctx,
                request,
                dataset,
                reference,
                compiled,
                compile_run,
                goals,
                metric_names,
                cancel,
                stored,
            )


@contextmanager
def _context(
    project: Project, request: EvalRequest, subscriber: Subscriber | None, cancel: Cancellation
) -> Iterator[HubContext]:
    with project.context(subscriber, tags=request.tags) as ctx:
        cancel.bind(ctx)
        try:
            yield ctx
        finally:
            cancel.release(ctx)


def _stored_reference(request: EvalRequest) -> bool:
    return request.reference not in (None, REFERENCE_RUNTIME)


def _reference_run(ctx: HubContext, request: EvalRequest, dataset: Dataset) -> RunLog | None:
    """The EVAL run ``--reference`` names, checked to have run on this very dataset."""
    if not _stored_reference(request):
        return None
    assert request.reference is not None
    log = ctx.store.run_log(request.reference, run_type="EVAL")
    if "outputs" not in log.artifacts:
        raise UsageError(f"run {log.run_id[:8]} kept no outputs; pass the id of an eval run")
    logged = log.params.get("dataset_sha256")
    if logged is None or logged.value != dataset.sha256:
        raise UsageError(
            f"run {log.run_id[:8]} evaluated another dataset; give --dataset the same samples "
            "(compared by content), or drop --reference"
        )
    return log


@contextmanager
def _device_lease(
    project: Project, ctx: HubContext, request: EvalRequest, cancel: Cancellation
) -> Iterator[None]:
    """Hold a device other than this host while the samples run on it, as every step on such
    a device does (see `ops.leases`), so an eval does not disturb a measurement there."""
    from edgehub.config.schema import CLOUD_PROVIDERS
    from edgehub.ops.leases import measurement_lease

    name = request.device or "local"
    if ctx.device(name).provider_type in ("local", *CLOUD_PROVIDERS):
        yield
        return
    with measurement_lease(
        project,
        name,
        timeout=None,
        command=f"hub exec eval {request.runtime} {request.model or request.from_run}",
        events=ctx.events,
        cancelled=cancel.wait,
    ):
        yield


def _models(
    ctx: HubContext, request: EvalRequest, runtime: Runtime, *, check_only: bool = False
) -> tuple[Path, CompiledModel | None, str | None]:
    """(reference ONNX, compiled model, compile run id). With ``check_only`` a MODEL is not
    compiled yet (its compiled model is None)."""
    if request.from_run is not None:
        log = ctx.store.run_log(request.from_run, run_type="COMPILE")
        if "path" not in log.artifacts or "input" not in log.artifacts:
            raise UsageError(
                f"run {log.run_id[:8]} ({log.name}) kept no model and input; pass the id of a "
                "compile run"
            )
        stored = runtime.compiled_model.from_run_log(log)
        reference = Path(log.artifacts["input"].local())
        return reference, stored, log.run_id
    assert request.model is not None
    model = request.model.resolve()
    if check_only:
        return model, None, None
    options = dict(request.options)
    if request.device:
        options["device"] = request.device
    ctx.events.info(f"compile {model.name} for {runtime.name}")
    compiled: CompiledModel = runtime.compiler(**options).run(ctx, model)
    return model, compiled, compiled.run_log.run_id if compiled.run_log else None


def _eval_run(
    ctx: HubContext,
    request: EvalRequest,
    dataset: Dataset,
    reference: Path,
    compiled: CompiledModel,
    compile_run: str | None,
    goals: list[Goal],
    metric_names: list[str],
    cancel: Cancellation,
    stored_ref: RunLog | None = None,
) -> EvalReport:
    from edgehub.core import RunType
    from edgehub.toolchains.batch import BatchJob, BatchOutputs
    from edgehub.toolchains.onnxruntime.batch import ORTBatchRunner
    from edgehub.toolchains.tensors import load_npz

    device_name = request.device or "local"
    device = ctx.device(device_name)
    name = request.name or f"eval-{reference.stem}"
    with ctx.open_run(RunType.EVAL, name, component="Evaluator", devices=[device]) as run:
        sha = dataset.sha256
        ctx.client.log_params(
            {
                "$runtime": request.runtime,
                "dataset_sha256": sha,
                "samples": len(dataset),
                "task_metrics": metric_names,
                "goals": list(request.goals),
                "compile_run": compile_run,
            }
        )
        compiled_path = Path(compiled.path.to_local(ctx).local())
        ctx.client.log_artifact(compiled_path, name="input")
        ctx.client.log_artifact(reference, name="reference")
        stored = ctx.client.log_artifact(dataset.path, name="dataset")
        if dataset.labels_path is not None:
            ctx.client.log_artifact(dataset.labels_path, name="labels")
        samples = Path(stored.local())
        model_runner = _batch_runner(request.runtime)(ctx, request.device)
        same = isinstance(model_runner, ORTBatchRunner) and device.provider_type == "local"
        reference_runner = model_runner if same else ORTBatchRunner(ctx, None, "reference")
        runners = (model_runner, reference_runner)
        where = "both models in one call" if same else f"the compiled model on {device_name}"
        if stored_ref is not None:
            where = f"the compiled model on {device_name}; reference: run {stored_ref.run_id[:8]}"
        ctx.events.info(f"run {len(dataset)} samples: {where}")
        graph = {"graph": True} if request.layers is not None else {}
        model_job = BatchJob(compiled, "model", graph)
        if stored_ref is not None:
            (model_out,) = model_runner.run_many([model_job], samples, stacked=dataset.stacked)
            path = Path(stored_ref.artifacts["outputs"].local())
            reference_out = BatchOutputs(load_npz(path), {}, path, {})
        else:
            reference_job = BatchJob(reference, "reference", graph)
            model_out, reference_out = _run_both(
                runners, (model_job, reference_job), samples, dataset.stacked
            )
        cancel.check()
        ctx.client.log_artifact(model_out.path, name="outputs", file_name="outputs.npz")
        ctx.client.log_artifact(
            reference_out.path, name="reference_outputs", file_name="reference_outputs.npz"
        )
        report = EvalReport(
            run_id=run.run_id,
            name=name,
            status="RUNNING",
            runtime=request.runtime,
            device=device_name,
            model=str(compiled_path),
            reference=str(reference) if stored_ref is None else f"run {stored_ref.run_id}",
            dataset=str(dataset.path),
            dataset_sha256=sha,
            samples=len(dataset),
            sample_names=dataset.names,
            labels=None if dataset.labels_path is None else str(dataset.labels_path),
            compile_run_id=compile_run,
            timings_ms={
                "model": float(model_out.metrics.get("inference_ms", 0.0)),
                "reference": float(reference_out.metrics.get("inference_ms", 0.0)),
            },
        )
        pairs = _pair_outputs(ctx, model_out.arrays, reference_out.arrays)
        _compare(report, pairs, dataset, metric_names, request.worst)
        report.goals = [check_goal(g, report.outputs, report.tasks) for g in goals]
        if request.layers is not None:
            outs = (model_out, reference_out)
            report.layers = _layers(ctx, request, dataset, (compiled, reference), runners, outs)
        _record(ctx, report)
    report.status = "FINISHED"
    return report


def _layers(
    ctx: HubContext,
    request: EvalRequest,
    dataset: Dataset,
    models: tuple[CompiledModel, Path],
    runners: tuple[BatchRunner, BatchRunner],
    outs: tuple[BatchOutputs, BatchOutputs],
) -> dict[str, Any]:
    """Bisect for the first divergent layer on the first ``layer_samples`` samples."""
    from edgehub.ops.eval.layers import LayerSearch, layer_rows
    from edgehub.toolchains.batch import BatchJob
    from edgehub.toolchains.tensors import save_npz

    assert request.layers is not None
    count = min(request.layer_samples, len(dataset))
    folder = ctx.artifact_dir / "layer_samples"
    for index in range(count):
        save_npz(folder / f"{index:06d}.npz", dataset.samples[index])
    rows = layer_rows(outs[1].data.get("graph", []), outs[0].data.get("graph", []))

    def probe(marks: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        ctx.events.info(f"layers: probe {', '.join(marks.values())}")
        jobs = (
            BatchJob(models[0], "layers.model", {"extra_outputs": list(marks)}),
            BatchJob(models[1], "layers.reference", {"extra_outputs": list(marks.values())}),
        )
        model, reference = _run_both(runners, jobs, folder, False)
        return model.arrays, reference.arrays

    search = LayerSearch(rows, request.layers, probe)
    first = search.first_divergent()
    if first is not None:
        ctx.events.info(f"layers: first divergent layer {first.node} ({first.op})")
    return search.to_dict(first, count)


def _run_both(
    runners: tuple[BatchRunner, BatchRunner],
    jobs: tuple[BatchJob, BatchJob],
    samples: Path,
    stacked: bool,
) -> tuple[BatchOutputs, BatchOutputs]:
    """The compiled model's and the reference's outputs: in one call where one runner serves
    both, else one call each."""
    if runners[0] is runners[1]:
        model, reference = runners[0].run_many(jobs, samples, stacked=stacked)
        return model, reference
    (model,) = runners[0].run_many(jobs[:1], samples, stacked=stacked)
    (reference,) = runners[1].run_many(jobs[1:], samples, stacked=stacked)
    return model, reference


def _batch_runner(runtime: str) -> type[BatchRunner]:
    if runtime == "tflite":
        from edgehub.toolchains.tflite.batch import TFLiteBatchRunner

        return TFLiteBatchRunner
    from edgehub.toolchains.onnxruntime.batch import ORTBatchRunner

    return ORTBatchRunner


def _pair_outputs(
    ctx: HubContext, model: dict[str, np.ndarray], reference: dict[str, np.ndarray]
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(reference output name, model's, reference's) by name, else by position."""
    if set(reference) <= set(model):
        return [(n, model[n], reference[n]) for n in reference]
    if len(model) == len(reference):
        ctx.events.warning(
            f"the compiled model's outputs ({', '.join(model)}) differ in name from the "
            f"reference's ({', '.join(reference)}): compared in order"
        )
        return [(n, m, r) for (n, r), m in zip(reference.items(), model.values(), strict=True)]
    raise UsageError(
        f"the compiled model has outputs {', '.join(model)} but the reference has "
        f"{', '.join(reference)}; they cannot be paired"
    )


def _compare(
    report: EvalReport,
    pairs: list[tuple[str, np.ndarray, np.ndarray]],
    dataset: Dataset,
    metric_names: list[str],
    worst: int,
) -> None:
    figures_by_output: dict[str, dict[str, list[float]]] = {}
    for name, model, reference in pairs:
        if model.shape != reference.shape:
            raise UsageError(
                f"output {name!r} has shape {list(model.shape[1:])} in the compiled model but "
                f"{list(reference.shape[1:])} in the reference; they cannot be compared"
            )
        per_sample = output_figures(model, reference)
        figures_by_output[name] = per_sample
        report.outputs[name] = summarize_figures(per_sample)
        order = sorted(range(len(dataset)), key=lambda i: per_sample["cosine"][i])[:worst]
        report.worst[name] = [
            {
                "sample": dataset.names[i],
                "cosine": per_sample["cosine"][i],
                "max_abs": per_sample["max_abs"][i],
            }
            for i in order
        ]
    tasks: dict[str, dict[str, list[float]]] = {}
    primary, model, reference = pairs[0]
    for metric in metric_names:
        values, ref_values = score(metric, task_metric(metric), model, reference, dataset.labels)
        tasks[metric] = {"model": values, "reference": ref_values}
        report.tasks[metric] = {
            "model": sum(values) / len(values),
            "reference": sum(ref_values) / len(ref_values),
            "output": primary,
            "against": "labels" if dataset.labels is not None else "reference",
        }
    report.per_sample = {"outputs": figures_by_output, "tasks": tasks}


def _record(ctx: HubContext, report: EvalReport) -> None:
    metrics: dict[str, float] = {"samples": float(report.samples)}
    for output, figures in report.outputs.items():
        metrics.update({f"{output}.{k}": v for k, v in figures.items()})
    for metric, values in report.tasks.items():
        metrics[metric] = float(values["model"])
        metrics[f"reference.{metric}"] = float(values["reference"])
    if report.passed is not None:
        metrics["goals_passed"] = 1.0 if report.passed else 0.0
        ctx.client.log_param("goal_results", [g.to_dict() for g in report.goals])
    if report.layers is not None:
        first = report.layers["first_divergent"]
        metrics["layers.runs"] = float(report.layers["runs"])
        ctx.client.log_param("first_divergent_layer", first["node"] if first else None)
        layers = ctx.artifact_dir / "layers.json"
        layers.write_text(json.dumps(report.layers))
        ctx.client.log_artifact(layers, name="layers")
    ctx.client.log_metrics(metrics)
    ctx.client.log_param("worst_samples", report.worst)
    path = ctx.artifact_dir / "per_sample.json"
    path.write_text(json.dumps({"samples": report.sample_names, **report.per_sample}))
    ctx.client.log_artifact(path, name="per_sample")
