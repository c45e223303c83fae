"""Models and input data through the real `hub` and the ONNX Runtime image: a directory of
`.npz` samples as ``--input``, inputs named like numpy's own parameters, a copy that does not
fit the store's disk (a real tmpfs), and a large model's staged copy removed when `hub` is
stopped by SIGTERM mid-copy."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from edgehub.toolchains.tensors import save_npz

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from unit.agent_models import _finish

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
HUB = str(Path(sys.executable).with_name("hub"))


def _hub(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})}
    )


def _numpy_named_model(path: Path) -> Path:
    """out = allow_pickle + file (inputs named like numpy.savez's and numpy.load's parameters)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["allow_pickle", "file"], ["out"], name="add")],
        "numpy_names",
        [
            helper.make_tensor_value_info("allow_pickle", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("file", TensorProto.FLOAT, [1, 4]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])],
    )
    return _finish(graph, path)


def test_input_directory_of_samples(ort_image: str) -> None:
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", "model.onnx")
    Path("samples").mkdir()
    for i in range(3):
        np.savez(f"samples/s{i}.npz", image=np.full((1, 3, 32, 32), i, np.float32))
    profiled = _hub("exec", "profile", "onnxruntime", "model.onnx", "--input", "samples",
                    "--set", "runs=5", "--json")  # fmt: skip
    assert profiled.returncode == 0, profiled.stderr
    assert "3 samples" in profiled.stderr
    invoked = _hub("exec", "invoke", "onnxruntime", "model.onnx", "--input", "samples", "--json")
    assert invoked.returncode == 0, invoked.stderr
    assert "s0.npz, the first of 3 samples" in invoked.stderr
    assert json.loads(invoked.stdout)["outputs"]["probabilities"]["shape"] == [1, 10]


def test_inputs_named_allow_pickle_and_file(ort_image: str) -> None:
    model = _numpy_named_model(Path("named.onnx"))
    a, b = np.arange(4, dtype=np.float32)[None], np.full((1, 4), 10, np.float32)
    save_npz(Path("in.npz"), {"allow_pickle": a, "file": b})  # numpy.savez cannot write these
    invoked = _hub("exec", "invoke", "onnxruntime", str(model), "--input", "in.npz", "--json")
    assert invoked.returncode == 0, invoked.stderr
    stored = json.loads(invoked.stdout)["artifacts"]["output_file"]
    with np.load(stored) as out:
        np.testing.assert_array_equal(out["out"], a + b)
    # random inputs made by name, then the reference
    piped = _hub("exec", "pipeline", "onnxruntime", str(model),
                 "--set", "compile.quantization=none", "--json")  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["accuracy"][0]["max_abs_error"] < 1e-6


def test_a_model_larger_than_the_stores_free_space_is_refused(small_disk: Path) -> None:
    big = Path("big.onnx")
    with big.open("wb") as handle:
        handle.truncate(300 << 20)  # sparse: takes no room here
    start = time.monotonic()
    done = _hub("exec", "invoke", "onnxruntime", str(big), env={"EDGEHUB_STORE": str(small_disk)})
    assert done.returncode == 3, done.stderr
    assert "not enough free space" in done.stderr and str(small_disk) in done.stderr
    assert "Traceback" not in done.stderr and time.monotonic() - start < 60
    left = [p for p in small_disk.rglob("*") if p.is_file() and p.stat().st_size > 1 << 20]
    assert left == []


def test_staged_copy_removed_when_stopped_mid_copy(tmp_path: Path, ort_image: str) -> None:
    """The model on another file system than the store (so it is copied, not linked): a
    sparse 3 GB file in /dev/shm."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("needs a writable /dev/shm (a tmpfs apart from the store's disk)")
    big = shm / f"edgehub-test-{os.getpid()}.onnx"
    with big.open("wb") as handle:
        handle.truncate(3 << 30)
    store = tmp_path / "store"
    try:
        process = subprocess.Popen(
            [HUB, "exec", "invoke", "onnxruntime", str(big)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "EDGEHUB_STORE": str(store)},
        )  # fmt: skip
        deadline = time.monotonic() + 120
        copying: list[Path] = []
        while not copying and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
            copying = [p for p in store.rglob("*") if p.is_file() and p.stat().st_size > 1 << 20]
        assert copying, "no copy of the model was seen in the store"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        big.unlink()
    assert process.returncode == 143, stderr
    assert "stopped by SIGTERM" in stderr
    left = [p for p in store.rglob("*") if p.is_file() and p.stat().st_size > 1 << 20]
    assert left == [], left
    assert not list(store.rglob(".incoming-*")) and not list(store.rglob("stage"))
