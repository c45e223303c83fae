"""`hub exec VERB`: one parser per verb, built from the flag sets it takes (`cli.options`).

`hub exec {compile,profile,invoke,pipeline} RUNTIME MODEL`: parse, call `ops.execute`, print.
`hub exec sweep [GRID.toml]` runs a grid of them (see `cli.sweep_cmd`); `hub exec eval`
measures accuracy on a dataset (see `cli.eval_cmd`); `hub exec ab RUNTIME A B` compares two
models interleaved on one device (see `cli.ab_cmd`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from edgehub.cli.options import Flags, path, project_of, tags
from edgehub.cli.output import LogPrinter, print_json, table
from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.ops.reports import PipelineReport, RunReport

# each verb: its help line, and the flag sets it takes (`cli.options`; argparse ``parents``)
VERBS: dict[str, tuple[str, tuple[str, ...]]] = {
    "compile": (
        "compile a model for a runtime (and a device)",
        ("common", "tag", "name", "limits", "from_job", "compile", "pin"),
    ),
    "profile": (
        "time a model on a device",
        ("common", "tag", "name", "limits", "input", "from_run", "from_job", "stable", "pin"),
    ),
    "invoke": (
        "run a model once and keep its outputs",
        ("common", "tag", "name", "limits", "input", "from_run", "from_job", "pin"),
    ),
    "pipeline": (
        "compile, profile and invoke, then the accuracy against the original",
        ("common", "tag", "limits", "input", "compile", "dataset", "stable", "pin"),
    ),
    "eval": (
        "accuracy of the compiled model over a dataset",
        ("common", "tag", "name", "from_run", "dataset", "eval", "cluster"),
    ),
    "ab": (
        "two models interleaved on one device: whether B is faster or slower than A",
        ("common", "tag", "name", "limits", "input", "ab"),
    ),
    "sweep": (
        "a grid of runs: models x devices x runtimes x option values",
        ("common", "limits", "input", "sweep", "cluster"),
    ),
}
RUNTIME_HELP = "onnxruntime, tflite or tensorrt (or a runtime a package registers)"


def _flag_sets() -> dict[str, Flags]:
    from edgehub.cli import ab_cmd, eval_cmd, measure_flags, options, sweep_cmd

    return {
        **options.shared_flag_sets(),
        "dataset": eval_cmd.dataset_flags(),
        "stable": measure_flags.stable_flags(),
        "pin": measure_flags.pin_flags(),
        "eval": eval_cmd.eval_flags(),
        "ab": ab_cmd.ab_flags(),
        "sweep": sweep_cmd.sweep_flags(),
        "cluster": sweep_cmd.cluster_flags(),
    }


def add_parser(commands: Any, verbs: Sequence[str] | None = None) -> None:
    """`hub exec` and its verbs; given ``verbs``, only those are built in full (the others are
    listed with their help line, `cli.commands.add_listed`)."""
    from edgehub.cli.ab_cmd import handle_ab
    from edgehub.cli.commands import add_listed, summary
    from edgehub.cli.eval_cmd import handle_eval
    from edgehub.cli.sweep_cmd import handle_sweep

    parser = commands.add_parser(
        "exec",
        help=summary("exec"),
        description="Run a component headless. Results go to stdout (a table, or JSON with "
        "--json); logs go to stderr. Every run is recorded in the local run store. "
        "'hub exec VERB --help' lists the flags each verb takes.",
    )
    group = parser.add_subparsers(dest="step", metavar="VERB")
    group.required = True
    full = [verb for verb in VERBS if verbs is None or verb in verbs]
    sets = _flag_sets() if full else {}
    handlers = {"eval": handle_eval, "ab": handle_ab, "sweep": handle_sweep}
    for verb, (summary_line, taken) in VERBS.items():
        if verb not in full:
            add_listed(group, verb, summary_line)
            continue
        sub = group.add_parser(
            verb,
            help=summary_line,
            description=summary_line[0].upper() + summary_line[1:] + ".",
            parents=[sets[name].parser for name in taken],
        )
        _add_positionals(sub, verb)
        sub.set_defaults(handler=handlers.get(verb, handle), flag_notes=_flag_notes(verb, sets))


def _flag_notes(verb: str, sets: dict[str, Flags]) -> dict[str, str]:
    """For the "unrecognized argument" error of ``verb``: each flag of another verb, and where
    it goes instead (one of this verb's own is unrecognized only before the verb)."""
    notes = {}
    for name, flags in sets.items():
        takers = [other for other, (_, taken) in VERBS.items() if name in taken]
        for flag in flags.names:
            if verb in takers:
                notes[flag] = f"{flag} goes after the verb: hub exec {verb} ... {flag}"
            else:
                notes[flag] = f"{flag} is for hub exec {', '.join(takers)}"
    return notes


def _add_positionals(parser: argparse.ArgumentParser, verb: str) -> None:
    """RUNTIME MODEL (ab: RUNTIME A B; sweep: GRID.toml). Each is optional to argparse, so that
    a missing one is the verb's own message, which says what to give."""
    if verb == "sweep":
        parser.add_argument(
            "grid", nargs="?", type=path, metavar="GRID.toml", help="the grid file ([sweep])"
        )
        return
    parser.add_argument("runtime", nargs="?", metavar="RUNTIME", help=RUNTIME_HELP)
    if verb == "ab":
        parser.add_argument("model", nargs="?", type=path, metavar="A", help="the model A")
        parser.add_argument(
            "model_b", nargs="?", type=path, metavar="B", help="the model compared with A"
        )
        return
    parser.add_argument("model", nargs="?", type=path, metavar="MODEL", help="the model file")


def handle(args: argparse.Namespace) -> int:
    """compile, profile, invoke and pipeline: one `ops.execute` request."""
    from edgehub.cli.measure_flags import measure_options, merge_measure_options
    from edgehub.core.runtimes import get_runtime
    from edgehub.ops.execute import ExecRequest, execute, step_components
    from edgehub.ops.options import parse_sets
    from edgehub.ops.reports import PipelineReport

    measure_options(args)  # --stable-tolerance without --until-stable: refused first
    if args.runtime is None:
        raise UsageError(f"hub exec {args.step} needs a RUNTIME (onnxruntime, tflite, tensorrt)")
    runtime = get_runtime(args.runtime)
    given = vars(args)  # what this verb's flags set; the others' stay at the request's defaults
    request = ExecRequest(
        step=args.step,
        runtime=args.runtime,
        model=args.model,
        device=args.device,
        options=merge_measure_options(
            args, parse_sets(args.set, step_components(runtime, args.step))
        ),
        inputs=given.get("input"),
        from_run=given.get("from_run"),
        from_job=given.get("from_job"),
        transform=given.get("transform"),
        name=given.get("name"),
        tags=tags(args),
        lease_timeout=args.lease_timeout,
        timeout=args.timeout,
        dataset=given.get("dataset"),
        labels=given.get("labels"),
        metrics=list(given.get("metric", [])),
        no_cache=given.get("no_cache", False),
        pin_cpus=args.pin_cpus,
    )
    project = project_of(args)
    with LogPrinter(quiet=args.quiet) as printer:
        report = execute(project, request, subscriber=printer)
    if args.json:
        print_json(report.to_dict())
    elif isinstance(report, PipelineReport):
        _print_pipeline(report)
    else:
        _print_run(args.step, report)
    return 0


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
