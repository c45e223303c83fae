"""`hub exec sweep [GRID.toml]`: models x devices x runtimes x option values, then a table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.cli.options import Flags, project_of
from edgehub.cli.output import LogPrinter, print_json, table
from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.cluster.dispatch import RayExecutor
    from edgehub.ops.sweep import CellResult, SweepReport
    from edgehub.ops.sweep_grid import SweepGrid


def sweep_flags() -> Flags:
    flags = Flags("sweep", "the flags add to (or replace) the grid file's lists")
    flags.add_argument("--models", metavar="A.onnx,B.onnx", help="models to sweep")
    flags.add_argument("--devices", metavar="D1,D2", help="hub.toml devices")
    flags.add_argument("--runtimes", metavar="R1,R2", help="runtimes to sweep")
    flags.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="an option and its values, e.g. compile.precision=fp32,int8 (repeatable; values "
        "holding commas are separated by ';', e.g. input_shape='1,3,224,224;1,3,320,320', or "
        "given in repeated --vary flags of the same key); --set KEY=VALUE fixes one for every cell",
    )
    flags.add_argument(
        "--sweep-step",
        choices=("profile", "pipeline"),
        help="what each cell runs (default: pipeline, which also measures accuracy)",
    )
    flags.add_argument(
        "--resume", action="store_true", help="skip the cells an earlier sweep finished"
    )
    return flags


def cluster_flags() -> Flags:
    """``--cluster``: a sweep's cells, or an eval's shards of samples, as Ray tasks."""
    flags = Flags("cluster", "work spread over a Ray cluster (the [ray] extra)")
    flags.add_argument(
        "--cluster",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run a sweep's cells, or an eval's shards of samples, as tasks on a Ray cluster: "
        "ray://HOST:10001, HOST:6379, auto, or local:N (a Ray instance here with N workers); "
        "alone: hub.toml's [cluster] address",
    )
    return flags


def _grid(args: argparse.Namespace) -> SweepGrid:
    from edgehub.ops.sweep_grid import build_grid, listed

    grid = build_grid(
        args.grid,
        models=[Path(m) for m in listed(args.models or "")],
        devices=listed(args.devices or "") or ([args.device] if args.device else []),
        runtimes=listed(args.runtimes or ""),
        vary=map(_vary, args.vary),
        fixed=map(_fixed, args.set),
        step=args.sweep_step,
    )
    if args.input is not None:
        grid.inputs = args.input
    return grid


def _vary(pair: str) -> tuple[str, list[str]]:
    from edgehub.ops.sweep_grid import vary_pair

    parsed = vary_pair(pair)
    if parsed is None:
        raise UsageError(
            f"--vary needs KEY=V1,V2 (or KEY='V1;V2' for values holding commas), got {pair!r}"
        )
    return parsed


def _fixed(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--set needs KEY=VALUE, got {pair!r}")
    return key.strip(), value.strip()


def handle_sweep(args: argparse.Namespace) -> int:
    from edgehub.ops.sweep import run_sweep

    grid = _grid(args)
    project = project_of(args)
    executor = _executor(args.cluster, project.config.cluster.address)
    printer = LogPrinter(quiet=args.quiet)
    try:
        if executor is not None:
            executor.connect()
        report = run_sweep(
            project,
            grid,
            resume=args.resume,
            subscriber=printer,
            lease_timeout=args.lease_timeout,
            timeout=args.timeout,
            executor=executor,
            on_cell=None if executor is None or args.quiet else _live_line,
        )
    finally:
        printer.done()
        if executor is not None:
            executor.close()
    if args.json:
        print_json(report.to_dict())
    else:
        print_sweep(report)
    return 1 if report.failed else 0


def _executor(flag: str | None, configured: str | None) -> RayExecutor | None:
    """The Ray executor ``--cluster`` asks for (its address, else hub.toml's); None without."""
    from edgehub.cluster import cluster_address, ray_executor

    address = cluster_address(flag, configured)
    return None if address is None else ray_executor(address)


def _live_line(cell: CellResult) -> None:
    """A cluster cell's progress on stderr: its state and the node that runs it."""
    where = f" on {cell.node}" if cell.node else ""
    print(f"cell {cell.label}: {cell.status}{where}", file=sys.stderr, flush=True)


def print_sweep(report: SweepReport) -> None:
    print(f"sweep: run {report.run_id[:8]} {report.status}, {len(report.cells)} cells")
    nodes = any(cell.node for cell in report.cells)
    headers = ["model", "device", "runtime", "options", "status", "median ms", "p99 ms"]
    headers += ["max abs err", "cosine", "run", *(["node"] if nodes else [])]
    rows: list[list[Any]] = []
    for cell in report.cells:
        settings = " ".join(f"{k}={v}" for k, v in cell.settings.items()) or "-"
        status = f"{cell.status} (earlier)" if cell.reused_from else cell.status
        row = [Path(cell.model).name, cell.device, cell.runtime, settings, status, cell.median_ms]
        row += [cell.p99_ms, cell.max_abs_error, cell.cosine_similarity, (cell.run_id or "-")[:8]]
        rows.append(row + ([cell.node or "-"] if nodes else []))
    table(headers, rows)
    for cell in report.failed:
        print(f"FAILED {cell.label}: {cell.error}")
