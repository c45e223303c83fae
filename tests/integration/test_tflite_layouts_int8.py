"""Patterns onnx2tf mis-converts, through the real ``hub exec compile tflite``:

- a detector's distribution-focal-loss box head (Softmax over the bins of a ``[b, 4, 16, a]``
  tensor, times ``arange(16)``, summed over the bins) concatenated with the class scores:
  rewritten as a 1x1 Conv before conversion (float32);
- an LSTM cell fed a state input ``[2, batch, H]`` (its batch not on axis 0), quantized to
  int8 with calibration samples fed whole (onnx2tf's own int8 calibration cuts them apart).

Each model is built here with onnx.helper, converted in the tflite image (about 20-40 s each
on 2 busy cores), and its outputs compared with ONNX Runtime by the compile itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tflite_compile import (  # tflite_image: a fixture, used by name
    HIDDEN,
    compile_tflite,
    max_error,
    state_cell_model,
    tflite_image,  # noqa: F401
)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("tflite_image")]

ANCHORS = 20


def _const(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(array, name)


def _dfl_head_model() -> onnx.ModelProto:
    """YOLOv8-style head: a Conv gives 64 box bins and 3 class logits per anchor; the bins go
    [b, 64, a] -> [b, 4, 16, a], Softmax over the 16, times arange(16), summed; the boxes are
    scaled and concatenated with the sigmoid of the classes on axis 1."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["f"], kernel_shape=[1, 1]),
        helper.make_node("Reshape", ["f", "flat"], ["flat_f"]),
        helper.make_node("Split", ["flat_f", "parts"], ["box", "cls"], axis=1),
        helper.make_node("Reshape", ["box", "bins"], ["box4"]),
        helper.make_node("Softmax", ["box4"], ["p"], axis=2),
        helper.make_node("Mul", ["p", "arange"], ["pw"]),
        helper.make_node("ReduceSum", ["pw", "axis2"], ["dist"], keepdims=0),
        helper.make_node("Mul", ["dist", "stride"], ["boxes"]),
        helper.make_node("Sigmoid", ["cls"], ["scores"]),
        helper.make_node("Concat", ["boxes", "scores"], ["out"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "dfl_head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 5])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 7, ANCHORS])],
        [
            _const("w", (rng.standard_normal((67, 8, 1, 1)) * 0.5).astype(np.float32)),
            _const("flat", np.array([1, 67, ANCHORS], dtype=np.int64)),
            _const("parts", np.array([64, 3], dtype=np.int64)),
            _const("bins", np.array([1, 4, 16, ANCHORS], dtype=np.int64)),
            _const("arange", np.arange(16, dtype=np.float32).reshape(1, 1, 16, 1)),
            _const("axis2", np.array([2], dtype=np.int64)),
            _const("stride", np.full((1, 1, ANCHORS), 8.0, dtype=np.float32)),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_dfl_box_head_converts_exactly(tmp_path: Path) -> None:
    report, log = compile_tflite(tmp_path, _dfl_head_model())
    assert "softmax expectation over an axis written as a 1x1 Conv" in log
    # box distances reach 15 * 8 = 120: float32 rounding only
    assert max_error(report) < 1e-3


def test_a_state_input_is_calibrated_whole(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    np.savez(
        tmp_path / "calib.npz",
        x=rng.standard_normal((16, 1, 16)).astype(np.float32),
        state=(rng.standard_normal((16, 2, 1, HIDDEN)) * 0.5).astype(np.float32),
    )
    report, log = compile_tflite(
        tmp_path, state_cell_model(), "precision=int8", "calibration_data=calib.npz"
    )
    # onnx2tf converted float32; edgehub quantized, feeding each state sample whole
    assert "state have no batch on axis 0" in log
    # outputs in (-2, 2): int8 within the product's int8 bound
    assert max_error(report) < 0.5
