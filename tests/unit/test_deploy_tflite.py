"""tflite backend conversions (onnx2tf pitfalls): each matches its graph, rewrites it, leaves
other graphs alone; outputs are identical (the rewrites change no arithmetic)."""

from __future__ import annotations

import pytest
from deploy_graphs import assert_close, build, node, ops, weights

from edgehub.deploy import transform

tfl = pytest.importorskip("edgehub_backend_tflite", reason="pip install -e backends/tflite")


def test_conv_without_kernel_shape_gets_it_from_the_weight() -> None:
    conv = node("Conv", ["x", "w"], ["y"], pads=[1, 2, 1, 2])
    model = build([conv], {"x": [1, 2, 6, 6]}, ["y"], {"w": weights(3, 2, 3, 5)})
    out, report = transform(model, [tfl.InferConvKernelShape])
    assert report.fired() == {"InferConvKernelShape": 1}
    kernel = [list(a.ints) for a in out.graph.node[0].attribute if a.name == "kernel_shape"]
    assert kernel == [[3, 5]]
    assert_close(model, out, atol=0.0)
    again = transform(out, [tfl.InferConvKernelShape]).report
    assert again.fired() == {} and again.conversion_rounds == 0


def test_node_names_outside_the_scope_alphabet_are_renamed() -> None:
    bad = node("Softmax", ["x"], ["s"], axis=-1)
    bad.name = "Softmax@0 (head)"
    good = node("Relu", ["s"], ["y"])
    good.name = "block/relu-1>out.x"
    model = build([bad, good], {"x": [2, 4]}, ["y"])
    out, report = transform(model, [tfl.SanitizeNodeNames])
    assert [n.name for n in out.graph.node] == ["Softmax_0__head_", "block/relu-1>out.x"]
    assert report.fired() == {"SanitizeNodeNames": 1}
    assert ops(out) == ["Softmax", "Relu"]
    assert_close(model, out, atol=0.0)
