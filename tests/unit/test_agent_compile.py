"""ort.compile through the built zipapp: optimize, static/dynamic quantization, shapes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import (
    AgentRun,
    make_cnn,
    make_two_input,
    run_agent,
    save_with_external_data,
)

from edgehub.agent.bundle import build_agent_zipapp


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compile")


@pytest.fixture(scope="module")
def cnn(root: Path) -> Path:
    return make_cnn(root / "cnn.onnx")


@pytest.fixture(scope="module")
def two(root: Path) -> Path:
    return make_two_input(root / "two.onnx")


@pytest.fixture(scope="module")
def calib_npz(root: Path) -> Path:
    rng = np.random.default_rng(11)
    path = root / "calib.npz"
    np.savez(path, image=rng.standard_normal((32, 3, 16, 16)).astype(np.float32))
    return path


@pytest.fixture(scope="module")
def test_images() -> np.ndarray:
    return np.random.default_rng(99).standard_normal((16, 3, 16, 16)).astype(np.float32)


def _outputs(model: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    outputs: list[np.ndarray] = session.run(None, feeds)
    return outputs


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _compile(pyz: Path, root: Path, request: dict[str, Any]) -> AgentRun:
    return run_agent(pyz, "ort.compile", request, root / "runs")


def test_optimize(pyz: Path, root: Path, cnn: Path, test_images: np.ndarray) -> None:
    out = root / "cnn_opt.onnx"
    run = _compile(pyz, root, {"model": str(cnn), "output": str(out), "mode": "optimize"})
    assert run.returncode == 0, run.stderr
    assert run.result["params"]["optimization_level"] == "extended"
    for key in ("compile_time_s", "input_size_bytes", "output_size_bytes", "size_ratio"):
        assert key in run.metrics
    assert run.metrics["output_size_bytes"] == out.stat().st_size
    assert run.data["inputs"][0]["name"] == "image"
    (want,) = _outputs(cnn, {"image": test_images})
    (got,) = _outputs(out, {"image": test_images})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("method", "per_channel", "source"),
    [
        ("minmax", False, "npz"),
        ("entropy", True, "npz"),
        ("minmax", True, "directory"),
        ("entropy", False, "npy-directory"),
    ],
)
def test_quantize_static_is_close_to_float(
    pyz: Path,
    root: Path,
    cnn: Path,
    calib_npz: Path,
    test_images: np.ndarray,
    method: str,
    per_channel: bool,
    source: str,
) -> None:
    calibration = calib_npz
    if source != "npz":
        calibration = root / f"calib_{source}"
        calibration.mkdir(exist_ok=True)
        with np.load(calib_npz) as data:
            for i, image in enumerate(data["image"][:16]):
                if source == "directory":
                    np.savez(calibration / f"{i:03d}.npz", image=image[None])
                else:
                    np.save(calibration / f"{i:03d}.npy", image[None])
    out = root / f"cnn_{method}_{per_channel}_{source}.onnx"
    request = {
        "model": str(cnn),
        "output": str(out),
        "mode": "quantize-static",
        "calibration": str(calibration),
        "calibration_method": method,
        "per_channel": per_channel,
    }
    run = _compile(pyz, root, request)
    assert run.returncode == 0, run.stderr
    params = run.result["params"]
    assert params["method"] == method and params["per_channel"] is per_channel
    assert params["quant_format"] == "QDQ" and params["activation_type"] == "QInt8"
    assert params["calibration_source"] == ("npz" if source == "npz" else "directory")
    assert params["num_calibration_samples"] == (32 if source == "npz" else 16)
    assert run.result["warnings"] == []
    assert run.stdout == ""  # even ORT's calibration prints go to stderr
    ops = {n.op_type for n in onnx.load(str(out)).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    (want,) = _outputs(cnn, {"image": test_images})
    (got,) = _outputs(out, {"image": test_images})
    assert _cosine(got, want) > 0.98


def test_quantize_static_random_warns(pyz: Path, root: Path, two: Path) -> None:
    out = root / "two_random.onnx"
    request = {
        "model": str(two),
        "output": str(out),
        "mode": "quantize-static",
        "random_samples": 4,
    }
    run = _compile(pyz, root, request)
    assert run.returncode == 0, run.stderr
    assert run.result["params"]["calibration_source"] == "random"
    assert run.result["params"]["num_calibration_samples"] == 4
    assert any(
        "random samples" in w and "accuracy will be poor" in w for w in run.result["warnings"]
    )
    assert out.is_file()


def test_quantize_io_gives_int8_graph_io(
    pyz: Path, root: Path, cnn: Path, calib_npz: Path, test_images: np.ndarray
) -> None:
    out = root / "cnn_io.onnx"
    request = {
        "model": str(cnn),
        "output": str(out),
        "mode": "quantize-static",
        "calibration": str(calib_npz),
        "quantize_io": True,
    }
    run = _compile(pyz, root, request)
    assert run.returncode == 0, run.stderr
    assert run.data["inputs"][0]["dtype"] == "int8"
    assert run.data["outputs"][0]["dtype"] == "int8"
    io = run.data["io_quantization"]
    qin, qout = io["inputs"]["image"], io["outputs"]["logits"]
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].type == "tensor(int8)"
    q = np.clip(np.round(test_images / qin["scale"]) + qin["zero_point"], -128, 127)
    (raw,) = session.run(None, {"image": q.astype(np.int8)})
    assert raw.dtype == np.int8
    got = (raw.astype(np.float32) - qout["zero_point"]) * qout["scale"]
    (want,) = _outputs(cnn, {"image": test_images})
    assert _cosine(got, want) > 0.98


def test_quantize_dynamic(pyz: Path, root: Path, two: Path) -> None:
    out = root / "two_dyn.onnx"
    run = _compile(pyz, root, {"model": str(two), "output": str(out), "mode": "quantize-dynamic"})
    assert run.returncode == 0, run.stderr
    assert run.result["params"]["weight_type"] == "QInt8"
    ops = {n.op_type for n in onnx.load(str(out)).graph.node}
    assert "MatMulInteger" in ops or "DynamicQuantizeMatMul" in ops
    rng = np.random.default_rng(3)
    feeds = {k: rng.standard_normal((5, 4)).astype(np.float32) for k in ("a", "b")}
    for want, got in zip(_outputs(two, feeds), _outputs(out, feeds), strict=True):
        assert _cosine(got, want) > 0.98


@pytest.mark.parametrize("mode", ["optimize", "quantize-dynamic"])
def test_external_data_directory(
    pyz: Path, root: Path, cnn: Path, test_images: np.ndarray, mode: str
) -> None:
    directory = save_with_external_data(cnn, root / "cnn_external").parent
    out = root / f"cnn_external_{mode}.onnx"
    request = {"model": str(directory), "output": str(out), "mode": mode}
    run = _compile(pyz, root, request)
    assert run.returncode == 0, run.stderr
    assert not [w for w in run.result["warnings"] if "preprocess" in w]
    assert run.metrics["input_size_bytes"] > (directory / "model.onnx").stat().st_size
    (want,) = _outputs(cnn, {"image": test_images})
    (got,) = _outputs(out, {"image": test_images})
    if mode == "optimize":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    else:
        assert _cosine(got, want) > 0.98


def test_input_shape_fixes_dynamic_dims(pyz: Path, root: Path, two: Path) -> None:
    out = root / "two_fixed.onnx"
    request = {
        "model": str(two),
        "output": str(out),
        "mode": "optimize",
        "input_shape": {"a": [2, 4]},
    }
    run = _compile(pyz, root, request)
    assert run.returncode == 0, run.stderr
    shapes = {t["name"]: t["shape"] for t in run.data["inputs"] + run.data["outputs"]}
    # 'N' is shared, so fixing it on 'a' fixes it on 'b' and on both outputs
    assert shapes == {"a": [2, 4], "b": [2, 4], "sum": [2, 4], "prod": [2, 3]}
    assert run.result["params"]["input_shapes"] == {"a": [2, 4]}


def test_input_shape_list_for_first_input(pyz: Path, root: Path, cnn: Path) -> None:
    out = root / "cnn_b4.onnx"
    request = {
        "model": str(cnn),
        "output": str(out),
        "mode": "quantize-dynamic",
        "input_shape": [4, 3, 16, 16],
    }
    run = _compile(pyz, root, request)
    assert run.returncode == 0, run.stderr
    assert run.data["inputs"][0]["shape"] == [4, 3, 16, 16]
    assert run.data["outputs"][0]["shape"] == [4, 10]


@pytest.mark.parametrize(
    ("request_extra", "kind", "fragment"),
    [
        (
            {"input_shape": [1, 3, 16]},
            "UsageError",
            "has rank 3 but the input is image: float32[N,3,16,16]",
        ),
        ({"input_shape": [1, 4, 16, 16]}, "UsageError", "dim 1 to 4 but the model fixes it to 3"),
        ({"input_shape": {"img": [1, 3, 16, 16]}}, "UsageError", "unknown input 'img'"),
        (
            {"mode": "quantize-static", "calibration": "WRONG_NAMES"},
            "CalibrationDataError",
            "expected inputs: image: float32[N,3,16,16]",
        ),
        (
            {"mode": "quantize-static", "calibration": "WRONG_SHAPE"},
            "CalibrationDataError",
            "Expected inputs: image: float32[N,3,16,16]",
        ),
        ({"mode": "fast"}, "UsageError", "'mode' must be one of"),
    ],
)
def test_compile_user_errors(
    pyz: Path, root: Path, cnn: Path, request_extra: dict[str, Any], kind: str, fragment: str
) -> None:
    request = {"model": str(cnn), "output": str(root / "bad.onnx"), "mode": "optimize"}
    request.update(request_extra)
    if request.get("calibration") == "WRONG_NAMES":
        request["calibration"] = str(root / "wrong_names.npz")
        np.savez(request["calibration"], x=np.zeros((2, 3, 16, 16), np.float32))
    elif request.get("calibration") == "WRONG_SHAPE":
        request["calibration"] = str(root / "wrong_shape.npz")
        np.savez(request["calibration"], image=np.zeros((2, 3, 8, 8), np.float32))
    run = _compile(pyz, root, request)
    assert run.returncode == 2, run.stderr
    assert run.result["error"]["kind"] == kind
    assert fragment in run.message
    assert not (root / "bad.onnx").exists()


def test_exclude_nodes_stay_float(pyz: Path, root: Path, cnn: Path, calib_npz: Path) -> None:
    out = root / "cnn_excluded.onnx"
    request = {"model": str(cnn), "output": str(out), "mode": "quantize-static",
               "calibration": str(calib_npz), "exclude_nodes": ["conv2", "relu2"]}  # fmt: skip
    run = _compile(pyz, root, request)
    assert run.returncode == 0, run.stderr
    assert run.result["params"]["excluded_nodes"] == ["conv2", "relu2"]
    graph = onnx.load(str(out)).graph
    conv2 = next(n for n in graph.node if n.name == "conv2")
    conv1 = next(n for n in graph.node if n.name == "conv1")
    made_by_dq = {o for n in graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    assert conv1.input[1] in made_by_dq  # quantized weights where not excluded
    assert conv2.input[1] not in made_by_dq  # float weights in the excluded Conv
    bad = _compile(pyz, root, {**request, "exclude_nodes": ["nope"]})
    assert bad.returncode != 0 and "no node of" in bad.stderr + str(bad.result)
