"""`hub runs list | show RUN_ID | compare RUN_A RUN_B`: read the local run store."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from edgehub.cli.output import print_json, table


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("runs", help="list, show and compare recorded runs")
    sub = parser.add_subparsers(dest="runs_command", metavar="ACTION")
    sub.required = True
    listing = sub.add_parser("list", help="recent runs, newest first")
    listing.add_argument("-n", "--limit", type=int, default=20)
    listing.add_argument("--status", help="FINISHED, FAILED, KILLED or RUNNING")
    listing.add_argument("--type", dest="run_type", help="COMPILE, PROFILE, INFERENCE, ...")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)
    show = sub.add_parser("show", help="one run with its params, metrics and artifacts")
    show.add_argument("run_id", help="a run id, a unique prefix, or 'latest'")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_show)
    compare = sub.add_parser("compare", help="two runs side by side")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--json", action="store_true")
    compare.set_defaults(handler=_compare)


def _store(args: argparse.Namespace) -> Any:
    from edgehub.ops.project import open_project

    return open_project(args.config).store()


def _when(timestamp: float | None) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S") if timestamp else "-"


def _duration(run: dict[str, Any]) -> str:
    if not run.get("ended_at"):
        return "-"
    return f"{run['ended_at'] - run['started_at']:.2f}s"


def _list(args: argparse.Namespace) -> int:
    runs = _store(args).list_runs(limit=args.limit, status=args.status, run_type=args.run_type)
    if args.json:
        print_json(runs)
        return 0
    table(
        ["run", "started", "type", "name", "status", "took", "parent"],
        [
            [
                r["id"][:8],
                _when(r["started_at"]),
                r["type"],
                r["name"],
                r["status"],
                _duration(r),
                (r["parent_id"] or "-")[:8],
            ]
            for r in runs
        ],
    )
    return 0


def _show(args: argparse.Namespace) -> int:
    run = _store(args).get_run(args.run_id)
    if args.json:
        print_json(run)
        return 0
    print(f"run {run['id']}  {run['name']} ({run['type']})  {run['status']}")
    print(f"  started {_when(run['started_at'])}, took {_duration(run)}")
    if run["parent_id"]:
        print(f"  parent  {run['parent_id']}")
    if run["error"]:
        print(f"  error   {run['error']}")
    print(f"  dir     {run['artifact_dir']}")
    for title, section in (
        ("params", run["params"]),
        ("metrics", run["metrics"]),
        ("environment", run["environment"]),
        ("tags", run["tags"]),
    ):
        if section:
            print(f"\n{title}:")
            table(["name", "value"], sorted(section.items()))
    if run["artifacts"]:
        print("\nartifacts:")
        table(
            ["name", "file", "bytes", "path"],
            [[a["name"] or "-", a["file_name"], a["size"], a["path"]] for a in run["artifacts"]],
        )
    return 0


def _compare(args: argparse.Namespace) -> int:
    diff = _store(args).compare(args.run_a, args.run_b)
    if args.json:
        print_json(diff)
        return 0
    print(f"a = {diff['a']}\nb = {diff['b']}\n")
    print("metrics:")
    table(
        ["metric", "a", "b", "b/a"],
        [[k, v["a"], v["b"], v["ratio"]] for k, v in diff["metrics"].items()],
    )
    for section in ("params", "environment"):
        differing = {k: v for k, v in diff[section].items() if not v["same"]}
        if differing:
            print(f"\n{section} that differ:")
            table(["name", "a", "b"], [[k, v["a"], v["b"]] for k, v in differing.items()])
    return 0
