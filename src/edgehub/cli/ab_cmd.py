"""`hub exec ab RUNTIME A B` (onnxruntime: .onnx, tflite: .tflite, tensorrt: engines):
interleaved A/B on one device, then the verdict; on a Qualcomm AI Hub device one profile job
per model and an unpaired verdict."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from edgehub.cli.options import Flags, project_of, split_pair, tags
from edgehub.cli.output import LogPrinter, print_json, table
from edgehub.errors import EXIT_REGRESSION, UsageError

if TYPE_CHECKING:
    from edgehub.ops.ab import AbReport


def ab_flags() -> Flags:
    from edgehub.cli.options import fraction

    flags = Flags(
        "ab",
        "both models in one agent process, timed in alternating blocks (onnxruntime: .onnx, "
        "tflite: .tflite, tensorrt: engines on this host's GPU); --set input_shape=..., "
        "burn_ins=N, block_ms=N, seed=N, min_effect=2%; on a qai_hub device one profile job "
        "per model (not interleaved, unpaired verdict)",
    )
    flags.add_argument(
        "--rounds", type=int, metavar="N", help="rounds of one A block and one B block (30)"
    )
    flags.add_argument(
        "--max-regression",
        metavar="PCT",
        type=fraction,
        help=f"e.g. 5%%: exit {EXIT_REGRESSION} when B is significantly slower than A by more",
    )
    return flags


def handle_ab(args: argparse.Namespace) -> int:
    from edgehub.ops.ab import AbRequest, run_ab

    if args.runtime is None or args.model is None or args.model_b is None:
        raise UsageError(
            "hub exec ab needs RUNTIME A B (two .onnx for onnxruntime, two .tflite for tflite, "
            "two engines for tensorrt)"
        )
    request = AbRequest(
        runtime=args.runtime,
        model_a=args.model,
        model_b=args.model_b,
        device=args.device,
        rounds=args.rounds,
        settings=dict(split_pair(p, "--set") for p in args.set),
        inputs=args.input,
        max_regression=args.max_regression,
        name=args.name,
        tags=tags(args),
        lease_timeout=args.lease_timeout,
        timeout=args.timeout,
    )
    with LogPrinter(quiet=args.quiet) as printer:
        report = run_ab(project_of(args), request, subscriber=printer)
    if args.json:
        print_json(report.to_dict())
    else:
        _print(report)
    return EXIT_REGRESSION if report.regressed else 0


def _print(report: AbReport) -> None:
    from edgehub.ops.ab import UNPAIRED
    from edgehub.tracking.paired import PairedVerdict

    if report.method == UNPAIRED:
        _print_unpaired(report)
        return
    verdict = report.verdict
    assert isinstance(verdict, PairedVerdict)
    print(f"ab: run {report.run_id[:8]} on {report.device}, order seed {report.seed}")
    low, high = verdict.ci_pct
    table(
        ["model", "run", "median ms", "runs per block"],
        [
            ["A", report.run_a[:8], f"{report.median_a_ms:.4f}", report.runs_per_block.get("a")],
            ["B", report.run_b[:8], f"{report.median_b_ms:.4f}", report.runs_per_block.get("b")],
        ],
    )
    row = [verdict.rounds, f"{verdict.median_ratio:.4f}", f"{low:+.1f}% .. {high:+.1f}%"]
    row += [verdict.slower, verdict.faster, f"{verdict.sign_p:.3g}"]
    table(["rounds", "B/A median", "95% CI", "B slower", "B faster", "sign p"], [row])
    print(verdict.verdict)


def _print_unpaired(report: AbReport) -> None:
    """AI Hub's comparison: one job per model, two independent samples."""
    from edgehub.ops.ab_hub import NOT_INTERLEAVED, UNPAIRED_TEST

    verdict = report.verdict
    print(f"ab: run {report.run_id[:8]} on {report.device}; {NOT_INTERLEAVED}")
    runs = {"a": report.run_a, "b": report.run_b}
    counts = {"a": verdict.samples_a, "b": verdict.samples_b}  # type: ignore[union-attr]
    medians = {"a": report.median_a_ms, "b": report.median_b_ms}
    jobs = {side: report.jobs[side]["id"] for side in ("a", "b")}
    rows = [
        [side.upper(), runs[side][:8], jobs[side], f"{medians[side]:.4f}", counts[side]]
        for side in ("a", "b")
    ]
    table(["model", "run", "job", "median ms", "iterations"], rows)
    print(f"test: {UNPAIRED_TEST}")
    print(verdict.verdict)
