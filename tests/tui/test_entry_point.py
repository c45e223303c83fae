"""`hub-tui` through its real entry point, in tmux at 80x24 (keys sent, the pane captured);
`--serve` is tested in test_serve_guard."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.tui.polling import wait_for

HUB_TUI = str(Path(sys.executable).with_name("hub-tui"))


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """``tmux(*args)`` on a private tmux server (killed afterwards)."""
    if shutil.which("tmux") is None:
        pytest.skip("needs tmux (apt-get install tmux)")
    socket_name = f"edgehub-test-{os.getpid()}"

    def run(*args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", socket_name, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    yield run
    subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True)


@pytest.mark.tmux
def test_hub_tui_in_tmux_moves_between_screens_and_quits_cleanly(
    project: Path, tmux: Callable[..., str]
) -> None:
    status_file = project / "exit-status"
    record_status = (  # runs hub-tui and writes its exit status, so the test can read it
        "import pathlib, subprocess, sys; "
        "pathlib.Path(sys.argv[1]).write_text(str(subprocess.call(sys.argv[2:])))"
    )
    tmux(
        "new-session", "-d", "-s", "hub", "-x", "80", "-y", "24", "-c", str(project),
        "-e", "TERM=tmux-256color",
        sys.executable, "-c", record_status, str(status_file),
        HUB_TUI, "--config", str(project / "hub.toml"),
    )  # fmt: skip

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "hub")

    assert wait_for(lambda: "Devices of hub.toml" in screen(), 20), screen()
    expectations = {
        "2": "Launch (^r)",
        "3": "runs",
        "4": "Toolchain images",
        "1": "Devices of hub.toml",
    }
    for key, text in expectations.items():
        tmux("send-keys", "-t", "hub", key)
        assert wait_for(lambda text=text: text in screen(), 15), (key, screen())  # type: ignore[misc]
    assert "1 Devices" in screen() and "q Quit" in screen() and "w Save" in screen()
    tmux("send-keys", "-t", "hub", "q")

    assert wait_for(status_file.exists, 15), screen()
    assert status_file.read_text() == "0"
