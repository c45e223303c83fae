"""SIGTERM or SIGHUP to a `hub-tui` with a run going ends it as quitting does: the run is
recorded KILLED, its container is gone, the app exits 128 + the signal. Real terminal (tmux),
real entry point, real Docker run."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from tests.tui.polling import run_statuses, wait_for
from tests.tui.tmux_session import Tmux

from edgehub.runners.docker.owner import OWNER_PID

pytestmark = pytest.mark.docker


def _containers(label: str) -> list[str]:
    done = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={label}"], capture_output=True, text=True
    )
    return done.stdout.split()


def _tui_pid(project: Path) -> int:
    done = subprocess.run(
        ["pgrep", "-f", f"^\\S+ \\S+/hub-tui --config {project}/hub.toml"],
        capture_output=True,
        text=True,
    )
    (pid,) = [int(p) for p in done.stdout.split()]
    return pid


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_mid_run_kills_the_run_and_its_container(
    ort_image: str, tmux: Tmux, project: Path, stop: signal.Signals
) -> None:
    tmux.start(project, width=100, height=30, env={"EDGEHUB_KEEP_WARM": "0"})
    assert tmux.shows("Devices of hub.toml"), tmux.screen()
    tmux.keys("2")
    assert tmux.shows("profile options"), tmux.screen()
    tmux.keys("BTab")  # from the Pick button back to the model field
    tmux.keys("-l", "model.onnx")
    assert tmux.shows("model.onnx"), tmux.screen()
    for _ in range(5):  # pick, runtime, step, device: on to the runs option
        tmux.keys("Tab")
    tmux.keys("End", "C-u")
    tmux.keys("-l", "900000")
    assert tmux.shows("900000"), tmux.screen()
    tmux.keys("C-r")
    assert tmux.shows("timing: 900000 runs", seconds=120), tmux.screen()
    assert run_statuses(project) == ["RUNNING"]
    pid = _tui_pid(project)
    assert _containers(f"{OWNER_PID}={pid}"), "the run's container is there before the signal"

    subprocess.run(["kill", f"-{stop.name[3:]}", str(pid)], check=True)
    assert tmux.exit_status(seconds=60) == str(128 + stop), tmux.screen()
    assert run_statuses(project) == ["KILLED"]
    assert wait_for(lambda: not _containers(f"{OWNER_PID}={pid}"), 30)
