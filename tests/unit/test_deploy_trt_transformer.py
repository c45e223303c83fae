"""TensorRT backend, transformer patterns (LayerNorm, GELU): matched and rewritten at the opsets
that have the fused op, left alone otherwise; outputs within 1e-5 (LayerNorm) and 1e-4 (GELU,
the tanh form's constants are rounded in exporters) in ONNX Runtime."""

from __future__ import annotations

import math

import numpy as np
import pytest
from deploy_graphs import assert_close, build, node, ops, weights

from edgehub.deploy import transform

trt = pytest.importorskip("edgehub_backend_tensorrt", reason="pip install -e backends/tensorrt")

F = np.float32


def layer_norm(opset: int = 17, square: str = "Pow", axes: list[int] | None = None) -> object:
    axes = axes or [-1]
    inits = {"two": F(2.0), "eps": F(1e-5), "gamma": weights(16) + 1, "beta": weights(16)}
    extra: dict[str, object] = {"axes": axes} if opset < 18 else {}
    reduce_inputs = ["x"] if opset < 18 else ["x", "axes"]
    var_inputs = ["sq"] if opset < 18 else ["sq", "axes"]
    if opset >= 18:
        inits["axes"] = np.array(axes, np.int64)  # type: ignore[assignment]
    sq = node("Pow", ["d", "two"], ["sq"]) if square == "Pow" else node("Mul", ["d", "d"], ["sq"])
    nodes = [
        node("ReduceMean", reduce_inputs, ["mean"], **extra),
        node("Sub", ["x", "mean"], ["d"]),
        sq,
        node("ReduceMean", var_inputs, ["var"], **extra),
        node("Add", ["var", "eps"], ["ve"]),
        node("Sqrt", ["ve"], ["std"]),
        node("Div", ["d", "std"], ["n"]),
        node("Mul", ["n", "gamma"], ["s"]),
        node("Add", ["s", "beta"], ["y"]),
    ]
    return build(nodes, {"x": [2, 5, 16]}, ["y"], inits, opset=opset)


@pytest.mark.parametrize(("opset", "square"), [(17, "Pow"), (18, "Mul")])
def test_layer_norm_subgraph_becomes_layer_normalization(opset: int, square: str) -> None:
    model = layer_norm(opset, square)
    out, report = transform(model, [trt.FuseLayerNorm])  # type: ignore[arg-type]
    assert ops(out) == ["LayerNormalization"] and report.fired() == {"FuseLayerNorm": 1}
    assert_close(model, out)  # type: ignore[arg-type]


def test_layer_norm_needs_opset_17_and_trailing_axes() -> None:
    for model in (layer_norm(16), layer_norm(17, axes=[1])):
        out, report = transform(model, [trt.FuseLayerNorm])  # type: ignore[arg-type]
        assert report.fired() == {} and "LayerNormalization" not in ops(out)


def gelu_erf(opset: int, half_first: bool) -> object:
    inits = {"r2": F(math.sqrt(2)), "one": F(1.0), "half": F(0.5)}
    head = [
        node("Div", ["x", "r2"], ["a"]),
        node("Erf", ["a"], ["e"]),
        node("Add", ["e", "one"], ["p"]),
    ]
    if half_first:
        tail = [node("Mul", ["x", "half"], ["h"]), node("Mul", ["h", "p"], ["y"])]
    else:
        tail = [node("Mul", ["x", "p"], ["m"]), node("Mul", ["m", "half"], ["y"])]
    return build([*head, *tail], {"x": [3, 8]}, ["y"], inits, opset=opset)


def gelu_tanh(opset: int, cube: str, coefficient: float = 0.044715) -> object:
    inits = {
        "three": F(3.0),
        "c": F(coefficient),
        "k": F(math.sqrt(2 / math.pi)),
        "one": F(1.0),
        "half": F(0.5),
    }
    if cube == "Pow":
        power = [node("Pow", ["x", "three"], ["x3"])]
    else:
        power = [node("Mul", ["x", "x"], ["x2"]), node("Mul", ["x", "x2"], ["x3"])]
    nodes = [
        *power,
        node("Mul", ["x3", "c"], ["cx3"]),
        node("Add", ["x", "cx3"], ["inner"]),
        node("Mul", ["inner", "k"], ["z"]),
        node("Tanh", ["z"], ["t"]),
        node("Add", ["one", "t"], ["p"]),
        node("Mul", ["x", "p"], ["m"]),
        node("Mul", ["m", "half"], ["y"]),
    ]
    return build(nodes, {"x": [3, 8]}, ["y"], inits, opset=opset)


@pytest.mark.parametrize("half_first", [False, True])
def test_gelu_erf_form_becomes_gelu(half_first: bool) -> None:
    model = gelu_erf(20, half_first)
    out, report = transform(model, [trt.FuseGeluErf])  # type: ignore[arg-type]
    assert ops(out) == ["Gelu"] and report.fired() == {"FuseGeluErf": 1}
    assert_close(model, out, atol=1e-4)  # type: ignore[arg-type]


@pytest.mark.parametrize("cube", ["Pow", "Mul"])
def test_gelu_tanh_form_becomes_gelu_tanh(cube: str) -> None:
    model = gelu_tanh(20, cube)
    out, report = transform(model, [trt.FuseGeluTanh])  # type: ignore[arg-type]
    assert ops(out) == ["Gelu"] and report.fired() == {"FuseGeluTanh": 1}
    (gelu,) = out.graph.node
    assert gelu.attribute[0].s == b"tanh"
    assert_close(model, out, atol=1e-4)  # type: ignore[arg-type]


def test_gelu_left_alone_before_opset_20_or_with_other_constants() -> None:
    cases = [(gelu_erf(18, False), trt.FuseGeluErf), (gelu_tanh(20, "Pow", 0.05), trt.FuseGeluTanh)]
    for model, pattern in cases:
        out, report = transform(model, [pattern])  # type: ignore[arg-type]
        assert report.fired() == {} and "Gelu" not in ops(out)
