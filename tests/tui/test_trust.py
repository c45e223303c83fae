"""The Devices screen's "trust": the host key the SSH test device (tests/ssh_device, a real
sshd in a container) offers is shown with its fingerprint, and written to known_hosts only
after the user says yes."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Label

from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.confirm import ConfirmScreen
from ssh_device.device import SSHDevice

pytestmark = [pytest.mark.asyncio, pytest.mark.ssh]


def _project(tmp_path: Path, device: SSHDevice, known_hosts: Path) -> Path:
    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "trust"\n\n'
        '[devices.board]\nprovider = "embedl_onnxruntime"\n\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\nknown_hosts = "{known_hosts}"\n'
    )
    return tmp_path / "hub.toml"


async def test_trust_shows_the_fingerprint_and_writes_only_after_yes(
    device: SSHDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    monkeypatch.setenv("EDGEHUB_KNOWN_HOSTS", str(known_hosts))  # the user allows the project's
    app = EdgehubApp(_project(tmp_path, device, known_hosts))
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.screen.query_one("#devices", DataTable)
        rows = [str(key.value) for key in table.rows]
        table.move_cursor(row=rows.index("board"))
        for answer in ("escape", "enter"):  # first say no, then yes
            await pilot.press("t")
            for _ in range(100):
                await pilot.pause(0.1)
                if isinstance(app.screen, ConfirmScreen):
                    break
            assert isinstance(app.screen, ConfirmScreen)
            text = " ".join(str(label.render()) for label in app.screen.query(Label))
            assert any(fp in text for fp in device.fingerprints().values()), text
            await pilot.press(answer)
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            if answer == "escape":
                assert known_hosts.read_text() == ""
    assert device.known_hosts_name in known_hosts.read_text()
