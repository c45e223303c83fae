"""A YOLOv8-layout detector head through the real ``hub exec compile tflite``: box bins and
class logits from a Conv, flattened over the anchors, the bins decoded (softmax expectation),
the distances taken from anchor points ``[1, 2, A]`` (Sub, Add), the boxes scaled by the
strides ``[1, 1, A]`` and concatenated with the class scores on axis 1.

onnx2tf makes every constant of rank >= 3 channels-last and transposes the flattened boxes to
match it, so the boxes reached the final Concat as ``[1, A, 4]`` beside ``[1, 3, A]`` and the
conversion failed ("Dimension 0 in both shapes must be equal"). The model is built here with
onnx.helper at 32x32 (64 anchors) and converted in the tflite image (about 20 s); the compile
compares its outputs with ONNX Runtime.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tflite_compile import compile_tflite, max_error, tflite_image  # noqa: F401

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("tflite_image")]

CLASSES, BINS, SIDE, STRIDE = 3, 16, 8, 4
ANCHORS = SIDE * SIDE


def _ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _decode_head_model() -> onnx.ModelProto:
    """``images [1, 3, 32, 32]`` -> ``output0 [1, 4 + CLASSES, ANCHORS]``: xywh boxes in input
    pixels and class scores, decoded the way a YOLOv8 export writes it."""
    rng = np.random.default_rng(0)
    grid = (np.stack(np.meshgrid(np.arange(SIDE), np.arange(SIDE)), -1) + 0.5).reshape(-1, 2)
    tensors = {
        "w": (rng.standard_normal((4 * BINS + CLASSES, 3, STRIDE, STRIDE)) * 0.3),
        "flat": _ints(1, 4 * BINS + CLASSES, ANCHORS),
        "parts": _ints(4 * BINS, CLASSES),
        "bins": _ints(1, 4, BINS, ANCHORS),
        "arange": np.arange(BINS, dtype=np.float32).reshape(1, 1, BINS, 1),
        "axis": _ints(2),
        "zero": _ints(0),
        "two": _ints(2),
        "four": _ints(4),
        "one": _ints(1),
        "anchors": grid.T.reshape(1, 2, ANCHORS),
        "half": np.array([0.5]),
        "strides": np.full((1, 1, ANCHORS), float(STRIDE)),
    }
    initializers = [
        numpy_helper.from_array(v if v.dtype == np.int64 else v.astype(np.float32), k)
        for k, v in tensors.items()
    ]
    node = helper.make_node
    # anchors and strides as Constant nodes, the way onnxsim writes what it folded
    nodes = [
        node("Constant", [], [name], value=initializers.pop(index))
        for index, name in reversed(list(enumerate(tensors)))
        if name in ("anchors", "strides")
    ]
    nodes += [
        node("Conv", ["images", "w"], ["f"], kernel_shape=[STRIDE] * 2, strides=[STRIDE] * 2),
        node("Reshape", ["f", "flat"], ["maps"]),
        node("Split", ["maps", "parts"], ["box", "cls"], axis=1),
        node("Reshape", ["box", "bins"], ["box4"]),
        node("Softmax", ["box4"], ["probs"], axis=2),
        node("Mul", ["probs", "arange"], ["weighted"]),
        node("ReduceSum", ["weighted", "axis"], ["dist"], keepdims=0),
        node("Slice", ["dist", "zero", "two", "one"], ["left_top"]),
        node("Slice", ["dist", "two", "four", "one"], ["right_bottom"]),
        node("Sub", ["anchors", "left_top"], ["x1y1"]),
        node("Add", ["anchors", "right_bottom"], ["x2y2"]),
        node("Add", ["x1y1", "x2y2"], ["corners"]),
        node("Mul", ["corners", "half"], ["centre"]),
        node("Sub", ["x2y2", "x1y1"], ["size"]),
        node("Concat", ["centre", "size"], ["xywh"], axis=1),
        node("Mul", ["xywh", "strides"], ["boxes"]),
        node("Sigmoid", ["cls"], ["scores"]),
        node("Concat", ["boxes", "scores"], ["output0"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "yolov8_decode_head",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 4 + CLASSES, ANCHORS])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_yolov8_decode_head_converts_and_matches_onnxruntime(tmp_path: Path) -> None:
    report, _ = compile_tflite(tmp_path, _decode_head_model())
    assert "auto_param_replacement" not in report["params"]  # converted at the first try
    # boxes reach (SIDE + BINS) * STRIDE = 96 pixels: float32 rounding only
    assert max_error(report) < 1e-3
