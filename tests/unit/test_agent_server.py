"""The warm agent server (``serve``) and ``--server`` clients: real processes, the built zipapp.

Whether a call ran through the server is told by running the client with ``-X importtime``: a
client that ran the job itself imported onnxruntime, one that went through the server did not
(the server's jobs are forked from a process started without that flag).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import AgentRun, make_cnn, make_two_input, run_agent
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
from edgehub.agent.protocol import load_result

# --- calls ----------------------------------------------------------------------------------


class Call(AgentRun):
    """A finished ``--server`` client: the AgentRun plus the modules the client imported."""

    def __init__(self, proc: subprocess.CompletedProcess[str], result_path: Path) -> None:
        lines = proc.stderr.splitlines(keepends=True)
        self.imported = {
            line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")
        }
        stderr = "".join(line for line in lines if not line.startswith("import time:"))
        result = load_result(result_path) if result_path.exists() else {}
        super().__init__(proc.returncode, result, stderr, proc.stdout)

    @property
    def ran_here(self) -> bool:
        return "onnxruntime" in self.imported


def _paths(workdir: Path, command: str) -> tuple[Path, Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    n = 0
    while (workdir / f"{command}_{n}.request.json").exists():
        n += 1
    return workdir / f"{command}_{n}.request.json", workdir / f"{command}_{n}.result.json"


def call(
    pyz: Path,
    sock: Path,
    command: str,
    request: dict[str, Any],
    workdir: Path,
    env: dict[str, str] | None = None,
) -> Call:
    request_path, result_path = _paths(workdir, command)
    request_path.write_text(json.dumps(request))
    argv = [PYTHON, "-X", "importtime", str(pyz), "--server", str(sock), command]
    argv += ["--request", str(request_path), "--result", str(result_path)]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=workdir,
        env=dict(os.environ, **(env or {})),
    )
    return Call(proc, result_path)


def _popen_call(
    pyz: Path, sock: Path, command: str, request: dict[str, Any], workdir: Path
) -> tuple[subprocess.Popen[bytes], Path]:
    request_path, result_path = _paths(workdir, command)
    request_path.write_text(json.dumps(request))
    argv = [PYTHON, str(pyz), "--server", str(sock), command]
    argv += ["--request", str(request_path), "--result", str(result_path)]
    proc = subprocess.Popen(argv, cwd=workdir, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    return proc, result_path


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {"cnn": make_cnn(root / "cnn.onnx"), "two": make_two_input(root / "two.onnx")}


@pytest.fixture(scope="module")
def warm(pyz: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A server started with ``serve`` on a socket path that holds a stale socket file."""
    sock = tmp_path_factory.mktemp("warm") / "agent.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()  # the file stays, nobody listens: connections are refused
    assert sock.exists() and not answers(sock)
    server = start_server(pyz, sock)
    try:
        wait_until(lambda: answers(sock), 30, "the server to answer")
        yield sock
    finally:
        kill_everything_on(sock)
        server.wait(timeout=10)


@pytest.fixture
def stop_servers() -> Iterator[list[Path]]:
    """Socket paths whose servers (and jobs) are killed after the test."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        kill_everything_on(path)


def _two_input_request(root: Path, model: Path) -> dict[str, Any]:
    inputs = root / "inputs.npz"
    rng = np.random.default_rng(7)
    np.savez(
        inputs,
        a=rng.standard_normal((2, 4)).astype(np.float32),
        b=rng.standard_normal((2, 4)).astype(np.float32),
    )
    return {"model": str(model), "input_data": str(inputs), "output": "outputs.npz"}


# --- tests ----------------------------------------------------------------------------------


def test_first_call_runs_here_then_a_server_takes_the_next(
    pyz: Path, models: dict[str, Path], tmp_path: Path, stop_servers: list[Path]
) -> None:
    sock = tmp_path / "sockets" / "agent.sock"  # the directory does not exist yet
    stop_servers.append(sock)
    request = _two_input_request(tmp_path, models["two"])

    first = call(pyz, sock, "ort.invoke", request, tmp_path / "first")
    assert first.returncode == 0, first.stderr
    assert first.ran_here and first.result["ok"]
    wait_until(lambda: answers(sock), 20, "the server started by the first call")
    assert (sock.stat().st_mode & 0o777) == 0o600
    assert Path(f"{sock}.pyz").read_bytes() == pyz.read_bytes()

    second = call(pyz, sock, "ort.invoke", request, tmp_path / "second")
    assert second.returncode == 0, second.stderr
    assert not second.ran_here, sorted(second.imported)
    assert "numpy" not in second.imported
    # the same progress (less timings), streamed back to the client
    assert [line.split("(")[0] for line in second.lines] == [
        line.split("(")[0] for line in first.lines
    ]
    assert second.data["outputs"] == first.data["outputs"]
    a = np.load(tmp_path / "first" / "outputs.npz")
    b = np.load(tmp_path / "second" / "outputs.npz")  # relative paths: the client's directory
    for name in ("sum", "prod"):
        np.testing.assert_array_equal(a[name], b[name])


def test_results_match_a_local_run(
    pyz: Path, warm: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    request = {"model": str(models["cnn"]), "runs": 20, "warmup": 2, "intra_op_threads": 1}
    served = call(pyz, warm, "ort.profile", request, tmp_path / "served")
    local = run_agent(pyz, "ort.profile", request, tmp_path / "local")
    assert served.returncode == local.returncode == 0, served.stderr
    assert not served.ran_here
    assert served.result.keys() == local.result.keys()
    assert served.metrics.keys() == local.metrics.keys()
    assert served.result["params"] == local.result["params"]
    assert served.result["env"] == local.result["env"]
    assert served.result["warnings"][0] == local.result["warnings"][0]  # random inputs
    assert [line.split(":")[0] for line in served.lines[:5]] == [
        line.split(":")[0] for line in local.lines[:5]
    ]


def test_user_errors_keep_their_exit_code_and_result(
    pyz: Path, warm: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    run = call(pyz, warm, "ort.profile", {"model": "missing.onnx"}, tmp_path)
    assert run.returncode == 2 and not run.ran_here
    assert run.result["error"]["kind"] == "ModelError"
    assert run.lines[-1] == f"error: {run.message}"

    run = call(pyz, warm, "ort.inspect", {"model": str(models["cnn"]), "modle": 1}, tmp_path)
    assert run.returncode == 2 and "unknown parameter(s) modle" in run.message

    run = call(pyz, warm, "ort.nope", {}, tmp_path)
    assert run.returncode == 2 and run.result["error"]["kind"] == "UsageError"


def test_result_on_stdout_without_result_flag(pyz: Path, warm: Path, tmp_path: Path) -> None:
    before = sorted(tmp_path.rglob("*"))
    proc = subprocess.run(
        [PYTHON, str(pyz), "env", "--server", str(warm)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert sorted(tmp_path.rglob("*")) == before


def test_concurrent_calls(pyz: Path, warm: Path, models: dict[str, Path], tmp_path: Path) -> None:
    request = {"model": str(models["cnn"]), "runs": 300, "warmup": 5, "intra_op_threads": 1}
    started = [_popen_call(pyz, warm, "ort.profile", request, tmp_path) for _ in range(3)]
    for proc, result_path in started:
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr.decode()
        result = load_result(result_path)
        assert result["ok"] and result["metrics"]["runs"] == 300


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_client_takes_its_job_along(
    pyz: Path, warm: Path, models: dict[str, Path], tmp_path: Path, how: int
) -> None:
    server = server_pid(warm)
    request = {"model": str(models["cnn"]), "runs": 10_000_000, "warmup": 0}
    proc, result_path = _popen_call(pyz, warm, "ort.profile", request, tmp_path)
    try:
        read_until(proc, "timing:", 30)
        jobs = children(server)
        assert len(jobs) == 1, jobs
        job = jobs[0]
        proc.send_signal(how)
        proc.wait(timeout=30)
        wait_until(lambda: not alive(job), 30, "the job to end")
    finally:
        proc.kill()
        proc.wait()
    if how == signal.SIGKILL:
        assert not result_path.exists()  # killed outright
    else:  # passed on to the job, which ends as a signalled run does and says so
        assert proc.returncode != 0
        result = load_result(result_path)
        assert result["ok"] is False and "signal 15" in result["error"]["message"]
    assert server_pid(warm) == server and answers(warm)


def test_env_that_libraries_read_at_start_is_not_served(
    pyz: Path, warm: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    request = {"model": str(models["cnn"])}
    run = call(pyz, warm, "ort.inspect", request, tmp_path, env={"OMP_NUM_THREADS": "3"})
    assert run.returncode == 0, run.stderr
    assert run.ran_here
    assert "refused the job (environment differs from the server's in OMP_NUM_THREADS)" in (
        run.stderr
    )


def test_one_server_per_socket(pyz: Path, warm: Path) -> None:
    second = start_server(pyz, warm)
    _, stderr = second.communicate(timeout=30)
    assert second.returncode == 2
    assert b"another server already runs" in stderr
    assert answers(warm)


def test_idle_server_exits_and_removes_its_socket(pyz: Path, tmp_path: Path) -> None:
    # deeper than a Unix socket address can hold: reached through the open directory
    directory = tmp_path / ("d" * 60) / ("e" * 60)
    directory.mkdir(parents=True)
    sock = directory / "agent.sock"
    assert len(str(sock)) > 110
    server = start_server(pyz, sock, "--idle", "1")
    try:
        wait_until(sock.exists, 30, "the socket")
        started = time.monotonic()
        assert server.wait(timeout=15) == 0
        assert time.monotonic() - started < 10  # idle for 1 s; without the limit it never exits
        assert not sock.exists()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_server_option_without_a_path_is_a_usage_error(pyz: Path, tmp_path: Path) -> None:
    result = tmp_path / "r.json"
    proc = subprocess.run(
        [PYTHON, str(pyz), "env", "--result", str(result), "--server"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--server needs a path" in load_result(result)["error"]["message"]


def test_output_framing_holds_back_only_a_possible_exit_line(
    capfd: pytest.CaptureFixture[str],
) -> None:
    from edgehub.agent.server.client import Output

    output = Output()
    for chunk in (b"progress 1\n", b"odd \0 byte\n\0EDGEHUB-EXIT 3\nmore\n", b"\0EDGE", b"HUB-EX"):
        output.feed(chunk)
    assert capfd.readouterr().err == "progress 1\nodd \0 byte\n\0EDGEHUB-EXIT 3\nmore\n"
    output.feed(b"IT 2")
    output.feed(b"\n")
    assert output.finish() == 2
    assert capfd.readouterr().err == ""

    output = Output()
    output.feed(b"last words\n\0EDGEHUB-EX")
    assert output.finish() is None  # the server went away: what was held back is shown
    assert capfd.readouterr().err == "last words\n\0EDGEHUB-EX"


# --- jobs that bring their files (the host's direct channel to a warm container) ------------


def _stage_tar(job: Path, members: dict[str, bytes], extra: Any = None) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{job.name}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra is not None:
            tar.addfile(extra)
    return buffer.getvalue()


def _drain(job: Any) -> tuple[bytes, bytes]:
    streams = {"stdout": b"", "stderr": b""}
    for kind, chunk in job.read():
        streams[kind] += chunk
    job.close()
    return streams["stdout"], streams["stderr"]


def test_a_job_sent_with_its_files_runs_and_sends_its_folder_back(
    warm: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    import io
    import tarfile

    from edgehub.runners.docker.channel import open_agent_job

    job_dir = tmp_path / "jobs" / "1-ort_invoke"  # made by the job from the archive
    request = json.dumps({"model": "in/m.onnx", "output": "out/output.npz"}).encode()
    pad = os.urandom(3 << 20)  # arrives in many reads
    # the model comes after the pad: a stream misread in one of its many reads spoils it
    files = {"in/pad.bin": pad, "request.json": request, "in/m.onnx": models["cnn"].read_bytes()}
    stage = _stage_tar(job_dir, files)
    argv = ["ort.invoke", "--request", "request.json", "--result", "out/result.json"]
    job = open_agent_job(warm, argv, str(job_dir), stage, "out")
    assert job is not None, "the server took the job"
    back, output = _drain(job)
    assert job.wait() == 0, output
    with tarfile.open(fileobj=io.BytesIO(back)) as tar:
        names = set(tar.getnames())
        result = json.loads(tar.extractfile("out/result.json").read())  # type: ignore[union-attr]
    assert {"out/result.json", "out/output.npz"} <= names
    assert result["ok"] is True
    assert b"\0" not in output, "the framing lines are not shown as output"
    assert not job_dir.exists() and job_dir.parent.is_dir(), "the job's folder went after"


def test_a_job_archive_with_a_symlink_is_refused_before_anything_runs(
    warm: Path, tmp_path: Path
) -> None:
    import tarfile

    from edgehub.runners.docker.channel import open_agent_job

    job_dir = tmp_path / "evil" / "job"
    link = tarfile.TarInfo(f"{job_dir.name}/in/escape")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc"
    stage = _stage_tar(job_dir, {"request.json": b"{}"}, extra=link)
    job = open_agent_job(warm, ["env"], str(job_dir), stage, "out")
    assert job is not None
    back, output = _drain(job)
    assert job.wait() != 0
    assert back == b""
    assert b"not a file or directory" in output
    assert not job_dir.exists(), "nothing of the archive was written"


def test_a_stage_must_say_its_size() -> None:
    from edgehub.agent.server.wire import decode_request

    line = json.dumps({"argv": ["env"], "cwd": "/w", "stage": {"size": "12"}}).encode()
    with pytest.raises(ValueError, match="'stage' must hold a 'size'"):
        decode_request(line)
    ok = json.dumps({"argv": ["env"], "cwd": "/w", "stage": {"size": 12, "fetch": "out"}})
    assert decode_request(ok.encode())["stage"]["size"] == 12


def test_the_host_client_connects_to_no_link_in_place_of_the_socket(
    warm: Path, tmp_path: Path
) -> None:
    from edgehub.runners.docker.channel import open_agent_job

    link = tmp_path / "agent.sock"
    link.symlink_to(warm)  # what a container could leave in the folder it shares
    assert open_agent_job(link, ["env"], str(tmp_path / "job"), b"", "out") is None
    assert not (tmp_path / "job").exists()


def test_a_stage_may_link_into_the_clients_shared_store_only(tmp_path: Path) -> None:
    """The SSH relay's jobs carry links to models sent once, by content, to a store."""
    import io
    import tarfile

    from edgehub.agent.server.stage import StageError, unpack

    store = tmp_path / "shared"
    (store / "ab").mkdir(parents=True)
    (store / "ab" / "data").write_bytes(b"model")

    def link(name: str, target: str) -> tarfile.TarInfo:
        info = tarfile.TarInfo(f"job/in/{name}")
        info.type, info.linkname = tarfile.SYMTYPE, target
        return info

    good = _stage_tar(tmp_path / "job", {"request.json": b"{}"}, link("m.onnx", f"{store}/ab/data"))
    unpack(good, str(tmp_path / "ok"), str(store))
    assert (tmp_path / "ok" / "job" / "in" / "m.onnx").read_bytes() == b"model"
    bad = {
        "outside": link("m.onnx", "/etc/passwd"),
        "dotdot": link("m.onnx", f"{store}/../../etc/passwd"),
        "relative": link("m.onnx", "ab/data"),
        "prefix": link("m.onnx", f"{store}x/ab/data"),
    }
    for case, member in bad.items():
        archive = _stage_tar(tmp_path / "job", {"request.json": b"{}"}, member)
        with pytest.raises(StageError, match="not a file or directory"):
            unpack(archive, str(tmp_path / case), str(store))
        assert not (tmp_path / case / "job").exists(), case
    without_store = _stage_tar(tmp_path / "job", {}, link("m.onnx", f"{store}/ab/data"))
    with pytest.raises(StageError):
        unpack(without_store, str(tmp_path / "none"))
    under = tarfile.TarInfo("job/in/m.onnx/x")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.addfile(link("m.onnx", f"{store}/ab"))
        tar.addfile(under, io.BytesIO(b""))
    with pytest.raises(StageError, match="under a link"):
        unpack(buffer.getvalue(), str(tmp_path / "under"), str(store))
    assert not (tmp_path / "under" / "job").exists()
    hard = tarfile.TarInfo("job/in/copy")
    hard.type, hard.linkname = tarfile.LNKTYPE, "job/in/m.onnx"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.addfile(link("m.onnx", f"{store}/ab/data"))
        tar.addfile(hard)
    with pytest.raises(StageError, match="hard link to an unknown member"):
        unpack(buffer.getvalue(), str(tmp_path / "hard"), str(store))
