"""`--fix`: the fewest layers of an int8 model to keep in float so that its accuracy goals
hold, and what that repair costs in latency.

Greedy, from the first divergent layer (`layers`): each step keeps one more layer in float
(the matched layer with the nodes the compiler fused into it, given to the compiler as
``exclude_nodes``: ONNX Runtime's ``nodes_to_exclude`` for a QDQ model, TensorFlow's
selective quantization for TFLite, for TensorRT a QDQ model without Q/DQ around them, which its
strongly typed network must compute in float32: see `edgehub.toolchains.tensorrt.precision`),
recompiles, re-evaluates and searches the repaired model again. Where the first divergent
layer is one kept in float already, its output is still quantized for the layers it feeds, so
those layers are kept next. It stops when the goals hold, when no layer is left to propose, or
after ``limit`` layers. Then the float model (the runtime's float precision, its ``repair``),
the fully quantized one and the repaired one are evaluated and profiled on the same device, for
the table of accuracy against latency. Every run (compiles, evals, profiles) is a child of one
``FIX`` run, which keeps the steps and the table as ``fix.json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError
from edgehub.ops.reports import log_json

if TYPE_CHECKING:
    from pathlib import Path

    from edgehub.core.component.outputs import CompiledModel
    from edgehub.core.context import HubContext
    from edgehub.core.runtimes import RuntimeDescriptor as Runtime
    from edgehub.ops.cancel import Cancellation
    from edgehub.ops.eval.goals import Goal
    from edgehub.ops.eval.layers import LayerRow
    from edgehub.ops.eval.report import EvalReport
    from edgehub.ops.eval.run import EvalRequest
    from edgehub.toolchains.datasets import Dataset


FIX_RUN = "FIX"
DEFAULT_THRESHOLD = 0.2


@dataclass
class FixReport:
    """The ``FIX`` run: ``steps`` (one per layer tried: the nodes kept in float so far, the
    compile and eval runs, whether the goals held), ``table`` (float, int8 and repaired: the
    figures of each model and its median latency) and the final eval of the repaired model."""

    run_id: str
    limit: int
    passed: bool
    reason: str
    kept_layers: list[str] = field(default_factory=list)
    kept_nodes: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    table: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"run_id": data.pop("run_id"), "type": FIX_RUN, **data}


def check_fix(request: EvalRequest, runtime: Runtime) -> None:
    """Usage errors of ``--fix`` before anything runs (what the runtime's ``repair`` says of
    the compile's options among them)."""
    from edgehub.core.runtimes import all_runtimes

    if request.fix is None:
        return
    if runtime.repair is None:
        repairable = [r.name for r in all_runtimes().values() if r.repair is not None]
        raise UsageError(
            f"{{field}} repairs {', '.join(repairable)} int8 models; drop it", field="fix"
        )
    if request.model is None:
        raise UsageError(
            "{field} recompiles the model: give a model path, not a compile run", field="fix"
        )
    problem = runtime.repair.problem(request.options)
    if problem is not None:
        raise UsageError(problem)
    if not request.goals:
        raise UsageError(
            "{field} repairs until the goals hold: name at least one goal", field="fix"
        )
    if request.fix < 1:
        raise UsageError(
            "{field} takes the most layers to keep in float, a positive number", field="fix"
        )
    if stored_reference(request):
        raise UsageError(
            "{field} runs the reference model; drop the stored reference run for it", field="fix"
        )


def stored_reference(request: EvalRequest) -> bool:
    """Whether ``request.reference`` names a stored EVAL run (not the reference runtime)."""
    from edgehub.core.runtimes import reference_runtime

    return request.reference is not None and request.reference != reference_runtime().name


def propose(rows: list[LayerRow], first: LayerRow, kept: list[str]) -> list[str]:
    """The nodes to keep in float next: ``first`` (the first divergent layer) with the nodes
    fused into it; where those are all kept already, the nearest layers its output feeds that
    are not (through layers kept in float), each with the nodes fused into it."""
    new = [node for node in [*first.fused, first.node] if node not in kept]
    if new:
        return new
    found: list[str] = []
    seen = {first.index}
    pending = [first.index]
    while pending:
        index = pending.pop(0)
        for row in rows:
            if index not in row.producers or row.index in seen:
                continue
            seen.add(row.index)
            if row.node in kept:
                pending.append(row.index)
                continue
            owner = row if row.compiled_tensor is not None else _owner(rows, row)
            for node in [*owner.fused, owner.node] if owner else [row.node]:
                if node not in kept and node not in found:
                    found.append(node)
    return found


def _layers(count: int) -> str:
    return f"{count} layer" if count == 1 else f"{count} layers"


def _owner(rows: list[LayerRow], row: LayerRow) -> LayerRow | None:
    """The matched layer that ``row`` (fused or renamed) was folded into."""
    return next((r for r in rows if row.node in r.fused), None)


def repair(
    ctx: HubContext,
    request: EvalRequest,
    runtime: Runtime,
    dataset: Dataset,
    reference: Path,
    goals: list[Goal],
    metric_names: list[str],
    cancel: Cancellation,
) -> tuple[FixReport, EvalReport]:
    """The ``FIX`` run of ``request`` (see the module); returns it and the last eval."""
    assert request.model is not None and request.fix is not None
    device = ctx.device(request.device or "local")
    name = request.name or f"fix-{reference.stem}"
    threshold = request.layers or DEFAULT_THRESHOLD
    with ctx.open_run(FIX_RUN, name, devices=[device]) as parent, ctx.children_of(parent.run_id):
        ctx.client.log_params(
            {"$runtime": request.runtime, "limit": request.fix, "goals": list(request.goals)}
        )
        fix = FixReport(parent.run_id, request.fix, False, "")
        step_request = replace(request, layers=threshold, name=None)

        def attempt(kept: list[str]) -> tuple[CompiledModel, EvalReport]:
            options = dict(request.options, exclude_nodes=list(kept)) if kept else request.options
            label = f"fix step {len(fix.steps)}"
            compiled = compile_model(ctx, request, runtime, reference, options, label)
            cancel.check()
            step = replace(step_request, name=label)
            report = _measure(ctx, step, dataset, reference, compiled, goals, metric_names, cancel)
            fix.steps.append(
                {
                    "kept_nodes": list(kept),
                    "compile_run": _run_id(compiled),
                    "eval_run": report.run_id,
                    "passed": report.passed,
                    "first_divergent": (report.layers or {}).get("first_divergent"),
                }
            )
            return compiled, report

        quantized, first_report = attempt([])
        compiled, report = quantized, first_report
        kept: list[str] = []
        while not report.passed:
            if len(fix.kept_layers) >= request.fix:
                fix.reason = f"the goals still fail with {_layers(len(fix.kept_layers))} in float"
                break
            search = report.layer_search
            first = search[1] if search else None
            if search is None or first is None:
                fix.reason = "no layer diverges above the threshold: nothing left to keep in float"
                break
            nodes = propose(search[0], first, kept)
            if not nodes:
                fix.reason = f"{first.node} and the layers it feeds are in float already"
                break
            kept += nodes
            fix.kept_layers.append(nodes[-1])
            ctx.events.info(f"fix: keep {', '.join(nodes)} in float ({len(fix.kept_layers)})")
            compiled, report = attempt(kept)
        fix.passed = bool(report.passed)
        fix.kept_nodes = kept
        if fix.passed:
            fix.reason = (
                f"the goals hold with {_layers(len(fix.kept_layers))} in float"
                if kept
                else "the goals hold without a repair"
            )
        ctx.events.info(f"fix: {fix.reason}")
        precision = runtime.repair
        assert precision is not None  # `check_fix`
        dropped = (*precision.quantized_only, precision.key)
        float_options = {k: v for k, v in request.options.items() if k not in dropped}
        float_options[precision.key] = precision.float_value
        float_model = compile_model(ctx, request, runtime, reference, float_options, "fix float32")
        plain = replace(request, layers=None, name="fix float32")
        float_report = _measure(
            ctx, plain, dataset, reference, float_model, goals, metric_names, cancel
        )
        variants: list[tuple[str, CompiledModel, EvalReport, list[str]]] = [
            ("float32", float_model, float_report, []),
            ("int8", quantized, first_report, []),
        ]
        if kept:
            variants.append(("repaired", compiled, report, kept))
        for label, model, evaluated, nodes in variants:
            cancel.check()
            profile = runtime.profiler(name=f"fix {label}").run(ctx, model, device=request.device)
            row = _row(label, model, evaluated, profile, nodes)
            row["layers_in_float"] = len(fix.kept_layers) if nodes else 0
            fix.table.append(row)
        _record(ctx, fix)
    return fix, report


def compile_model(
    ctx: HubContext,
    request: EvalRequest,
    runtime: Runtime,
    model: Path,
    options: dict[str, Any],
    name: str | None = None,
) -> CompiledModel:
    """``model`` compiled with ``options`` on the request's device (its run named ``name``)."""
    options = dict(options) if name is None else dict(options, name=name)
    if request.device:
        options["device"] = request.device
    ctx.events.info(f"compile {model.name} for {runtime.name}")
    compiled: CompiledModel = runtime.compiler(**options).run(ctx, model)
    return compiled


def _measure(
    ctx: HubContext,
    request: EvalRequest,
    dataset: Dataset,
    reference: Path,
    compiled: CompiledModel,
    goals: list[Goal],
    metric_names: list[str],
    cancel: Cancellation,
) -> EvalReport:
    from edgehub.ops.eval.measure import measure

    run = _run_id(compiled)
    return measure(ctx, request, dataset, reference, compiled, run, goals, metric_names, cancel)


def _run_id(model: Any) -> str | None:
    return model.run_log.run_id if model.run_log is not None else None


def _row(
    label: str, model: CompiledModel, report: EvalReport, profile: Any, nodes: list[str]
) -> dict[str, Any]:
    primary = next(iter(report.outputs))
    return {
        "model": label,
        "kept_in_float": list(nodes),
        "passed": report.passed,
        "output": primary,
        "cosine": report.outputs[primary]["cosine"],
        "snr_db": report.outputs[primary]["snr_db"],
        "tasks": {k: v["model"] for k, v in report.tasks.items()},
        "latency_median_ms": float(profile.latency.value),
        "compile_run": _run_id(model),
        "eval_run": report.run_id,
        "profile_run": _run_id(profile),
    }


def _record(ctx: HubContext, fix: FixReport) -> None:
    ctx.client.log_params({"kept_nodes": fix.kept_nodes, "kept_layers": fix.kept_layers,
                           "reason": fix.reason})  # fmt: skip
    metrics = {"passed": 1.0 if fix.passed else 0.0, "layers_kept": float(len(fix.kept_layers))}
    for row in fix.table:
        metrics[f"{row['model']}.latency_median_ms"] = row["latency_median_ms"]
        metrics[f"{row['model']}.cosine"] = row["cosine"]
    ctx.client.log_metrics(metrics)
    log_json(ctx, "fix.json", fix.to_dict(), name="fix", indent=1)
