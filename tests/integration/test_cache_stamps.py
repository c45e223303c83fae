"""Caches key on content checked at use, never on a file's stamps alone, through the real `hub`.

A model swapped for another of the same size and modification time (``cp -p``, or a delete and
copy that may reuse the inode) is no compile-cache hit and its run records the new model's
hash; a stored compiled model changed in place (size and times kept) is no hit either. A
dataset cached on the SSH test device and changed there (size and modification time kept) is
sent again, and the eval matches the host's data; so is the agent kept there by content.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice
from unit.agent_models import make_cnn

HUB = str(Path(sys.executable).with_name("hub"))


def hub(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd), "EDGEHUB_CACHE_DIR": str(cwd / "cache")}
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


def compile_run(root: Path) -> tuple[dict[str, Any], str]:
    """Compile ``model.onnx``; the stored run as `runs show --json` gives it, and the log."""
    done = hub(root, "exec", "compile", "onnxruntime", "model.onnx", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    shown: dict[str, Any] = json.loads(hub(root, "runs", "show", run_id, "--json").stdout)
    return shown, done.stderr


def artifact(run: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [a for a in run["artifacts"] if a["name"] == name]
    return dict(found)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.docker
def test_a_model_swapped_with_the_same_stamp_is_no_compile_cache_hit(
    ort_image: str, tmp_path: Path
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "hub.toml").write_text('[project]\nname = "stamps"\nstore = ".hub"\n')
    model = make_cnn(root / "model.onnx", seed=0)
    v2, v3 = make_cnn(tmp_path / "v2.onnx", seed=1), make_cnn(tmp_path / "v3.onnx", seed=2)
    assert model.stat().st_size == v2.stat().st_size == v3.stat().st_size
    assert len({sha(model), sha(v2), sha(v3)}) == 3
    for path in (model, v2, v3):
        os.utime(path, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))
    time.sleep(2.5)  # settled (the hash memo remembers only files unchanged for 2 s)

    first, _ = compile_run(root)
    again, log = compile_run(root)
    assert again["tags"].get("cached_from") == first["run_id"], log  # the cache is at work

    before = model.stat()
    subprocess.run(["cp", "-p", str(v2), str(model)], check=True)
    after = model.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns
    )  # fmt: skip
    swapped, log = compile_run(root)
    assert "cached_from" not in swapped["tags"], log
    assert artifact(swapped, "input")["sha256"] == sha(v2)
    assert artifact(swapped, "path")["sha256"] != artifact(first, "path")["sha256"]

    # a delete and a copy (the inode may well be reused), same size and modification time
    model.unlink()
    subprocess.run(["cp", "-p", str(v3), str(model)], check=True)
    third, log = compile_run(root)
    assert "cached_from" not in third["tags"], log
    assert artifact(third, "input")["sha256"] == sha(v3)

    # the stored compiled model changed in place, size and times kept: checked by its bytes
    stored = Path(artifact(third, "path")["path"])
    kept = stored.stat()
    stored.chmod(0o600)
    data = bytearray(stored.read_bytes())
    data[-8:] = bytes(255 - b for b in data[-8:])
    stored.write_bytes(bytes(data))
    os.utime(stored, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    rebuilt, log = compile_run(root)
    assert "cached_from" not in rebuilt["tags"], log
    assert artifact(rebuilt, "input")["sha256"] == sha(v3)


DATASETS = "~/.cache/edgehub/datasets"
# on the device: every sample's image replaced by other numbers of the same shape (the same
# size), its modification time put back
_CHANGE = """
import glob, os, sys
import numpy as np
rng = np.random.default_rng(7)
for path in sorted(glob.glob(os.path.expanduser(sys.argv[1]) + "/*/samples/*.npz")):
    found = os.stat(path)
    image = np.load(path)["image"]
    size = found.st_size
    with open(path, "wb") as handle:
        np.savez(handle, image=rng.standard_normal(image.shape).astype(image.dtype))
    assert os.stat(path).st_size == size
    os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns))
"""

_ZERO = """
import os, sys
for path in sys.argv[1:]:
    found = os.stat(path)
    with open(path, "r+b") as handle:
        handle.write(bytes(found.st_size))
    os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns))
"""


@pytest.mark.ssh
@pytest.mark.docker
def test_a_dataset_changed_on_the_ssh_device_is_sent_again(
    device: SSHDevice, ort_image: str, tmp_path: Path
) -> None:
    folder = tmp_path / "proj"
    (folder / "ds").mkdir(parents=True)
    (folder / "hub.toml").write_text(
        '[project]\nname = "stamps-ssh"\n\n[devices.pi]\nprovider = "ssh"\n\n'
        f'[devices.pi.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n\n'
        '[devices.pi.agent]\npython = "/opt/device/bin/python3"\n'
    )
    make_cnn(folder / "cnn.onnx")
    rng = np.random.default_rng(11)
    for i in range(4):
        image = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
        np.savez(folder / "ds" / f"{i}.npz", image=image)
    device.exec("sh", "-c", f"rm -rf {DATASETS}")  # another module's datasets are not ours
    compiled = hub(folder, "exec", "compile", "onnxruntime", "cnn.onnx", "--set",
                   "quantization=none")  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr

    def evaluate() -> tuple[dict[str, Any], str]:
        done = hub(folder, "exec", "eval", "onnxruntime", "--from-run", "latest", "--dataset",
                   "ds", "--device", "pi", "--goal", "cosine>=0.99999", "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), done.stderr

    first, log = evaluate()
    assert "sent to the device" in log and "not sent again" not in log, log
    listing = f"ls -l --time-style=+%s.%N {DATASETS}/*/samples/"
    untouched = device.exec("sh", "-c", listing).stdout
    device.exec("/opt/device/bin/python3", "-c", _CHANGE, DATASETS)
    assert device.exec("sh", "-c", listing).stdout == untouched  # same sizes and mtimes

    second, log = evaluate()
    assert "changed on the device" in log and "sent again" in log, log
    assert "already on the device" not in log, log
    assert second["outputs"] == first["outputs"]  # computed on the host's data
    assert second["dataset_sha256"] == first["dataset_sha256"]
    on_device = device.exec("sh", "-c", f"sha256sum {DATASETS}/*/samples/*.npz").stdout.split()
    assert sorted(on_device[0::2]) == sorted(sha(p) for p in (folder / "ds").iterdir())

    third, log = evaluate()
    assert "already on the device, not sent again" in log, log
    assert third["outputs"] == first["outputs"]

    # the agent kept on the device by content (a file named by its hash), zeroed there (size
    # and mtime kept)
    found = device.exec("sh", "-c", "ls ~/.cache/edgehub/agent/*.pyz").stdout.split()
    assert found
    device.exec("/opt/device/bin/python3", "-c", _ZERO, *found)
    fourth, log = evaluate()
    assert "was changed there" in log and "sent again" in log, log
    assert fourth["outputs"] == first["outputs"]
