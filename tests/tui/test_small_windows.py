"""`hub-tui` at 80x24 and 60x18 through its real entry point in tmux: one process per size
visits every screen by keys, and each screen's labels, status lines and run ids appear whole
(the forms stack above their panes below 100 columns; text wraps instead of being cut). A
field's error shows its reason, whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.tui.tmux_session import Tmux

pytestmark = pytest.mark.tmux

RUN_FORM = ("model ", "runtime", "step", "device", "Pick a model (^t)", "profile options")
SWEEP_FORM = ("grid-file", "models", "devices", "runtimes", "vary", "cluster")
SWEEP_FORM_END = "resume (skip finished cells)"  # at 60x18 the form scrolls to it


@pytest.mark.parametrize("size", [(80, 24), (60, 18)], ids=["80x24", "60x18"])
def test_every_screen_shows_its_text_whole(
    project: Path, fixed_runs: list[str], tmux: Tmux, size: tuple[int, int]
) -> None:
    tmux.start(project, *size)
    ids = [run_id[:8] for run_id in fixed_runs]

    def visit(keys: tuple[str, ...], *texts: str) -> None:
        tmux.keys(*keys)
        assert tmux.shows(*texts), (keys, texts, tmux.screen())

    assert tmux.shows("Devices of hub.toml", "x86-64 build server", "w Save"), tmux.screen()
    visit(("2",), *RUN_FORM, "No runs yet: fill in the form and launch.")
    # into the runs option (Tab order from the Pick button: model, pick, runtime, step,
    # device, runs), a value out of range: the reason shows under it, whole
    tmux.keys("BTab")
    visit(("Tab",) * 5, "runs ", "100")
    tmux.keys("End", "C-u")
    visit(("-l", "0"), "runs must be between 1 and 1000000", "'0'")  # wrapped at 60
    tmux.keys("Escape")  # out of the field: the next keys are shortcuts
    visit(("5",), *SWEEP_FORM, "No sweep yet: give a grid and launch.")
    if size[1] >= 24:
        assert tmux.shows(SWEEP_FORM_END), tmux.screen()
    visit(("3",), *ids, "FINISHED", "FAILED", "8 runs")
    visit(("Enter",), f"run {ids[0]}", "compile-7", "COMPILE", "FINISHED", "took 2.2s")
    tmux.keys("Escape")
    assert tmux.shows("8 runs"), tmux.screen()
    tmux.keys("Space", "Down", "Space")
    visit(("c",), f"a = {ids[0]} compile-7 (COMPILE, rpi)", f"b = {ids[1]} profile-6 (PROFILE")
    tmux.keys("Escape")
    visit(("4",), "Toolchain images", "onnxruntime")
    visit(("F1",), "Keys of the Images screen", "Build")
    tmux.keys("Escape")
    visit(("1",), "Devices of hub.toml")
    tmux.keys("q")
    assert tmux.exit_status() == "0", tmux.screen()


@pytest.mark.parametrize("width", [80, 60, 40, 24])
def test_the_nav_bar_fits_by_giving_up_hints_then_other_names(width: int) -> None:
    from edgehub.tui.widgets.nav_bar import SCREEN_KEYS, nav_line

    for _, mode, label in SCREEN_KEYS:
        line = nav_line(mode, width).plain
        assert len(line) <= width and f" {label} " in line, (width, line)  # the current one whole
        assert all(f" {key} " in line for key, _, _ in SCREEN_KEYS), line  # every key
    assert "Esc unfocus" in nav_line("runs", 80).plain


def test_every_screen_is_usable_at_40x12(project: Path, fixed_runs: list[str], tmux: Tmux) -> None:
    """At 40x12 each screen still shows its name, its first field or its list, and run ids
    keep their 8 characters."""
    tmux.start(project, 40, 12)
    assert tmux.shows(" 1 Devices ", "Devices of hub.toml"), tmux.screen()
    screens = {
        "2": (" 2 Run ", "model ", "runtime"),
        "5": (" 5 Sweep ", "grid-file", "models"),
        "3": (" 3 Runs ", fixed_runs[0][:8], "FINISHED"),
        "4": (" 4 Images ", "onnxruntime"),
        "1": (" 1 Devices ", "x86-64 build server"),
    }
    for key, texts in screens.items():
        tmux.keys(key)
        assert tmux.shows(*texts), (key, tmux.screen())
    tmux.keys("q")
    assert tmux.exit_status() == "0", tmux.screen()
