"""Screens built ahead: after the first paint the other screens are built in the background, a
switch shows the screen built (no second one), and a screen built before its first visit still
reads its data at that visit (runs made meanwhile are listed; Docker's images are listed at each
visit, never at start-up)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.tui.conftest import FROZEN_AT
from tests.tui.fixed_runs import fill_store
from textual.widgets import DataTable

from edgehub.tui.app import SCREENS, EdgehubApp
from edgehub.tui.clock import frozen_clock
from edgehub.tui.screens.run import RunScreen
from edgehub.tui.widgets.field_form import FieldForm

pytestmark = pytest.mark.asyncio

OTHERS = [name for name in SCREENS if name != "devices"]


async def _built_ahead(app: EdgehubApp, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not all(app.screens_ahead.ready(name) for name in OTHERS):
        assert time.monotonic() < deadline, "screens not built ahead in time"
        await asyncio.sleep(0.05)


@pytest.fixture
def composed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the screens composed, in order."""
    seen: list[str] = []
    for name, screen in SCREENS.items():
        compose = screen.compose

        def counting(self: Any, compose: Any = compose, name: str = name) -> Any:
            seen.append(name)
            return compose(self)

        monkeypatch.setattr(screen, "compose", counting)
    yield seen


async def test_each_screen_is_built_once_ahead_and_shown_as_built(
    project: Path, composed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    listed: list[float] = []

    def image_rows() -> list[Any]:  # stands in for asking Docker: counts the asks
        listed.append(time.monotonic())
        return ["onnxruntime"]

    monkeypatch.setattr("edgehub.tui.screens.images._image_rows", image_rows)
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _built_ahead(app)
        assert sorted(composed) == sorted(SCREENS)  # each once, before any visit
        assert not listed  # built, not visited: Docker not asked
        ids = fill_store(project / ".hub", count=3, at=FROZEN_AT)  # made after the build
        for key, name in enumerate(SCREENS, start=1):
            await pilot.press(str(key))
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert type(app.screen) is SCREENS[name]
            if name == "runs":  # read at the visit, not when built
                table = app.screen.query_one("#runs", DataTable)
                assert [str(row.value) for row in table.rows] == ids
        assert sorted(composed) == sorted(SCREENS)  # no screen built twice
        assert len(listed) == 1  # Images listed at its visit
        await pilot.press("f4")  # F4: Sweep's focused field would take a 4
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert len(listed) == 2  # and again at the next


async def test_a_key_pressed_while_screens_are_being_built_shows_its_screen(
    project: Path, composed: list[str]
) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("2")  # at once: Run is being built, or not yet
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await _built_ahead(app)
        await pilot.pause()
        assert composed.count("run") == 1
        assert len(list(screen.query("#options FieldForm").results(FieldForm))) == 1  # one form
        await pilot.press("f5", "f2")
        await pilot.pause()
        assert app.screen is screen


@pytest.mark.parametrize("after", [0.0, 0.06, 0.07, 0.08, 0.1])
async def test_quitting_while_a_screen_is_being_built_is_clean(project: Path, after: float) -> None:
    """Quitting ``after`` seconds after the Run screen is built: the next one is on its way."""
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        deadline = time.monotonic() + 60
        while not app.screens_ahead.ready("run") and time.monotonic() < deadline:
            await asyncio.sleep(0.002)
        await asyncio.sleep(after)
        app.exit(0)
        await pilot.pause()
    assert app.return_code == 0


async def test_the_run_screens_options_form_is_built_ahead_in_a_slice_of_its_own(
    project: Path,
) -> None:
    """The form comes after the rest of the screen (its first frame is not held for it), and
    is in place before the first visit."""
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await _built_ahead(app)
        screen = app.screens_ahead._screens["run"]
        assert isinstance(screen, RunScreen)
        deadline = time.monotonic() + 60
        while not screen.query("#options FieldForm") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(list(screen.query("#options FieldForm").results(FieldForm))) == 1
        assert app.screen is not screen  # not visited
        await pilot.press("2")
        await pilot.pause()
        assert app.screen is screen
        assert len(list(screen.query("#options FieldForm").results(FieldForm))) == 1
