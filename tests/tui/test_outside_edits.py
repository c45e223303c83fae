"""Outside edits and cancel keys while `hub-tui` runs: a hub.toml broken on disk (TOML syntax,
schema) is a banner naming the file and line while the last good project stays in use; a run
going meanwhile keeps going and ^k stops it even from inside a text field; Ctrl-C asks before
cancelling and a second Ctrl-C quits. Real Docker, real image, real config loader."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from tests.tui.conftest import HUB_TOML
from textual.widgets import Input

from edgehub.tracking import RunStore
from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.confirm import ConfirmScreen
from edgehub.tui.screens.run import RunScreen
from edgehub.tui.widgets.config_banner import ConfigBanner
from edgehub.tui.widgets.run_pane import RunPane

pytestmark = pytest.mark.asyncio

SYNTAX_ERROR = HUB_TOML + "\n[devices.broken\n"
SCHEMA_ERROR = (
    HUB_TOML
    + '\n[devices.far]\nprovider = "local"\n[devices.far.ssh]\nhost = "h"\nuser = "u"\n'
    + "port = 70000\n"
)


async def _wait(pilot: object, condition: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        await pilot.pause(0.2)  # type: ignore[attr-defined]
    assert condition(), "timed out"  # type: ignore[operator]


def _banner(app: EdgehubApp) -> str:
    banners = list(app.screen.query(ConfigBanner))
    return str(banners[0].render()) if banners else ""


def _cancel_in_footer(app: EdgehubApp) -> bool:
    return any(
        binding.action == "cancel_run" and binding.show and enabled
        for (_, binding, enabled, _) in app.active_bindings.values()
    )


def _runs_option(screen: RunScreen) -> Input:
    for widget in screen.query("#opt-profile Input"):
        if widget.name == "runs":
            return widget  # type: ignore[return-value]
    raise AssertionError("no runs field")


def _no_container_left() -> None:
    """None of this process's containers is left (a run cancelled as the app quits removes
    its container from its worker thread, which the process waits for before it exits)."""
    deadline = time.monotonic() + 60
    while True:
        ps = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=org.edgehub.owner-pid={os.getpid()}"],
            capture_output=True,
            text=True,
            check=True,
        )
        if not ps.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert ps.stdout.strip() == ""


async def test_broken_file_on_disk_is_a_located_banner_and_the_last_good_one_stays(
    project: Path,
) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        good = app.state.project
        (project / "hub.toml").write_text(SCHEMA_ERROR)
        await _wait(pilot, lambda: "70000" in _banner(app) or "port" in _banner(app), 10)
        assert "hub.toml:" in _banner(app), _banner(app)
        assert app.state.project is good
        await pilot.press("2")  # every screen shows it
        await _wait(pilot, lambda: "last good version" in _banner(app), 5)
        (project / "hub.toml").write_text(SYNTAX_ERROR)
        await _wait(pilot, lambda: "hub.toml:" in _banner(app) and "port" not in _banner(app), 10)
        (project / "hub.toml").write_text(HUB_TOML.replace("tui-tests", "fixed"))
        await _wait(pilot, lambda: app.state.project.config.project.name == "fixed", 10)
        await pilot.pause()
        assert _banner(app) == ""
        await pilot.press("1")
        await pilot.pause()
        assert _banner(app) == ""
        await pilot.press("ctrl+q")
    assert app.return_code == 0


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("removed", "hub.toml deleted"),
        ("nul bytes", "\\x00"),  # escaped, not sent to the terminal
        ("nested 5000 deep", "nested too deeply"),
    ],
)
async def test_hostile_files_on_disk_are_a_banner_too(
    project: Path, case: str, expected: str
) -> None:
    app = EdgehubApp(project / "hub.toml")
    hub_toml = project / "hub.toml"
    async with app.run_test(size=(80, 24)) as pilot:
        good = app.state.project
        if case == "removed":
            hub_toml.unlink()
        elif case == "nul bytes":
            hub_toml.write_bytes(b"\x00" * 64)
        else:
            hub_toml.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
        await _wait(pilot, lambda: expected in _banner(app), 10)
        assert "\x00" not in _banner(app)
        assert app.state.project is good and app.is_running
        hub_toml.write_text(HUB_TOML)
        await _wait(pilot, lambda: _banner(app) == "", 10)


@pytest.mark.docker
async def test_outside_edits_mid_run_keep_it_going_and_ctrl_k_outside_a_field_cancels_it(
    project: Path, ort_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EDGEHUB_KEEP_WARM", raising=False)
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen)
        assert not _cancel_in_footer(app)  # no run: no cancel hint
        screen.query_one("#model", Input).value = "model.onnx"
        field = _runs_option(screen)
        field.value = "900000"
        await pilot.press("ctrl+r")
        pane = screen.query_one(RunPane)
        await _wait(pilot, lambda: pane.lines_shown > 0, 120)
        for broken in (SYNTAX_ERROR, SCHEMA_ERROR):
            (project / "hub.toml").write_text(broken)
            await _wait(pilot, lambda b=broken: _banner(app) and app.state.config_error, 10)
            assert pane.status == "RUNNING" and app.state.runs
        field.focus()
        await pilot.pause()
        field.cursor_position = 3  # once focused (focusing selects the whole text)
        await pilot.pause()
        assert not _cancel_in_footer(app)  # in a text field ^k is the field's own
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert field.value == "900" and app.state.runs  # deleted to the end; the run goes on
        await pilot.press("escape")  # out of the field: ^k cancels the run in view
        await pilot.pause()
        assert _cancel_in_footer(app)
        await pilot.press("ctrl+k")
        await _wait(pilot, lambda: not app.state.runs, 60)
        await pilot.pause()
        assert pane.status == "KILLED"
        assert not _cancel_in_footer(app)
        await pilot.press("ctrl+l")  # a finished run's tab closes
        await pilot.pause()
        assert not screen.query(RunPane) and field.value == "900"
        await pilot.press("ctrl+q")
    assert app.return_code == 0
    store = RunStore(project / ".hub")
    try:
        (run,) = store.list_runs(limit=None)
        assert run.status == "KILLED"
    finally:
        store.close()
    _no_container_left()


@pytest.mark.docker
async def test_ctrl_c_asks_before_cancelling_and_a_second_ctrl_c_quits(
    project: Path, ort_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EDGEHUB_KEEP_WARM", raising=False)
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen)
        screen.query_one("#model", Input).value = "model.onnx"
        _runs_option(screen).value = "900000"
        await pilot.press("ctrl+r")
        pane = screen.query_one(RunPane)
        await _wait(pilot, lambda: pane.lines_shown > 0, 120)
        await pilot.press("1")  # from another screen: the only run is the one
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "Cancel #1 profile model.onnx" in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert app.state.runs and pane.status == "RUNNING"
        await pilot.press("2")
        await pilot.pause()
        field = _runs_option(screen)
        field.focus()  # from inside a text field too
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert field.value == "900000"  # the field did not take it
        await pilot.press("ctrl+c")
        await _wait(pilot, lambda: not app.is_running, 30)
    assert app.return_code == 130
    deadline = time.monotonic() + 60
    store = RunStore(project / ".hub")
    try:
        while time.monotonic() < deadline:
            (run,) = store.list_runs(limit=None)
            if run.status != "RUNNING":
                break
            time.sleep(0.5)
        assert run.status == "KILLED"
    finally:
        store.close()
    _no_container_left()


async def test_an_unexpected_error_is_kept_with_its_traceback(tmp_path: Path) -> None:
    from edgehub.tui.error_log import record_error

    try:
        {}["missing"]  # a real exception with a real traceback
    except KeyError as error:
        path = record_error(tmp_path / "store", "watching hub.toml", error)
        blocked = record_error(tmp_path / "store" / "tui.log" / "below", "x", error)
    assert path == tmp_path / "store" / "tui.log"
    text = path.read_text()
    assert "watching hub.toml" in text and "KeyError: 'missing'" in text
    assert "test_an_unexpected_error_is_kept_with_its_traceback" in text  # the traceback
    assert blocked is None  # cannot be written: None, no exception


async def test_an_outside_edit_is_read_off_the_ui_thread(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher reads and checks hub.toml on a worker thread; the UI thread only applies
    the result (a slow disk or a large file never stalls the screen)."""
    import threading

    from edgehub.tui.project_state import ProjectState

    loaded_on: list[str] = []
    load = ProjectState._load

    def recording(self: ProjectState) -> object:
        loaded_on.append(threading.current_thread().name)
        return load(self)

    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        monkeypatch.setattr(ProjectState, "_load", recording)
        generation = app.state.generation
        (project / "hub.toml").write_text(HUB_TOML + '\n[devices.new]\nprovider = "local"\n')
        await _wait(pilot, lambda: app.state.generation > generation, 15)
        assert "new" in app.state.project.config.devices
        assert loaded_on and threading.main_thread().name not in loaded_on, loaded_on
        (project / "hub.toml").write_text(SYNTAX_ERROR)
        await _wait(pilot, lambda: "hub.toml:" in _banner(app), 15)
        assert "new" in app.state.project.config.devices  # the last good project stays
