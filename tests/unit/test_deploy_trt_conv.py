"""TensorRT backend, Conv/Gemm patterns: each matches its graph, rewrites it, leaves other graphs
alone, and keeps outputs within 1e-5 (abs) in ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest
from deploy_graphs import assert_close, build, conv_bn, node, ops, weights
from onnx.numpy_helper import from_array

from edgehub.deploy import transform

trt = pytest.importorskip("edgehub_backend_tensorrt", reason="pip install -e backends/tensorrt")


def test_conv_bn_relu_folds_into_one_conv_with_tagged_relu() -> None:
    model = conv_bn("Relu")
    out, report = transform(model, [trt.FuseConvActivation])
    assert ops(out) == ["Conv", "Relu"]
    assert report.fired() == {"FuseConvActivation": 1}
    conv = out.graph.node[0]
    assert {p.key: p.value for p in conv.metadata_props} == {
        "edgehub.fused_with": out.graph.node[1].name
    }
    assert_close(model, out)


def test_conv_clip_zero_to_inf_becomes_relu() -> None:
    inits = {"w": weights(4, 3, 1, 1), "lo": np.array(0, np.float32)}
    model = build(
        [node("Conv", ["x", "w"], ["c"]), node("Clip", ["c", "lo"], ["y"])],
        {"x": [1, 3, 4, 4]},
        ["y"],
        inits,
    )
    out, _ = transform(model, [trt.FuseConvActivation])
    assert ops(out) == ["Conv", "Relu"]
    assert_close(model, out)


def test_conv_activation_leaves_a_shared_conv_output_alone() -> None:
    model = conv_bn(None, extra=[node("Relu", ["y"], ["r"]), node("Sigmoid", ["y"], ["s"])])
    model.graph.output.add().CopyFrom(model.graph.output[0])
    model.graph.output[0].name, model.graph.output[1].name = "r", "s"
    out, report = transform(model, [trt.FuseConvActivation])
    assert report.fired() == {}
    assert ops(out) == ops(model)


def test_conv_affine_chain_folds_into_the_conv() -> None:
    scale, shift = weights(1, 4, 1, 1) + 1, weights(4, 1, 1)
    model = conv_bn(
        None,
        extra=[node("Mul", ["y0", "s"], ["y1"]), node("Sub", ["y1", "t"], ["y2"])],
    )
    model.graph.node[1].output[0] = "y0"
    model.graph.initializer.extend([from_array(scale, "s"), from_array(shift, "t")])
    model.graph.output[0].name = "y2"
    out, report = transform(model, [trt.FoldConvAffine])
    assert ops(out) == ["Conv"] and report.fired() == {"FoldConvAffine": 1}
    assert_close(model, out)


def test_conv_affine_leaves_non_channel_constants_alone() -> None:
    model = build(
        [node("Conv", ["x", "w"], ["c"]), node("Mul", ["c", "s"], ["y"])],
        {"x": [1, 3, 4, 4]},
        ["y"],
        {"w": weights(4, 3, 1, 1), "s": weights(1, 1, 1, 4)},  # varies along W, not channels
    )
    out, report = transform(model, [trt.FoldConvAffine])
    assert ops(out) == ["Conv", "Mul"] and report.fired() == {}


def test_batchnorm_scale_shift_fold_into_the_batchnorm() -> None:
    inits = {
        "g": weights(4) + 1,
        "b": weights(4),
        "m": weights(4),
        "v": np.abs(weights(4)) + 0.5,
        "s": weights(4, 1, 1),
        "t": weights(4, 1, 1),
    }
    model = build(
        [
            node("BatchNormalization", ["x", "g", "b", "m", "v"], ["n"]),
            node("Mul", ["s", "n"], ["k"]),
            node("Add", ["k", "t"], ["y"]),
        ],
        {"x": [1, 4, 5, 5]},
        ["y"],
        inits,
    )
    out, report = transform(model, [trt.FoldBatchNormAffine])
    assert ops(out) == ["BatchNormalization"] and report.fired() == {"FoldBatchNormAffine": 1}
    assert_close(model, out)
    other = build(
        [
            node("BatchNormalization", ["x", "g", "b", "m", "v"], ["n"]),
            node("Mul", ["n", "z"], ["y"]),
        ],
        {"x": [1, 4, 5, 5], "z": [1, 4, 1, 1]},
        ["y"],
        {k: inits[k] for k in "gbmv"},
    )
    assert transform(other, [trt.FoldBatchNormAffine]).report.fired() == {}


def test_gemm_clip_gets_constant_bounds_and_is_tagged() -> None:
    from onnx import helper

    inits = {"w": weights(8, 6), "c": weights(6)}
    consts = [
        helper.make_node("Constant", [], ["lo"], name="lo", value_float=0.0),
        helper.make_node("Constant", [], ["hi"], name="hi", value_float=6.0),
    ]
    model = build(
        [*consts, node("Gemm", ["x", "w", "c"], ["g"]), node("Clip", ["g", "lo", "hi"], ["y"])],
        {"x": [2, 8]},
        ["y"],
        inits,
    )
    out, report = transform(model, [trt.FuseGemmActivation])
    assert ops(out) == ["Gemm", "Clip"] and report.fired() == {"FuseGemmActivation": 1}
    initializer_names = {t.name for t in out.graph.initializer}
    assert set(out.graph.node[1].input[1:]) <= initializer_names
    assert_close(model, out)
    softmax = build(
        [node("Gemm", ["x", "w"], ["g"]), node("Softmax", ["g"], ["y"])],
        {"x": [2, 8]},
        ["y"],
        inits,
    )
    assert transform(softmax, [trt.FuseGemmActivation]).report.fired() == {}


def test_matmul_add_becomes_gemm_only_for_2d_inputs() -> None:
    inits = {"w": weights(8, 16), "b": weights(16)}
    nodes = [node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "b"], ["y"])]
    model = build(nodes, {"x": [4, 8]}, ["y"], inits)
    out, report = transform(model, [trt.FuseMatMulAdd])
    assert ops(out) == ["Gemm"] and report.fired() == {"FuseMatMulAdd": 1}
    assert_close(model, out)
    batched = build(nodes, {"x": [2, 4, 8]}, ["y"], inits)
    assert ops(transform(batched, [trt.FuseMatMulAdd]).model) == ["MatMul", "Add"]
