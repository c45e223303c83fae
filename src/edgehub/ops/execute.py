"""Running one component, or the compile → profile → invoke pipeline, on any runtime.

`execute` is what `hub exec` and the TUI's Run screen call. It opens a context on the
project, runs what the `ExecRequest` asks for, and returns a `RunReport` (one step) or a
`PipelineReport`. A `Cancellation` stops it from another thread: the running commands are
stopped, the run ends KILLED and `OperationCancelled` is raised.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import (
    CommandTimeout,
    GpuUnavailableError,
    InputDataError,
    OperationCancelled,
    UsageError,
)
from edgehub.ops.cancel import Cancellation
from edgehub.ops.project import Project, Subscriber
from edgehub.ops.reports import PipelineReport, RunReport, summarize
from edgehub.user_files import input_data_path, regular_file

if TYPE_CHECKING:
    from edgehub.core.component.base import Component
    from edgehub.core.component.outputs import CompiledModel
    from edgehub.core.context import HubContext
    from edgehub.core.device.spec import Device
    from edgehub.core.runtimes import RuntimeDescriptor as Runtime


STEPS = ("compile", "profile", "invoke", "pipeline")


@dataclass
class ExecRequest:
    """What to run: ``step`` of ``runtime`` on ``model`` (or the model of run ``from_run``).

    ``options`` maps a step (compile/profile/invoke) to that component's options; ``inputs``
    is an `.npz` of input tensors (profile, invoke and pipeline); ``from_job`` attaches to a
    Qualcomm AI Hub job submitted earlier instead of submitting a new one; ``transform``
    names a deployment backend (``"auto"``: the active or only installed one) whose graph
    patterns rewrite the model before it is compiled. ``lease_timeout`` bounds the wait for
    the device's lease (see `held_device`; default one hour). ``timeout`` (seconds) bounds
    the request once the device is held: past it, its commands are stopped, its runs end
    FAILED and `~edgehub.errors.CommandTimeout` is raised. ``dataset`` (pipeline): a last
    step evaluates the compiled model on it with the runtime's evaluator (see
    `edgehub.toolchains.evaluators`), scoring the task ``metrics`` against ``labels``.
    ``image_tags`` (runtime -> image tag or digest) overrides hub.toml's ``[images]`` for this
    request (a rerun on a recorded image). A compile reuses a stored compile of the same
    content (`ops.compile_cache`) unless ``no_cache``. ``pin_cpus`` (``"0-1,3"``) runs the
    steps on those CPUs where the device's runner can pin (`ops.pinning`)."""

    step: str
    runtime: str
    model: Path | None = None
    device: str | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    inputs: Path | None = None
    from_run: str | None = None
    from_job: str | None = None
    transform: str | None = None
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    lease_timeout: float | None = None
    timeout: float | None = None
    dataset: Path | None = None
    labels: Path | None = None
    metrics: list[str] = field(default_factory=list)
    image_tags: dict[str, str] = field(default_factory=dict)
    no_cache: bool = False
    pin_cpus: str | None = None


def step_components(runtime: Runtime, step: str) -> dict[str, type[Component]]:
    """The component class of each step that ``step`` runs."""
    if step not in STEPS:
        raise UsageError(f"unknown step {step!r}; steps: {', '.join(STEPS)}")
    every = {"compile": runtime.compiler, "profile": runtime.profiler, "invoke": runtime.invoker}
    return every if step == "pipeline" else {step: every[step]}


def _check(request: ExecRequest, runtime: Runtime) -> None:
    """Flags the step cannot use first, then the files."""
    step = request.step
    if step in ("compile", "pipeline") and request.from_run:
        raise UsageError(f"--from-run does not apply to {step}; give the ONNX model path")
    if request.inputs is not None and step == "compile":
        raise UsageError(
            "--input does not apply to compile; give calibration data with "
            "--set calibration_data=FILE.npz"
        )
    if (
        request.inputs is not None
        and step in ("profile", "pipeline")
        and not _takes_inputs(runtime)
    ):
        raise UsageError(
            f"the {runtime.name} profiler takes no input data; drop --input to profile "
            "on random inputs"
        )
    if request.transform and step not in ("compile", "pipeline"):
        raise UsageError(f"--transform does not apply to {step}; it rewrites a model to compile")
    if request.from_job and step == "pipeline":
        raise UsageError("--from-job does not apply to pipeline; resume one step at a time")
    if request.dataset is None and (request.labels is not None or request.metrics):
        raise UsageError("--labels and --metric score a --dataset; add one (pipeline)")
    if request.dataset is not None:
        if step != "pipeline":
            raise UsageError(
                f"--dataset does not apply to {step}; use hub exec pipeline, or hub exec eval"
            )
        if runtime.evaluator is None:
            raise UsageError(f"{runtime.name} has no evaluator yet; drop --dataset")
        from edgehub.toolchains.datasets import check_dataset_files

        check_dataset_files(request.dataset, request.labels)  # as --input: no FIFO, device
    if request.model is None and not request.from_run:
        raise UsageError(f"hub exec {step} needs a MODEL path (or --from-run RUN_ID)")
    if request.model is not None and request.from_run:
        raise UsageError("give either MODEL or --from-run, not both")
    if request.model is not None:
        regular_file(request.model, "model")
    if request.inputs is not None:
        input_data_path(request.inputs)
    every = step_components(runtime, "pipeline")
    for step, options in request.options.items():  # --set input_data=PATH: checked as --input is
        declared = every[step].declared_options() if step in every else {}
        for name, value in options.items():
            spec = declared.get(name)
            if spec is not None and spec.path and isinstance(value, (str, os.PathLike)):
                regular_file(value, name, InputDataError, directory_ok=True)


@contextmanager
def _context(
    project: Project, request: ExecRequest, subscriber: Subscriber | None, cancel: Cancellation
) -> Iterator[HubContext]:
    with project.context(subscriber, tags=request.tags) as ctx, cancel.bound(ctx):
        ctx.image_tags.update(request.image_tags)
        if request.pin_cpus is not None:
            from edgehub.core.runtimes import get_runtime
            from edgehub.ops.pinning import pin_cpus

            components = step_components(get_runtime(request.runtime), request.step)
            pin_cpus(ctx, request.pin_cpus, request.device, list(components.values()))
        yield ctx


def execute(
    project: Project,
    request: ExecRequest,
    *,
    subscriber: Subscriber | None = None,
    cancel: Cancellation | None = None,
) -> RunReport | PipelineReport:
    """Run ``request`` on ``project``; every run it starts is recorded in the project's store."""
    from edgehub.core.runtimes import get_runtime

    runtime = get_runtime(request.runtime)
    step_components(runtime, request.step)
    _check(request, runtime)
    cancel = cancel or Cancellation()
    with (
        _context(project, request, subscriber, cancel) as ctx,
        _device_lease(project, ctx, request, runtime, cancel),
        _deadline(ctx, cancel, request.timeout) as cancel,
    ):
        if request.step == "pipeline":
            return _pipeline(ctx, request, runtime, cancel)
        return _one_step(ctx, request, runtime)


@contextmanager
def _deadline(
    ctx: HubContext, cancel: Cancellation, seconds: float | None
) -> Iterator[Cancellation]:
    """``cancel``, or with ``seconds`` a `Cancellation` of ``ctx`` that ``cancel`` stops too
    and that stops itself after ``seconds`` (counted once the device is held) with a
    `CommandTimeout` as its reason."""
    if seconds is None:
        yield cancel
        return
    import threading

    own = Cancellation()
    own.bind(ctx)
    expired = CommandTimeout(
        f"timed out after {seconds:g} s (hub exec --timeout); its commands were stopped"
    )
    # a wait has a largest timeout (about 292 years): a longer one is that one
    watcher = threading.Timer(min(seconds, threading.TIMEOUT_MAX), own.cancel, (expired,))
    watcher.name, watcher.daemon = "edgehub-timeout", True
    unlink = cancel.link(own)
    watcher.start()
    try:
        yield own
    except OperationCancelled:
        if own.reason is None:
            raise
        raise own.reason from None
    finally:
        watcher.cancel()
        unlink()
        own.release(ctx)


# -- holding the device: one measurement per board at a time (see edgehub.acquire) ----------


@contextmanager
def held_device(
    project: Project,
    ctx: HubContext,
    device: Device,
    *,
    measuring: bool,
    command: str,
    cancel: Cancellation,
    timeout: float | None = None,
    probe: bool = False,
) -> Iterator[None]:
    """Hold ``device`` for the block (`edgehub.acquire.hold`; with ``probe``, its board's
    health probed first) when `~edgehub.acquire.needs_hold` says so: always for a measurement,
    for any work on a device that is not this host, never for a cloud service. The context's
    device of that name is the held one meanwhile (a labgrid place's board)."""
    from edgehub.acquire import hold, needs_hold

    if not needs_hold(device, measuring=measuring):
        yield
        return
    with (
        hold(
            project.config, device, timeout=timeout, command=command, events=ctx.events,
            cancelled=cancel.wait, probe=probe,
        ) as held,
        ctx.holding(held.device),
    ):  # fmt: skip
        yield


def _device_lease(
    project: Project, ctx: HubContext, request: ExecRequest, runtime: Runtime, cancel: Cancellation
) -> AbstractContextManager[None]:
    """`held_device` for the device the request's step runs on (probed first)."""
    from edgehub.core.component.dispatch import resolve_device

    step = "profile" if request.step == "pipeline" else request.step
    device = resolve_device(step_components(runtime, request.step)[step], ctx, request.device)
    what = request.model or request.from_run
    return held_device(
        project, ctx, device, measuring=request.step in ("profile", "pipeline"),
        command=f"hub exec {request.step} {request.runtime} {what}", cancel=cancel,
        timeout=request.lease_timeout, probe=True,
    )  # fmt: skip


def _common(request: ExecRequest, step: str, *, named: bool = True) -> dict[str, Any]:
    kwargs = dict(request.options.get(step, {}))
    if request.device:
        kwargs["device"] = request.device
    if named and request.name:
        kwargs["name"] = request.name
    return kwargs


def _profile_inputs(request: ExecRequest, kwargs: dict[str, Any]) -> dict[str, Any]:
    if request.inputs is not None:
        kwargs.setdefault("input_data", request.inputs.resolve())
    return kwargs


def _one_step(ctx: HubContext, request: ExecRequest, runtime: Runtime) -> RunReport:
    step = request.step
    kwargs = _common(request, step)
    if step == "compile":
        assert request.model is not None
        compiled = _compile(ctx, request, runtime.compiler(**kwargs), request.model.resolve())
        return summarize(compiled)
    model = _model(ctx, request, runtime)
    if step == "profile":
        profiler = runtime.profiler(**_profile_inputs(request, kwargs))
        return summarize(_run_or_resume(ctx, request, profiler, model))
    inputs = _invoke_inputs(ctx, request, runtime, model)
    return summarize(_run_or_resume(ctx, request, runtime.invoker(**kwargs), model, inputs))


def _run_or_resume(ctx: HubContext, request: ExecRequest, component: Component, *args: Any) -> Any:
    """``component.run``, or attach to the AI Hub job (or AWS Device Farm run ARN)
    ``request.from_job``."""
    if request.from_job and request.from_job.startswith("arn:aws:devicefarm:"):
        from edgehub.toolchains.aws import resume_device_farm_run

        return resume_device_farm_run(ctx, component, request.from_job, *args)
    if request.from_job:
        from edgehub.toolchains.qai_hub import resume_job

        return resume_job(ctx, component, request.from_job, *args)
    return component.run(ctx, *args)


def _compile(ctx: HubContext, request: ExecRequest, compiler: Component, model: Path) -> Any:
    """Compile ``model``, first rewritten by the backend ``request.transform`` names; the
    compile run records which patterns fired and the node counts before and after."""
    if not request.transform:
        return _cached_compile(ctx, request, compiler, model)
    from edgehub.deploy import apply_backend

    backend = None if request.transform == "auto" else request.transform
    with tempfile.TemporaryDirectory(prefix="edgehub-transform-") as scratch:
        rewritten = Path(scratch) / f"{model.stem}.transformed.onnx"
        report = apply_backend(model, backend, rewritten)
        ctx.events.info(f"transform ({report.backend}): {report.summary()}")
        compiled = _cached_compile(ctx, request, compiler, rewritten)
    ctx.client.annotate(
        compiled.run_log,
        {"transform.backend": report.backend, "transform.source": str(model),
         "transform.fired": report.fired()},
        {"transform.nodes_before": report.nodes_before,
         "transform.nodes_after": report.nodes_after},
    )  # fmt: skip
    return compiled


def _cached_compile(ctx: HubContext, request: ExecRequest, compiler: Component, model: Path) -> Any:
    """Compile ``model``, or reuse a stored compile of the same content (`ops.compile_cache`)
    unless ``request.no_cache``; a compile that builds records its key."""
    if request.from_job:
        return _run_or_resume(ctx, request, compiler, model)
    from edgehub.core.runtimes import get_runtime
    from edgehub.ops import compile_cache

    given = _common(request, "compile", named=False)
    key = compile_cache.cache_key(ctx, type(compiler), model, given, request.device)
    if key is None:
        return _run_or_resume(ctx, request, compiler, model)
    found = None if request.no_cache else compile_cache.find_cached(ctx, key)
    if found is not None:
        return compile_cache.reuse(ctx, get_runtime(request.runtime), compiler, found, key.device)
    compiled = _run_or_resume(ctx, request, compiler, model)
    compile_cache.remember(ctx, compiled, key)
    return compiled


def _invoke_inputs(
    ctx: HubContext, request: ExecRequest, runtime: Runtime, model: CompiledModel
) -> dict[str, Any] | None:
    """The ``--input`` arrays; else None for an invoker that makes random inputs where the
    model runs (no extra round trip), else random inputs from the runtime's inspection."""
    from edgehub.ops.inputs import makes_own_inputs, model_inputs

    if request.inputs is None and makes_own_inputs(runtime.invoker):
        ctx.events.warning("no --input given: using random inputs (seed 0)")
        return None
    path = model.path.to_local(ctx).local()
    return model_inputs(ctx, runtime, Path(path), request.device, request.inputs)


def _model(ctx: HubContext, request: ExecRequest, runtime: Runtime) -> CompiledModel:
    if request.model is not None:
        return runtime.compiled_model.from_path(request.model.resolve())
    assert request.from_run is not None
    log = ctx.store.run_log(request.from_run, run_type="COMPILE")
    if "path" not in log.artifacts and "$path" not in log.artifacts:
        raise UsageError(
            f"run {log.run_id[:8]} ({log.name}, {log.run_type}) produced no model; "
            "pass the id of a compile run"
        )
    return runtime.compiled_model.from_run_log(log)


def _pipeline(
    ctx: HubContext, request: ExecRequest, runtime: Runtime, cancel: Cancellation
) -> PipelineReport:
    from edgehub.core.runtimes import reference_runtime
    from edgehub.ops.inputs import model_inputs

    assert request.model is not None
    model = request.model.resolve()
    here = _reference_device(ctx)
    if here is None and request.inputs is None:
        raise UsageError(
            "the pipeline needs input data: no device with provider 'local' here to read the "
            "model's inputs with; pass --input FILE.npz"
        )
    # the compiled and the original model must see the same arrays: make them here, from the
    # original ONNX model, with the reference runtime on this host, at the input_shape given
    # (once, for every step: the compile fixes it, profile and invoke run on arrays of it)
    shape = pipeline_input_shape(request)
    inputs = model_inputs(ctx, reference_runtime(), model, here, request.inputs, shape)
    if shape is not None and not isinstance(shape, Mapping) and inputs:
        request = _shape_by_name(request, {next(iter(inputs)): shape})
    if request.dataset is not None and here is not None:
        _check_dataset(ctx, model, request.dataset, request.labels)
    ctx.events.info("step 1/4: compile")
    compiler = runtime.compiler(**_common(request, "compile", named=False))
    compiled = _compile(ctx, request, compiler, model)
    cancel.check()
    ctx.events.info("step 2/4: profile the compiled model")
    profile_options = _profile_inputs(request, _common(request, "profile", named=False))
    if "input_data" not in profile_options and inputs and _serves_inputs(ctx, request, runtime):
        # the arrays made above, not the profiler's own random ones: those know the ONNX
        # model (an embedding's table size), the compiled model's do not
        profile_options["input_data"] = inputs
    if "input_data" in profile_options:  # the arrays given carry their shapes
        profile_options.pop("input_shape", None)
    try:
        profile = runtime.profiler(**profile_options).run(ctx, compiled)
    except GpuUnavailableError as why:
        ctx.events.warning(f"pipeline stops after compile: {why}")
        return PipelineReport(compile=summarize(compiled), stopped_after_compile=str(why))
    cancel.check()
    ctx.events.info("step 3/4: invoke the compiled model")
    invoke_options = _common(request, "invoke", named=False)
    invoke_options.pop("input_shape", None)  # the inputs made above are of that shape
    invoker = runtime.invoker(**invoke_options)
    result = invoker.run(ctx, compiled, inputs)
    cancel.check()
    report = PipelineReport(
        compile=summarize(compiled), profile=summarize(profile), invoke=summarize(result)
    )
    _reference(ctx, model, inputs, here, result.output, report)
    if request.dataset is not None and runtime.evaluator is not None:
        cancel.check()
        ctx.events.info(f"eval: the compiled model on the dataset {request.dataset.name}")
        evaluator = runtime.evaluator(**_common(request, "eval", named=False))
        evaluation = evaluator.run(
            ctx, compiled, request.dataset.resolve(), reference=model, labels=request.labels,
            metrics=list(request.metrics),
        )  # fmt: skip
        report.eval = summarize(evaluation)
    return report


def _takes_inputs(runtime: Runtime) -> bool:
    return "input_data" in runtime.profiler.declared_options()


def _serves_inputs(ctx: HubContext, request: ExecRequest, runtime: Runtime) -> bool:
    """Whether the profiler declares ``input_data`` and its provider for the step's device
    takes it."""
    from edgehub.core.component.dispatch import resolve_device

    if not _takes_inputs(runtime):
        return False
    device = resolve_device(runtime.profiler, ctx, request.device)
    found = runtime.profiler.provider_for(str(device.provider_type))
    return found is not None and (found[1].var_keyword or "input_data" in found[1].accepts)


def pipeline_input_shape(request: ExecRequest) -> Any:
    """The ``input_shape`` a pipeline runs at: the one given to any of its steps (an
    unscoped ``--set input_shape=`` reaches each step that declares it); steps given
    different shapes are a `UsageError`, since one set of arrays runs through all of them."""
    given = {
        step: options["input_shape"]
        for step, options in request.options.items()
        if options.get("input_shape") is not None
    }
    if len({repr(v) for v in given.values()}) > 1:
        raise UsageError(
            "the pipeline's steps were given different input_shape values "
            f"({', '.join(f'{k}: {v}' for k, v in given.items())}); give one, unscoped: "
            "--set input_shape=..."
        )
    return next(iter(given.values()), None)


def _shape_by_name(request: ExecRequest, named: dict[str, Any]) -> ExecRequest:
    """``request`` with each step's plain ``input_shape`` given as ``named`` (the first
    input's name -> that shape), the form every step's tool takes (trtexec's --shapes)."""
    from dataclasses import replace

    options = {
        step: {**given, "input_shape": named} if given.get("input_shape") is not None else given
        for step, given in request.options.items()
    }
    return replace(request, options=options)


def _check_dataset(ctx: HubContext, model: Path, dataset: Path, labels: Path | None) -> None:
    """The pipeline's ``--dataset`` (and labels) checked against the model's inputs before
    any step runs: a bad sample is one `InputDataError` naming it, and nothing is stored."""
    from edgehub.toolchains.datasets import load_dataset, tensor_specs
    from edgehub.toolchains.evaluation import model_signature

    specs = tensor_specs(model_signature(ctx, model)["inputs"])
    checked = load_dataset(dataset, specs, labels)
    ctx.events.info(f"dataset: {len(checked)} samples checked against {model.name}")


def _reference_device(ctx: HubContext) -> str | None:
    """Where the pipeline's reference runs, whatever device the pipeline measures: ONNX
    Runtime in its container on this host, i.e. the device ``local`` (else the first device
    whose provider works in containers here, `Device.in_container`); None where the context
    has none."""
    devices = ctx.devices
    if "local" in devices and devices["local"].in_container:
        return "local"
    return next((n for n, d in devices.items() if d.in_container), None)


def _reference(
    ctx: HubContext,
    model: Path,
    inputs: dict[str, Any],
    here: str | None,
    compiled_outputs: dict[str, Any],
    report: PipelineReport,
) -> None:
    """Step 4: the original model in the reference runtime on this host (float32), and the
    compiled model's accuracy against it; skipped with a note where this host cannot run it."""
    from edgehub.core.runtimes import reference_runtime
    from edgehub.errors import DockerUnavailableError, ImageNotBuiltError
    from edgehub.toolchains.accuracy import compare_outputs

    if here is None:
        report.reference_note = "reference skipped: no device with provider 'local' here"
        ctx.events.warning(report.reference_note)
        return
    runtime = reference_runtime()
    ctx.events.info(f"step 4/4: invoke the original model in {runtime.name} on {here} (reference)")
    invoker = runtime.invoker(name="reference", device=here)
    try:
        reference = invoker.run(ctx, runtime.compiled_model.from_path(model), inputs)
    except (DockerUnavailableError, ImageNotBuiltError) as why:
        report.reference_note = f"reference skipped: no {runtime.name} on this host ({why})"
        ctx.events.warning(report.reference_note)
        return
    report.reference = summarize(reference)
    report.accuracy = compare_outputs(compiled_outputs, reference.output)
    if not report.accuracy:
        report.reference_note = (
            "no output of the compiled model has the name of one of the original's "
            f"(compiled: {', '.join(compiled_outputs) or 'none'}; original: "
            f"{', '.join(reference.output) or 'none'}): nothing to compare"
        )
        ctx.events.warning(report.reference_note)
