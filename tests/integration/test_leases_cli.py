"""Device leases through the real `hub`: planted links and unsafe lease directories refused in
one line, the private default directory, bad ``--lease-timeout`` values, and two hub.toml names
for one SSH board (the SSH test device, tests/ssh_device) taking turns while two boards
on different ports do not.

Directories of another user are made with ``chown`` and read-only ones with ``chattr +i`` where
the tests run as root (root writes through modes); elsewhere those cases skip, saying so."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from edgehub.acquire.boards import board_key
from edgehub.acquire.leases import device_lease, lease_holder, lease_path
from edgehub.config.devices import to_device
from edgehub.ops.project import open_project
from edgehub.tracking import RunStore
from ssh_device.device import SSHDevice

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
ROOT = os.geteuid() == 0
# A port where nothing listens: the lease is taken (or refused) before any connection.
NOWHERE = {"host": "127.0.0.1", "port": 1, "user": "edge", "key": None, "known_hosts": None}


def _project(folder: Path, names: tuple[str, ...], ssh: dict[str, object]) -> Path:
    (folder / "home").mkdir(parents=True)
    text = '[project]\nname = "leases"\n'
    for name in names:
        text += (
            f'\n[devices.{name}]\nprovider = "embedl_onnxruntime"\n'
            f'[devices.{name}.ssh]\nhost = "{ssh["host"]}"\nuser = "{ssh["user"]}"\n'
            f"port = {ssh['port']}\n"
        )
        if ssh["key"]:
            text += f'key = "{ssh["key"]}"\nknown_hosts = "{ssh["known_hosts"]}"\n'
    (folder / "hub.toml").write_text(text)
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


def _env(project: Path, **changes: str | None) -> dict[str, str]:
    env = {**os.environ, "HOME": str(project / "home")}
    env.pop("SSH_AUTH_SOCK", None)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _profile(project: Path, device: str, *more: str) -> list[str]:
    return [HUB, "exec", "profile", "onnxruntime", "model.onnx", "--device", device, *more]


def hub(
    project: Path, device: str, *more: str, **env: str | None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _profile(project, device, *more), cwd=project, env=_env(project, **env),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("hub: error:")]
    return line


def _key(project: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HOME", str(project / "home"))  # the same ~/.ssh/config as the hub's
    return board_key(to_device(open_project(project / "hub.toml").config, name))


def test_a_link_planted_at_the_lock_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path / "proj", ("edge",), NOWHERE)
    leases = tmp_path / "leases"
    leases.mkdir(mode=0o700)
    secret = tmp_path / "secret"
    secret.write_text("private data")
    secret.chmod(0o600)
    lease_path(_key(project, "edge", monkeypatch), leases).symlink_to(secret)
    done = hub(project, "edge", EDGEHUB_LEASE_DIR=str(leases))
    assert done.returncode == 3, done.stderr
    assert "is a symbolic link" in _one_line(done)
    assert secret.read_text() == "private data"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_the_default_lease_dir_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project(tmp_path / "proj", ("edge",), NOWHERE)
    runtime = tmp_path / "run-user"
    runtime.mkdir(mode=0o700)
    done = hub(project, "edge", EDGEHUB_LEASE_DIR=None, XDG_RUNTIME_DIR=str(runtime))
    assert done.returncode == 3 and "refused" in _one_line(done)  # after the lease
    folder = runtime / "edgehub" / "leases"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    (lock,) = folder.iterdir()
    assert lock == lease_path(_key(project, "edge", monkeypatch), folder)
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600 and lock.read_text() == ""


def _unsafe(kind: str, base: Path) -> Path:
    if kind == "world-writable":
        folder = base / "loose"
        folder.mkdir()
        folder.chmod(0o777)
    elif kind == "foreign":
        if not ROOT:
            pytest.skip("needs root to give a directory to another user (chown)")
        folder = base / "theirs"
        folder.mkdir()
        folder.chmod(0o1777)
        os.chown(folder, 65534, 65534)
    elif kind == "under-a-file":
        (base / "afile").write_text("")
        folder = base / "afile" / "leases"
    else:
        folder = base / "ro"
        folder.mkdir()
        if not ROOT:
            folder.chmod(0o555)
        elif shutil.which("chattr") is None:
            pytest.skip("as root a read-only directory needs chattr (e2fsprogs), not installed")
        elif subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
            pytest.skip("chattr +i (a read-only directory for root) is not supported here")
    return folder


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("world-writable", "without the sticky bit"),
        ("foreign", "not by you or root"),
        ("under-a-file", "is under a file"),
        ("read-only", "is not writable"),
    ],
)
def test_unsafe_lease_dirs_are_refused_in_one_line(kind: str, said: str, tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", ("edge",), NOWHERE)
    folder = _unsafe(kind, tmp_path)
    try:
        done = hub(project, "edge", EDGEHUB_LEASE_DIR=str(folder))
    finally:
        if kind == "read-only" and ROOT:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
    assert done.returncode == 3, done.stderr
    line = _one_line(done)
    assert said in line and "EDGEHUB_LEASE_DIR" in line
    assert not folder.exists() or not any(folder.iterdir()), "a lock file was made there"


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf", "soon"])
def test_bad_lease_timeouts_are_usage_errors(value: str, tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", ("edge",), NOWHERE)
    done = hub(project, "edge", "--lease-timeout", value)
    assert done.returncode == 2, done.stderr
    assert "--lease-timeout" in _one_line(done)
    assert not (project / ".hub").exists() or not RunStore(project / ".hub").list_runs()


@pytest.mark.ssh
def test_two_names_for_one_ssh_board_take_turns(
    device: SSHDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ssh = {"host": device.host, "port": device.port, "user": device.username,
           "key": device.private_key, "known_hosts": device.known_hosts}  # fmt: skip
    project = _project(tmp_path / "proj", ("edge-a", "edge-b"), ssh)
    leases = Path(os.environ["EDGEHUB_LEASE_DIR"])
    board = _key(project, "edge-a", monkeypatch)
    assert board == _key(project, "edge-b", monkeypatch) == f"ssh:127.0.0.1:{device.port}"

    with device_lease(board, device="edge-a", lease_dir=leases, command="held-by-the-test"):
        busy = hub(project, "edge-b", "--lease-timeout", "1")
    assert busy.returncode == 3, busy.stderr
    line = _one_line(busy)
    assert "device 'edge-b' is still held by" in line and "for device 'edge-a'" in line

    env = _env(project)
    first = subprocess.Popen(
        _profile(project, "edge-a", "--set", "runs=40000"), cwd=project, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while (holder := lease_holder(board, leases)) is None or holder.pid != first.pid:
        assert time.monotonic() < deadline and first.poll() is None, "edge-a never held it"
        time.sleep(0.05)
    second = subprocess.Popen(
        _profile(project, "edge-b", "--set", "runs=10"), cwd=project, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, first_err = first.communicate(timeout=300)
    _, second_err = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, first_err + second_err
    assert "device 'edge-b' is held by" in second_err and f"pid {first.pid}" in second_err
    assert "for device 'edge-a'" in second_err
    store = RunStore(project / ".hub")
    try:
        a, b = [r for r in store.list_runs(limit=None) if r.run_type == "PROFILE"]
    finally:
        store.close()
    assert a.ended_at is not None and b.ended_at is not None
    assert not (a.started_at < b.ended_at and b.started_at < a.ended_at), "they overlapped"


@pytest.mark.ssh
def test_two_boards_on_different_ports_measure_at_once(
    device: SSHDevice, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second SSH test device on another port: while edge-a's board is held (by the test,
    standing in for a long measurement), a measurement on edge-c runs without waiting."""
    from ssh_device.device import DeviceUnavailable, ssh_device

    try:
        other_context = ssh_device()
        other = other_context.__enter__()
    except DeviceUnavailable as missing:
        pytest.skip(f"a second SSH test device is unavailable: {missing}")
    try:
        keys = "/home/edge/.ssh/authorized_keys"  # one key for both boards
        other.exec("sh", "-c", 'printf "%s\\n" "$1" >> "$2"', "-", device.public_key, keys)
        project = tmp_path / "proj"
        (project / "home").mkdir(parents=True)
        known = tmp_path / "known_hosts"  # beside the project: a project's own would not vouch
        known.write_text(
            "".join(f"{d.known_hosts_name} {k}\n" for d in (device, other) for k in d.host_keys)
        )
        text = '[project]\nname = "ports"\n'
        for name, board in (("edge-a", device), ("edge-c", other)):
            text += (
                f'\n[devices.{name}]\nprovider = "embedl_onnxruntime"\n[devices.{name}.ssh]\n'
                f'host = "{board.host}"\nuser = "{board.username}"\nport = {board.port}\n'
                f'key = "{device.private_key}"\nknown_hosts = "{known}"\n'
            )
        (project / "hub.toml").write_text(text)
        shutil.copy(MODEL, project / "model.onnx")
        leases = Path(os.environ["EDGEHUB_LEASE_DIR"])
        board = _key(project, "edge-a", monkeypatch)
        assert board != _key(project, "edge-c", monkeypatch)

        with device_lease(board, device="edge-a", lease_dir=leases, command="held-by-the-test"):
            busy = hub(project, "edge-a", "--lease-timeout", "1")  # the lease is effective
            other_board = hub(project, "edge-c", "--lease-timeout", "1", "--set", "runs=10")
        assert busy.returncode == 3 and "is still held by" in _one_line(busy)
        assert other_board.returncode == 0, other_board.stderr
        assert "is held by" not in other_board.stderr
    finally:
        other_context.__exit__(None, None, None)
