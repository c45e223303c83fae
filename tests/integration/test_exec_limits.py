"""`hub exec` at the limits, through the real entry point against the real Docker daemon and
ONNX Runtime image: a model that needs more memory than the container's limit, an input shape
too large for the machine, and `--timeout` stopping an endless run (its container removed).
The models are made here with onnx's helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgehub.tracking import RunRecord, RunStore

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env=dict(os.environ), timeout=300
    )


def one_error_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def runs(project: Path) -> list[RunRecord]:
    store = RunStore(project / ".hub")
    try:
        return store.list_runs(limit=None)
    finally:
        store.close()


def _memory_hog(path: Path) -> None:
    """A 200-byte model whose one tensor takes 1 GiB (ConstantOfShape of 2**28 floats)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    size = numpy_helper.from_array(np.array([1 << 28], dtype=np.int64), "size")
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    nodes = [
        helper.make_node("ConstantOfShape", ["size"], ["big"], value=one),
        helper.make_node("Add", ["big", "x"], ["sum"]),
        helper.make_node("ReduceSum", ["sum"], ["y"], keepdims=1),
    ]
    graph = helper.make_graph(
        nodes, "hog", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], initializer=[size],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def _dynamic(path: Path) -> None:
    """A model whose input has free dimensions [n, 3, h, w]."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text(
        '[project]\nname = "limits"\n\n[devices.local]\nprovider = "local"\n\n'
        '[devices.small]\nprovider = "local"\n[devices.small.docker]\nmemory = "256m"\n'
    )
    (folder / "model.onnx").write_bytes(MODEL.read_bytes())
    return folder


def test_a_model_over_the_memory_limit_names_the_limit_and_the_setting(project: Path) -> None:
    _memory_hog(project / "hog.onnx")
    result = hub("exec", "profile", "onnxruntime", "hog.onnx", "--device", "small", cwd=project)
    line = one_error_line(result, 4)
    assert "out of memory: the container limit is 256m" in line, line
    assert "[devices.small.docker] memory" in line and "exit 137" not in line
    (run,) = [r for r in runs(project) if r.run_type == "PROFILE"]
    assert run.status == "FAILED"


def test_an_input_shape_too_large_for_the_machine_is_one_clear_line(project: Path) -> None:
    _dynamic(project / "dyn.onnx")
    result = hub(
        "exec", "profile", "onnxruntime", "dyn.onnx", "--set", "input_shape=1,3,100000,100000",
        cwd=project,
    )  # fmt: skip
    line = one_error_line(result, 2)
    assert "input 'x' of shape [1,3,100000,100000] needs 112 GiB" in line, line
    assert "give a smaller input_shape" in line
    assert "MemoryError" not in result.stderr


def _containers_of(pid: int) -> list[str]:
    listed = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=org.edgehub.owner-pid={pid}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return listed.stdout.split()


def test_timeout_fails_the_run_and_removes_its_container(project: Path) -> None:
    started = time.monotonic()
    process = subprocess.Popen(
        [HUB, "exec", "profile", "onnxruntime", "model.onnx", "--set", "runs=1000000",
         "--timeout", "5"],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen: list[str] = []
    while process.poll() is None and time.monotonic() - started < 120:
        seen = seen or _containers_of(process.pid)  # its container, while it runs
        time.sleep(0.5)
    out, err = process.communicate(timeout=60)
    took = time.monotonic() - started
    result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    line = one_error_line(result, 3)
    assert "timed out after 5 s" in line, line
    assert took < 90, f"--timeout 5 took {took:.0f} s"
    assert seen, "the run's container was never seen"
    deadline = time.monotonic() + 30
    while _containers_of(process.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _containers_of(process.pid) == []
    (run,) = [r for r in runs(project) if r.run_type == "PROFILE"]
    assert run.status == "FAILED" and "timed out after 5 s" in (run.error or "")


def test_timeout_must_be_a_positive_number(project: Path) -> None:
    for bad in ("0", "-3", "nan", "inf", "soon"):
        result = hub("exec", "profile", "onnxruntime", "model.onnx", "--timeout", bad, cwd=project)
        line = one_error_line(result, 2)
        assert "--timeout" in line, line
    assert runs(project) == []


def test_a_tiny_timeout_stops_the_run_and_a_huge_one_never_fires(project: Path) -> None:
    tiny = hub("exec", "profile", "onnxruntime", "model.onnx", "--timeout", "1e-9", cwd=project)
    assert "timed out after 1e-09 s" in one_error_line(tiny, 3)
    huge = hub(
        "exec", "profile", "onnxruntime", "model.onnx", "--set", "runs=3", "--timeout", "1e308",
        cwd=project,
    )  # fmt: skip
    assert huge.returncode == 0, huge.stderr
    assert [r.status for r in runs(project)] == ["FINISHED", "FAILED"]  # newest first
