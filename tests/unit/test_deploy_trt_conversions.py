"""TensorRT conversions: Identity/Dropout removal and QOperator ops (QLinearConv, QLinearMatMul,
which TensorRT cannot import) into QDQ form. Numerics: float graphs within 1e-6; quantized
graphs within one output quantization step (ORT rounds the two forms independently)."""

from __future__ import annotations

import numpy as np
import pytest
from deploy_graphs import assert_close, build, node, ops, weights

from edgehub.deploy import transform

trt = pytest.importorskip("edgehub_backend_tensorrt", reason="pip install -e backends/tensorrt")

I8 = np.int8


def test_identity_and_dropout_are_removed() -> None:
    nodes = [
        node("Relu", ["x"], ["a"]),
        node("Identity", ["a"], ["b"]),
        node("Dropout", ["b"], ["c"]),
        node("Sigmoid", ["c"], ["y"]),
    ]
    model = build(nodes, {"x": [2, 3]}, ["y"])
    out, report = transform(model, [trt.RemoveIdentity])
    assert ops(out) == ["Relu", "Sigmoid"] and report.fired() == {"RemoveIdentity": 2}
    assert report.conversion_rounds == 1
    assert_close(model, out, atol=1e-6)


def test_identity_feeding_a_graph_output_or_a_used_mask_stays() -> None:
    nodes = [node("Relu", ["x"], ["a"]), node("Identity", ["a"], ["y"])]
    assert ops(transform(build(nodes, {"x": [2]}, ["y"]), [trt.RemoveIdentity]).model) == [
        "Relu",
        "Identity",
    ]
    masked = [node("Dropout", ["x"], ["d", "mask"]), node("Cast", ["mask"], ["y"], to=1)]
    model = build([*masked, node("Relu", ["d"], ["z"])], {"x": [2]}, ["y", "z"])
    assert "Dropout" in ops(transform(model, [trt.RemoveIdentity]).model)


def qlinear_conv() -> object:
    w = np.clip(np.round(weights(4, 3, 3, 3) * 60), -127, 127).astype(I8)
    inits = {
        "xs": np.float32(0.02), "xz": I8(0), "w": w, "ws": np.full(4, 0.01, np.float32),
        "wz": np.zeros(4, I8), "ys": np.float32(0.05), "yz": I8(0),
        "bias": np.array([10, -20, 30, 0], np.int32),
    }  # fmt: skip
    nodes = [
        node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        node(
            "QLinearConv",
            ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"],
            ["yq"],
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
    ]
    return build(nodes, {"x": [1, 3, 6, 6]}, ["y"], inits, opset=13)


def test_qlinear_conv_becomes_qdq_conv() -> None:
    model = qlinear_conv()
    out, report = transform(model, [trt.QLinearConvToQDQ])  # type: ignore[arg-type]
    assert report.fired() == {"QLinearConvToQDQ": 1}
    assert "QLinearConv" not in ops(out) and "Conv" in ops(out)
    assert ops(out).count("DequantizeLinear") == 4  # x, w, bias, and the model's own output
    assert_close(model, out, atol=0.05 + 1e-6)  # type: ignore[arg-type]


def test_qlinear_matmul_becomes_qdq_matmul() -> None:
    b = np.clip(np.round(weights(8, 5) * 60), -127, 127).astype(I8)
    inits = {
        "as": np.float32(0.03), "az": I8(0), "b": b, "bs": np.float32(0.01), "bz": I8(0),
        "ys": np.float32(0.04), "yz": I8(0),
    }  # fmt: skip
    nodes = [
        node("QuantizeLinear", ["x", "as", "az"], ["aq"]),
        node("QLinearMatMul", ["aq", "as", "az", "b", "bs", "bz", "ys", "yz"], ["yq"]),
        node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
    ]
    model = build(nodes, {"x": [2, 8]}, ["y"], inits, opset=13)
    out, report = transform(model, [trt.QLinearMatMulToQDQ])
    assert report.fired() == {"QLinearMatMulToQDQ": 1} and "MatMul" in ops(out)
    assert_close(model, out, atol=0.04 + 1e-6)


def test_float_graphs_have_no_qlinear_matches() -> None:
    model = build([node("Relu", ["x"], ["y"])], {"x": [2]}, ["y"], opset=13)
    report = transform(model, [trt.QLinearConvToQDQ, trt.QLinearMatMulToQDQ]).report
    assert report.fired() == {} and report.conversion_rounds == 0
