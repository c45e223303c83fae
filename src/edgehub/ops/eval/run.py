"""`evaluate`: a model's accuracy on a dataset against its float reference, judged by goals.

Every sample runs through the compiled model (the runtime's ``batch_runner`` on the chosen
device, or on this host's NVIDIA GPU for a ``host_gpu`` runtime: `check_host_gpu`; one agent
call for the whole dataset) and through the reference (the original ONNX model in float32 on
this host's reference runtime, `reference_runtime`); the outputs are compared per output and
scored by task metrics, and goals decide whether the model passes. The dataset is checked
against the reference's inputs before any run starts, so bad data leaves no run behind. The
EVAL run (see `measure`) keeps the dataset and labels (stored by content, once), both models'
outputs (``outputs``, ``reference_outputs``: .npz stacked over the samples), every figure as a
metric, the per-sample values as ``per_sample.json`` and the layer search as ``layers.json``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import ModelError, UsageError
from edgehub.ops.cancel import Cancellation
from edgehub.ops.eval.fix import FixReport, check_fix, compile_model, repair, stored_reference
from edgehub.ops.eval.goals import Goal, parse_goal
from edgehub.ops.eval.measure import measure
from edgehub.ops.eval.report import EvalReport
from edgehub.ops.project import Project, Subscriber
from edgehub.toolchains.datasets import Dataset, check_dataset_files, load_dataset, tensor_specs
from edgehub.toolchains.evaluation import model_signature
from edgehub.toolchains.metrics import task_metric

if TYPE_CHECKING:
    from edgehub.core.component.outputs import CompiledModel
    from edgehub.core.context import HubContext
    from edgehub.core.runtimes import RuntimeDescriptor as Runtime
    from edgehub.ops.eval.shards import SampleExecutor
    from edgehub.tracking.run_log import RunLog


EVAL_PROVIDERS = ("local", "ssh", "qai_hub")


def eval_runtimes() -> list[str]:
    """The registered runtimes that can run a dataset (their descriptor's ``batch_runner``)."""
    from edgehub.core.runtimes import all_runtimes

    return [r.name for r in all_runtimes().values() if r.batch_runner is not None and r.available]


@dataclass
class EvalRequest:
    """Evaluate ``runtime``'s compilation of ``model`` (or the model of compile run
    ``from_run``) on ``dataset``. ``options`` are the compiler's; ``metrics`` the task metrics
    to compute (those the goals name are added); ``worst`` how many samples to name.
    ``layers`` is the threshold of the search for the first divergent layer (see `layers`),
    run on the first ``layer_samples`` samples; None: no search. ``reference``: None or the
    reference runtime's name (the original ONNX model in float32 here, `reference_runtime`),
    or an EVAL run on the same dataset whose model's outputs serve as the reference.
    ``fix`` (int8 models): when a goal fails, keep up to this many layers in float, one at
    a time, until the goals hold, and profile the float, int8 and repaired models (`fix`).
    ``calibration`` is set by `evaluate` (see `EvalReport.calibration`)."""

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
    fix: int | None = None
    calibration: str | None = None


def _plan(request: EvalRequest, runtime: Runtime) -> tuple[list[Goal], list[str]]:
    """The goals and the task metrics to compute; usage errors before anything runs."""
    if runtime.batch_runner is None:
        raise UsageError(
            f"hub exec eval does not run {request.runtime!r} models (the runtime declares no "
            f"batch runner); runtimes: {', '.join(eval_runtimes())}"
        )
    if (request.model is None) == (request.from_run is None):
        raise UsageError("hub exec eval needs a MODEL path or --from-run COMPILE_RUN (one)")
    if request.model is not None and not request.model.is_file():
        raise ModelError(f"model {request.model} not found; check the path")
    check_dataset_files(request.dataset, request.labels)  # no FIFO, device or socket
    if request.layers is not None and (not request.layers > 0 or request.layer_samples < 1):
        raise UsageError(
            "{field} takes a positive threshold (relative L2), e.g. 0.2", field="layers"
        )
    if stored_reference(request) and request.layers is not None:
        raise UsageError(
            "{field} runs the reference model; drop the stored reference run for it", field="layers"
        )
    check_fix(request, runtime)
    goals = [parse_goal(text) for text in request.goals]
    names = list(dict.fromkeys([*request.metrics, *(m for g in goals for m in g.task_metrics)]))
    for name in names:
        task_metric(name)  # unknown names fail here
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
    shards: SampleExecutor | None = None,
) -> EvalReport:
    """Run ``request`` on ``project``; the compile run (if any) and the EVAL run are recorded."""
    report, _ = evaluate_and_fix(
        project, request, subscriber=subscriber, cancel=cancel, shards=shards
    )
    return report


def evaluate_and_fix(
    project: Project,
    request: EvalRequest,
    *,
    subscriber: Subscriber | None = None,
    cancel: Cancellation | None = None,
    shards: SampleExecutor | None = None,
) -> tuple[EvalReport, FixReport | None]:
    """`evaluate`, and with ``request.fix`` the repair (`fix.repair`): then the report is the
    last model's eval, and the ``FIX`` run's report comes with it. ``shards`` runs the models
    over shards of the samples elsewhere (`shards`: a cluster's workers)."""
    from edgehub.core.runtimes import get_runtime

    runtime = get_runtime(request.runtime)
    goals, metric_names = _plan(request, runtime)
    cancel = cancel or Cancellation()
    with project.context(subscriber, tags=request.tags) as ctx, cancel.bound(ctx):
        target = ctx.device(request.device or "local")
        provider = target.provider_type
        if provider not in EVAL_PROVIDERS:
            raise UsageError(
                f"hub exec eval runs on devices of the providers {', '.join(EVAL_PROVIDERS)} so "
                f"far; device {request.device!r} uses {provider!r}"
            )
        if shards is not None:
            from edgehub.ops.eval.shards import check_shardable

            check_shardable(request, runtime, target.in_container, str(provider))
        if runtime.host_gpu and not target.in_container:  # its batch runner: a container here
            raise UsageError(
                f"hub exec eval {request.runtime} runs the compiled model on this host's NVIDIA "
                f"GPU; device {request.device!r} uses {str(provider)!r}: drop --device (or pick a "
                "local device)"
            )
        if provider == "qai_hub" and (request.layers is not None or request.fix is not None):
            raise UsageError(
                "--layers and --fix run the model on a local or ssh device; drop them for "
                f"{request.device!r} (qai_hub), or pick such a device"
            )
        reference, compiled, compile_run = _models(ctx, request, runtime, check_only=True)
        signature = model_signature(ctx, reference)
        outputs = [str(o["name"]) for o in signature.get("outputs", [])]
        for goal in goals:
            if goal.output is not None and goal.output not in outputs:
                raise UsageError(
                    f"goal {goal.text!r}: the model has no output {goal.output!r}; outputs: "
                    f"{', '.join(outputs)}"
                )
        dataset = load_dataset(request.dataset, tensor_specs(signature["inputs"]), request.labels)
        ctx.events.info(f"dataset: {len(dataset)} samples checked against {reference.name}")
        if runtime.host_gpu:  # this host's GPU, once the input is known good
            check_host_gpu(ctx, request)
        stored = _reference_run(ctx, request, dataset)
        if shards is not None:  # out of reach: said before the compile
            shards.connect()
        request = _from_dataset(ctx, request, runtime, signature["inputs"], dataset, provider)
        cancel.check()
        with dataset.watch():  # a compile or run that fails on a dataset cut short says so
            if request.fix is not None:
                with _device_lease(project, ctx, request, cancel):
                    fix, last = repair(
                        ctx, request, runtime, dataset, reference, goals, metric_names, cancel
                    )
                return last, fix
            if compiled is None:
                reference, compiled, compile_run = _models(ctx, request, runtime)
                cancel.check()
            assert compiled is not None
            with _device_lease(project, ctx, request, cancel):
                report = measure(
                    ctx, request, dataset, reference, compiled, compile_run, goals, metric_names,
                    cancel, stored, shards,
                )  # fmt: skip
        return report, None


def check_host_gpu(ctx: HubContext, request: EvalRequest) -> None:
    """Where this host shows no NVIDIA GPU, a FAILED EVAL run saying so (and the error,
    `GpuUnavailableError`, exit 3), once the dataset and model are checked, before anything
    is compiled or run."""
    from edgehub.core import RunType
    from edgehub.toolchains import host_gpu

    if host_gpu.detect_gpu().visible:
        return
    model = request.model.stem if request.model is not None else request.from_run
    device = ctx.device(request.device or "local")
    name = request.name or f"eval-{model}"
    with ctx.open_run(RunType.EVAL, name, component="Evaluator", devices=[device]):
        ctx.client.log_param("$runtime", request.runtime)
        host_gpu.require_host_gpu(
            f"hub exec eval {request.runtime} runs the compiled model",
            "Run it on a host with a GPU (and the NVIDIA Container Toolkit), or evaluate "
            "another runtime's compilation here",
        )


def _from_dataset(
    ctx: HubContext,
    request: EvalRequest,
    runtime: Runtime,
    inputs: list[dict[str, Any]],
    dataset: Dataset,
    provider: str,
) -> EvalRequest:
    """``request`` with the compile's shapes and calibration taken from the dataset where the
    user gave none: dynamic input dims fixed at the samples' shape (when every sample has the
    same), and a calibrated compile calibrated on the samples evaluated; ``calibration``
    says where the compiled model's calibration came from."""
    from dataclasses import replace

    options = dict(request.options)
    if request.from_run is not None:  # compiled already: calibrated on what it kept, if any
        log = ctx.store.run_log(request.from_run, run_type="COMPILE")
        given = "calibration_data" in log.artifacts
        return replace(request, calibration="given" if given else None)
    declared = runtime.compiler.declared_options()
    if "input_shape" in declared and options.get("input_shape") is not None:
        _check_given_shapes(options["input_shape"], inputs, _dataset_shapes(inputs, dataset))
    elif "input_shape" in declared:
        shapes = _dataset_shapes(inputs, dataset)
        if shapes:
            options["input_shape"] = shapes
            text = ", ".join(f"{k}:{'x'.join(map(str, v))}" for k, v in shapes.items())
            ctx.events.info(f"compile at the dataset's input shape {text}")
    calibration = None
    # on Qualcomm AI Hub a compile quantizes only when given calibration_data (a quantize job
    # first): the dataset given to it would change what is compiled, not how it is calibrated
    judge = runtime.calibrates if provider != "qai_hub" else None
    if judge is not None and judge(options):
        if options.get("calibration_data") is not None:
            calibration = "given"
        elif "calibration_data" in declared:
            options["calibration_data"] = request.dataset.resolve()
            calibration = "dataset"
            ctx.events.info(f"calibrating on the dataset's {len(dataset)} samples")
        else:
            calibration = "random"
    return replace(request, options=options, calibration=calibration)


def _check_given_shapes(
    given: Any, inputs: list[dict[str, Any]], samples: dict[str, list[int]]
) -> None:
    """A UsageError where ``input_shape`` (a shape for the first input, or name -> shape)
    sizes an input otherwise than its samples are: the compiled model could not take them."""
    if isinstance(given, (list, tuple)):
        given = {str(inputs[0]["name"]): given} if inputs else {}
    if not isinstance(given, dict):
        return
    for name, shape in given.items():
        wanted = samples.get(str(name))
        if wanted is not None and [int(d) for d in shape] != wanted:
            raise UsageError(
                f"input_shape gives {name} {'x'.join(map(str, shape))} but the dataset's "
                f"samples are {'x'.join(map(str, wanted))}: eval compiles at the samples' shape "
                "by itself; drop input_shape, or give samples of that shape"
            )


def _dataset_shapes(inputs: list[dict[str, Any]], dataset: Dataset) -> dict[str, list[int]]:
    """Input name -> the samples' shape, for the inputs with a dynamic dim whose samples all
    have one shape (empty where no input is dynamic)."""
    shapes: dict[str, list[int]] = {}
    for entry in inputs:
        name, dims = str(entry["name"]), entry.get("shape")
        if dims is not None and all(isinstance(d, int) and d > 0 for d in dims):
            continue
        seen = {tuple(sample[name].shape) for sample in dataset.samples if name in sample}
        if len(seen) == 1:
            shapes[name] = [int(d) for d in seen.pop()]
    return shapes


def _reference_run(ctx: HubContext, request: EvalRequest, dataset: Dataset) -> RunLog | None:
    """The EVAL run ``--reference`` names, checked to have run on this very dataset."""
    if not stored_reference(request):
        return None
    assert request.reference is not None
    log = ctx.store.run_log(request.reference, run_type="EVAL", imported_ok=True)  # data only
    if "outputs" not in log.artifacts:
        raise UsageError(f"run {log.run_id[:8]} kept no outputs; pass the id of an eval run")
    logged = log.params.get("dataset_sha256")
    if logged is None or logged.value != dataset.sha256:
        raise UsageError(
            f"run {log.run_id[:8]} evaluated another dataset; give --dataset the same samples "
            "(compared by content), or drop --reference"
        )
    return log


def _device_lease(
    project: Project, ctx: HubContext, request: EvalRequest, cancel: Cancellation
) -> AbstractContextManager[None]:
    """Hold a device other than this host while the samples run on it, as every step on such
    a device does (`held_device`), so an eval does not disturb a measurement there."""
    from edgehub.ops.execute import held_device

    device = ctx.device(request.device or "local")
    what = request.model or request.from_run
    command = f"hub exec eval {request.runtime} {what}"
    return held_device(project, ctx, device, measuring=False, command=command, cancel=cancel)


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
    compiled = compile_model(ctx, request, runtime, model, request.options)
    return model, compiled, compiled.run_log.run_id if compiled.run_log else None
