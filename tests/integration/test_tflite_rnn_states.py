"""RNN models through the real ``hub exec compile tflite``: an LSTM cell fed a state input
(rank 3, no channels), kept in its ONNX layout by the retry edgehub makes; and a bidirectional
LSTM whose all-zero initial state onnx2tf cannot take as exported, given one at run time; and a
GRU quantized to int8, unrolled over its time steps (TensorFlow's calibrator crashes running the
WHILE loop onnx2tf otherwise makes of it).

Each model is built here with onnx.helper, converted in the tflite image (about 15-30 s each on
2 busy cores), and the TFLite outputs are compared with ONNX Runtime by the compile itself.
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


def _tensor(rng: np.random.Generator, name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def _bidirectional_lstm_model() -> onnx.ModelProto:
    """CRNN-style: Conv1d features, transposed to [steps, batch, C], a bidirectional LSTM whose
    initial h and c are zeros made by ConstantOfShape (as torch exports them)."""
    rng = np.random.default_rng(1)
    zeros = helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0])
    nodes = [
        helper.make_node("Conv", ["x", "conv_w"], ["f"], kernel_shape=[3], pads=[1, 1]),
        helper.make_node("Transpose", ["f"], ["seq"], perm=[2, 0, 1]),
        helper.make_node("ConstantOfShape", ["state_shape"], ["h0"], value=zeros),
        helper.make_node(
            "LSTM",
            ["seq", "w", "r", "b", "", "h0", "h0"],
            ["y"],
            hidden_size=HIDDEN,
            direction="bidirectional",
        ),
        helper.make_node("Transpose", ["y"], ["out"], perm=[2, 0, 1, 3]),
    ]
    graph = helper.make_graph(
        nodes,
        "crnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 12])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 12, 2, HIDDEN])],
        [
            _tensor(rng, "conv_w", 6, 4, 3),
            numpy_helper.from_array(np.array([2, 1, HIDDEN], dtype=np.int64), "state_shape"),
            _tensor(rng, "w", 2, 4 * HIDDEN, 6),
            _tensor(rng, "r", 2, 4 * HIDDEN, HIDDEN),
            _tensor(rng, "b", 2, 8 * HIDDEN),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_a_state_input_keeps_its_onnx_layout(tmp_path: Path) -> None:
    report, _ = compile_tflite(tmp_path, state_cell_model())
    assert report["params"]["kept_input_layouts"] == ["state"]
    assert max_error(report) < 1e-4


def test_a_bidirectional_lstm_with_a_zero_state(tmp_path: Path) -> None:
    report, _ = compile_tflite(tmp_path, _bidirectional_lstm_model())
    assert "kept_input_layouts" not in report["params"]
    assert max_error(report) < 1e-4


def _gru_model() -> onnx.ModelProto:
    """A GRU over [batch, steps, features] (batch-first, as torch exports it), projected."""
    rng = np.random.default_rng(2)
    nodes = [
        helper.make_node("Transpose", ["x"], ["seq"], perm=[1, 0, 2]),
        helper.make_node("GRU", ["seq", "w", "r", "b"], ["y"], hidden_size=HIDDEN, name="gru"),
        helper.make_node("Squeeze", ["y", "axis1"], ["steps"]),
        helper.make_node("Transpose", ["steps"], ["batch_first"], perm=[1, 0, 2]),
        helper.make_node("MatMul", ["batch_first", "proj"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "gru",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, 6])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 10, 4])],
        [
            _tensor(rng, "w", 1, 3 * HIDDEN, 6),
            _tensor(rng, "r", 1, 3 * HIDDEN, HIDDEN),
            _tensor(rng, "b", 1, 6 * HIDDEN),
            _tensor(rng, "proj", HIDDEN, 4),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_int8_gru_is_unrolled(tmp_path: Path) -> None:
    # as a WHILE loop, TensorFlow's calibrator crashes (SIGSEGV) on this model
    report, log = compile_tflite(tmp_path, _gru_model(), "precision=int8")
    assert report["params"]["rnn_unrolled"] == ["gru"]
    assert "gru: recurrent op(s) unrolled over their time steps for int8" in log
    # outputs within about (-1, 1): int8 rounding, with a margin
    assert max_error(report) < 0.1
