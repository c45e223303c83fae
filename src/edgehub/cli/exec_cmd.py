"""`hub exec {compile,profile,invoke,pipeline} RUNTIME MODEL`: parse, call `ops.execute`, print.

`hub exec sweep [GRID.toml]` runs a grid of them (see `cli.sweep_cmd`); `hub exec eval`
measures accuracy on a dataset (see `cli.eval_cmd`); `hub exec ab RUNTIME A B` compares two
models interleaved on one device (see `cli.ab_cmd`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.cli.output import LogPrinter, print_json, table
from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.ops.reports import PipelineReport, RunReport

STEPS = ("compile", "profile", "invoke", "pipeline", "sweep", "eval", "ab")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "exec",
        help="compile, profile or invoke a model (or all three: pipeline)",
        description="Run a component headless. Results go to stdout (a table, or JSON with "
        "--json); logs go to stderr. Every run is recorded in the local run store.",
    )
    parser.add_argument(
        "step",
        choices=STEPS,
        help="what to run (sweep: a grid of runs; eval: accuracy; ab: A against B)",
    )
    parser.add_argument(
        "runtime", nargs="?", help="onnxruntime, tflite or tensorrt (sweep: the GRID.toml)"
    )
    parser.add_argument("model", nargs="?", type=_path, help="the model file (.onnx, ...)")
    parser.add_argument("model_b", nargs="?", type=_path, help="ab: the model compared with MODEL")
    parser.add_argument("--device", help="device from hub.toml (default: the first that fits)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a component option, e.g. per_channel=true, runs=200, input_shape=1,3,224,224; "
        "prefix with compile./profile./invoke. to target one step of a pipeline",
    )
    parser.add_argument(
        "--input",
        type=_path,
        metavar="FILE.npz|DIR",
        help="input tensors by name (profile, invoke, pipeline); a directory of .npz samples: "
        "profile runs them all, invoke the first",
    )
    parser.add_argument(
        "--from-run",
        metavar="RUN_ID",
        help="use the model a compile run produced ('latest': the newest compile run)",
    )
    parser.add_argument(
        "--from-job",
        metavar="JOB_ID",
        help=(
            "attach to a Qualcomm AI Hub job (or an AWS Device Farm run ARN) submitted earlier "
            "instead of submitting again"
        ),
    )
    parser.add_argument(
        "--transform",
        nargs="?",
        const="auto",
        metavar="BACKEND",
        help="rewrite the model with a deployment backend's graph patterns before compiling "
        "(tensorrt, tflite; default: the active or only installed backend)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="compile even where a stored compile of the same model, options, data, image and "
        "device could be reused",
    )
    parser.add_argument("--name", help="a name for the run(s)")
    parser.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument(
        "--lease-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="how long to wait for a device another measurement holds (default 3600)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        help="stop the run (FAILED, exit 3) if it runs longer once the device is held "
        "(a sweep: each cell; ab: the whole comparison)",
    )
    from edgehub.cli.sweep_cmd import add_sweep_arguments

    add_sweep_arguments(parser)
    from edgehub.cli.eval_cmd import add_eval_arguments

    add_eval_arguments(parser)

    from edgehub.cli.ab_cmd import add_ab_arguments

    add_ab_arguments(parser)
    from edgehub.cli.measure_flags import add_measure_arguments

    add_measure_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from edgehub.cli.ab_cmd import handle_ab, reject_ab_flags
    from edgehub.cli.measure_flags import measure_options, merge_measure_options
    from edgehub.cli.options import parse_sets
    from edgehub.ops.execute import ExecRequest, execute, step_components
    from edgehub.ops.project import open_project
    from edgehub.ops.reports import PipelineReport
    from edgehub.toolchains.registry import get_runtime

    reject_ab_flags(args)
    measure_options(args)  # the measuring flags on a step that does not profile: refused
    if args.step == "ab":
        return handle_ab(args)
    if args.step == "sweep":
        from edgehub.cli.sweep_cmd import handle_sweep

        return handle_sweep(args)
    if args.step == "eval":
        from edgehub.cli.eval_cmd import handle_eval

        return handle_eval(args)
    if args.runtime is None:
        raise UsageError(f"hub exec {args.step} needs a RUNTIME (onnxruntime, tflite, tensorrt)")
    if args.name and args.step == "pipeline":
        raise UsageError("--name does not apply to pipeline (its runs are named by step)")
    runtime = get_runtime(args.runtime)
    request = ExecRequest(
        step=args.step,
        runtime=args.runtime,
        model=args.model,
        device=args.device,
        options=merge_measure_options(
            args, parse_sets(args.set, step_components(runtime, args.step))
        ),
        inputs=args.input,
        from_run=args.from_run,
        from_job=args.from_job,
        transform=args.transform,
        name=args.name,
        tags=dict(_split_pair(t, "--tag") for t in args.tag),
        lease_timeout=args.lease_timeout,
        timeout=args.timeout,
        dataset=args.dataset,
        labels=args.labels,
        metrics=list(args.metric),
        no_cache=args.no_cache,
        pin_cpus=args.pin_cpus,
    )
    project = open_project(args.config)
    printer = LogPrinter(quiet=args.quiet)
    try:
        report = execute(project, request, subscriber=printer)
    finally:
        printer.done()
    if args.json:
        print_json(report.to_dict())
    elif isinstance(report, PipelineReport):
        _print_pipeline(report)
    else:
        _print_run(args.step, report)
    return 0


def _seconds(text: str) -> float:
    """A finite number of seconds >= 0 (``--lease-timeout``)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds >= 0; give e.g. --lease-timeout 600"
        )
    return value


def _path(text: str) -> Path:
    """A path argument; an empty one (which would mean the current directory) is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty; give a file")
    return Path(text)


def _positive_seconds(text: str) -> float:
    """A finite number of seconds above 0 (``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be a number of seconds above 0")
    return value


def _split_pair(text: str, flag: str) -> tuple[str, str]:
    if "=" not in text:
        raise UsageError(f"{flag} needs KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value


def _print_run(title: str, report: RunReport) -> None:
    from edgehub.ops.reports import LATENCY_KEYS

    print(f"{title}: run {report.run_id[:8]} {report.status} on {report.device}")
    latency = report.latency_ms
    if latency is not None:
        table(list(LATENCY_KEYS), [[latency[k] for k in LATENCY_KEYS]])
        extra = {
            k: report.metrics[k]
            for k in ("fps", "session_create_ms", "first_run_ms", "peak_rss_mb")
            if k in report.metrics
        }
        if extra:
            table(list(extra), [list(extra.values())])
    if report.shapes:
        print(f"  inputs: {_shapes_text(report.shapes)}")
    if report.type == "EVAL":  # a pipeline's eval over its --dataset
        table(["figure", "value"], [[k, v] for k, v in report.metrics.items()])
    if report.outputs:
        table(
            ["output", "dtype", "shape"],
            [[n, o["dtype"], "x".join(map(str, o["shape"]))] for n, o in report.outputs.items()],
        )
    for name in ("path", "output_file"):
        if name in report.artifacts:
            print(f"  {name}: {report.artifacts[name]}")
    print()


def _shapes_text(shapes: dict[str, Any]) -> str:
    parts = []
    for name, value in shapes.items():
        if isinstance(value, dict) and "shape" in value:
            dims = "x".join(map(str, value["shape"]))
            parts.append(f"{name}: {value.get('dtype', '')}[{dims}]")
        else:
            parts.append(f"{name}: {value}")
    return ", ".join(parts)


def _print_pipeline(report: PipelineReport) -> None:
    for key, step in report.steps().items():
        _print_run(key, step)
    if report.stopped_after_compile:
        print(f"stopped after compile: {report.stopped_after_compile}")
        return
    if report.reference_note:
        print(report.reference_note)
    if not report.accuracy:
        return
    print("accuracy of the compiled model against the original (ONNX Runtime on this host):")
    table(
        ["output", "max abs error", "max rel error", "cosine similarity"],
        [[r.name, r.max_abs_error, r.max_rel_error, r.cosine_similarity] for r in report.accuracy],
    )
