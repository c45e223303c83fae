"""Fault injection through the real `hub` entry point: SIGINT, SIGTERM, SIGHUP and SIGKILL at
several moments of compile, profile and pipeline, in cold and warm containers.

After each, once the next `hub` command has run: the run is KILLED, no container of the
stopped process is left, and no job of it runs on in a warm container. A warm job that runs
longer than `keep_warm` finishes. Real Docker daemon, real ORT image.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
OWNER_PID = "org.edgehub.owner-pid"
EXPECTED_EXIT = {
    signal.SIGINT: 130,
    signal.SIGTERM: 128 + signal.SIGTERM,
    signal.SIGHUP: 128 + signal.SIGHUP,
    signal.SIGKILL: -signal.SIGKILL,
}
# each step made long enough that a signal lands while it works
LONG = {
    "compile": ["--set", "calibration_data=calib.npz", "--set", "calibration_method=entropy"],
    "profile": ["--set", "runs=400000"],
    "pipeline": ["--set", "profile.runs=400000"],
}


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text('[project]\nname = "faults"\n')
    shutil.copy(MODEL, folder / "model.onnx")
    rng = np.random.default_rng(0)
    np.savez(folder / "calib.npz", image=rng.random((3000, 3, 32, 32), dtype=np.float32))
    return folder


class Hub:
    """A `hub exec` process whose stderr is read line by line in the background."""

    def __init__(
        self, argv: list[str], cwd: Path, env: dict[str, str], after: str | None = None
    ) -> None:
        self.proc = subprocess.Popen(
            [HUB, *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._after = after
        self.tool_output = threading.Event()  # tool output seen (after the line `after`)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if self._after is not None and self._after in line:
                self._after = None
            elif self._after is None and line.startswith("  | "):
                self.tool_output.set()

    def stop(self, signum: int) -> int:
        self.proc.send_signal(signum)
        code = self.proc.wait(60)
        self._reader.join(10)
        return code


def _env(warm: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "EDGEHUB_KEEP_WARM"}
    if warm:
        env["EDGEHUB_KEEP_WARM"] = "60"
    return env


def _containers_of(pid: int) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={OWNER_PID}={pid}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def _warm_jobs() -> list[str]:
    """Agent jobs running in any warm container: exec'd ones, and those the resident server
    forked for the host's direct channel (whose arguments are the server's)."""
    ids = subprocess.run(
        ["docker", "ps", "-q", "--filter", "label=org.edgehub.warm=1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    jobs = []
    for container in ids:
        top = subprocess.run(
            ["docker", "top", container, "-o", "pid,ppid,args"], capture_output=True, text=True
        ).stdout.splitlines()[1:]
        rows = [line.split(None, 2) for line in top if len(line.split(None, 2)) == 3]
        servers = {pid for pid, _, args in rows if " serve " in args}
        jobs += [args for _, _, args in rows if "ort." in args and " serve " not in args]
        jobs += [f"job {pid} of the server" for pid, ppid, _ in rows if ppid in servers]
    return jobs


def _runs_after_next_hub(project: Path) -> list[dict[str, object]]:
    """`hub runs list --json`: the next hub command, which also reaps leftovers."""
    listed = subprocess.run(
        [HUB, "runs", "list", "--json", "-n", "50"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    runs: list[dict[str, object]] = json.loads(listed.stdout)
    return runs


def _check_aftermath(project: Path, hub: Hub, code: int, signum: int, started: bool) -> None:
    assert code == EXPECTED_EXIT[signum], "".join(hub.lines)
    assert not any("Traceback" in line for line in hub.lines), "".join(hub.lines)
    runs = _runs_after_next_hub(project)
    statuses = [str(r["status"]) for r in runs]
    assert "RUNNING" not in statuses and "FAILED" not in statuses, statuses
    if started:
        assert statuses and statuses[0] == "KILLED", statuses  # newest first
    deadline = time.monotonic() + 60  # removing containers is slow on a busy machine
    while (_containers_of(hub.proc.pid) or _warm_jobs()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _containers_of(hub.proc.pid) == []
    assert _warm_jobs() == []


SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL]
CASES = [
    *[(s, step, False) for s in SIGNALS for step in ("compile", "profile", "pipeline")],
    *[(s, "profile", True) for s in SIGNALS],
    (signal.SIGTERM, "pipeline", True),
    (signal.SIGKILL, "compile", True),
]


@pytest.mark.parametrize(
    ("signum", "step", "warm"),
    CASES,
    ids=[f"{signal.Signals(s).name}-{step}-{'warm' if w else 'cold'}" for s, step, w in CASES],
)
def test_a_signal_while_the_tool_works(project: Path, signum: int, step: str, warm: bool) -> None:
    after = "step 2/4" if step == "pipeline" else None  # inside the pipeline's profile run
    argv = ["exec", step, "onnxruntime", "model.onnx", *LONG[step]]
    hub = Hub(argv, project, _env(warm), after=after)
    assert hub.tool_output.wait(120), "".join(hub.lines)
    time.sleep(0.3)
    code = hub.stop(signum)
    _check_aftermath(project, hub, code, signum, started=True)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
def test_a_signal_while_the_container_starts(project: Path, signum: int) -> None:
    hub = Hub(
        ["exec", "profile", "onnxruntime", "model.onnx", *LONG["profile"]], project, _env(False)
    )
    # past start-up (a fixed pause can end inside Python's start-up on a busy machine), before
    # the agent prints: the container is being made
    deadline = time.monotonic() + 120
    while not _containers_of(hub.proc.pid) and not hub.lines:
        assert hub.proc.poll() is None and time.monotonic() < deadline, "".join(hub.lines)
        time.sleep(0.05)
    code = hub.stop(signum)
    if code == 0:
        pytest.fail("the profile finished before the signal; the test needs a longer one")
    _check_aftermath(project, hub, code, signum, started=False)


def test_a_warm_job_longer_than_keep_warm_finishes(project: Path) -> None:
    env = {**_env(False), "EDGEHUB_KEEP_WARM": "1"}
    started = time.monotonic()
    result = subprocess.run(
        [HUB, "exec", "profile", "onnxruntime", "model.onnx", "--set", "runs=150000", "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "FINISHED"
    assert took > 2, f"the job took {took:.1f} s: too short to outlast keep_warm=1"
