"""An exported attention mask's GatherND, through the real ``hub exec compile tflite``.

torch's dynamo exporter broadcasts a ``[batch, seq]`` attention mask by indexing it with
indices ``[batch, 1, 1, seq, 2]`` made from the input's shape (a GatherND); onnx2tf lays those
rank-5 indices out channels-last and the mask reaches attention's Add mislaid. The compile
folds the indices (static once the input shapes are) and, as they read the mask whole and in
order, writes the GatherND as a Reshape; float32 and int8 then match ONNX Runtime. About 30 s
per conversion on 2 busy cores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tflite_compile import compile_tflite, max_error, tflite_image  # noqa: F401

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("tflite_image")]

SEQ, WIDTH, HEADS = 8, 16, 2


def _masked_attention_model() -> onnx.ModelProto:
    """One attention head pair over ``x`` [1, SEQ, WIDTH], its scores plus a mask term read
    from ``mask`` [1, SEQ] through a dynamo-style GatherND."""
    rng = np.random.default_rng(0)

    def const(name: str, array: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(array, name)

    def weight(name: str) -> onnx.TensorProto:
        return const(name, (rng.standard_normal((WIDTH, WIDTH)) * 0.3).astype(np.float32))

    def i64(*values: int) -> np.ndarray:
        return np.array(values, dtype=np.int64)

    nodes = [
        # the mask's indices, from the input's shape: [B, 1, 1, S, 2] of (b, s)
        helper.make_node("Shape", ["mask"], ["b_dim"], start=0, end=1),
        helper.make_node("Shape", ["mask"], ["s_dim"], start=1, end=2),
        helper.make_node("Squeeze", ["b_dim"], ["b_n"]),
        helper.make_node("Squeeze", ["s_dim"], ["s_n"]),
        helper.make_node("Range", ["zero", "b_n", "one"], ["b_range"]),
        helper.make_node("Range", ["zero", "s_n", "one"], ["s_range"]),
        helper.make_node("Unsqueeze", ["b_range", "axes123"], ["b_idx"]),
        helper.make_node("Unsqueeze", ["s_range", "axes012"], ["s_idx"]),
        helper.make_node("Max", ["b_idx", "s_idx"], ["both"]),
        helper.make_node("Shape", ["both"], ["grid"]),
        helper.make_node("Expand", ["b_idx", "grid"], ["b_grid"]),
        helper.make_node("Expand", ["s_idx", "grid"], ["s_grid"]),
        helper.make_node("Unsqueeze", ["b_grid", "last"], ["b_col"]),
        helper.make_node("Unsqueeze", ["s_grid", "last"], ["s_col"]),
        helper.make_node("Concat", ["b_col", "s_col"], ["indices"], axis=-1),
        helper.make_node("GatherND", ["mask", "indices"], ["mask4"]),
        helper.make_node("Sub", ["ones", "mask4"], ["masked"]),
        helper.make_node("Mul", ["masked", "big"], ["bias"]),
        # attention: [1, S, W] -> heads [1, H, S, W/H]
        helper.make_node("MatMul", ["x", "wq"], ["q0"]),
        helper.make_node("MatMul", ["x", "wk"], ["k0"]),
        helper.make_node("Reshape", ["q0", "split_heads"], ["q1"]),
        helper.make_node("Reshape", ["k0", "split_heads"], ["k1"]),
        helper.make_node("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k1"], ["k"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["q", "k"], ["scores"]),
        helper.make_node("Add", ["scores", "bias"], ["biased"]),
        helper.make_node("Softmax", ["biased"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "q"], ["mixed"]),
        helper.make_node("Transpose", ["mixed"], ["merged"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["merged", "join_heads"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "masked_attention",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SEQ, WIDTH]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, SEQ]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, SEQ, WIDTH])],
        [
            const("zero", i64(0).reshape(())),
            const("one", i64(1).reshape(())),
            const("axes123", i64(1, 2, 3)),
            const("axes012", i64(0, 1, 2)),
            const("last", i64(-1)),
            const("ones", np.array([1.0], dtype=np.float32)),
            const("big", np.array([-30.0], dtype=np.float32)),
            const("split_heads", i64(1, SEQ, HEADS, WIDTH // HEADS)),
            const("join_heads", i64(1, SEQ, WIDTH)),
            weight("wq"),
            weight("wk"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _calibration(path: Path) -> None:
    rng = np.random.default_rng(1)
    mask = np.ones((8, SEQ), dtype=np.float32)
    mask[:, SEQ - 3 :] = 0.0
    x = rng.standard_normal((8, SEQ, WIDTH)).astype(np.float32)
    np.savez(path, x=x, mask=mask)


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_attention_mask_gathernd_converts_as_a_reshape(tmp_path: Path, precision: str) -> None:
    options = [f"precision={precision}"]
    if precision == "int8":
        _calibration(tmp_path / "calib.npz")
        options.append("calibration_data=calib.npz")
    report, log = compile_tflite(tmp_path, _masked_attention_model(), *options)
    assert "mask4: a GatherND reading its data whole and in order" in log, log[-2000:]
    # the softmax output is in [0, 1] and mixes q (|q| up to a few units)
    assert max_error(report) < (1e-4 if precision == "float32" else 0.5), log[-2000:]
