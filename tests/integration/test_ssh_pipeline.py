"""`hub exec pipeline` and a pipeline sweep on SSH devices, one per provider type, against the
SSH test device (tests/ssh_device: real sshd, the device's own onnxruntime, embedl-onnxruntime,
and a trtexec STAND-IN, as no GPU is here): the reference runs the original model in ONNX
Runtime on this host (the local container), whatever device the pipeline measures."""

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
HUB = str(Path(sys.executable).with_name("hub"))


def _hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd / "home")}
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )


@pytest.fixture
def project(tmp_path: Path, device: SSHDevice, ort_image: str) -> Path:
    """A project with the test device under three names, one per SSH provider type."""
    folder = tmp_path / "proj"
    (folder / "home").mkdir(parents=True)
    ssh = (
        f'host = "{device.host}"\nuser = "{device.username}"\nport = {device.port}\n'
        f'key = "{device.private_key}"\nknown_hosts = "{device.known_hosts}"\n'
    )
    (folder / "hub.toml").write_text(
        '[project]\nname = "ssh-pipeline"\n\n[devices.local]\nprovider = "local"\n\n'
        f'[devices.pi]\nprovider = "ssh"\n[devices.pi.ssh]\n{ssh}'
        '[devices.pi.agent]\npython = "/opt/device/bin/python3"\n\n'
        f'[devices.board]\nprovider = "embedl_onnxruntime"\n[devices.board.ssh]\n{ssh}\n'
        f'[devices.jetson]\nprovider = "trtexec"\n[devices.jetson.ssh]\n{ssh}'
    )
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", folder / "model.onnx")
    return folder


@pytest.mark.parametrize(
    ("name", "runtime"), [("pi", "onnxruntime"), ("board", "onnxruntime"), ("jetson", "tensorrt")]
)
def test_pipeline_on_each_ssh_provider(project: Path, name: str, runtime: str) -> None:
    done = _hub("exec", "pipeline", runtime, "model.onnx", "--device", name, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {"compile", "profile", "invoke", "reference"} <= set(report)
    assert report["invoke"]["device"] == name
    assert report["reference"]["device"] == "local"  # ONNX Runtime on this host
    if runtime == "onnxruntime":  # the quantized model, compared output by output
        (row,) = report["accuracy"]
        assert row["name"] == "probabilities" and row["cosine_similarity"] > 0.9
    else:  # the stand-in's "engine" answers its input under another name: said, not hidden
        assert report["accuracy"] == [] and "nothing to compare" in report["reference_note"]


def test_pipeline_table_prints_accuracy(project: Path) -> None:
    np.savez(project / "in.npz", image=np.ones((1, 3, 32, 32), np.float32))
    done = _hub(
        "exec", "pipeline", "onnxruntime", "model.onnx", "--device", "pi", "--input", "in.npz",
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "accuracy of the compiled model against the original" in done.stdout
    assert "probabilities" in done.stdout and "step 4/4" in done.stderr


def test_pipeline_sweep_on_ssh_devices(project: Path) -> None:
    (project / "grid.toml").write_text(
        '[sweep]\nstep = "pipeline"\nmodels = ["model.onnx"]\ndevices = ["pi", "board"]\n'
        'runtimes = ["onnxruntime"]\n\n[sweep.vary]\n"profile.runs" = [5]\n'
    )
    done = _hub("exec", "sweep", "grid.toml", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    assert {c["device"]: c["status"] for c in cells} == {"pi": "FINISHED", "board": "FINISHED"}
    assert all(c["cosine_similarity"] and c["cosine_similarity"] > 0.9 for c in cells)
