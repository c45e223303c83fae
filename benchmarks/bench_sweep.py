"""Benchmark a sweep over K = 2 devices against the same cells run one by one (on demand).

    .venv/bin/python benchmarks/bench_sweep.py [--cells 8] [--runs 20000] [--dead-board]

The two devices are hub.toml devices with the ``local`` provider and ``[devices.X.docker]
cpus = 1``: two independent containers, each limited to one CPU, so that on a two-core machine
they do not compete. Each cell profiles ``examples/tiny_cnn.onnx`` with ``runs`` inferences
(cells alternate between the devices). "One by one" calls ``ops.execute`` for each cell in
turn; the sweep runs a thread per device, and the device leases key on the device name, so
the two devices' cells overlap; ``sweep_s_with_both_devices_busy`` says for how long. Goal:
speed-up >= 0.9 * K = 1.8. On a shared machine the figures are noisy (other processes take
the cores, and the load average is printed with them).

``--dead-board`` instead sweeps a labgrid pool (a real coordinator and exporter on loopback,
tests/labgrid_lab.py) of two healthy places, then the same cells on a pool of those two and a
dead one (``p0``: its exporter's resource is gone, so its health check fails; it sorts first,
so each measurement tries it until it is quarantined). Goal: the sweep with the dead board
takes at most 1.2x the sweep on the healthy boards alone (sums of ``--repeat`` interleaved
sweeps of each kind; each finds the dead board anew).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

HUB_TOML = """[project]
name = "bench-sweep"
{devices}
"""
DEVICE = """
[devices.{name}]
provider = "local"
[devices.{name}.docker]
cpus = 1
"""


def _both_busy_s(store_dir: Path, sweep_id: str) -> float:
    """Seconds during which cells of the sweep ran on both devices at once (the scheduler's
    parallelism, whatever the CPUs gave each cell)."""
    from edgehub.tracking import RunStore
    from edgehub.tracking.records import RunFilter

    store = RunStore(store_dir)
    try:
        cells = store.query_runs(RunFilter(parent_run_id=sweep_id, limit=None))
    finally:
        store.close()
    edges = sorted(
        [(r.started_at, 1) for r in cells] + [(r.ended_at or r.started_at, -1) for r in cells]
    )
    busy, running, since = 0.0, 0, 0.0
    for at, step in edges:
        if running >= 2:
            busy += at - since
        running += step
        since = at
    return busy


POOL_TOML = """[project]
name = "bench-pool"

[devices.healthy]
provider = "local"
[devices.healthy.docker]
cpus = 1
[devices.healthy.labgrid]
coordinator = "{address}"
place = "p[12]"

[devices.withdead]
provider = "local"
[devices.withdead.docker]
cpus = 1
[devices.withdead.labgrid]
coordinator = "{address}"
place = "p*"
"""
EXPORTS = """
board1:
  NetworkService: {address: 127.0.0.1, username: root, port: 2201}
board2:
  NetworkService: {address: 127.0.0.1, username: root, port: 2202}
"""


def dead_board(cells: int, runs: int, repeat: int) -> None:
    """The sweep on a pool with a dead board against the healthy boards alone."""
    sys.path.insert(0, str(REPO / "tests"))
    from edgehub.ops.devices import unquarantine
    from edgehub.ops.project import open_project
    from edgehub.ops.sweep import run_sweep
    from edgehub.ops.sweep_grid import SweepGrid
    from labgrid_lab import labgrid_lab

    figures: dict[str, object] = {"cells": cells, "runs_per_cell": runs}
    with tempfile.TemporaryDirectory(prefix="edgehub-bench-pool-") as folder:
        work = Path(folder)
        os.environ["EDGEHUB_LEASE_DIR"] = str(work / "leases")
        places = {"p0": "absent", "p1": "board1", "p2": "board2"}
        with labgrid_lab(work, EXPORTS, places) as address:
            (work / "hub.toml").write_text(POOL_TOML.format(address=address))
            shutil.copy(REPO / "examples" / "tiny_cnn.onnx", work / "m.onnx")
            project = open_project(work / "hub.toml")
            values = [str(runs + i) for i in range(cells)]
            times: dict[str, list[float]] = {"healthy": [], "withdead": []}
            for _ in range(repeat):  # interleaved: the machine's load changes under both alike
                for device in times:
                    unquarantine(project, device)  # each sweep finds the dead board anew
                    grid = SweepGrid(
                        models=[work / "m.onnx"], devices=[device], step="profile",
                        vary={"runs": values},
                    )  # fmt: skip
                    start = time.perf_counter()
                    report = run_sweep(project, grid)
                    times[device].append(round(time.perf_counter() - start, 2))
                    assert {c.status for c in report.cells} == {"FINISHED"}, report.to_dict()
    for device, seconds in times.items():
        figures[f"{device}_s"] = seconds
    ratio = sum(times["withdead"]) / sum(times["healthy"])
    figures.update(ratio=round(ratio, 3), goal=1.2, cpus=os.cpu_count())
    figures["load_avg_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(figures, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=8)
    parser.add_argument("--runs", type=int, default=20000)
    parser.add_argument("--dead-board", action="store_true", help="the pool benchmark")
    parser.add_argument("--repeat", type=int, default=2, help="pool sweeps of each kind")
    args = parser.parse_args()
    if args.dead_board:
        dead_board(args.cells, args.runs, args.repeat)
        return

    from edgehub.ops.execute import ExecRequest, execute
    from edgehub.ops.project import open_project
    from edgehub.ops.sweep import run_sweep
    from edgehub.ops.sweep_grid import SweepGrid

    devices = ["bench1", "bench2"]
    with tempfile.TemporaryDirectory(prefix="edgehub-bench-sweep-") as folder:
        work = Path(folder)
        os.environ["EDGEHUB_LEASE_DIR"] = str(work / "leases")
        (work / "hub.toml").write_text(
            HUB_TOML.format(devices="".join(DEVICE.format(name=d) for d in devices))
        )
        models = []
        for index in range(args.cells // len(devices)):
            model = work / f"m{index}.onnx"
            shutil.copy(REPO / "examples" / "tiny_cnn.onnx", model)
            models.append(model)
        project = open_project(work / "hub.toml")
        grid = SweepGrid(
            models=models, devices=devices, step="profile", vary={"runs": [str(args.runs)]}
        )
        cells = grid.cells()

        start = time.perf_counter()
        for cell in cells:
            execute(
                project,
                ExecRequest(
                    step="profile",
                    runtime=cell.runtime,
                    model=cell.model,
                    device=cell.device,
                    options={"profile": {"runs": args.runs}},
                ),
            )
        one_by_one = time.perf_counter() - start

        start = time.perf_counter()
        report = run_sweep(project, grid)
        swept = time.perf_counter() - start
        assert {c.status for c in report.cells} == {"FINISHED"}, report.to_dict()
        both_busy = _both_busy_s(work / ".hub", report.run_id)

    speedup = one_by_one / swept
    print(
        json.dumps(
            {
                "cells": len(cells),
                "devices": len(devices),
                "runs_per_cell": args.runs,
                "one_by_one_s": round(one_by_one, 2),
                "sweep_s": round(swept, 2),
                "speedup": round(speedup, 2),
                "sweep_s_with_both_devices_busy": round(both_busy, 2),
                "goal": 0.9 * len(devices),
                "cpus": os.cpu_count(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
