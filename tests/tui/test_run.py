"""The Run screen against the real core: local ONNX Runtime profiles of the example model in
the pinned image stream their lines into their own panes; a cancelled run ends KILLED with no
container left. Real Docker daemon, real image."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from tests.tui.run_screen import (
    launch,
    log_text,
    open_run_screen,
    option_field,
    until_all_ended,
    wait_until,
)
from textual.widgets import Input

from edgehub.tracking import RunStore
from edgehub.tui.app import EdgehubApp
from edgehub.tui.widgets.run_pane import RunPane

pytestmark = [pytest.mark.asyncio, pytest.mark.docker]


async def test_two_profiles_at_once_each_stream_into_their_pane(
    project: Path, ort_image: str
) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_run_screen(pilot)
        screen.query_one("#model", Input).value = "model.onnx"
        option_field(screen, "profile", "runs").value = "50"
        await launch(pilot)
        option_field(screen, "profile", "runs").value = "60"
        await launch(pilot)
        await until_all_ended(pilot)
        panes = list(screen.query(RunPane))
        assert [p.id for p in panes] == ["run-1", "run-2"]
        for pane in panes:
            assert pane.status == "FINISHED", log_text(pane)
            assert pane.lines_shown > 0
            assert "profile written to out/profile.json" in log_text(pane)
            assert "── profile: run " in log_text(pane)
            assert f" pid {os.getpid()} " not in log_text(pane)  # not "held by" ourselves
    store = RunStore(project / ".hub")
    try:
        runs = store.list_runs(limit=None)
        assert sorted(r.status for r in runs) == ["FINISHED", "FINISHED"]
        assert sorted(r.params["option.runs"] for r in runs) == [50, 60]
    finally:
        store.close()


async def test_cancel_a_long_run_ends_it_killed_with_no_container_left(
    project: Path, ort_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EDGEHUB_KEEP_WARM", raising=False)
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_run_screen(pilot)
        screen.query_one("#model", Input).value = "model.onnx"
        option_field(screen, "profile", "runs").value = "900000"
        await launch(pilot)
        pane = screen.query_one(RunPane)
        await wait_until(pilot, lambda: pane.lines_shown > 0, 120)
        await pilot.pause(0.5)
        began = time.monotonic()
        screen.set_focus(None)
        await pilot.press("ctrl+k")
        await until_all_ended(pilot, 60)
        assert time.monotonic() - began < 30
        assert pane.status == "KILLED"
    store = RunStore(project / ".hub")
    try:
        (run,) = store.list_runs(limit=None)
        assert run.status == "KILLED"
    finally:
        store.close()
    ps = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=org.edgehub.owner-pid={os.getpid()}"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ps.stdout.strip() == ""
