"""Calibration from a dataset (the eval format: a directory of .npz samples or one stacked
.npz) warns when it has fewer samples than the stated rule asks: at least max(16, the most
output channels of a layer with weights)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgehub.agent.calibration import MIN_SAMPLES, warn_if_few, widest_layer
from edgehub.agent.report import Report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from unit.agent_models import make_cnn

HUB = str(Path(sys.executable).with_name("hub"))


def test_the_rule_reads_the_widest_layer() -> None:
    weights = numpy_helper.from_array(np.zeros((64, 3, 1, 1), np.float32), "w")
    fc = numpy_helper.from_array(np.zeros((64, 40), np.float32), "fc")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="wide"),
         helper.make_node("Flatten", ["c"], ["f"]),
         helper.make_node("MatMul", ["f", "fc"], ["y"], name="head")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40])],
        initializer=[weights, fc],
    )  # fmt: skip
    model = helper.make_model(graph)
    assert widest_layer(model) == ("wide", 64)
    report = Report()
    warn_if_few(63, model, report)
    (warning,) = report.warnings
    assert "63 samples, fewer than the 64" in warning and "64 in wide" in warning
    warn_if_few(64, model, report)
    assert len(report.warnings) == 1  # enough: no second warning
    assert MIN_SAMPLES == 16


@pytest.mark.docker
def test_compile_warns_of_too_few_calibration_samples(tmp_path: Path, ort_image: str) -> None:
    make_cnn(tmp_path / "cnn.onnx")  # widest layer: fc, 10 outputs -> the minimum, 16, applies
    (tmp_path / "hub.toml").write_text('[project]\nname = "calib"\n')
    rng = np.random.default_rng(3)
    (tmp_path / "few").mkdir()
    for i in range(4):
        np.savez(tmp_path / "few" / f"{i}.npz", image=rng.standard_normal((1, 3, 16, 16)))
    np.savez(tmp_path / "enough.npz", image=rng.standard_normal((16, 1, 3, 16, 16)))
    env = {**os.environ, "HOME": str(tmp_path)}
    stderr = {}
    for data in ("few", "enough.npz"):
        done = subprocess.run(
            [HUB, "exec", "compile", "onnxruntime", "cnn.onnx", "--set",
             f"calibration_data={data}"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        stderr[data] = done.stderr
    assert "calibration has 4 samples, fewer than the 16 this model needs" in stderr["few"]
    assert "rule: at least max(16, the most output channels of a layer: 10 in fc)" in stderr["few"]
    assert "fewer than the" not in stderr["enough.npz"]


@pytest.mark.docker
def test_tflite_int8_compile_warns_by_the_same_rule(tmp_path: Path, docker_daemon: object) -> None:
    """TFLite int8 calibration (the tflite image: onnx2tf, then TensorFlow's quantizer)
    warns by the rule ONNX Runtime's static quantization states, from the same code."""
    from edgehub import images

    if not images.image_status("tflite").built:
        pytest.skip("needs the tflite image (hub images build tflite)")
    make_cnn(tmp_path / "cnn.onnx")
    (tmp_path / "hub.toml").write_text('[project]\nname = "calib-tflite"\n')
    rng = np.random.default_rng(4)
    np.savez(tmp_path / "few.npz", image=rng.standard_normal((3, 1, 3, 16, 16)).astype("f4"))
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(
        [HUB, "exec", "compile", "tflite", "cnn.onnx", "--set", "calibration_data=few.npz",
         "--set", "precision=int8"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "calibration has 3 samples, fewer than the 16 this model needs" in done.stderr
    assert "rule: at least max(16, the most output channels of a layer: 10 in fc)" in done.stderr
