"""A job lives as long as its caller wants it and no shorter: real servers, clients and models.

- A running job is activity: a server whose idle timeout is shorter than the job lets it finish,
  and a client with ``EDGEHUB_AGENT_HEARTBEAT_FILE`` keeps touching that file while it waits.
- ``EDGEHUB_AGENT_WATCH_STDIN=1``: closing the client's stdin ends its job (on a server: the
  job's process group is killed, the server stays up; here: the run ends cancelled).
- A server whose socket is removed (its folder went with the SSH connection that started it)
  stops its jobs and leaves, long before its idle timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import make_cnn
from agent_processes import (
    PYTHON,
    alive,
    answers,
    children,
    kill_everything_on,
    read_until,
    server_pid,
    start_server,
    wait_until,
)

from edgehub.agent.bundle import build_agent_zipapp
from edgehub.agent.lifeline import HEARTBEAT_ENV, WATCH_STDIN_ENV
from edgehub.agent.protocol import load_result

IDLE_S = 2.0
JOB_S = 5.0


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_cnn(tmp_path_factory.mktemp("models") / "cnn.onnx")


@pytest.fixture
def server(pyz: Path, tmp_path: Path) -> Iterator[Path]:
    """A server with a short idle timeout, on a socket in this test's directory."""
    sock = tmp_path / "agent.sock"
    proc = start_server(pyz, sock, "--idle", str(IDLE_S), "--preload", "ort")
    try:
        wait_until(lambda: answers(sock), 30, "the server to answer")
        yield sock
    finally:
        kill_everything_on(sock)
        proc.wait(timeout=10)


def client(
    pyz: Path,
    sock: Path | None,
    request: dict[str, Any],
    workdir: Path,
    env: dict[str, str],
) -> tuple[subprocess.Popen[bytes], Path]:
    """A client process running ``ort.profile``, its stdin a pipe held by the test."""
    n = len(list(workdir.glob("*.request.json")))
    request_path, result_path = workdir / f"{n}.request.json", workdir / f"{n}.result.json"
    request_path.write_text(json.dumps(request))
    argv = [PYTHON, str(pyz)] + (["--server", str(sock)] if sock else [])
    argv += ["ort.profile", "--request", str(request_path), "--result", str(result_path)]
    proc = subprocess.Popen(
        argv,
        cwd=workdir,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ, **env),
    )
    return proc, result_path


def runs_lasting(pyz: Path, cnn: Path, seconds: float, workdir: Path) -> int:
    """How many timed runs of ``cnn`` take about ``seconds`` here (measured, the machine is
    shared)."""
    proc, result_path = client(pyz, None, {"model": str(cnn), "runs": 2000}, workdir, {})
    assert proc.wait(timeout=120) == 0
    median_ms = load_result(result_path)["metrics"]["latency_median_ms"]
    return max(2000, int(seconds * 1000 / median_ms))


@pytest.fixture(scope="module")
def job_runs(pyz: Path, cnn: Path, tmp_path_factory: pytest.TempPathFactory) -> int:
    """Runs of ``cnn`` that last about `JOB_S`, measured before the server of a test starts (on
    a busy machine measuring takes longer than the server's idle timeout)."""
    return runs_lasting(pyz, cnn, JOB_S, tmp_path_factory.mktemp("job-runs"))


def test_a_job_longer_than_the_idle_timeout_finishes(
    pyz: Path, cnn: Path, job_runs: int, server: Path, tmp_path: Path
) -> None:
    runs = job_runs
    beat = tmp_path / "alive"
    request = {"model": str(cnn), "runs": runs, "warmup": 0}
    leader = server_pid(server)
    proc, result_path = client(pyz, server, request, tmp_path, {HEARTBEAT_ENV: str(beat)})
    touched: set[int] = set()
    started = time.monotonic()
    # seen from /proc while the job runs (connecting to ask would be activity itself; asking
    # after it ended races the idle timeout on a busy machine): the server ran it, and was
    # still up with it past its idle timeout
    on_server = past_idle = False
    try:
        while proc.poll() is None:
            assert time.monotonic() - started < 120, "the job did not end"
            if beat.exists():
                touched.add(beat.stat().st_mtime_ns)
            running = bool(children(leader)) and alive(leader)
            on_server = on_server or running
            past_idle = past_idle or (running and time.monotonic() - started > IDLE_S + 1)
            time.sleep(0.2)
        assert proc.stderr is not None
        assert proc.returncode == 0, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    elapsed = time.monotonic() - started
    result = load_result(result_path)
    assert result["ok"] and result["metrics"]["runs"] == runs
    assert elapsed > IDLE_S + 1, f"the job took {elapsed:.1f} s: too short to tell"
    assert on_server, "the job did not run on the server"
    assert past_idle, "the server did not outlive its idle timeout while the job ran"
    # the heartbeat went on while the job ran: one touch a second, of which a test that polls
    # on a busy machine sees at least one in three (a heartbeat that stops after one fails)
    assert len(touched) >= max(2, int(elapsed) // 3), (len(touched), elapsed)


def test_closing_stdin_kills_the_job_on_the_server(
    pyz: Path, cnn: Path, server: Path, tmp_path: Path
) -> None:
    leader = server_pid(server)
    request = {"model": str(cnn), "runs": 10_000_000, "warmup": 0}
    proc, result_path = client(pyz, server, request, tmp_path, {WATCH_STDIN_ENV: "1"})
    try:
        read_until(proc, "timing:", 60)
        jobs = children(leader)
        assert len(jobs) == 1, jobs
        assert proc.stdin is not None
        proc.stdin.close()
        closed = time.monotonic()
        # unkilled, 10,000,000 runs take minutes
        wait_until(lambda: not alive(jobs[0]), 15, "the job to be killed")
        assert proc.wait(timeout=15) == 130
        assert time.monotonic() - closed < 20
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not result_path.exists()  # killed, not finished
    # the server stays up and serves the next job
    assert server_pid(server) == leader
    proc, result_path = client(pyz, server, {"model": str(cnn), "runs": 20}, tmp_path, {})
    assert proc.wait(timeout=60) == 0
    assert load_result(result_path)["ok"]
    assert server_pid(server) == leader


def test_closing_stdin_cancels_a_job_running_here(pyz: Path, cnn: Path, tmp_path: Path) -> None:
    request = {"model": str(cnn), "runs": 10_000_000, "warmup": 0}
    proc, result_path = client(pyz, None, request, tmp_path, {WATCH_STDIN_ENV: "1"})
    try:
        read_until(proc, "timing:", 60)
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=30) == 130  # unstopped, 10,000,000 runs take minutes
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = load_result(result_path)
    assert result["ok"] is False and result["error"]["kind"] == "Cancelled"


def test_without_the_variable_stdin_is_left_alone(pyz: Path, cnn: Path, tmp_path: Path) -> None:
    proc, result_path = client(pyz, None, {"model": str(cnn), "runs": 50}, tmp_path, {})
    assert proc.stdin is not None
    proc.stdin.close()  # nobody watches: the run goes on to the end
    assert proc.wait(timeout=60) == 0
    assert load_result(result_path)["ok"]


def test_a_server_whose_socket_is_removed_kills_its_job_and_leaves(
    pyz: Path, cnn: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "connection"
    folder.mkdir()
    sock = folder / "agent.sock"
    proc = start_server(pyz, sock, "--preload", "ort")  # the default idle timeout: 600 s
    try:
        wait_until(lambda: answers(sock), 30, "the server to answer")
        leader = server_pid(sock)
        request = {"model": str(cnn), "runs": 10_000_000, "warmup": 0}
        job, _ = client(pyz, sock, request, tmp_path, {})
        read_until(job, "timing:", 60)
        jobs = children(leader)
        assert len(jobs) == 1, jobs
        sock.unlink()  # as the janitor's rm -rf of the connection's folder does
        removed = time.monotonic()
        assert proc.wait(timeout=30) == 0
        assert time.monotonic() - removed < 15  # about a second plus the jobs' grace period
        assert not alive(jobs[0])
        assert job.wait(timeout=30) != 0
    finally:
        kill_everything_on(sock)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
