"""Every form is usable from the keyboard on a small terminal: at 80x24 and 60x18, Tab reaches
each field and the form's launch/save button, and whatever has focus is on screen (not
scrolled away or hidden under another widget)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widget import Widget

from edgehub.tui.app import EdgehubApp

pytestmark = pytest.mark.asyncio

FORMS = {  # key pressed on the Devices screen: (the button to reach, fields that must be passed)
    "2": ("launch", {"model", "pick", "runtime", "step", "device"}),
    "5": ("launch", {"grid-file", "models", "devices", "runtimes", "vary", "step", "resume"}),
    "a": ("save", {"name", "spec", "ssh-on", "cli_args", "override-pick", "override-add"}),
    "e": ("save", {"name", "spec", "override-pick", "override-add"}),  # local: no SSH
}


def _on_screen(app: EdgehubApp, widget: Widget) -> bool:
    region = widget.region
    if region.area == 0:
        return False
    hit, _ = app.screen.get_widget_at(region.x + min(1, region.width - 1), region.y)
    return hit is widget or widget in hit.ancestors


@pytest.mark.parametrize("size", [(80, 24), (60, 18)], ids=["80x24", "60x18"])
@pytest.mark.parametrize("key", list(FORMS), ids=["run", "sweep", "add-device", "edit-device"])
async def test_tab_reaches_every_field_and_the_button_on_screen(
    project: Path, size: tuple[int, int], key: str
) -> None:
    target, fields = FORMS[key]
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=size) as pilot:
        await pilot.press(key)
        await pilot.pause()
        passed: set[str] = set()
        for _ in range(60):
            focused = app.focused
            if focused is not None:
                assert _on_screen(app, focused), (focused, focused.region)
                passed.add(focused.id or focused.name or "")
                if focused.id == target and fields <= passed:
                    break
            await pilot.press("tab")
            await pilot.pause()
        assert app.focused is not None and app.focused.id == target, passed
        assert fields <= passed, fields - passed


async def test_question_mark_lists_the_screens_keys_and_the_global_ones(project: Path) -> None:
    from textual.widgets import Static

    from edgehub.tui.screens.help import HelpScreen

    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(str(s.render()) for s in app.screen.query(Static))
        for line in ("^r  Launch", "^t  Pick model", "Cancel run", "^c", "?", "Esc"):
            assert line in text, (line, text)
        assert "Keys of the Run screen" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_an_option_out_of_bounds_or_with_letters_is_flagged_at_its_field(
    project: Path,
) -> None:
    from textual.widgets import Input, Label

    from edgehub.tui.widgets.run_pane import RunPane

    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#model", Input).value = "model.onnx"
        runs = next(w for w in screen.query("#opt-profile Input") if w.name == "runs")
        runs.focus()
        runs.value = ""
        await pilot.press("1", "2", "x")
        await pilot.pause()
        assert isinstance(runs, Input) and runs.value == "12x"  # shown, not dropped

        def message() -> str:
            shown = screen.query("#opt-profile .error.shown").results(Label)
            return " ".join(str(label.render()) for label in shown)

        assert "not a whole number" in message()
        runs.value = "20000000"
        await pilot.pause()
        assert "runs" in message() and "20000000" in message(), message()
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not screen.query(RunPane) and not app.state.runs  # refused at the field
        runs.value = "50"
        await pilot.pause()
        assert message() == ""
