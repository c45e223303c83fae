"""A global pool written as a 640x640 AveragePool / MaxPool with ceil_mode (Hugging Face's
EfficientNet's pooler), whose window TensorRT's parser refuses, compiles through the real
``hub exec compile tensorrt``: TensorRT for RTX parses and builds it for sm86 without a GPU once
the pools are global. Real Docker, the real tensorrt-rtx image."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_tensorrt import rtx_image  # noqa: F401  (a fixture; this folder is on sys.path)

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))


def pooler_model(path: Path) -> Path:
    """x [batch, 3, 8, 8] -> Conv (stride 2) -> a 640x640 AveragePool and MaxPool (ceil_mode,
    stride 640: torch's AvgPool2d / MaxPool2d) of the 4x4 map -> Concat -> Flatten."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    window: dict[str, Any] = {"kernel_shape": [640, 640], "strides": [640, 640], "ceil_mode": 1}
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
         helper.make_node("AveragePool", ["c"], ["a"], name="avg", **window),
         helper.make_node("MaxPool", ["c"], ["m"], name="max", **window),
         helper.make_node("Concat", ["a", "m"], ["p"], axis=1),
         helper.make_node("Flatten", ["p"], ["y"])],
        "pooler",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [numpy_helper.from_array(weight, "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.mark.usefixtures("rtx_image")
def test_a_pool_past_tensorrts_window_limit_compiles(tmp_path: Path) -> None:
    model = pooler_model(tmp_path / "pooler.onnx")
    done = subprocess.run(
        [HUB, "exec", "compile", "tensorrt", str(model), "--set", "input_shape=1x3x8x8",
         "--set", "target=sm86"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 pooling node(s) whose window covers the whole input" in done.stderr
    assert "avg, max" in done.stderr
    assert "FINISHED" in done.stdout and ".trt" in done.stdout
