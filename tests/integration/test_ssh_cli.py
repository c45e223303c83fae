"""`hub devices list|check|trust` and `hub exec … --device NAME` for an SSH device from hub.toml,
against the SSH test device (tests/ssh_device): real sshd, real embedl-onnxruntime."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice

pytestmark = pytest.mark.ssh

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))


def hub(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd / "home")}
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300, input=stdin
    )


def _project(tmp_path: Path, device: SSHDevice, known_hosts: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / "home").mkdir(parents=True)
    (folder / "hub.toml").write_text(
        '[project]\nname = "ssh-cli"\n\n'
        '[devices.board]\nprovider = "embedl_onnxruntime"\nspec = "SSH test device"\n\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\nknown_hosts = "{known_hosts}"\n'
    )
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


def test_trust_then_check_then_exec(device: SSHDevice, tmp_path: Path) -> None:
    known_hosts = tmp_path / "kh" / "known_hosts"
    known_hosts.parent.mkdir()
    known_hosts.write_text("")
    project = _project(tmp_path, device, known_hosts)

    refused = hub("exec", "invoke", "onnxruntime", "model.onnx", "--device", "board", cwd=project)
    assert refused.stderr.count("hub: error:") == 1
    assert refused.returncode != 0
    assert "hub devices trust board" in refused.stderr
    assert "Traceback" not in refused.stderr

    no_tty = hub("devices", "trust", "board", cwd=project, stdin="")
    assert no_tty.returncode == 2, no_tty.stderr
    assert "--yes" in no_tty.stderr
    assert known_hosts.read_text() == ""

    trusted = hub("devices", "trust", "board", "--yes", cwd=project)
    assert trusted.returncode == 0, trusted.stderr
    shown = [fp for fp in device.fingerprints().values() if fp in trusted.stdout]
    assert shown, trusted.stdout
    assert known_hosts.stat().st_mode & 0o777 == 0o600 or known_hosts.read_text()
    again = hub("devices", "trust", "board", cwd=project)
    assert "already trusted" in again.stdout

    listed = hub("devices", cwd=project)
    assert listed.returncode == 0 and "board" in listed.stdout
    assert "board" in hub("devices", "list", "--json", cwd=project).stdout

    checked = hub("devices", "check", "board", "--json", cwd=project)
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["reachable"] and report["arch"] and report["os"].startswith("Linux")
    assert "embedl_onnxruntime" in report["providers"] and "trtexec" in report["providers"]
    runtimes = {entry["runtime"] for entry in report["runtimes"]}
    assert {"onnxruntime", "ai_edge_litert"} <= runtimes
    table = hub("devices", "check", "board", cwd=project)
    assert table.returncode == 0 and "can serve" in table.stdout

    np.savez(project / "input.npz", image=np.ones((1, 3, 32, 32), np.float32))
    invoked = hub(
        "exec", "invoke", "onnxruntime", "model.onnx", "--device", "board",
        "--input", "input.npz", "--json", cwd=project,
    )  # fmt: skip
    assert invoked.returncode == 0, invoked.stderr
    profiled = hub(
        "exec", "profile", "onnxruntime", "model.onnx", "--device", "board",
        "--set", "runs=10", "--json", cwd=project,
    )  # fmt: skip
    assert profiled.returncode == 0, profiled.stderr
    assert "latency" in profiled.stdout


def test_changed_host_key_is_refused_by_trust(device: SSHDevice, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    other = (
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"{device.known_hosts_name} {other.decode()}\n")
    project = _project(tmp_path, device, known_hosts)
    result = hub("devices", "trust", "board", "--yes", cwd=project)
    assert result.returncode != 0
    assert "man-in-the-middle" in result.stderr and "Traceback" not in result.stderr
    assert known_hosts.read_text().count("\n") == 1
    check = hub("devices", "check", "board", cwd=project)
    assert check.returncode == 3 and "man-in-the-middle" in check.stderr


def test_dynamic_classifier_profiles_with_input_shape_and_without_fails_in_one_line(
    device: SSHDevice, tmp_path: Path
) -> None:
    """``x: [-1, 3, "?", "?"]`` on the ``embedl-onnxruntime`` CLI (static shapes only)."""
    from integration.test_unnamed_dims import conv_model

    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    project = _project(tmp_path, device, known_hosts)
    conv_model(project / "cls.onnx")
    assert hub("devices", "trust", "board", "--yes", cwd=project).returncode == 0
    shape = ("--set", "input_shape=1x3x48x192", "--set", "runs=5")
    profiled = hub("exec", "profile", "onnxruntime", "cls.onnx", "--device", "board", *shape,
                   "--json", cwd=project)  # fmt: skip
    assert profiled.returncode == 0, profiled.stderr
    report = json.loads(profiled.stdout)
    assert report["params"]["static_input_shapes"] == {"x": [1, 3, 48, 192]}
    refused = hub("exec", "profile", "onnxruntime", "cls.onnx", "--device", "board", cwd=project)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines()[-1] == (
        "hub: error: input 'x' of cls.onnx is dynamic [-1, 3, '?', '?'] and embedl-onnxruntime "
        "takes static shapes only: give its shape, for example --set input_shape=x:1x3x32x32"
    )
