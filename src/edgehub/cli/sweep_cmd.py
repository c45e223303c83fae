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


def _listed(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _values(text: str) -> list[str]:
    """``--vary`` values: split on ``;`` when the text has one (values keep their commas),
    else on ``,``."""
    parts = text.split(";") if ";" in text else text.split(",")
    return [part.strip() for part in parts if part.strip()]


def sweep_flags() -> Flags:
    flags = Flags("sweep", "the flags add to (or replace) the grid file's lists")
    flags.add_argument("--models", type=_listed, metavar="A.onnx,B.onnx", help="models to sweep")
    flags.add_argument("--devices", type=_listed, metavar="D1,D2", help="hub.toml devices")
    flags.add_argument("--runtimes", type=_listed, metavar="R1,R2", help="runtimes to sweep")
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
    from edgehub.ops.sweep_grid import SweepGrid, load_grid

    grid = load_grid(args.grid) if args.grid else SweepGrid(models=[])
    if args.models:
        grid.models = [Path(m) for m in args.models]
    if args.devices:
        grid.devices = args.devices
    elif args.device:
        grid.devices = [args.device]
    if args.runtimes:
        grid.runtimes = args.runtimes
    varied: dict[str, list[str]] = {}
    for pair in args.vary:
        key, sep, values = pair.partition("=")
        if not sep or not _values(values):
            raise UsageError(
                f"--vary needs KEY=V1,V2 (or KEY='V1;V2' for values holding commas), got {pair!r}"
            )
        varied.setdefault(key.strip(), []).extend(_values(values))
    grid.vary.update(varied)
    for pair in args.set:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set needs KEY=VALUE, got {pair!r}")
        if key not in varied:
            grid.vary.pop(key, None)  # replaces the grid file's values of that option
        grid.fix(key, value.strip())
    if args.sweep_step:
        grid.step = args.sweep_step
    if args.input is not None:
        grid.inputs = args.input
    return grid


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
