"""Hostile cases of issue 26 that its other tests left open, through the real `hub`:

- nothing of a run (agent server, relay, janitor, work folder) is on the SSH test device
  (tests/ssh_device: real sshd) 5 s after `hub` ends, however it ended: a normal exit, a failed
  run, ``--timeout``, Ctrl-C, SIGTERM and SIGKILL;
- special files given as ``--set input_data=`` are refused at once, as ``--input`` ones are;
- a link planted at a lock path whose target does not exist yet is refused, nothing created;
- a run store whose checkpoint was cut off half way and whose WAL was lost is reported as a
  damaged run store, not as a hub.toml problem.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
DEVICE_PYTHON = "/opt/device/bin/python3"
WORK = "~/.cache/edgehub/work"
# what a connection leaves on the device while it lives (the patterns do not match themselves)
OURS = "serve --socke[t]|relay --socke[t]|edgehub-janito[r]"
GRACE_S = 5.0  # the acceptance: nothing left 5 s after hub exits


def _ssh_project(tmp_path: Path, device: SSHDevice) -> Path:
    """A project whose device ``board`` runs edgehub's resident agent (provider ``ssh``)."""
    folder = tmp_path / "proj"
    (folder / "home").mkdir(parents=True)
    (folder / "hub.toml").write_text(
        '[project]\nname = "hostile"\n\n[devices.board]\nprovider = "ssh"\n'
        f'[devices.board.agent]\npython = "{DEVICE_PYTHON}"\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n'
    )
    shutil.copy(MODEL, folder / "model.onnx")
    _unknown_op_model(folder / "broken.onnx")
    return folder


def _unknown_op_model(path: Path) -> None:
    """A well-formed model with an operator no runtime has: it fails on the device."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("NoSuchOp", ["x"], ["y"], domain="org.example.none")], "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("org.example.none", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    onnx.save(model, path)


def _env(project: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(project / "home")}
    env.pop("SSH_AUTH_SOCK", None)
    return env


def _ours(device: SSHDevice) -> str:
    """What a connection of ours has on the device now: processes, then work folders."""
    found = device.exec(
        "sh", "-c", f"pgrep -u edge -af '{OURS}' | cut -c1-160; ls -A {WORK} 2>/dev/null",
        check=False,
    )  # fmt: skip
    return found.stdout.strip()


def _until_the_job_runs(device: SSHDevice, proc: subprocess.Popen[str]) -> None:
    """Until the agent server of ``proc``'s run is up on the device and its job started."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        found = device.exec("pgrep", "-u", "edge", "-f", "serve --socket", check=False)
        if found.stdout.strip():
            time.sleep(2.0)  # the job itself starts right after
            assert proc.poll() is None, proc.communicate()
            return
        time.sleep(0.3)
    raise AssertionError("the profile did not start on the device")


RUNS = {
    "normal exit": (("model.onnx", "--set", "runs=20"), None, 0),
    "failed run": (("broken.onnx",), None, 2),  # the device's onnxruntime refuses it
    "--timeout": (("model.onnx", "--set", "runs=1000000", "--timeout", "8"), None, 3),
    "Ctrl-C": (("model.onnx", "--set", "runs=1000000"), signal.SIGINT, 130),
    "SIGTERM": (("model.onnx", "--set", "runs=1000000"), signal.SIGTERM, 143),
    "SIGKILL": (("model.onnx", "--set", "runs=1000000"), signal.SIGKILL, -9),
}


@pytest.mark.ssh
@pytest.mark.parametrize("how", list(RUNS))
def test_nothing_is_on_the_device_5_s_after_hub_exits(
    device: SSHDevice, tmp_path: Path, how: str
) -> None:
    """Checked once, 5 s after `hub` has exited (no polling: that is the promise)."""
    args, stop, code = RUNS[how]
    project = _ssh_project(tmp_path, device)
    before = _ours(device)
    assert before == "", f"left by an earlier test: {before}"
    proc = subprocess.Popen(
        [HUB, "exec", "profile", "onnxruntime", *args, "--device", "board"], cwd=project,
        env=_env(project), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        if stop is not None:
            _until_the_job_runs(device, proc)
            assert _ours(device) != ""  # the server, relay, janitor and folder are there now
            proc.send_signal(stop)
        _out, err = proc.communicate(timeout=300)
        exited = time.monotonic()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    time.sleep(max(0.0, exited + GRACE_S - time.monotonic()))
    left = _ours(device)
    if left:  # leave a clean device to the next case, then fail
        device.exec("sh", "-c", f"pkill -u edge -f '{OURS}'; rm -rf {WORK}/*", check=False)
    assert left == "", f"on the device {GRACE_S:g} s after hub exited ({how}):\n{left}"


def _hub(*args: str, cwd: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **env},
        timeout=60,
    )  # fmt: skip
    return done, time.monotonic() - started


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("hub: error:")]
    return line


def test_special_files_as_set_input_data_are_refused_at_once(tmp_path: Path) -> None:
    """``--set input_data=`` goes through the same check as ``--input``: no read, no hang."""
    shutil.copy(MODEL, tmp_path / "model.onnx")
    os.mkfifo(tmp_path / "in.npz")
    for special, said in (("/dev/zero", "a character device"), ("in.npz", "FIFO")):
        done, took = _hub("exec", "profile", "onnxruntime", "model.onnx", "--set",
                          f"input_data={special}", cwd=tmp_path)  # fmt: skip
        line = _one_line(done, 2)
        assert said in line and "not a regular file" in line, line
        assert took < 20, f"took {took:.1f} s"  # generous: the point is that it does not hang
    assert not (tmp_path / ".hub" / "runs").exists() or not any((tmp_path / ".hub/runs").iterdir())


def test_a_dangling_link_at_the_lock_path_is_refused_and_nothing_made(tmp_path: Path) -> None:
    """A link to a file that does not exist yet: following it would create that file."""
    from edgehub.acquire.boards import board_key
    from edgehub.acquire.leases import lease_path
    from edgehub.config.devices import to_device
    from edgehub.ops.project import open_project

    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "leases"\n\n[devices.edge]\nprovider = "embedl_onnxruntime"\n'
        '[devices.edge.ssh]\nhost = "127.0.0.1"\nport = 1\nuser = "edge"\n'
    )  # port 1: nothing listens; the lease is refused before any connection
    shutil.copy(MODEL, tmp_path / "model.onnx")
    leases = tmp_path / "leases"
    leases.mkdir(mode=0o700)
    victim = tmp_path / "elsewhere" / "made-by-hub"
    victim.parent.mkdir()
    board = board_key(to_device(open_project(tmp_path / "hub.toml").config, "edge"))
    lease_path(board, leases).symlink_to(victim)
    done, _ = _hub("exec", "profile", "onnxruntime", "model.onnx", "--device", "edge",
                   cwd=tmp_path, EDGEHUB_LEASE_DIR=str(leases))  # fmt: skip
    assert "is a symbolic link" in _one_line(done, 3)
    assert not victim.exists() and not victim.is_symlink()
    assert list(victim.parent.iterdir()) == []


def _store_with_a_cut_off_checkpoint(project: Path) -> Path:
    """60 runs checkpointed into runs.db, 200 more written to the WAL; then the state after a
    checkpoint cut off half way whose WAL was lost: every other page it changed is written."""
    from edgehub.core import HubContext

    database = project / ".hub" / "runs.db"

    def runs(prefix: str, count: int) -> bytes:
        with HubContext("hostile", artifact_base_dir=project / ".hub") as ctx:
            for index in range(count):
                with ctx.open_run("PROFILE", f"{prefix}-{index}"):
                    pass
        connection = sqlite3.connect(database)
        try:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
        return database.read_bytes()

    before, after = runs("first", 60), runs("more", 200)
    page = int.from_bytes(after[16:18], "big") or 65536
    mixed = bytearray(after)
    changed = [
        n for n in range(len(before) // page)
        if after[n * page : (n + 1) * page] != before[n * page : (n + 1) * page]
    ]  # fmt: skip
    assert len(changed) > 4, changed
    for n in changed[1::2]:
        mixed[n * page : (n + 1) * page] = before[n * page : (n + 1) * page]
    database.write_bytes(bytes(mixed))
    for suffix in ("-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    return database


def test_a_checkpoint_cut_off_with_its_wal_lost_is_a_damaged_run_store(tmp_path: Path) -> None:
    import json

    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "hostile"\n\n[devices.local]\nprovider = "local"\n'
    )
    database = _store_with_a_cut_off_checkpoint(tmp_path)
    done, _ = _hub("doctor", "--json", cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    checks = {check["name"]: check for check in json.loads(done.stdout)}
    assert checks["hub.toml"]["state"] == "ok", checks["hub.toml"]
    store = checks["run store"]
    assert store["state"] == "FAIL" and str(database) in store["detail"], store
    assert "damaged" in store["detail"] and ".recover" in store["detail"], store
