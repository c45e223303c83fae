"""`hub runs list | show RUN | compare RUN_A RUN_B | export RUN... -o FILE | import FILE |
rerun RUN | delete RUN`: parse, call `ops.runs` (and `ops.bundles`, `ops.rerun`,
`ops.run_delete`), print."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any

from edgehub.cli.options import fraction, project_of
from edgehub.cli.output import print_json, table
from edgehub.cli.report_cmd import add_report_parser
from edgehub.errors import EXIT_INCOMPARABLE, EXIT_NOT_REPRODUCED, EXIT_REGRESSION
from edgehub.text import visible

if TYPE_CHECKING:
    from edgehub.ops.eval.compare import AccuracyComparison
    from edgehub.ops.runs import Comparison
    from edgehub.tracking.compare import RunComparison
    from edgehub.tracking.percentiles import PercentileCI
    from edgehub.tracking.profile_compare import ProfileComparison
    from edgehub.tracking.records import RunRecord

REF_HELP = "a run id, a unique prefix, 'latest' or 'latest:<type>' (latest:profile, ...)"


def add_parser(commands: Any) -> None:
    from edgehub.cli.commands import summary

    parser = commands.add_parser("runs", help=summary("runs"))
    sub = parser.add_subparsers(dest="runs_command", metavar="ACTION")
    sub.required = True
    listing = sub.add_parser("list", help="recent runs, newest first")
    listing.add_argument(
        "-n", "--limit", type=_run_count, default=20, help="how many (default 20; 0: all)"
    )
    listing.add_argument("--status", help="FINISHED, FAILED, KILLED or RUNNING")
    listing.add_argument("--type", dest="run_type", help="COMPILE, PROFILE, INFERENCE, ...")
    listing.add_argument("--device", help="runs on this device (its name in hub.toml)")
    listing.add_argument("--runtime", help="runs of this runtime (onnxruntime, ...)")
    listing.add_argument(
        "--model",
        dest="model_sha256",
        metavar="SHA256",
        help="runs whose input model has this hash (or prefix)",
    )
    listing.add_argument(
        "--cached", action="store_true", help="compiles that reused a stored compile's artifacts"
    )
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)
    show = sub.add_parser("show", help="one run with its params, metrics and artifacts")
    show.add_argument("run_id", help=REF_HELP)
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_show)
    compare = sub.add_parser(
        "compare",
        help="two runs side by side; for two profile runs, latency deltas with confidence",
        description="Two runs side by side. For two profile runs, the median and p99 latency "
        "deltas of B against A with bootstrap 95% confidence intervals from the raw samples. "
        f"With --max-regression, exits {EXIT_REGRESSION} when B is significantly slower than A "
        "by more than that. Two profiles whose recorded conditions differ (CPU model, "
        "governor, container CPU quota or cpuset; throttling or a >15 C temperature rise; other "
        "processes above 25% of the CPUs in either) are reported as not comparable; with "
        f"--max-regression that exits {EXIT_INCOMPARABLE} unless --allow-incomparable.",
    )
    compare.add_argument("run_a", help="the baseline: " + REF_HELP)
    compare.add_argument("run_b", help="the run compared with it")
    compare.add_argument(
        "--max-regression",
        metavar="PCT",
        type=fraction,
        help=f"e.g. 5%% or 0.05: exit {EXIT_REGRESSION} if B's median is slower by more (profiles)",
    )
    compare.add_argument(
        "--min-effect",
        metavar="PCT",
        type=fraction,
        help="the smallest median change called significant (default 5%%: run-to-run noise)",
    )
    compare.add_argument(
        "--allow-incomparable",
        action="store_true",
        help="judge --max-regression even when the runs' recorded conditions differ",
    )
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(handler=_compare)
    export = sub.add_parser(
        "export",
        help="write runs (with their child runs, artifacts and image locks) to a bundle file",
    )
    export.add_argument("run_ids", nargs="+", metavar="RUN", help=REF_HELP)
    export.add_argument(
        "-o", "--output", metavar="FILE", help="runs.tar, runs.tar.gz or runs.tar.zst (zstandard)"
    )
    export.add_argument(
        "--to",
        choices=("mlflow",),
        help="write the runs to MLflow instead of a bundle (the edgehub[mlflow] extra)",
    )
    export.add_argument(
        "--tracking-uri", metavar="URI", help="MLflow: where (default: $MLFLOW_TRACKING_URI)"
    )
    export.add_argument(
        "--experiment", metavar="NAME", help="MLflow: the experiment (default: the project's name)"
    )
    export.set_defaults(handler=_export)
    imports = sub.add_parser(
        "import", help="bring the runs of a bundle into this store (checked before writing)"
    )
    imports.add_argument("bundle", metavar="FILE", help="a bundle `hub runs export` wrote")
    imports.set_defaults(handler=_import)
    again = sub.add_parser(
        "rerun",
        help="run a compile, profile, invoke or sweep again from its record, and say what matched",
        description="Re-create a run from its record: component, options, model and data by "
        "content from the store, device, and image by digest. Reports what matched: an "
        "invoke's outputs bit for bit, a profile's latency with the comparison's 95%% CI, a "
        "compile's artifact hashes. A sweep reruns as a whole, each cell beside the "
        "original's. The new run is tagged rerun_of=<the original's id>. Exits "
        f"{EXIT_NOT_REPRODUCED} when outputs or artifacts differ.",
    )
    again.add_argument("run_id", metavar="RUN", help=REF_HELP)
    again.add_argument("--device", metavar="NAME", help="run on this device instead")
    again.add_argument(
        "--image",
        choices=("recorded", "current"),
        default="recorded",
        help="the recorded image (default; refused if it is gone) or today's",
    )
    again.add_argument(
        "--children",
        action="store_true",
        help="a compile: also rerun the profile and invoke runs made from it (a pipeline's "
        "steps) on the model the rerun compiles",
    )
    again.add_argument("--json", action="store_true")
    again.set_defaults(handler=_rerun)
    delete = sub.add_parser(
        "delete",
        help="delete a run, its child runs and the stored files only they kept",
        description="Delete a run (an imported one that should not be here, say) with its "
        "child runs, rows and the stored artifacts no other run refers to. Asks first; "
        "--yes deletes without asking (needed without a terminal). An ambiguous prefix and a "
        "run still running are refused.",
    )
    delete.add_argument("run_id", metavar="RUN", help=REF_HELP)
    delete.add_argument("--yes", action="store_true", help="delete without asking (for scripts)")
    delete.set_defaults(handler=_delete)
    add_report_parser(sub)


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return "-"
    try:
        return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):  # a damaged record: the rest still lists
        return "?"


def _run_count(text: str) -> int | None:
    """``-n``: a count of runs; 0 (or more than any store holds) lists them all."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative; give 1 or more, or 0 for all")
    return None if count == 0 or count >= 2**62 else count


def _duration(run: RunRecord) -> str:
    return "-" if run.duration_s is None else f"{run.duration_s:.2f}s"


def _list(args: argparse.Namespace) -> int:
    from dataclasses import fields

    from edgehub.ops.runs import list_runs
    from edgehub.tracking.records import RunFilter

    given = vars(args)  # each flag of `runs list` is the filter field of its name
    run_filter = RunFilter(**{f.name: given[f.name] for f in fields(RunFilter) if f.name in given})
    runs = list_runs(project_of(args), run_filter)
    if args.json:
        print_json([run.to_dict() for run in runs])
        return 0
    rows = []
    for r in runs:
        row = [r.run_id[:8], _when(r.started_at), r.run_type, r.name, r.status, _duration(r)]
        rows.append([*row, r.device or "-", (r.parent_run_id or "-")[:8]])
    table(["run", "started", "type", "name", "status", "took", "device", "parent"], rows)
    return 0


def _show(args: argparse.Namespace) -> int:
    from edgehub.ops.runs import latency_percentiles, show_run

    run = show_run(project_of(args), args.run_id)
    percentiles = latency_percentiles(run)
    if args.json:
        data = run.to_dict()
        if percentiles:
            data["percentiles"] = [p.to_dict() for p in percentiles]
        print_json(data)
        return 0
    # a record's fields may come from a bundle or a device: each line shown as one line
    print(visible(f"run {run.run_id}  {run.name} ({run.run_type})  {run.status}"))
    print(f"  started {_when(run.started_at)}, took {_duration(run)}")
    if run.parent_run_id:
        print(visible(f"  parent  {run.parent_run_id}"))
    if run.error:
        print(visible(f"  error   {run.error}"))
    print(f"  dir     {run.artifact_dir}")
    if run.run_type == "EVAL":  # figures, goals, worst samples and layer table first
        from edgehub.cli.eval_cmd import print_report
        from edgehub.ops.eval.stored import stored_report

        print()
        print_report(stored_report(run), final=False)
    for title, section in (
        ("params", run.params),
        ("metrics", run.metrics),
        ("environment", run.environment),
        ("tags", run.tags),
    ):
        if section:
            print(f"\n{title}:")
            table(["name", "value"], sorted(section.items()))
    if percentiles:
        _print_percentiles(percentiles)
    if run.all_artifacts:
        print("\nartifacts:")
        rows = []
        for a in run.all_artifacts:
            where = str(a.file_path) + ("" if a.is_stored or a.device else "  (not stored)")
            rows.append([a.name or "-", a.file_name, a.file_size, where])
        table(["name", "file", "bytes", "path"], rows)
    return 0


def _print_percentiles(percentiles: list[PercentileCI]) -> None:
    first = percentiles[0]
    print(
        f"\nlatency percentiles (ms; {100 * first.confidence:g} % CI from the "
        f"{first.samples} samples, order statistics):"
    )
    table(
        ["percentile", "value", "CI low", "CI high"],
        [
            [p.label, f"{p.value:.4f}"]
            + (["-", "-"] if p.low is None else [f"{p.low:.4f}", f"{p.high:.4f}"])
            for p in percentiles
        ],
    )
    for p in percentiles:
        if p.note:
            print(f"  {p.note}")


def _compare(args: argparse.Namespace) -> int:
    from edgehub.ops.runs import compare_runs

    result = compare_runs(
        project_of(args),
        args.run_a,
        args.run_b,
        max_regression=args.max_regression,
        min_effect=args.min_effect,
    )
    if args.json:
        print_json(result.to_dict())
    else:
        _print_comparison(result.runs)
        if result.latency is not None:
            print()
            _print_profile_comparison(result.latency)
        if result.accuracy is not None:
            print()
            _print_accuracy_comparison(result.accuracy)
        if result.paired_heading is not None:
            print(f"\n{result.paired_heading}\n{result.verdict}")
        _print_comparability(result, args)
    if not result.comparable and args.max_regression is not None and not args.allow_incomparable:
        return EXIT_INCOMPARABLE
    return EXIT_REGRESSION if result.regressed else 0


def _print_comparability(result: Comparison, args: argparse.Namespace) -> None:
    if result.comparability is None:
        return
    warning, notes = result.condition_lines()
    print("", *notes, *warning, sep="\n")
    if warning and args.max_regression is not None and not args.allow_incomparable:
        print(
            f"the regression verdict does not count (exit {EXIT_INCOMPARABLE}): measure both "
            "again under the same conditions, or pass --allow-incomparable"
        )


def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from edgehub.errors import UsageError
    from edgehub.ops.bundles import export_runs

    if args.to == "mlflow":
        return _export_mlflow(args)
    if args.tracking_uri or args.experiment:
        raise UsageError("--tracking-uri and --experiment apply to --to mlflow")
    if not args.output:
        raise UsageError("hub runs export needs -o FILE (runs.tar, runs.tar.gz) or --to mlflow")
    result = export_runs(project_of(args), args.run_ids, Path(args.output))
    print(
        f"wrote {result.path}: {len(result.runs)} runs, {result.artifacts} artifacts, "
        f"{len(result.images)} image locks, {result.size} bytes"
    )
    if result.dropped_secrets:
        print(f"left out {result.dropped_secrets} entries named like secrets")
    return 0


def _export_mlflow(args: argparse.Namespace) -> int:
    from edgehub.errors import UsageError
    from edgehub.ops.mlflow_export import export_to_mlflow

    if args.output:
        raise UsageError("give either -o FILE (a bundle) or --to mlflow, not both")
    result = export_to_mlflow(
        project_of(args), args.run_ids, tracking_uri=args.tracking_uri, experiment=args.experiment
    )
    for what, runs in (("created", result.created), ("updated", result.updated)):
        for ours, theirs in runs.items():
            print(f"{ours[:8]} -> MLflow run {theirs} ({what})")
    print(
        f"exported {len(result.created) + len(result.updated)} runs to experiment "
        f"{result.experiment!r} at {result.tracking_uri}"
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from edgehub.ops.bundles import import_runs

    result = import_runs(project_of(args), Path(args.bundle))
    print(
        f"imported {len(result.imported)} runs ({len(result.already_present)} already here), "
        f"{result.artifacts_added} artifacts, {len(result.images_added)} image locks"
    )
    return 0


def _rerun(args: argparse.Namespace) -> int:
    from edgehub.cli.output import LogPrinter
    from edgehub.ops.rerun import rerun
    from edgehub.ops.sweep_rerun import SweepRerun

    with LogPrinter(quiet=args.quiet) as printer:
        result = rerun(
            project_of(args),
            args.run_id,
            device=args.device,
            image=args.image,
            children=args.children,
            subscriber=printer,
        )
    reports = [] if isinstance(result, SweepRerun) else [result, *result.children]
    differ = any(report.matched is False for report in reports)
    if args.json:
        print_json(result.to_dict())
        return EXIT_NOT_REPRODUCED if differ else 0
    if isinstance(result, SweepRerun):
        print(
            f"rerun of sweep {result.original.run_id[:8]}: sweep {result.sweep.run_id[:8]} "
            f"{result.sweep.status}, {len(result.sweep.cells)} cells"
        )
        print(f"  image: {result.image}")
        for line in result.summary:
            print(f"  {line}")
        return 0 if not result.sweep.failed else 1
    for report in (result, *result.children):
        new, old = report.rerun, report.original
        print(
            visible(
                f"rerun of {old.run_id[:8]} ({old.run_type} {old.name} on {old.device}): "
                f"run {new.run_id[:8]} {new.status} on {new.device}"
            )
        )
        print(f"  image: {report.image}")
        for line in report.summary:
            print(f"  {line}")
    if differ:
        print(f"not reproduced: exit {EXIT_NOT_REPRODUCED}")
        return EXIT_NOT_REPRODUCED
    return 0


def _delete(args: argparse.Namespace) -> int:
    from edgehub.cli.terminal import confirmed
    from edgehub.ops.run_delete import delete_runs, deletion_plan

    project = project_of(args)
    plan = deletion_plan(project, args.run_id)
    run = plan.run
    what = f"run {run.run_id} ({run.run_type} {run.name}, started {_when(run.started_at)})"
    if plan.children:
        what += f" and its {len(plan.children)} child runs"
    what = visible(what)
    unasked = f"not asking without a terminal; to delete {what}, pass --yes"
    if not args.yes and not confirmed(f"Delete {what}?", unasked):
        print("not deleted")
        return 1
    result = delete_runs(project, plan)
    print(
        f"deleted {len(result.run_ids)} runs ({result.files_removed} stored files and folders "
        "no other run refers to)"
    )
    return 0


def _print_accuracy_comparison(result: AccuracyComparison) -> None:
    print(
        f"accuracy, {result.samples} samples (means over samples; b - a, paired bootstrap 95% CI):"
    )
    table(
        ["figure", "a", "b", "delta", "95% CI", "significant"],
        [
            [d.name, d.a, d.b, f"{d.delta:+.4g}", f"{d.low:+.4g} .. {d.high:+.4g}",
             "yes" if d.significant else "no"]
            for d in result.deltas
        ],
    )  # fmt: skip


def _print_comparison(diff: RunComparison) -> None:
    print(f"a = {diff.run_a}\nb = {diff.run_b}\n")
    print("metrics:")
    table(
        ["metric", "a", "b", "b/a"],
        [[k, v.a, v.b, v.ratio] for k, v in diff.metrics.items()],
    )
    for title, differing in (
        ("params", diff.differing_params),
        ("environment", diff.differing_environment),
    ):
        if differing:
            print(f"\n{title} that differ:")
            table(["name", "a", "b"], [[k, v.a, v.b] for k, v in differing.items()])


def _print_profile_comparison(result: ProfileComparison) -> None:
    print(f"a = {result.run_a} ({result.samples_a} samples)")
    print(f"b = {result.run_b} ({result.samples_b} samples)\n")
    rows = []
    for label, q in (("median", result.median), ("p99", result.p99)):
        low, high = q.ci_pct
        ci = f"{low:+.1f}% .. {high:+.1f}%"
        shown = [f"{q.a_ms:.4f}", f"{q.b_ms:.4f}", f"{q.delta_ms:+.4f}", f"{q.delta_pct:+.1f}%"]
        rows.append([label, *shown, ci, "yes" if q.significant else "no"])
    floor = f"significant (>= {100 * result.min_effect:g}%)"
    table(["latency", "a ms", "b ms", "delta ms", "delta", "95% CI", floor], rows)
    print(f"\nMann-Whitney U p = {result.mann_whitney_p:.3g}")
    print(result.verdict)
