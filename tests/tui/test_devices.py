"""The Devices screen against the real config layer: forms write hub.toml through
`ConfigDocument`, keeping the user's comments; bad edits are shown, not saved."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.tui.conftest import HUB_TOML
from tests.tui.run_screen import wait_until
from textual.widgets import DataTable, Input, Label, Select, Switch

from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.confirm import ConfirmScreen
from edgehub.tui.screens.device_edit import DeviceEditScreen

pytestmark = pytest.mark.asyncio


def _field(screen: object, form: str, key: str) -> Input:
    for widget in screen.query(f"#{form} Input"):  # type: ignore[attr-defined]
        if widget.name == key:
            return widget  # type: ignore[no-any-return]
    raise AssertionError(f"no field {form}.{key}")


def _rows(app: EdgehubApp) -> list[str]:
    table = app.screen.query_one("#devices", DataTable)
    return [str(key.value) for key in table.rows]


async def test_add_an_ssh_device_keeps_the_files_comments(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, DeviceEditScreen)
        _field(editor, "device", "name").value = "rpi"
        _field(editor, "device", "spec").value = "Raspberry Pi 5"
        editor.query_one("#ssh-on", Switch).value = True
        await pilot.pause()
        _field(editor, "ssh", "host").value = "192.168.1.20"
        _field(editor, "ssh", "user").value = "pi"
        _field(editor, "ssh", "port").value = "2222"
        _field(editor, "settings", "cli_args").value = "--intra-op-threads 4"
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert not isinstance(app.screen, DeviceEditScreen)
        assert _rows(app) == ["local", "rpi"]
        assert app.state.dirty
        assert (project / "hub.toml").read_text() == HUB_TOML  # nothing written before w
        await pilot.press("w")
        await pilot.pause()
        assert not app.state.dirty
    saved = (project / "hub.toml").read_text()
    for line in HUB_TOML.splitlines():
        assert line in saved
    assert "[devices.rpi.ssh]" in saved
    assert 'host = "192.168.1.20"' in saved
    assert "port = 2222" in saved
    assert 'cli_args = ["--intra-op-threads", "4"]' in saved
    devices = app.state.project.config.devices
    assert devices["rpi"].provider == "embedl_onnxruntime"
    assert devices["rpi"].ssh is not None and devices["rpi"].ssh.user == "pi"


async def test_an_edit_that_does_not_validate_is_shown_not_saved(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, DeviceEditScreen)
        _field(editor, "settings", "memory").value = "lots"
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.screen is editor  # still open
        message = str(editor.query_one("#message", Label).render())
        assert "memory" in message
        shown = [str(label.render()) for label in editor.query("#settings .error.shown")]
        assert shown and "memory" in shown[0]
        assert "hub.toml:" not in message  # the edit is not in the file: no line of it cited
        await pilot.press("escape")
        await pilot.pause()
        assert not app.state.dirty
    assert (project / "hub.toml").read_text() == HUB_TOML


async def test_duplicate_remove_and_quit_with_unsaved_edits_asks(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert _rows(app) == ["local", "local-copy"]
        await pilot.press("down", "x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert _rows(app) == ["local"]
        assert app.state.dirty  # the copy was added and removed: still unsaved edits
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running
        await pilot.press("q", "y")
        await pilot.pause()
    assert app.return_value == 0
    assert (project / "hub.toml").read_text() == HUB_TOML


async def test_a_file_changed_on_disk_is_noticed_not_overwritten(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        theirs = HUB_TOML + '\n[devices.theirs]\nprovider = "trtexec"\n'
        (project / "hub.toml").write_text(theirs)

        def told() -> list[str]:
            return [n.message for n in app._notifications]

        # the watcher looks once a second (later on a busy machine)
        await wait_until(pilot, lambda: any("changed on disk" in m for m in told()), 60)
        await pilot.press("w")
        await pilot.pause()
        assert app.state.dirty  # refused
        assert (project / "hub.toml").read_text() == theirs
        assert any("Press r to load" in m for m in told()), told()
        assert not any("force=True" in m for m in told()), told()
        await pilot.press("r")
        await pilot.pause()
        assert _rows(app) == ["local", "theirs"]


async def test_a_change_on_disk_without_edits_is_loaded(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        (project / "hub.toml").write_text(
            HUB_TOML + '\n[devices.s24]\nprovider = "qai_hub"\nspec = "Samsung Galaxy S24"\n'
        )
        await wait_until(pilot, lambda: _rows(app) == ["local", "s24"], 60)  # watched each second


async def test_without_hub_toml_it_offers_to_create_one(_isolated_cwd: Path) -> None:
    app = EdgehubApp(None)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert (_isolated_cwd / "hub.toml").is_file()
        assert app.state.path == _isolated_cwd / "hub.toml"
        assert "local" in _rows(app)


async def test_provider_choice_rebuilds_the_settings_form(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        editor = app.screen
        provider = next(s for s in editor.query("#device Select") if s.name == "provider")
        assert isinstance(provider, Select)
        provider.value = "trtexec"
        await pilot.pause()
        title = str(editor.query_one("#settings-title", Label).render())
        assert "[trtexec]" in title
        provider.value = "qai_hub"
        await pilot.pause()
        assert not editor.query_one("#ssh-toggle").display


@pytest.mark.docker
async def test_check_shows_whether_the_device_is_reachable(
    project: Path, docker_daemon: object
) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("c")
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.screen.query_one("#devices", DataTable)
        assert str(table.get_row("local")[4]) == "ok: Docker daemon reachable"


async def test_add_opens_with_the_name_field_focused(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, DeviceEditScreen)
        focused = app.focused
        assert isinstance(focused, Input) and focused.name == "name", focused
        await pilot.press("r", "p", "i")  # typing goes to it at once
        await pilot.pause()
        assert focused.value == "rpi"


@pytest.mark.parametrize("size", [(60, 18), (80, 24)], ids=["60", "80"])
async def test_the_footer_keeps_save_and_reload_on_a_narrow_terminal(
    project: Path, size: tuple[int, int]
) -> None:
    from tests.tui.screen_text import screen_text

    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        footer = screen_text(app).rstrip().splitlines()[-1]
        assert "w Save" in footer and "r Reload" in footer, footer


async def test_a_failed_check_is_told_whole(project: Path) -> None:
    """The check column cuts a long reason; the notification says all of it."""
    from edgehub.ops.device_check import check_device
    from edgehub.ops.project import open_project

    hub_toml = project / "hub.toml"
    hub_toml.write_text(
        HUB_TOML + '\n[devices.gone]\nprovider = "embedl_onnxruntime"\n'
        '[devices.gone.ssh]\nhost = "127.0.0.1"\nport = 1\nuser = "pi"\n'
    )
    expected = check_device(open_project(hub_toml), "gone")
    assert expected.state != "ok" and len(expected.detail) > 40, expected
    app = EdgehubApp(hub_toml)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "c")
        await app.workers.wait_for_complete()
        await pilot.pause()
        told = [n.message for n in app._notifications]
        assert f"gone: {expected.state}: {expected.detail}" in told, told
