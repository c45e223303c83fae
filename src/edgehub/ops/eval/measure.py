"""One EVAL run: both models over the samples, the figures, the goals, the layer search.

`measure` runs the compiled model (on its device) and the reference over the checked dataset
with one agent call per model, or one for both where one reference runtime container serves
both; pairs their outputs by name; scores them (`metrics`), judges the goals (`goals`), searches the
first divergent layer when asked (`layers`), and records every figure with the run.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError
from edgehub.ops.eval.goals import check_goal
from edgehub.ops.eval.report import EvalReport
from edgehub.ops.reports import log_json
from edgehub.toolchains.evaluation import (
    batch_runner,
    check_figures,
    pair_outputs,
    run_both,
    runtime_batch_runner,
    score_outputs,
)

if TYPE_CHECKING:
    from edgehub.core.component.outputs import CompiledModel
    from edgehub.core.context import HubContext
    from edgehub.ops.cancel import Cancellation
    from edgehub.ops.eval.goals import Goal
    from edgehub.ops.eval.layers import LayerRow, LayerSearch
    from edgehub.ops.eval.run import EvalRequest
    from edgehub.ops.eval.shards import SampleExecutor
    from edgehub.toolchains.batch import BatchOutputs, BatchRunner
    from edgehub.toolchains.datasets import Dataset
    from edgehub.tracking.run_log import RunLog


def measure(
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
    shards: SampleExecutor | None = None,
) -> EvalReport:
    """The EVAL run of ``compiled`` against ``reference`` (or the outputs of the EVAL run
    ``stored_ref``) over ``dataset``: figures, task metrics, goals and, asked for, the layer
    search, all recorded with the run. ``shards`` runs the models over shards of the samples
    (`shards`); the figures are computed here from the merged outputs all the same."""
    from edgehub.core import RunType
    from edgehub.core.runtimes import reference_runtime
    from edgehub.toolchains.batch import BatchJob, BatchOutputs
    from edgehub.toolchains.tensors import load_npz

    if request.layers is not None:
        _read_first(dataset, request.layer_samples)
    device_name = request.device or "local"
    device = ctx.device(device_name)
    name = request.name or f"eval-{reference.stem}"
    with (
        ctx.open_run(RunType.EVAL, name, component="Evaluator", devices=[device]) as run,
        dataset.watch(),  # failed on a dataset cut short: recorded as that
    ):
        sha = dataset.sha256
        ctx.client.log_params(
            {
                "$runtime": request.runtime,
                "dataset_sha256": sha,
                "samples": len(dataset),
                "task_metrics": metric_names,
                "goals": list(request.goals),
                "compile_run": compile_run,
                "calibration": request.calibration,
            }
        )
        compiled_path = Path(compiled.path.to_local(ctx).local())
        ctx.client.log_artifact(compiled_path, name="input")
        ctx.client.log_artifact(reference, name="reference")
        stored = ctx.client.log_artifact(dataset.path, name="dataset")
        if dataset.labels_path is not None:
            ctx.client.log_artifact(dataset.labels_path, name="labels")
        samples = Path(stored.local())
        model_runner = batch_runner(ctx, request.runtime, request.device)
        ref = reference_runtime().name  # the original ONNX model, as it is, on this host
        same = request.runtime == ref and device.in_container
        reference_runner = (
            model_runner if same else runtime_batch_runner(ctx, ref, None, "reference")
        )
        runners = (model_runner, reference_runner)
        where = "both models in one call" if same else f"the compiled model on {device_name}"
        if stored_ref is not None:
            where = f"the compiled model on {device_name}; reference: run {stored_ref.run_id[:8]}"
        ctx.events.info(f"run {len(dataset)} samples: {where}")
        graph = {"graph": True} if request.layers is not None else {}
        model_job = BatchJob(compiled, "model", graph)
        reference_job = BatchJob(reference, "reference", graph)
        if shards is not None:
            from edgehub.ops.eval.shards import ModelRun

            runs = [ModelRun(model_job, model_runner, request.runtime, request.device)]
            if stored_ref is None:
                who = (request.runtime, request.device, None) if same else (ref, None, "reference")
                runs.append(ModelRun(reference_job, reference_runner, *who))
            found = shards.run_models(ctx, dataset, samples, runs, cancel)
            model_out, reference_out = found[0], found[-1]
        elif stored_ref is not None:
            (model_out,) = model_runner.run_many(
                [model_job], samples, stacked=dataset.stacked, digest=sha
            )
        else:
            model_out, reference_out = run_both(
                runners, (model_job, reference_job), samples, dataset.stacked, sha
            )
        if stored_ref is not None:
            path = Path(stored_ref.artifacts["outputs"].local())
            reference_out = BatchOutputs(load_npz(path), {}, path, {})
        cancel.check()
        pairs = pair_outputs(ctx, model_out.arrays, reference_out.arrays)
        with ThreadPoolExecutor(1, thread_name_prefix="edgehub-score") as pool:
            # scored while the outputs are stored: numpy and hashing both let go of the GIL
            scoring = pool.submit(score_outputs, pairs, dataset, metric_names, request.worst)
            ctx.client.log_artifact(model_out.path, name="outputs", file_name="outputs.npz")
            ctx.client.log_artifact(
                reference_out.path, name="reference_outputs", file_name="reference_outputs.npz"
            )
            scores = scoring.result()
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
            calibration=request.calibration,
            timings_ms={
                "model": float(model_out.metrics.get("inference_ms", 0.0)),
                "reference": float(reference_out.metrics.get("inference_ms", 0.0)),
            },
        )
        report.outputs, report.worst = scores.outputs, scores.worst
        report.tasks, report.per_sample = scores.tasks, scores.per_sample
        report.goals = [check_goal(g, report.outputs, report.tasks) for g in goals]
        if request.layers is not None:
            outs = (model_out, reference_out)
            search, first = _layers(ctx, request, dataset, (compiled, reference), runners, outs)
            report.layers = search.to_dict(first, min(request.layer_samples, len(dataset)))
            report.layer_search = (search.rows, first)
        dataset.check_unchanged()  # figures of a dataset rewritten meanwhile are of neither
        _record(ctx, report)
    report.status = "FINISHED"
    return report


def _read_first(dataset: Dataset, count: int) -> None:
    """Read the first ``count`` samples into memory now, for the layer search: the samples of
    a stacked dataset are mapped views of the user's file, which may be rewritten in place
    while the models run, and reading a mapped page past its new end would end this process."""
    import numpy as np

    for index in range(min(count, len(dataset))):
        dataset.samples[index] = {k: np.array(v) for k, v in dataset.samples[index].items()}


def _layers(
    ctx: HubContext,
    request: EvalRequest,
    dataset: Dataset,
    models: tuple[CompiledModel, Path],
    runners: tuple[BatchRunner, BatchRunner],
    outs: tuple[BatchOutputs, BatchOutputs],
) -> tuple[LayerSearch, LayerRow | None]:
    """Bisect for the first divergent layer on the first ``layer_samples`` samples."""
    from edgehub.ops.eval.layers import LayerSearch, layer_rows, qdq_match
    from edgehub.toolchains.batch import BatchJob
    from edgehub.toolchains.tensors import save_npz

    assert request.layers is not None
    count = min(request.layer_samples, len(dataset))
    folder = ctx.artifact_dir / "layer_samples"
    for index in range(count):
        save_npz(folder / f"{index:06d}.npz", dataset.samples[index])
    nodes = outs[1].data.get("graph", [])
    if runners[0].maps_tensors:  # the compiler's mapping of ONNX onto the model's tensors
        pairs: dict[str, str] = dict(outs[0].data.get("tensors") or {})
        if len(pairs) <= len(outs[0].arrays) < len(nodes):
            raise UsageError(
                "the compiled model's mapping pairs none of the ONNX model's intermediate "
                "tensors (compiled by an older edgehub, or the pairing failed: see the "
                "compile's warnings); recompile it for --layers"
            )
        rows = layer_rows(nodes, pairs.get)
    else:
        rows = layer_rows(nodes, qdq_match(outs[0].data.get("graph", [])))

    def probe(marks: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        ctx.events.info(f"layers: probe {', '.join(marks.values())}")
        jobs = (
            BatchJob(models[0], "layers.model", {"extra_outputs": list(marks)}),
            BatchJob(models[1], "layers.reference", {"extra_outputs": list(marks.values())}),
        )
        model, reference = run_both(runners, jobs, folder, False)
        counts = model.data.get("engine_layers")  # TensorRT: the engine built with the marks
        if isinstance(counts, dict) and counts.get("probe") != counts.get("engine"):
            ctx.events.warning(
                f"layers: marking {', '.join(marks)} as outputs changed TensorRT's fusions "
                f"({counts.get('engine')} engine layers, {counts.get('probe')} with the marks): "
                "their values are those of the unfused layers"
            )
            search.unfused.append({"tensors": list(marks), **counts})
        return model.arrays, reference.arrays

    search = LayerSearch(rows, request.layers, probe)
    first = search.first_divergent()
    if first is not None:
        ctx.events.info(f"layers: first divergent layer {first.node} ({first.op})")
    else:
        ctx.events.info(f"layers: no divergent layer above the threshold ({request.layers:g})")
    return search, first


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
        log_json(ctx, "layers.json", report.layers, name="layers")
    ctx.client.log_metrics(check_figures(metrics))
    worst = {output: [row["sample"] for row in rows] for output, rows in report.worst.items()}
    ctx.client.log_param("worst_samples", worst)  # names; their figures: per_sample.json
    per_sample = {"samples": report.sample_names, **report.per_sample}
    log_json(ctx, "per_sample.json", per_sample, name="per_sample")
