"""The Runs screen of the real `hub-tui` (tmux) is live: runs another process deletes or
imports (the real `hub runs` CLI) leave or join the list without a key press. ``/`` filters by
a substring (its keys are text, so j/k/g/G typed there filter), Esc clears the filter, and
j/k/g/G move the cursor in the table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.tui.polling import wait_for
from tests.tui.tmux_session import Tmux

pytestmark = pytest.mark.tmux

HUB = str(Path(sys.executable).with_name("hub"))


def _hub(project: Path, *args: str) -> None:
    done = subprocess.run([HUB, *args], cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_runs_list_follows_the_store_and_filters(
    project: Path, fixed_runs: list[str], tmux: Tmux
) -> None:
    ids = [run_id[:8] for run_id in fixed_runs]  # newest first
    bundle = project / "newest.tar"
    _hub(project, "runs", "export", ids[0], "-o", str(bundle))
    tmux.start(project)
    assert tmux.shows("Devices of hub.toml"), tmux.screen()
    tmux.keys("3")
    assert tmux.shows(*ids, "8 runs"), tmux.screen()

    _hub(project, "runs", "delete", ids[0], "--yes")  # another process, no key pressed
    assert tmux.shows("7 runs"), tmux.screen()
    assert wait_for(lambda: ids[0] not in tmux.screen(), 10), tmux.screen()
    _hub(project, "runs", "import", str(bundle))
    assert tmux.shows(ids[0], "8 runs"), tmux.screen()

    profiles = [ids[1], ids[4], ids[7]]  # profile-6, -3, -0
    tmux.keys("/")
    tmux.keys("-l", "prof")
    assert tmux.shows(*profiles, "3 of 8 runs match 'prof'"), tmux.screen()
    assert ids[0] not in tmux.screen()
    tmux.keys("-l", "jkgG")  # typed into the filter, not moving the cursor
    assert tmux.shows("0 of 8 runs match 'profjkgg'"), tmux.screen()
    tmux.keys(*["BSpace"] * 4, "Enter")  # the filter stays; the table has the keys again

    def opened(run_id: str) -> None:
        tmux.keys("Enter")
        assert tmux.shows(f"run {run_id}"), tmux.screen()
        tmux.keys("Escape")
        assert tmux.shows("3 of 8 runs"), tmux.screen()

    tmux.keys("G")
    opened(profiles[2])
    tmux.keys("g", "j")
    opened(profiles[1])
    tmux.keys("k")
    opened(profiles[0])
    tmux.keys("Escape")  # clears the filter
    assert tmux.shows(ids[0], ids[2], "8 runs"), tmux.screen()
    assert "match" not in tmux.screen()
    tmux.keys("q")
    assert tmux.exit_status() == "0", tmux.screen()
