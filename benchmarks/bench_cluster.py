"""What `hub exec sweep --cluster` costs, and how its dispatch scales (run on demand, not in CI).

(a) Per-cell overhead: one sweep of real profile cells (2 models x 2 devices x ``--values``
    option values, a cell about 1 s: a container start and a whole-model profile), run
    locally and with ``--cluster local:2``, each in a fresh store, ``--repeat`` times alternating
    (medians compared: the machine's load changes). The per-cell time is the SWEEP run's
    duration over its cells (Ray's start-up is before the run opens; the wall times, start-up
    included, are printed as well). Goal: cluster / local <= 1.15.
(b) Dispatch scaling, by simulation: `RayExecutor` on a local Ray instance of K workers
    (K = 1, 2, 4, 8) runs cells whose task sleeps ``--sleep`` s instead of computing (same
    submission, attempt record, wait loop and result path). After a warm-up round (Ray starts
    its worker processes), ``--rounds`` x K cells are timed: throughput(K) against
    0.9 x K x throughput(1).

On paper: the driver handles one finished cell at a time (a wait, an actor call, an import),
``d`` seconds each; with cells of ``t`` seconds and K workers, throughput is
K / (t + s) while K x d < t + s (s: Ray's per-task cost), and 1 / d beyond: linear in K
until K reaches (t + s) / d, which the simulation's largest K probes.

Needs the [ray] extra and the ONNX Runtime image.

    python benchmarks/bench_cluster.py [--values 3] [--repeat 3] [--sleep 1.0] [--rounds 3]
        [--only a|b]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
from test_sweep import HUB_TOML  # the sweep tests' two local devices of one CPU each

REPO = Path(__file__).resolve().parents[1]
HUB = str(Path(sys.executable).with_name("hub"))


def _grid(values: int) -> str:
    # a cell: about 1 s (whole-model timing: the layerwise trace of that many runs would make
    # a cell's artifacts, which travel back as its bundle, tens of MB)
    runs = ", ".join(str(4000 * (i + 1)) for i in range(values))
    return (
        '[sweep]\nstep = "profile"\nmodels = ["a.onnx", "b.onnx"]\ndevices = ["cpu1", "cpu2"]\n'
        f'[sweep.vary]\n"profile.runs" = [{runs}]\n'
        '[sweep.set]\n"profile.profiling_method" = "python"\n'
    )


def _sweep_seconds(folder: Path) -> tuple[float, int]:
    from edgehub.tracking import RunStore

    store = RunStore(folder / ".hub")
    try:
        (run,) = [r for r in store.list_runs(limit=None) if r.run_type == "SWEEP"]
    finally:
        store.close()
    assert run.ended_at is not None and run.status == "FINISHED", run.status
    return run.ended_at - run.started_at, int(run.params["cells"])


def _one_sweep(folder: Path, values: int, extra: list[str], env: dict[str, str]) -> dict[str, Any]:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "hub.toml").write_text(HUB_TOML)
    (folder / "grid.toml").write_text(_grid(values))
    for model in ("a.onnx", "b.onnx"):
        shutil.copy(REPO / "examples" / "tiny_cnn.onnx", folder / model)
    command = [HUB, "exec", "sweep", "grid.toml", "-q", *extra]
    started = time.monotonic()
    subprocess.run(command, cwd=folder, env=env, check=True, capture_output=True)
    wall = time.monotonic() - started
    seconds, cells = _sweep_seconds(folder)
    return {"wall_s": wall, "sweep_s": seconds, "cells": cells}


def overhead(values: int, repeat: int) -> dict[str, Any]:
    """The two sweeps ``repeat`` times, alternating (a busy machine slows both alike); the
    medians are compared."""
    modes = {"local": [], "cluster": ["--cluster", "local:2"]}
    for extra in modes.values():
        print(f"$ hub exec sweep grid.toml -q {' '.join(extra)}".rstrip(), flush=True)
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in modes}
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        env["EDGEHUB_LEASE_DIR"] = f"{tmp}/leases"
        for round_ in range(repeat):
            order = list(modes) if round_ % 2 == 0 else list(modes)[::-1]
            for name in order:
                got = _one_sweep(Path(tmp) / name, values, modes[name], env)
                found[name].append(got)
                print(
                    f"  {name}: {got['cells']} cells, sweep run {got['sweep_s']:.1f} s = "
                    f"{got['sweep_s'] / got['cells']:.2f} s/cell; wall {got['wall_s']:.1f} s "
                    "(start-up included)",
                    flush=True,
                )
    medians = {
        name: {k: statistics.median(r[k] for r in runs) for k in ("sweep_s", "wall_s")}
        for name, runs in found.items()
    }
    ratio = medians["cluster"]["sweep_s"] / medians["local"]["sweep_s"]
    wall_ratio = medians["cluster"]["wall_s"] / medians["local"]["wall_s"]
    verdict = "ok" if ratio <= 1.15 else "OVER the goal"
    print(
        f"(a) per-cell cluster/local (medians of {repeat}) = {ratio:.2f}x (goal <= 1.15x: "
        f"{verdict}); wall cluster/local = {wall_ratio:.2f}x"
    )
    return {"runs": found, "ratio": ratio, "wall_ratio": wall_ratio}


def _sleeping_cell(
    job: Any, model: bytes, inputs: bytes | None, attempts: Any, boards: Any = None
) -> Any:
    """A cell's task that waits instead of computing (the dispatch path, no container)."""
    import ray

    from edgehub.cluster.worker import CellOutcome

    attempt = ray.get(attempts.start.remote(job.slot, "sim", os.getpid()))
    time.sleep(job.timeout)
    return CellOutcome("sim", attempt, dataclasses.replace(job.result, status="FINISHED"))


def scaling(sleep: float, rounds: int) -> dict[str, Any]:
    from edgehub.cluster.dispatch import RayExecutor
    from edgehub.ops.cancel import Cancellation
    from edgehub.ops.project import open_project
    from edgehub.ops.sweep import SweepSession, _result
    from edgehub.ops.sweep_grid import SweepGrid

    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        (Path(tmp) / "hub.toml").write_text('[project]\nname = "sim"\n')
        model = Path(tmp) / "m.onnx"
        shutil.copy(REPO / "examples" / "tiny_cnn.onnx", model)
        project = open_project(Path(tmp) / "hub.toml")
        for k in (1, 2, 4, 8):
            executor = RayExecutor(f"local:{k}")
            executor.task_body = _sleeping_cell
            executor.connect()
            try:
                timings = []
                for count in (k, rounds * k):  # a warm-up round, then the timed one
                    values = [str(i) for i in range(count)]
                    grid = SweepGrid(
                        models=[model], devices=["local"], vary={"profile.runs": values}
                    )
                    cells = grid.cells()
                    pending = [(c, _result(c, "profile", {})) for c in cells]
                    session = SweepSession(
                        project, grid, "0" * 32, None, Cancellation(), None, None, sleep
                    )
                    started = time.monotonic()
                    executor.run_cells(session, pending)
                    timings.append(time.monotonic() - started)
                    assert all(r.status == "FINISHED" for _, r in pending)
            finally:
                executor.close()
            found[str(k)] = rounds * k / timings[-1]
            base = found["1"]
            goal = 0.9 * k * base
            verdict = "ok" if found[str(k)] >= goal else "BELOW"
            print(
                f"(b) K={k}: {rounds * k} cells of {sleep:.1f} s in {timings[-1]:.2f} s = "
                f"{found[str(k)]:.2f} cells/s; 0.9*K*one node = {goal:.2f} ({verdict})",
                flush=True,
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=3, help="option values (cells: 4x this)")
    parser.add_argument("--sleep", type=float, default=1.0, help="seconds a simulated cell waits")
    parser.add_argument("--rounds", type=int, default=3, help="timed cells per worker in (b)")
    parser.add_argument("--repeat", type=int, default=3, help="sweeps of each kind in (a)")
    parser.add_argument("--only", choices=["a", "b"], help="run only (a) or only (b)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    results = {}
    if args.only in (None, "a"):
        results["overhead"] = overhead(args.values, args.repeat)
    if args.only in (None, "b"):
        results["scaling"] = scaling(args.sleep, args.rounds)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
