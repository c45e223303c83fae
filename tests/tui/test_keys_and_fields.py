"""Single keys and text fields, with Textual's pilot over the real app: a key typed into a
focused text field is text (no shortcut fires), and a key pressed while no field was chosen is
a shortcut (never text): showing a screen and launching take focus out of a field, as Escape
does. F1 lists the keys from anywhere; ^k in a field is the field's own (delete to the end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.tui.run_screen import wait_until
from textual.screen import Screen
from textual.widgets import Input

from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.devices import DevicesScreen
from edgehub.tui.screens.help import HelpScreen
from edgehub.tui.screens.images import ImagesScreen
from edgehub.tui.screens.run import RunScreen
from edgehub.tui.screens.runs import RunsScreen
from edgehub.tui.screens.sweep import SweepScreen

pytestmark = pytest.mark.asyncio

SIZE = (100, 30)
SHORTCUTS = ["2", "q", "1", "d", "e", "3", "5", "question_mark", "r", "x", "w"]


def _texts(screen: Screen[Any]) -> dict[str, str]:
    return {field.id or field.name or "": field.value for field in screen.query(Input)}


async def _type(pilot: Any, field: str, text: str) -> None:
    await pilot.click(f"#{field}")
    await pilot.pause()
    assert isinstance(pilot.app.focused, Input) and pilot.app.focused.id == field
    await pilot.press(*text)
    await pilot.pause()


async def test_a_screen_is_shown_with_no_field_focused(project: Path) -> None:
    """``5`` then ``3`` is the Runs screen, not a "3" in the grid-file field."""
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=SIZE) as pilot:
        order = [
            ("5", SweepScreen),
            ("3", RunsScreen),
            ("2", RunScreen),
            ("1", DevicesScreen),
            ("4", ImagesScreen),
            ("5", SweepScreen),
            ("2", RunScreen),
        ]
        for key, kind in order:
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, kind), (key, app.screen)
            assert not isinstance(app.focused, Input), (key, app.focused)
            assert set(_texts(app.screen).values()) <= {""}, _texts(app.screen)


async def test_keys_typed_into_a_field_are_text_and_escape_makes_them_shortcuts(
    project: Path,
) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await pilot.pause()
        sweep = app.screen
        await _type(pilot, "vary", "runs=50,100,200")
        await pilot.press(*SHORTCUTS)
        await pilot.pause()
        vary = sweep.query_one("#vary", Input)
        assert vary.value == "runs=50,100,2002q1de35?rxw"
        assert app.screen is sweep and app.is_running and app.focused is vary

        await pilot.press("f1")  # help from inside the field, the field untouched
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        await pilot.pause()
        assert app.screen is sweep and vary.value == "runs=50,100,2002q1de35?rxw"
        assert not isinstance(app.focused, Input)  # back from a dialog: out of the field

        await _type(pilot, "models", "a")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.focused, Input)
        await pilot.press("3")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        assert sweep.query_one("#models", Input).value == "a"


async def test_ctrl_k_in_a_field_deletes_to_the_end_of_the_line(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        await _type(pilot, "model", "model.onnx")
        await pilot.press(*["left"] * 5, "ctrl+k")
        await pilot.pause()
        assert app.screen.query_one("#model", Input).value == "model"
        assert not app._notifications  # no "runs going" warning from the app's ^k


async def test_f1_lists_the_keys_on_every_screen(project: Path) -> None:
    from textual.widgets import Static

    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=SIZE) as pilot:
        for key in "12345":
            await pilot.press(key)
            await pilot.pause()
            shown = app.screen
            await pilot.press("f1")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen), key
            text = "\n".join(str(s.render()) for s in app.screen.query(Static))
            assert "F1 ?" in text and "1    " in text, text  # F1 is help; 1 is Devices
            await pilot.press("f1")
            await pilot.pause()
            assert app.screen is shown


@pytest.mark.parametrize("where", ["sweep", "run"])
async def test_after_a_launch_the_next_key_is_a_shortcut(project: Path, where: str) -> None:
    """Launched from a field (^r), then ``2``/``3``: the screen changes, no field grows a digit;
    ^k (no field focused) then cancels what was launched."""
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=SIZE) as pilot:
        if where == "sweep":
            await pilot.press("5")
            await pilot.pause()
            await _type(pilot, "models", "model.onnx")
            await _type(pilot, "devices", "local")
            await _type(pilot, "vary", "profile.runs=50,100,200")
            typed, away, kind = "vary", "2", RunScreen
        else:
            await pilot.press("2")
            await pilot.pause()
            await _type(pilot, "model", "model.onnx")
            typed, away, kind = "model", "3", RunsScreen
        screen = app.screen
        before = _texts(screen)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert app.state.runs, [n.message for n in app._notifications]
        assert not isinstance(app.focused, Input), app.focused
        await pilot.press(away)
        await pilot.pause()
        assert isinstance(app.screen, kind)
        assert _texts(screen) == before and before[typed]
        await pilot.press("ctrl+k")  # the only run going, cancelled from the other screen
        await wait_until(pilot, lambda: not app.state.runs, 120)


async def test_the_sweep_status_column_widens_to_its_longest_status(project: Path) -> None:
    """A cell's status replaces "waiting": the column grows with it ("FINISHED", not
    "FINISHE")."""
    from textual.widgets import DataTable

    from edgehub.ops.sweep import CellResult
    from edgehub.tui.screens.sweep import COLUMNS, CellChanged

    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        table = screen.query_one("#cells", DataTable)
        table.add_row("model.onnx", "local", "onnxruntime", "-", "waiting", "-", "-", "-", key="k")
        cell = CellResult("c", "model.onnx", "local", "onnxruntime", {}, "k", status="FINISHED")
        screen.post_message(CellChanged(cell))
        await pilot.pause()
        status = list(table.columns.values())[COLUMNS.index("status")]
        assert table.get_row("k")[COLUMNS.index("status")] == "FINISHED"
        assert status.get_render_width(table) - 2 * table.cell_padding >= len("FINISHED")
