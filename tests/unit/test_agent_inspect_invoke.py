"""ort.inspect and ort.invoke through the built zipapp, on real ONNX models."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import (
    AgentRun,
    make_cnn,
    make_int64,
    make_two_input,
    run_agent,
    save_with_external_data,
)

from edgehub.agent.bundle import build_agent_zipapp


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {
        "cnn": make_cnn(root / "cnn.onnx"),
        "two": make_two_input(root / "two.onnx"),
        "int64": make_int64(root / "int64.onnx"),
    }


def test_inspect_cnn(pyz: Path, models: dict[str, Path], tmp_path: Path) -> None:
    run = run_agent(pyz, "ort.inspect", {"model": str(models["cnn"])}, tmp_path)
    assert run.returncode == 0, run.stderr
    data = run.data
    assert data["inputs"] == [{"name": "image", "dtype": "float32", "shape": ["N", 3, 16, 16]}]
    assert data["outputs"] == [{"name": "logits", "dtype": "float32", "shape": ["N", 10]}]
    assert data["opset"] == 13 and data["ir_version"] == 8
    assert data["producer"] == "edgehub-tests"
    assert run.result["env"]["onnxruntime"]  # the device's version (another one under 3.8 runs)


def test_inspect_int64_and_two_inputs(pyz: Path, models: dict[str, Path], tmp_path: Path) -> None:
    run = run_agent(pyz, "ort.inspect", {"model": str(models["int64"])}, tmp_path)
    assert run.data["inputs"][0]["dtype"] == "int64"
    run = run_agent(pyz, "ort.inspect", {"model": str(models["two"])}, tmp_path)
    assert [i["name"] for i in run.data["inputs"]] == ["a", "b"]
    assert [o["name"] for o in run.data["outputs"]] == ["sum", "prod"]


def test_inspect_external_data(pyz: Path, models: dict[str, Path], tmp_path: Path) -> None:
    external = save_with_external_data(models["cnn"], tmp_path / "ext")
    for target in (external.parent, external):  # the directory, and the .onnx beside its .data
        run = run_agent(pyz, "ort.inspect", {"model": str(target)}, tmp_path)
        assert run.returncode == 0, run.stderr
        assert run.data["external_data"] == ["model.onnx.data"]
        assert run.data["size_bytes"] > external.stat().st_size
        assert run.data["inputs"][0]["name"] == "image"


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("text", "'notes.txt' is not an ONNX model (protobuf parse failed): export the model"),
        ("missing", "does not exist"),
        ("empty_dir", "holds 0 .onnx files"),
    ],
)
def test_inspect_user_errors(pyz: Path, tmp_path: Path, setup: str, expected: str) -> None:
    if setup == "text":
        target = tmp_path / "notes.txt"
        target.write_text("hello, this is not a model\n" * 20)
    elif setup == "missing":
        target = tmp_path / "nope.onnx"
    else:
        target = tmp_path / "empty"
        target.mkdir()
    run = run_agent(pyz, "ort.inspect", {"model": str(target)}, tmp_path / "run")
    assert run.returncode == 2
    assert run.result["ok"] is False
    assert run.result["error"]["kind"] == "ModelError"
    assert expected in run.message
    assert "\n" not in run.message
    assert run.lines[-1] == f"error: {run.message}"
    assert "detail" not in run.result


def _invoke(pyz: Path, model: Path, feeds: dict[str, Any], tmp_path: Path) -> AgentRun:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **feeds)
    request = {"model": str(model), "input_data": str(inputs), "output": str(tmp_path / "out.npz")}
    return run_agent(pyz, "ort.invoke", request, tmp_path / "run")


@pytest.mark.parametrize("name", ["cnn", "two", "int64"])
def test_invoke_round_trip_matches_in_process(
    pyz: Path, models: dict[str, Path], tmp_path: Path, name: str
) -> None:
    rng = np.random.default_rng(5)
    all_feeds: dict[str, dict[str, np.ndarray]] = {
        "cnn": {"image": rng.standard_normal((2, 3, 16, 16)).astype(np.float32)},
        "two": {
            "a": rng.standard_normal((3, 4)).astype(np.float32),
            "b": rng.standard_normal((3, 4)).astype(np.float32),
        },
        "int64": {"ids": rng.integers(0, 20, (2, 5)).astype(np.int64)},
    }
    feeds = all_feeds[name]
    run = _invoke(pyz, models[name], feeds, tmp_path)
    assert run.returncode == 0, run.stderr
    session = ort.InferenceSession(str(models[name]), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(None, feeds), strict=True))
    with np.load(tmp_path / "out.npz", allow_pickle=False) as got:
        assert sorted(got.files) == sorted(expected)
        for key, value in expected.items():
            assert got[key].dtype == value.dtype
            np.testing.assert_array_equal(got[key], value)
    assert [o["name"] for o in run.data["outputs"]] == list(expected)
    assert run.metrics["inference_ms"] > 0


@pytest.mark.parametrize(
    ("feeds", "fragments"),
    [
        (
            {"x": np.zeros((1, 4), np.float32), "b": np.zeros((1, 4), np.float32)},
            ["missing 'a'", "unexpected 'x'"],
        ),
        (
            {"a": np.zeros((1, 4), np.float64), "b": np.zeros((1, 4), np.float32)},
            ["'a' has dtype float64, expected float32"],
        ),
        (
            {"a": np.zeros((1, 5), np.float32), "b": np.zeros((1, 4), np.float32)},
            ["'a' has shape [1,5], dim 1 must be 4"],
        ),
        ({"a": np.zeros((4,), np.float32), "b": np.zeros((1, 4), np.float32)}, ["expected rank 2"]),
        (
            {"a": np.zeros((2, 4), np.float32), "b": np.zeros((3, 4), np.float32)},
            ["'b' dim 0 is 3 but 'N' is 2 in 'a'"],
        ),
    ],
)
def test_invoke_input_mismatch_is_a_user_error(
    pyz: Path, models: dict[str, Path], tmp_path: Path, feeds: dict[str, Any], fragments: list[str]
) -> None:
    run = _invoke(pyz, models["two"], feeds, tmp_path)
    assert run.returncode == 2, run.stderr
    assert run.result["error"]["kind"] == "InputDataError"
    for fragment in fragments:
        assert fragment in run.message
    assert "Expected inputs: a: float32[N,4], b: float32[N,4]" in run.message
    assert run.lines[-1] == f"error: {run.message}"
    assert not (tmp_path / "out.npz").exists()


def test_invoke_refuses_pickled_inputs(pyz: Path, models: dict[str, Path], tmp_path: Path) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, ids=np.array([{"evil": 1}], dtype=object))
    request = {
        "model": str(models["int64"]),
        "input_data": str(inputs),
        "output": str(tmp_path / "o"),
    }
    run = run_agent(pyz, "ort.invoke", request, tmp_path / "run")
    assert run.returncode == 2
    assert "pickled" in run.message


def test_runtime_failure_is_an_unexpected_error_with_detail(pyz: Path, tmp_path: Path) -> None:
    # Reshape to a fixed [2, 3]: loads fine, fails at run time for any other element count
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        "bad_reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.array([2, 3], np.int64), "shape")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "reshape.onnx"
    onnx.save(model, str(path))
    run = _invoke(pyz, path, {"x": np.zeros((1, 4), np.float32)}, tmp_path)
    assert run.returncode == 1
    assert run.result["error"]["kind"] == "RuntimeFailure"
    assert run.result["error"]["user_error"] is False
    assert "onnxruntime failed running the model" in run.message
    assert "Traceback" in run.result["detail"]
    assert run.lines[-1] == f"error: {run.message}"


def test_invoke_without_inputs_makes_them_from_the_session(
    pyz: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    """No input_data: random inputs (seed 0) at input_shape, kept with the outputs, and the
    outputs are those of the model on exactly those inputs."""
    request = {
        "model": str(models["two"]),
        "output": str(tmp_path / "out.npz"),
        "inputs_out": str(tmp_path / "inputs_used.npz"),
        "input_shape": {"a": [3, 4]},
    }
    run = run_agent(pyz, "ort.invoke", request, tmp_path / "run")
    assert run.returncode == 0, run.stderr
    assert run.data["input_source"] == "random"
    assert {k: v["shape"] for k, v in run.data["shapes"].items()} == {"a": [3, 4], "b": [3, 4]}
    with np.load(tmp_path / "inputs_used.npz") as used, np.load(tmp_path / "out.npz") as out:
        feeds = {k: used[k] for k in used.files}
        session = ort.InferenceSession(str(models["two"]), providers=["CPUExecutionProvider"])
        expected = session.run(["prod"], feeds)[0]
        np.testing.assert_allclose(out["prod"], expected, rtol=1e-6)
    again = run_agent(pyz, "ort.invoke", request, tmp_path / "run2")
    with np.load(tmp_path / "inputs_used.npz") as used2:
        np.testing.assert_array_equal(used2["a"], feeds["a"])  # seed 0: the same inputs
    assert again.returncode == 0


def test_inputs_and_outputs_named_like_numpys_parameters(pyz: Path, tmp_path: Path) -> None:
    """``file``, ``allow_pickle`` in; ``fix_imports``, ``mmap_mode`` out: numpy.savez cannot
    take them as keywords, so the input file is written by name."""
    from agent_models import NUMPY_NAMED_FEEDS, check_numpy_named, make_numpy_named

    from edgehub.agent.tensors import save_npz

    model = make_numpy_named(tmp_path / "named.onnx")
    save_npz(tmp_path / "in.npz", NUMPY_NAMED_FEEDS)
    request = {"model": str(model), "input_data": str(tmp_path / "in.npz"),
               "output": str(tmp_path / "out.npz")}  # fmt: skip
    run = run_agent(pyz, "ort.invoke", request, tmp_path / "run")
    assert run.returncode == 0, run.stderr
    with np.load(tmp_path / "out.npz", allow_pickle=False) as got:
        check_numpy_named({k: got[k] for k in got.files})
