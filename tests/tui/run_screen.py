"""The steps of a test that launches runs from the Run screen: open it, find an option's
editor, launch, wait (with a deadline) until every run has ended, read a pane's log."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from edgehub.tui.screens.run import RunScreen
from edgehub.tui.widgets.run_pane import RunPane


async def open_run_screen(pilot: Any) -> RunScreen:
    """Switch to the Run screen (key ``2``) and return it."""
    await pilot.press("2")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, RunScreen)
    return screen


def option_field(screen: RunScreen, form: str, key: str) -> Any:
    """The editor of option ``key`` in ``form`` (a step's name, or ``eval``): an Input, or a
    Select for declared choices."""
    for widget in screen.query(f"#opt-{form} Input, #opt-{form} Select"):
        if widget.name == key:
            return widget
    raise AssertionError(f"no option {key!r} in form {form!r}")


async def wait_until(pilot: Any, condition: Callable[[], bool], seconds: float) -> None:
    """Let the app run until ``condition`` holds; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        await pilot.pause(0.2)
    assert condition(), "timed out"


async def launch(pilot: Any) -> None:
    """Launch the run the screen's fields describe (ctrl+r)."""
    await pilot.press("ctrl+r")
    await pilot.pause()


async def until_all_ended(pilot: Any, seconds: float = 240) -> None:
    """Wait until no run launched from the screen is still going."""
    await wait_until(pilot, lambda: not pilot.app.state.runs, seconds)
    await pilot.pause()


def log_text(pane: RunPane) -> str:
    """The lines the run's pane shows."""
    from textual.widgets import Log

    return "\n".join(pane.query_one(Log).lines)
