"""The Run screen's run tabs, against the real core (no Docker needed): the tab bar follows the
newest run, a finished run's tab closes (^l), and a run queued behind a held device shows
WAITING, not RUNNING, saying another run of this hub-tui holds it (not the TUI's own pid)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Tabs

from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.run import RunScreen
from edgehub.tui.widgets.run_pane import RunPane

pytestmark = pytest.mark.asyncio


async def _wait(pilot: object, condition: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        await pilot.pause(0.1)  # type: ignore[attr-defined]
    assert condition(), "timed out"  # type: ignore[operator]


async def _run_screen(pilot: object, app: EdgehubApp) -> RunScreen:
    await pilot.press("2")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    screen = app.screen
    assert isinstance(screen, RunScreen)
    return screen


async def test_the_tab_bar_follows_the_newest_run_and_finished_tabs_close(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(60, 18)) as pilot:
        screen = await _run_screen(pilot, app)
        screen.query_one("#model", Input).value = "missing.onnx"  # each run fails at once
        for _ in range(8):
            await pilot.press("ctrl+r")
            await pilot.pause()
        await _wait(pilot, lambda: not app.state.runs, 60)
        await pilot.pause()
        tabs = screen.query_one("#panes Tabs", Tabs)
        bar = tabs.query_one("#tabs-scroll")  # the tab bar's scrolling part
        assert bar.virtual_size.width > bar.size.width  # more tabs than fit
        active = tabs.active_tab
        assert active is not None and (active.id or "").endswith("tab-run-8")
        shown, tab = bar.region, active.region
        assert tab.width and shown.x <= tab.x and tab.right <= shown.right  # scrolled into view
        assert all(pane.status == "FAILED" for pane in screen.query(RunPane))
        screen.set_focus(None)
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert len(screen.query(RunPane)) == 7 and not screen.query("#run-8")


async def test_a_run_queued_behind_a_held_device_shows_waiting(project: Path) -> None:
    from edgehub.acquire.boards import board_key
    from edgehub.acquire.leases import device_lease
    from edgehub.config.devices import to_device
    from edgehub.ops.project import open_project

    board = board_key(to_device(open_project(project / "hub.toml").config, "local"))
    lease_dir = Path(os.environ["EDGEHUB_LEASE_DIR"])
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # another run of this process holds the board
        with device_lease(board, device="local", lease_dir=lease_dir, command="hub-tui run"):
            held.set()
            release.wait(120)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        app = EdgehubApp(project / "hub.toml")
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await _run_screen(pilot, app)
            screen.query_one("#model", Input).value = "model.onnx"
            screen.query_one("#device", Select).value = "local"
            await pilot.press("ctrl+r")
            pane = screen.query_one(RunPane)
            await _wait(pilot, lambda: pane.status == "WAITING", 60)
            text = "\n".join(pane.query_one("Log").lines)  # type: ignore[attr-defined]
            assert "in use by another run of this hub-tui" in text, text
            assert f"pid {os.getpid()}" not in text
            await pilot.press("ctrl+k")
            await _wait(pilot, lambda: not app.state.runs, 60)
            await pilot.pause()
            assert pane.status == "KILLED"
    finally:
        release.set()
        holder.join(30)
