"""The steps of a test that goes to the Runs screen and opens a run, each waiting (with a
deadline) for what it promises: on a busy machine the screen is built, and its list filled,
by workers that may still be going when a fixed number of pauses has passed."""

from __future__ import annotations

from typing import Any

from tests.tui.run_screen import wait_until
from textual.widgets import DataTable

from edgehub.tui.screens.run_detail import RunDetailScreen
from edgehub.tui.screens.runs import RunsScreen


async def settle(pilot: Any) -> None:
    """Let the workers started so far end and their results show."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_runs(pilot: Any, seconds: float = 60, rows: int = 1) -> RunsScreen:
    """Go to the Runs screen (key ``3``) once it lists ``rows`` runs or more (0: once it is
    shown, for a store with none)."""
    await pilot.press("3")

    def listed() -> bool:
        screen = pilot.app.screen
        if not isinstance(screen, RunsScreen):
            return False
        return screen.query_one("#runs", DataTable).row_count >= rows

    await wait_until(pilot, listed, seconds)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, RunsScreen)
    return screen


async def open_newest_run(pilot: Any, seconds: float = 60) -> RunDetailScreen:
    """Open the newest run's detail (``3``, then Enter on the first row) once it is shown."""
    await open_runs(pilot, seconds)
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, RunDetailScreen), seconds)
    await settle(pilot)
    await settle(pilot)  # the detail's own readers start as it mounts
    screen = pilot.app.screen
    assert isinstance(screen, RunDetailScreen)
    return screen
