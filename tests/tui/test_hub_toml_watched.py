"""hub.toml watched as a path while the real `hub-tui` runs (tmux): deleted, the banner says so
and the last good devices stay (``r`` does not fall back to the defaults); recreated, it is
loaded and the banner goes; replaced by a rename over it (as editors save), the device list
follows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.tui.conftest import HUB_TOML
from tests.tui.tmux_session import Tmux

pytestmark = pytest.mark.tmux


def _device(name: str) -> str:
    return f'\n[devices.{name}]\nprovider = "local"\nspec = "{name} board"\n'


def test_hub_toml_deleted_recreated_and_replaced(project: Path, tmux: Tmux) -> None:
    hub_toml = project / "hub.toml"
    tmux.start(project)
    assert tmux.shows("Devices of hub.toml", "x86-64 build server"), tmux.screen()

    hub_toml.unlink()
    assert tmux.shows("hub.toml deleted: still using the last good version"), tmux.screen()
    assert "x86-64 build server" in tmux.screen()
    tmux.keys("r")  # reload: refused, not the defaults
    assert tmux.shows("hub.toml deleted"), tmux.screen()
    screen = tmux.screen()
    assert "defaults" not in screen and "x86-64 build server" in screen, screen

    hub_toml.write_text(HUB_TOML + _device("far"))  # recreated
    assert tmux.shows("far board", "reloaded"), tmux.screen()
    assert "still using the last good version" not in tmux.screen()  # the banner went

    replacement = project / ".hub.toml.swp"
    replacement.write_text(HUB_TOML + _device("bench"))
    os.replace(replacement, hub_toml)  # renamed over it
    assert tmux.shows("bench board"), tmux.screen()
    screen = tmux.screen()
    assert "far board" not in screen and "last good version" not in screen, screen

    tmux.keys("q")
    assert tmux.exit_status() == "0", tmux.screen()
