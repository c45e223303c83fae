"""A Docker daemon reached over SSH (``DOCKER_HOST=ssh://``), through the real `hub` entry point.

The SSH server is the SSH test device with this machine's Docker socket inside it
(``tests/ssh_device/docker_host.py``), so the daemon is real and the same one the other tests
use; what differs is the path: every call goes through sshd and ``docker system dial-stdio``,
so the host's files cannot be bind-mounted and the warm channel's host socket is out of reach.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgehub.tracking import RunStore

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
sys.path.insert(0, str(REPO / "tests"))

# A memory limit no other test uses: the warm container of these settings is this test's own.
HUB_TOML = """[project]
name = "remote-docker"

[devices.local]
provider = "local"

[devices.local.docker]
memory = "3001m"
keep_warm = 120
"""


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory, ort_image: str) -> Iterator[Any]:
    from ssh_device.device import DeviceUnavailable
    from ssh_device.docker_host import docker_over_ssh

    home = tmp_path_factory.mktemp("home")
    try:
        with docker_over_ssh(home) as host:
            yield host, home
    except DeviceUnavailable as missing:
        pytest.skip(f"Docker over SSH unavailable: {missing}")


def hub(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **env},
        timeout=300,
    )  # fmt: skip


def _warm_containers(client: Any, megabytes: int = 3001) -> list[Any]:
    found = client.containers.list(all=True, filters={"label": "org.edgehub.warm=1"})
    return [c for c in found if c.attrs["HostConfig"].get("Memory") == megabytes << 20]


def test_pipeline_runs_on_a_daemon_reached_over_ssh_and_doctor_lists_its_warm_container(
    remote: Any, tmp_path: Path, docker_daemon: Any
) -> None:
    host, home = remote
    project = tmp_path / "proj"
    project.mkdir()
    (project / "hub.toml").write_text(HUB_TOML)
    shutil.copy(MODEL, project / "model.onnx")
    env = {"DOCKER_HOST": host.url, "HOME": str(home)}
    env.pop("DOCKER_CONTEXT", None)
    for stale in _warm_containers(docker_daemon):
        stale.remove(force=True)
    logins = host.logins()

    result = hub("exec", "pipeline", "onnxruntime", "model.onnx", "--json", cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert Path(report["compile"]["artifacts"]["path"]).is_file()
    (output,) = Path(report["invoke"]["artifacts"]["output_file"]).parent.glob("*.npz")
    assert output.stat().st_size > 0
    statuses = {r.run_type: r.status for r in RunStore(project / ".hub").list_runs(limit=None)}
    assert statuses == {"COMPILE": "FINISHED", "PROFILE": "FINISHED", "INFERENCE": "FINISHED"}
    assert host.logins() - logins == 1, "one SSH connection for the whole job"

    try:
        (warm,) = _warm_containers(docker_daemon)
        # Files went through the API: the only mounts are the work volume, no host folder.
        assert [m["Type"] for m in warm.attrs["Mounts"]] == ["volume"]

        doctor = hub("doctor", "--json", cwd=project, env=env)
        assert "Traceback" not in doctor.stderr
        checks = {c["name"]: c for c in json.loads(doctor.stdout)}
        assert checks["docker daemon"]["detail"] == f"reachable at {host.url}"
        assert checks[f"warm {warm.name}"]["state"] == "ok"
        assert host.logins() - logins == 2, "doctor: one more connection, not one per call"
    finally:
        for container in _warm_containers(docker_daemon):
            container.remove(force=True)


def test_an_unknown_host_key_is_refused_in_one_line(
    remote: Any, tmp_path: Path, docker_daemon: Any
) -> None:
    host, home = remote
    stranger = tmp_path / "home"
    shutil.copytree(home / ".ssh", stranger / ".ssh")
    (stranger / ".ssh" / "known_hosts").write_text("")  # the host is not known: never added
    (tmp_path / "model.onnx").write_bytes(MODEL.read_bytes())
    env = {"DOCKER_HOST": host.url, "HOME": str(stranger)}
    result = hub("exec", "compile", "onnxruntime", "model.onnx", cwd=tmp_path, env=env)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(errors) == 1 and "cannot reach the Docker daemon" in errors[0], result.stderr
    assert "known_hosts" in errors[0], errors[0]
    assert (stranger / ".ssh" / "known_hosts").read_text() == ""


def test_a_device_names_its_docker_host_in_hub_toml_and_doctor_checks_each_daemon(
    remote: Any, tmp_path: Path, docker_daemon: Any
) -> None:
    host, home = remote
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: a daemon address nothing answers
    gone = f"ssh://edge@127.0.0.1:{closed.getsockname()[1]}"
    (tmp_path / "hub.toml").write_text(
        f'[devices.build]\nprovider = "local"\n\n[devices.build.docker]\nhost = "{host.url}"\n'
        f'memory = "3002m"\nkeep_warm = 120\n\n[devices.gone]\nprovider = "local"\n\n'
        f'[devices.gone.docker]\nhost = "{gone}"\n'
    )
    shutil.copy(MODEL, tmp_path / "model.onnx")
    logins = host.logins()
    env = {"HOME": str(home), "DOCKER_HOST": ""}  # the device's key alone picks the daemon
    try:
        result = hub("exec", "compile", "onnxruntime", "model.onnx", "--device", "build",
                     "--json", cwd=tmp_path, env=env)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert Path(json.loads(result.stdout)["artifacts"]["path"]).is_file()
        assert host.logins() - logins == 1
        (warm,) = _warm_containers(docker_daemon, 3002)

        # doctor: the environment's daemon, and one row per daemon a device names
        doctor = hub("doctor", "--json", cwd=tmp_path, env=env)
        assert "Traceback" not in doctor.stderr
        checks = {c["name"]: c for c in json.loads(doctor.stdout)}
        assert checks["docker daemon"]["state"] == "ok"
        build = checks["docker daemon of build"]
        assert build["state"] == "ok" and build["detail"].startswith(f"reachable at {host.url};")
        assert checks[f"warm {warm.name} at {host.url}"]["state"] == "ok"
        down = checks["docker daemon of gone"]
        assert down["state"] == "FAIL", down
        assert down["detail"].startswith(f"cannot reach the Docker daemon at {gone}: "), down
        assert "\n" not in down["detail"]
        text = hub("doctor", cwd=tmp_path, env=env)
        assert "Traceback" not in text.stderr and "docker daemon of gone" in text.stdout
    finally:
        closed.close()
        for container in _warm_containers(docker_daemon, 3002):
            container.remove(force=True)


def test_an_interrupted_remote_run_leaves_no_container_and_is_killed(
    remote: Any, tmp_path: Path, docker_daemon: Any
) -> None:
    import signal
    import time

    host, home = remote
    shutil.copy(MODEL, tmp_path / "model.onnx")
    logins = host.logins()
    env = {**os.environ, "DOCKER_HOST": host.url, "HOME": str(home)}
    argv = [HUB, "exec", "profile", "onnxruntime", "model.onnx", "--set", "runs=1000000"]
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    label = f"org.edgehub.owner-pid={process.pid}"
    deadline = time.monotonic() + 120
    while not docker_daemon.containers.list(filters={"label": label}):
        assert process.poll() is None and time.monotonic() < deadline, "no container started"
        time.sleep(0.2)
    time.sleep(2)  # the profile is under way
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert docker_daemon.containers.list(all=True, filters={"label": label}) == []
    (run,) = RunStore(tmp_path / ".hub").list_runs(limit=None)
    assert run.status == "KILLED"
    assert host.logins() - logins == 1
