"""The Run screen against the real core: local ONNX Runtime profiles of the example model in
the pinned image stream their lines into their own panes; a cancelled run ends KILLED with no
container left. Real Docker daemon, real image."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from textual.widgets import Input, Log

from edgehub.tracking import RunStore
from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.run import RunScreen
from edgehub.tui.widgets.run_pane import RunPane

pytestmark = [pytest.mark.asyncio, pytest.mark.docker]


async def _wait(pilot: object, condition: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        await pilot.pause(0.2)  # type: ignore[attr-defined]
    assert condition(), "timed out"  # type: ignore[operator]


def _options_field(screen: RunScreen, step: str, key: str) -> Input:
    for widget in screen.query(f"#opt-{step} Input"):
        if widget.name == key:
            return widget  # type: ignore[return-value]
    raise AssertionError(key)


def _log_text(pane: RunPane) -> str:
    return "\n".join(pane.query_one(Log).lines)


async def test_two_profiles_at_once_each_stream_into_their_pane(
    project: Path, ort_image: str
) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen)
        screen.query_one("#model", Input).value = "model.onnx"
        _options_field(screen, "profile", "runs").value = "50"
        await pilot.press("ctrl+r")
        await pilot.pause()
        _options_field(screen, "profile", "runs").value = "60"
        await pilot.press("ctrl+r")
        await _wait(pilot, lambda: not app.state.runs, 240)
        await pilot.pause()
        panes = list(screen.query(RunPane))
        assert [p.id for p in panes] == ["run-1", "run-2"]
        for pane in panes:
            assert pane.status == "FINISHED", _log_text(pane)
            assert pane.lines_shown > 0
            assert "profile written to out/profile.json" in _log_text(pane)
            assert "── profile: run " in _log_text(pane)
            assert f" pid {os.getpid()} " not in _log_text(pane)  # not "held by" ourselves
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
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen)
        screen.query_one("#model", Input).value = "model.onnx"
        _options_field(screen, "profile", "runs").value = "900000"
        await pilot.press("ctrl+r")
        pane = screen.query_one(RunPane)
        await _wait(pilot, lambda: pane.lines_shown > 0, 120)
        await pilot.pause(0.5)
        began = time.monotonic()
        screen.set_focus(None)
        await pilot.press("ctrl+k")
        await _wait(pilot, lambda: not app.state.runs, 60)
        await pilot.pause()
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
