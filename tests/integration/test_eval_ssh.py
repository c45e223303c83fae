"""`hub exec eval --device` on an ``ssh`` device: the SSH test device (tests/ssh_device: real
sshd, the device's own Python and onnxruntime) runs the samples; the reference stays here.
The dataset goes to the device once: a second `hub` process finds it there by content."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgehub.tracking import RunStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice
from unit.agent_models import make_cnn

pytestmark = [pytest.mark.ssh, pytest.mark.docker]
HUB = str(Path(sys.executable).with_name("hub"))


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd)}
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run([HUB, *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip


def test_eval_on_the_ssh_device_matches_local_bit_for_bit(
    device: SSHDevice, ort_image: str, tmp_path: Path
) -> None:
    folder = tmp_path / "proj"
    (folder / "ds").mkdir(parents=True)
    (folder / "hub.toml").write_text(
        '[project]\nname = "eval-ssh"\n\n[devices.pi]\nprovider = "ssh"\n\n'
        f'[devices.pi.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n\n'
        '[devices.pi.agent]\npython = "/opt/device/bin/python3"\n'
    )
    make_cnn(folder / "cnn.onnx")
    rng = np.random.default_rng(2)
    for i in range(5):
        image = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
        np.savez(folder / "ds" / f"{i}.npz", image=image)
    compiled = hub("exec", "compile", "onnxruntime", "cnn.onnx", "--set", "quantization=none",
                   cwd=folder)  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    reports, logs = {}, {}
    for where, device_name in (("local", "local"), ("pi", "pi"), ("pi-again", "pi")):
        result = hub("exec", "eval", "onnxruntime", "--from-run", "latest", "--dataset", "ds",
                     "--device", device_name, "--goal", "cosine>=0.99999", "--json",
                     cwd=folder)  # fmt: skip
        assert result.returncode == 0, result.stderr
        reports[where], logs[where] = json.loads(result.stdout), result.stderr
        if where == "pi":  # the dataset's folder on the device, as the first eval left it
            listing = device.exec("sh", "-c", "ls -id --full-time ~/.cache/edgehub/datasets/*/*")
            first_upload = listing.stdout
    assert reports["pi"]["device"] == "pi"
    assert "not sent again" not in logs["pi"] and "sent to the device" in logs["pi"]
    assert "already on the device, not sent again" in logs["pi-again"], logs["pi-again"]
    again = device.exec("sh", "-c", "ls -id --full-time ~/.cache/edgehub/datasets/*/*").stdout
    assert again == first_upload and len(first_upload.splitlines()) == 1  # same inode and mtime
    assert reports["pi-again"]["outputs"] == reports["pi"]["outputs"]
    evals = {
        r.device: r for r in RunStore(folder / ".hub").list_runs(limit=None) if r.run_type == "EVAL"
    }
    assert evals["pi"].environment["device_python"]  # the device's own Python ran the samples
    outputs = {
        where: np.load(str(run.artifacts["outputs"].file_path)) for where, run in evals.items()
    }
    for name in outputs["local"].files:  # float32 ONNX Runtime, same version: bit-exact
        assert np.array_equal(outputs["local"][name], outputs["pi"][name])
    assert reports["pi"]["outputs"] == reports["local"]["outputs"]
