"""Fixtures of the TUI tests: a project with a commented hub.toml and the example model, and
a run store filled with fixed runs (ids, times, metrics and raw latency samples)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.tui.browser_page import browser  # noqa: F401 (a fixture: the tests' Chromium)
from tests.tui.fixed_runs import add_eval_run, fill_store
from tests.tui.served import Served, serve
from tests.tui.tmux_session import Tmux

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
FROZEN_AT = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


HUB_TOML = """\
# The team's build server. Keep this comment.
[project]
name = "tui-tests"
store = ".hub"   # runs live here

# This machine.
[devices.local]
provider = "local"
spec = "x86-64 build server"

[devices.local.docker]   # container limits
# cpus = 2
"""


@pytest.fixture
def project(_isolated_cwd: Path) -> Path:
    """The current directory as a project: hub.toml (with comments) and model.onnx."""
    (_isolated_cwd / "hub.toml").write_text(HUB_TOML)
    shutil.copy(MODEL, _isolated_cwd / "model.onnx")
    return _isolated_cwd


@pytest.fixture
def fixed_runs(project: Path) -> list[str]:
    """Eight fixed runs in the project's store (newest first ids)."""
    return fill_store(project / ".hub", count=8, at=FROZEN_AT)


@pytest.fixture
def served(project: Path) -> Iterator[Served]:
    """``hub-tui --serve --port 0`` in the project (stopped afterwards, no TUI process left)."""
    yield from serve(project)


@pytest.fixture
def eval_run(fixed_runs: list[str], project: Path) -> str:
    """A finished EVAL run (the newest) with a missed goal and a layer search."""
    return add_eval_run(project / ".hub", at=FROZEN_AT + 60.0)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    """A private tmux server to run hub-tui in (killed afterwards, with what runs in it)."""
    if shutil.which("tmux") is None:
        pytest.skip("needs tmux (apt-get install tmux)")
    server = Tmux()
    yield server
    subprocess.run(["tmux", "-L", server.socket, "kill-server"], capture_output=True)
