"""`hub exec eval RUNTIME MODEL --dataset D`: parse, call `ops.eval.evaluate`, print."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.cli.options import Flags, project_of, tags
from edgehub.cli.output import LogPrinter, print_json, table
from edgehub.errors import EXIT_GOAL_FAILED, UsageError

if TYPE_CHECKING:
    from edgehub.cluster.shards import RayShards
    from edgehub.config.schema import HubConfig
    from edgehub.ops.eval import EvalReport
    from edgehub.ops.eval.fix import FixReport

FIX_LIMIT = 5


def dataset_flags() -> Flags:
    """The samples to score (eval; pipeline: a last step on the compiled model)."""
    flags = Flags(
        "dataset",
        "samples keyed by input name: eval measures the compiled model's accuracy over them; "
        "a pipeline ends with that measurement",
    )
    flags.add_argument(
        "--dataset",
        type=Path,
        metavar="DIR|FILE.npz",
        help="a directory of .npz samples keyed by input name, or one .npz with a leading "
        "samples axis",
    )
    flags.add_argument(
        "--labels",
        type=Path,
        metavar="FILE.npz|FILE.json",
        help="per-sample targets in sample order (task metrics score against them; without, "
        "against the reference's outputs)",
    )
    flags.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="NAME",
        help="a task metric on the first output: top1, top5, iou, mse, or one registered in "
        "the entry point group edgehub.metrics (repeatable)",
    )
    return flags


def eval_flags() -> Flags:
    flags = Flags(
        "eval",
        "accuracy of the compiled model against the original ONNX model (ONNX Runtime, "
        f"float32) over the --dataset; exit {EXIT_GOAL_FAILED} when a --goal is missed",
    )
    flags.add_argument(
        "--goal",
        action="append",
        default=[],
        metavar="EXPR",
        help="e.g. 'top1>=0.99*reference', 'cosine>=0.999', 'snr_db:logits>30', "
        f"'max-degradation=1%%'; a miss exits {EXIT_GOAL_FAILED} (repeatable)",
    )
    flags.add_argument(
        "--reference",
        metavar="onnxruntime|RUN_ID",
        help="what the outputs are compared with: the original ONNX model in float32 here "
        "(onnxruntime, the default), or the model outputs of an earlier eval run on the same "
        "dataset",
    )
    flags.add_argument(
        "--layers",
        nargs="?",
        const=0.2,
        type=float,
        metavar="REL_L2",
        help="find the first layer whose output diverges from the reference's "
        "(worst channel's relative L2 error above REL_L2, default 0.2), bisecting over the "
        "graph order on the first 4 samples",
    )
    flags.add_argument(
        "--fix",
        nargs="?",
        const=FIX_LIMIT,
        type=int,
        metavar="MAX_LAYERS",
        help="int8 models: when a goal fails, keep layers in float one at a time (from the "
        f"first divergent one, see --layers) until the goals hold or MAX_LAYERS (default "
        f"{FIX_LIMIT}) are; then profile the float, int8 and repaired models and print "
        "accuracy against latency",
    )
    return flags


def handle_eval(args: argparse.Namespace) -> int:
    from edgehub.core.runtimes import get_runtime
    from edgehub.ops.eval import EvalRequest, evaluate_and_fix
    from edgehub.ops.options import parse_sets

    if args.runtime is None:
        raise UsageError(
            "hub exec eval needs a RUNTIME (onnxruntime, tflite, tensorrt) and a MODEL"
        )
    if args.dataset is None:
        raise UsageError("hub exec eval needs --dataset DIR|FILE.npz (samples keyed by input)")
    runtime = get_runtime(args.runtime)
    options = parse_sets(args.set, {"compile": runtime.compiler})["compile"]
    request = EvalRequest(
        runtime=args.runtime,
        dataset=args.dataset,
        model=args.model,
        from_run=args.from_run,
        labels=args.labels,
        metrics=list(args.metric),
        goals=list(args.goal),
        device=args.device,
        options=options,
        name=args.name,
        tags=tags(args),
        layers=args.layers,
        reference=args.reference,
        fix=args.fix,
    )
    project = project_of(args)
    shards = _shards(args, project.config)
    printer = LogPrinter(quiet=args.quiet)
    try:
        report, fix = evaluate_and_fix(project, request, subscriber=printer, shards=shards)
    finally:
        printer.done()
        if shards is not None:
            shards.close()
    if args.json:
        print_json({**report.to_dict(), **({"fix": fix.to_dict()} if fix else {})})
    else:
        print_report(report, final=fix is None)
        if fix is not None:
            _print_fix(fix)
    return EXIT_GOAL_FAILED if report.passed is False else 0


def _shards(args: argparse.Namespace, config: HubConfig) -> RayShards | None:
    """The Ray cluster ``--cluster`` names (else hub.toml's), to split the samples across;
    None without the flag (Ray is imported only with it)."""
    from edgehub.cluster import cluster_address, ray_shards

    address = cluster_address(getattr(args, "cluster", None), config.cluster.address)
    return None if address is None else ray_shards(address, config)


CALIBRATION_SOURCES = {"dataset": "the dataset evaluated", "given": "the calibration_data given"}


def print_report(report: EvalReport, *, final: bool = True) -> None:
    """An eval's figures, goals and layers; ``final``: also the exit a missed goal gives (not
    for a report read back from the store, `hub runs show`)."""
    from edgehub.toolchains.metrics import OUTPUT_FIGURES

    print(
        f"eval: run {report.run_id[:8]} {report.status} on {report.device}, "
        f"{report.samples} samples ({report.dataset})"
    )
    if report.calibration == "random":
        print(
            "  WARNING: the model was calibrated on random data, not on real samples: its "
            "int8 accuracy is not the real one; compile with --set calibration_data=DIR"
        )
    elif report.calibration is not None:
        print(f"  calibrated on: {CALIBRATION_SOURCES.get(report.calibration, report.calibration)}")
    table(
        ["output", "cosine", "cosine min", "max abs", "mean abs", "SNR dB", "PSNR dB"],
        [[name, *(f[figure] for figure in OUTPUT_FIGURES)] for name, f in report.outputs.items()],
    )
    if report.tasks:
        table(
            ["metric", "model", "reference", "against", "output"],
            [
                [k, v["model"], v["reference"], v["against"], v["output"]]
                for k, v in report.tasks.items()
            ],
        )
    for output, rows in report.worst.items():
        names = ", ".join(f"{r['sample']} ({r['cosine']:.4g})" for r in rows)
        print(f"  worst samples of {output} by cosine: {names}")
    for goal in report.goals:
        print(f"  goal {goal.goal}: {'passed' if goal.passed else 'MISSED'}")
        for check in goal.checks:
            if not check["passed"]:
                where = f" ({check['output']})" if "output" in check else ""
                value, needed = check["value"], check["threshold"]
                print(f"    {check['metric']}{where} = {value:.6g}, needed {needed:.6g}")
    if report.layers is not None:
        _print_layers(report.layers)
    if report.passed is False and final:
        print(f"goals missed: exit {EXIT_GOAL_FAILED}")


def _print_fix(fix: FixReport) -> None:
    print(f"fix: run {fix.run_id[:8]}, {len(fix.steps) - 1} repair steps (limit {fix.limit})")
    for number, step in enumerate(fix.steps):
        kept = ", ".join(step["kept_nodes"]) or "none"
        first = step["first_divergent"]
        where = f"; first divergent: {first['node']}" if first else ""
        state = "held" if step["passed"] else "missed"
        print(f"  step {number}: in float: {kept}: goals {state}{where}")
    tasks = sorted({k for row in fix.table for k in row["tasks"]})
    table(
        ["model", "layers in float", "goals", "cosine", "SNR dB", *tasks, "latency ms (median)"],
        [
            [r["model"], r["layers_in_float"], "held" if r["passed"] else "missed",
             r["cosine"], r["snr_db"], *(r["tasks"].get(k) for k in tasks),
             r["latency_median_ms"]]
            for r in fix.table
        ],
    )  # fmt: skip
    if fix.passed:
        print(f"fix: {fix.reason}: {', '.join(fix.kept_nodes) or 'nothing'} kept in float")
    else:
        print(f"fix: {fix.reason} (limit {fix.limit}): goals missed, exit {EXIT_GOAL_FAILED}")


FUSED_SHOWN = 8  # fused or renamed nodes named in the table's note; --json has them all


def _fused_list(fused: list[dict[str, Any]]) -> str:
    """The fused or renamed nodes, by name up to `FUSED_SHOWN`; past that, counted by op
    (an exported detector has hundreds: its Shape/Gather/Constant arithmetic)."""
    names = ", ".join(f"{f['node']} ({f['op']})" for f in fused[:FUSED_SHOWN])
    if len(fused) <= FUSED_SHOWN:
        return names
    ops = Counter(f["op"] for f in fused).most_common()
    counts = ", ".join(f"{op} {count}" for op, count in ops[:6]) + (", ..." if ops[6:] else "")
    return f"{len(fused)} nodes ({counts}); the first {FUSED_SHOWN}: {names}; --json lists all"


def _print_layers(layers: dict[str, Any]) -> None:
    print(
        f"layers: {layers['layers']} in graph order, {layers['runs']} extra runs of both models "
        f"on {layers['samples']} samples; diverges above {layers['threshold']:g} (worst channel)"
    )
    table(
        ["layer", "op", "tensor", "rel L2", "worst channel", "grew by", "cosine", "SNR dB"],
        [
            [r["node"], r["op"], r["tensor"], r["rel_l2"], r["channel_rel_l2"], r["growth"],
             r["cosine"], r["snr_db"]]
            for r in layers["measured"]
        ],
    )  # fmt: skip
    fused = layers["fused_or_renamed"]
    if fused:
        print(f"  fused or renamed in the compiled model (not compared): {_fused_list(fused)}")
    first = layers["first_divergent"]
    if first is None:
        print(f"  no divergent layer above the threshold ({layers['threshold']:g})")
    else:
        folded = f"; {', '.join(first['fused'])} fused into it" if first["fused"] else ""
        print(
            f"  first divergent layer: {first['node']} ({first['op']}, tensor "
            f"{first['tensor']}{folded})"
        )
