"""Through the real `hub`, against the SSH test device (tests/ssh_device: real sshd, real
embedl-onnxruntime): `hub exec sweep --resume` keys cells on what the device is, not its name;
`hub exec --timeout` stops the job on the device."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from edgehub.tracking import RunStore
from ssh_device.device import SSHDevice

pytestmark = pytest.mark.ssh

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
JOB = "embedl-onnxruntime|ort.profile"  # the profile job's command line on the device


def _write(project: Path, device: SSHDevice, name: str, host: str) -> None:
    (project / "hub.toml").write_text(
        '[project]\nname = "sweep-identity"\n\n'
        f'[devices.{name}]\nprovider = "embedl_onnxruntime"\n\n'
        f'[devices.{name}.ssh]\nhost = "{host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{project.parent / "known_hosts"}"\n'  # beside the project, not in it
    )
    (project / "grid.toml").write_text(
        f'[sweep]\nstep = "profile"\nmodels = ["model.onnx"]\ndevices = ["{name}"]\n'
        '[sweep.vary]\n"profile.runs" = [5]\n'
    )


def sweep(project: Path) -> tuple[dict[str, object], str]:
    env = {**os.environ, "HOME": str(project / "home")}
    env.pop("SSH_AUTH_SOCK", None)
    done = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--resume", "--json"],
        cwd=project, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (cell,) = json.loads(done.stdout)["cells"]
    assert cell["status"] == "FINISHED", cell
    return cell, done.stderr


def profiles(project: Path) -> int:
    store = RunStore(project / ".hub")
    try:
        return sum(r.run_type == "PROFILE" for r in store.list_runs(limit=None))
    finally:
        store.close()


def test_resume_follows_the_board_not_the_name(device: SSHDevice, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "home" / ".ssh").mkdir(parents=True)
    shutil.copy(MODEL, project / "model.onnx")
    keys = device.known_hosts.read_text()
    other_name = keys.replace(device.known_hosts_name, f"[localhost]:{device.port}")
    (project.parent / "known_hosts").write_text(keys + other_name)

    _write(project, device, "edge", device.host)
    first, _ = sweep(project)
    assert first["reused_from"] is None and profiles(project) == 1

    _write(project, device, "board", device.host)  # renamed: the same board
    renamed, _ = sweep(project)
    assert renamed["reused_from"] == first["run_id"] and renamed["device"] == "board"
    assert profiles(project) == 1

    _write(project, device, "edge", "localhost")  # another address: measured again
    moved, note = sweep(project)
    assert moved["reused_from"] is None and profiles(project) == 2
    assert "device 'edge' changed in hub.toml" in note and "ssh localhost:" in note, note
    assert note.count("changed in hub.toml") == 1

    (project / "home" / ".ssh" / "config").write_text(
        f"Host myboard\n  HostName localhost\n  Port {device.port}\n"
    )
    _write(project, device, "board", "myboard")  # an alias of that address: the same board
    aliased, note = sweep(project)
    assert aliased["reused_from"] == moved["run_id"], note
    assert profiles(project) == 2


def test_timeout_stops_the_command_on_an_ssh_device(device: SSHDevice, tmp_path: Path) -> None:
    """`hub exec --timeout` on an SSH device: exit 3, the run FAILED, its remote job gone."""
    project = tmp_path / "proj"
    (project / "home").mkdir(parents=True)
    shutil.copy(MODEL, project / "model.onnx")
    (project.parent / "known_hosts").write_text(device.known_hosts.read_text())
    _write(project, device, "edge", device.host)
    env = {**os.environ, "HOME": str(project / "home")}
    env.pop("SSH_AUTH_SOCK", None)
    process = subprocess.Popen(
        [HUB, "exec", "profile", "onnxruntime", "model.onnx", "--device", "edge",
         "--set", "runs=1000000", "--timeout", "8"],  # connecting counts: room for a busy machine
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    seen = ""
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        seen = seen or device.processes_left(JOB, within=0)  # the job, while it runs
        time.sleep(0.3)
    out, err = process.communicate(timeout=60)
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    assert done.returncode == 3, done.stderr
    assert seen, "the profile job was never seen on the device"
    errors = [line for line in done.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(errors) == 1 and "timed out after 8 s" in errors[0], done.stderr
    store = RunStore(project / ".hub")
    try:
        (run,) = store.list_runs(limit=None)
    finally:
        store.close()
    assert run.status == "FAILED"
    assert device.processes_left(JOB, within=15) == ""
