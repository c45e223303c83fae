"""The local run store: statuses, unique run dirs, concurrent writers, SIGKILL, read API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from edgehub.core import HubContext, hub_run
from edgehub.core.component import RunType
from edgehub.errors import RunNotFoundError
from edgehub.tracking import RunStore


@hub_run(RunType.CUSTOM, name="measure")
def measure(ctx: HubContext, value: float) -> float:
    ctx.client.log_param("value", value)
    ctx.client.log_metric("double", value * 2)
    ctx.client.log_metric("series", 1.0, step=0)
    ctx.client.log_metric("series", 2.0, step=1)
    (ctx.artifact_dir / "note.txt").write_text(f"value={value}")
    ctx.client.log_artifact(ctx.artifact_dir / "note.txt", name="note")
    return value


def test_hub_run_records_params_metrics_artifacts_and_history(tmp_path: Path) -> None:
    with HubContext(project_name="p", artifact_base_dir=tmp_path / "store") as ctx:
        measure(ctx, 2.5)
        run_id = ctx.store.list_runs()[0].run_id
        record = ctx.store.get_run(run_id[:8])
    assert record.status == "FINISHED" and record.run_type == "CUSTOM"
    assert record.ended_at is not None and record.ended_at >= record.started_at
    assert record.params == {"value": 2.5}
    assert record.metrics["double"] == 5.0 and record.metrics["series"] == 2.0
    assert [m.step for m in record.metric_history["series"]] == [0, 1]
    assert record.artifacts["note"].local().read_text() == "value=2.5"
    assert record.environment["python"]


def test_run_dirs_are_unique_even_within_one_millisecond(tmp_path: Path) -> None:
    @hub_run("CUSTOM")
    def noop(ctx: HubContext) -> Path:
        return ctx.artifact_dir

    with HubContext(project_name="p", artifact_base_dir=tmp_path) as ctx:
        dirs = [noop(ctx) for _ in range(50)]
    assert len(set(dirs)) == 50


def test_keyboard_interrupt_marks_the_run_killed(tmp_path: Path) -> None:
    @hub_run("CUSTOM")
    def interrupted(ctx: HubContext) -> None:
        raise KeyboardInterrupt

    with HubContext(project_name="p", artifact_base_dir=tmp_path) as ctx:
        with pytest.raises(KeyboardInterrupt):
            interrupted(ctx)
        assert ctx.store.list_runs()[0].status == "KILLED"


_WRITER = textwrap.dedent(
    """
    import sys
    from edgehub.core import HubContext, hub_run

    @hub_run("CUSTOM")
    def step(ctx, i):
        ctx.client.log_param("i", i)
        ctx.client.log_metric("m", float(i))

    with HubContext(project_name=sys.argv[2], artifact_base_dir=sys.argv[1]) as ctx:
        for i in range(int(sys.argv[3])):
            step(ctx, i)
    """
)


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    store = tmp_path / "store"
    procs = [
        subprocess.Popen([sys.executable, str(script), str(store), name, "40"])
        for name in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    reader = RunStore(store)
    for name in ("a", "b"):
        runs = reader.list_runs(project=name, limit=None)
        assert len(runs) == 40
        assert {r.status for r in runs} == {"FINISHED"}
        values = sorted(r.params["i"] for r in runs)
        assert values == list(range(40))


_SLEEPER = textwrap.dedent(
    """
    import sys, time
    from edgehub.core import HubContext, hub_run

    @hub_run("CUSTOM", name="long")
    def long(ctx):
        ctx.client.log_param("started", True)
        print("ready", flush=True)
        time.sleep(60)

    with HubContext(project_name="p", artifact_base_dir=sys.argv[1]) as ctx:
        long(ctx)
    """
)


def test_sigkill_mid_run_leaves_the_store_readable_and_the_run_not_finished(
    tmp_path: Path,
) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text(_SLEEPER)
    store = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(store)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    reader = RunStore(store)
    runs = reader.list_runs()
    assert len(runs) == 1
    assert runs[0].status == "KILLED"
    assert reader.get_run(runs[0].run_id).params == {"started": True}
    # the store still takes new runs
    with HubContext(project_name="p", artifact_base_dir=store) as ctx:
        measure(ctx, 1.0)
    assert len(reader.list_runs()) == 2


def test_compare_and_run_id_resolution(tmp_path: Path) -> None:
    with HubContext(project_name="p", artifact_base_dir=tmp_path) as ctx:
        measure(ctx, 1.0)
        time.sleep(0.01)
        measure(ctx, 3.0)
        first, second = [r.run_id for r in reversed(ctx.store.list_runs())]
        diff = ctx.store.compare(first, second)
        assert ctx.store.resolve_id("latest") == second
        with pytest.raises(RunNotFoundError, match=r"no run matches 'zzz'"):
            ctx.store.get_run("zzz")
        with pytest.raises(RunNotFoundError, match=r"empty run reference"):
            ctx.store.resolve_id("")
    assert diff.params["value"].to_dict() == {"a": 1.0, "b": 3.0, "same": False}
    assert diff.metrics["double"].ratio == pytest.approx(3.0)
