"""`hub exec {compile,profile,invoke,pipeline} RUNTIME MODEL`: run components headless."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.cli.output import LogPrinter, print_json, table
from edgehub.errors import ModelError, UsageError

if TYPE_CHECKING:
    from edgehub.core.component.outputs import CompiledModel, ComponentOutput
    from edgehub.core.context import HubContext
    from edgehub.toolchains.registry import Runtime

STEPS = ("compile", "profile", "invoke", "pipeline")
LATENCY_KEYS = ("mean", "median", "min", "max", "p90", "p95", "p99", "std")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "exec",
        help="compile, profile or invoke a model (or all three: pipeline)",
        description="Run a component headless. Results go to stdout (a table, or JSON with "
        "--json); logs go to stderr. Every run is recorded in the local run store.",
    )
    parser.add_argument("step", choices=STEPS, help="what to run")
    parser.add_argument("runtime", help="onnxruntime, tflite or tensorrt")
    parser.add_argument("model", nargs="?", type=Path, help="the model file (.onnx, ...)")
    parser.add_argument("--device", help="device from hub.toml (default: the first that fits)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a component option, e.g. per_channel=true, runs=200, input_shape=1,3,224,224; "
        "prefix with compile./profile./invoke. to target one step of a pipeline",
    )
    parser.add_argument("--input", type=Path, metavar="FILE.npz", help="input tensors by name")
    parser.add_argument(
        "--from-run", metavar="RUN_ID", help="use the model a compile run produced (or 'latest')"
    )
    parser.add_argument("--name", help="a name for the run(s)")
    parser.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from edgehub.cli.options import parse_sets
    from edgehub.cli.project import open_project
    from edgehub.toolchains.registry import get_runtime

    runtime = get_runtime(args.runtime)
    steps = {
        "compile": {"compile": runtime.compiler},
        "profile": {"profile": runtime.profiler},
        "invoke": {"invoke": runtime.invoker},
        "pipeline": {
            "compile": runtime.compiler,
            "profile": runtime.profiler,
            "invoke": runtime.invoker,
        },
    }[args.step]
    options = parse_sets(args.set, steps)
    _check_model_args(args)
    tags = dict(_split_pair(t, "--tag") for t in args.tag)
    project = open_project(args.config)
    printer = LogPrinter(quiet=args.quiet)
    try:
        with project.context(printer, tags=tags) as ctx:
            report = _run_step(ctx, args, runtime, options)
    finally:
        printer.done()
    if args.json:
        print_json(report)
    else:
        _print_report(args.step, report)
    return 0


def _split_pair(text: str, flag: str) -> tuple[str, str]:
    if "=" not in text:
        raise UsageError(f"{flag} needs KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value


def _check_model_args(args: argparse.Namespace) -> None:
    if args.step in ("compile", "pipeline") and args.from_run:
        raise UsageError(f"--from-run does not apply to {args.step}; give the ONNX model path")
    if args.model is None and not args.from_run:
        raise UsageError(f"hub exec {args.step} needs a MODEL path (or --from-run RUN_ID)")
    if args.model is not None and args.from_run:
        raise UsageError("give either MODEL or --from-run, not both")
    if args.model is not None and not args.model.exists():
        raise ModelError(f"model {args.model} not found; check the path")
    if args.input is not None and not args.input.is_file():
        raise UsageError(f"input file {args.input} not found; pass an existing .npz")


def _run_step(
    ctx: HubContext, args: argparse.Namespace, runtime: Runtime, options: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    device = {"device": args.device} if args.device else {}
    name = {"name": args.name} if args.name else {}
    if args.step == "compile":
        compiled = runtime.compiler(**name, **device, **options["compile"]).run(ctx, args.model)
        return summarize(compiled)
    if args.step == "profile":
        model = _model_input(ctx, args, runtime)
        result = runtime.profiler(**name, **device, **options["profile"]).run(ctx, model)
        return summarize(result)
    if args.step == "invoke":
        model = _model_input(ctx, args, runtime)
        # without --input the invoker makes random inputs where the model runs (one round trip)
        inputs = None if args.input is None else _inputs(ctx, args, model, device)
        if inputs is None:
            ctx.events.warning("no --input given: using random inputs (seed 0)")
        result = runtime.invoker(**name, **device, **options["invoke"]).run(ctx, model, inputs)
        return summarize(result)
    return _pipeline(ctx, args, runtime, options, device)


def _model_input(ctx: HubContext, args: argparse.Namespace, runtime: Runtime) -> CompiledModel:
    if args.model is not None:
        return runtime.compiled_model.from_path(args.model.resolve())
    log = ctx.store.run_log(args.from_run)
    if "path" not in log.artifacts and "$path" not in log.artifacts:
        raise UsageError(
            f"run {log.run_id[:8]} ({log.name}, {log.run_type}) produced no model; "
            "pass the id of a compile run"
        )
    return runtime.compiled_model.from_run_log(log)


def _inputs(
    ctx: HubContext, args: argparse.Namespace, model: CompiledModel, device: dict[str, str]
) -> dict[str, Any]:
    from edgehub.toolchains.tensors import load_npz, random_inputs

    if args.input is not None:
        return load_npz(args.input)
    from edgehub.toolchains.onnxruntime.local import inspect_model

    signature = inspect_model(ctx, model.path.to_local(ctx).local(), device.get("device"))
    ctx.events.warning("no --input given: using random inputs (seed 0)")
    return random_inputs(signature["inputs"], seed=0)


def _pipeline(
    ctx: HubContext,
    args: argparse.Namespace,
    runtime: Runtime,
    options: dict[str, dict[str, Any]],
    device: dict[str, str],
) -> dict[str, Any]:
    from edgehub.toolchains.accuracy import compare_outputs

    original = runtime.compiled_model.from_path(args.model.resolve())
    inputs = _inputs(ctx, args, original, device)
    ctx.events.info("step 1/4: compile")
    compiled = runtime.compiler(**device, **options["compile"]).run(ctx, args.model)
    ctx.events.info("step 2/4: profile the compiled model")
    profile = runtime.profiler(**device, **options["profile"]).run(ctx, compiled)
    ctx.events.info("step 3/4: invoke the compiled model")
    result = runtime.invoker(**device, **options["invoke"]).run(ctx, compiled, inputs)
    ctx.events.info("step 4/4: invoke the original model in ONNX Runtime (reference)")
    from edgehub.core.compile import ONNXRuntimeCompiledModel
    from edgehub.core.invoke import ONNXRuntimeInvoker

    onnx_model = ONNXRuntimeCompiledModel.from_path(args.model.resolve())
    invoker = ONNXRuntimeInvoker(name="reference", device=device.get("device"))
    reference = invoker.run(ctx, onnx_model, inputs)
    accuracy = compare_outputs(result.output, reference.output)
    return {
        "compile": summarize(compiled),
        "profile": summarize(profile),
        "invoke": summarize(result),
        "reference": summarize(reference),
        "accuracy": [row.to_dict() for row in accuracy],
    }


def summarize(output: ComponentOutput) -> dict[str, Any]:
    """The JSON shape of one run's result."""
    log = output.run_log
    assert log is not None
    metrics = {k.lstrip("$"): m.value for k, m in log.metrics.items()}
    report: dict[str, Any] = {
        "run_id": log.run_id,
        "name": log.name,
        "type": log.run_type,
        "status": log.status if log.status != "RUNNING" else "FINISHED",
        "device": log.params["device"].value if "device" in log.params else None,
        "metrics": metrics,
        "params": {
            k.lstrip("$"): p.value for k, p in log.params.items() if not k.startswith("option.")
        },
        "artifacts": {
            (a.name or a.file_name).lstrip("$"): str(a.file_path) for a in log.artifacts.values()
        },
        "environment": dict(log.environment),
    }
    if any(f"latency_{k}_ms" in metrics for k in LATENCY_KEYS):
        report["latency_ms"] = {k: metrics.get(f"latency_{k}_ms") for k in LATENCY_KEYS}
    outputs = getattr(output, "output", None)
    if isinstance(outputs, dict):
        report["outputs"] = {
            name: {"dtype": str(array.dtype), "shape": list(array.shape)}
            for name, array in outputs.items()
        }
    return report


def _print_run(title: str, report: dict[str, Any]) -> None:
    print(f"{title}: run {report['run_id'][:8]} {report['status']} on {report['device']}")
    if "latency_ms" in report:
        lat = report["latency_ms"]
        table(list(LATENCY_KEYS), [[lat[k] for k in LATENCY_KEYS]])
        extra = {
            k: report["metrics"][k]
            for k in ("fps", "session_create_ms", "first_run_ms", "peak_rss_mb")
            if k in report["metrics"]
        }
        if extra:
            table(list(extra), [list(extra.values())])
    if "outputs" in report:
        table(
            ["output", "dtype", "shape"],
            [[n, o["dtype"], "x".join(map(str, o["shape"]))] for n, o in report["outputs"].items()],
        )
    for name in ("path", "output_file"):
        if name in report["artifacts"]:
            print(f"  {name}: {report['artifacts'][name]}")
    print()


def _print_report(step: str, report: dict[str, Any]) -> None:
    if step != "pipeline":
        _print_run(step, report)
        return
    for key in ("compile", "profile", "invoke", "reference"):
        _print_run(key, report[key])
    print("accuracy of the compiled model against the original (ONNX Runtime):")
    table(
        ["output", "max abs error", "max rel error", "cosine similarity"],
        [
            [r["name"], r["max_abs_error"], r["max_rel_error"], r["cosine_similarity"]]
            for r in report["accuracy"]
        ],
    )
