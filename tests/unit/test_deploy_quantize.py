"""quantize(): smooth patterns, calibration over samples (ONNX Runtime), QDQ placement. The QDQ
models run in ONNX Runtime with outputs within 5% of the float output's range."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from deploy_graphs import build, node, ops, weights
from onnx import numpy_helper

from edgehub.deploy import PatternPhaseError, quantize, reset_backends, set_backend
from edgehub.deploy.compare import run

trt = pytest.importorskip("edgehub_backend_tensorrt", reason="pip install -e backends/tensorrt")
EXAMPLE = Path(__file__).parents[2] / "examples" / "tiny_cnn.onnx"


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    reset_backends()
    yield
    reset_backends()


def samples(shape: list[int], n: int = 8, outlier: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    out = []
    for _ in range(n):
        x = rng.standard_normal(shape).astype(np.float32)
        x[..., 0] *= outlier
        out.append(x)
    return out


def relative_error(before: onnx.ModelProto, after: onnx.ModelProto, x: np.ndarray) -> float:
    name = before.graph.input[0].name
    pairs = zip(run(before, {name: x}), run(after, {name: x}), strict=True)
    return max(float(np.abs(a - b).max() / (np.abs(a).max() + 1e-12)) for a, b in pairs)


def test_conv_and_gemm_get_int8_qdq_as_tensorrt_expects() -> None:
    model = onnx.load(str(EXAMPLE))
    shape = [d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim]
    out, report = quantize(model, samples(shape), [trt.QuantizeConv, trt.QuantizeGemm])
    assert report.fired() == {"QuantizeConv": 2, "QuantizeGemm": 1}
    assert ops(out).count("QuantizeLinear") == 3  # one per quantized activation
    assert ops(out).count("DequantizeLinear") == 6  # activations and weights
    inits = {t.name: numpy_helper.to_array(t) for t in out.graph.initializer}
    for dq in (n for n in out.graph.node if n.op_type == "DequantizeLinear"):
        zero = inits[dq.input[2]]
        assert zero.dtype == np.int8 and not zero.any()  # symmetric int8 only
    assert relative_error(model, out, samples(shape, 1)[0]) < 0.05


def test_matmul_weights_are_per_column_and_non_constant_weights_are_left_alone() -> None:
    inits = {"w": weights(16, 8)}
    model = build([node("MatMul", ["x", "w"], ["y"])], {"x": [4, 16]}, ["y"], inits, opset=13)
    out, report = quantize(model, samples([4, 16]), [trt.QuantizeMatMul])
    assert report.fired() == {"QuantizeMatMul": 1}
    weight_dq = next(
        n for n in out.graph.node if n.op_type == "DequantizeLinear" and "w" in n.input[0]
    )
    assert [a.i for a in weight_dq.attribute if a.name == "axis"] == [1]
    assert relative_error(model, out, samples([4, 16], 1)[0]) < 0.05
    dynamic = build(
        [node("MatMul", ["x", "z"], ["y"])], {"x": [4, 16], "z": [16, 8]}, ["y"], opset=13
    )
    feeds = [{"x": s, "z": weights(16, 8)} for s in samples([4, 16], 2)]
    assert quantize(dynamic, feeds, [trt.QuantizeMatMul]).report.fired() == {}


def ln_block(opset: int = 17, outlier: float = 1.0) -> onnx.ModelProto:
    """LayerNorm read by a MatMul and a Gemm; ``outlier`` scales channel 0 of the LN output."""
    gamma = weights(16) + 1
    gamma[0] = outlier
    inits = {"g": gamma, "b": weights(16), "w1": weights(16, 8), "w2": weights(16, 4)}
    nodes = [
        node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
        node("MatMul", ["n", "w1"], ["y1"]),
        node("Gemm", ["n", "w2"], ["y2"]),
    ]
    return build(nodes, {"x": [6, 16]}, ["y1", "y2"], inits, opset=opset)


def test_smoothquant_migrates_scales_and_keeps_float_outputs() -> None:
    model = ln_block(outlier=30.0)
    data = samples([6, 16])
    out, report = quantize(model, data, [trt.SmoothQuantLayerNorm])
    assert report.fired() == {"SmoothQuantLayerNorm": 1}
    assert ops(out) == ops(model)  # only constants change
    for before, after in zip(run(model, {"x": data[0]}), run(out, {"x": data[0]}), strict=True):
        np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-4)
    gamma = {t.name: numpy_helper.to_array(t) for t in out.graph.initializer}[
        out.graph.node[0].input[1]
    ]
    assert not np.allclose(gamma, numpy_helper.to_array(model.graph.initializer[0]))


def test_smoothquant_leaves_layer_norm_with_other_readers_alone() -> None:
    model = ln_block()
    model.graph.node.append(node("Relu", ["n"], ["r"]))
    model.graph.output.add().CopyFrom(model.graph.output[0])
    model.graph.output[2].name = "r"
    assert quantize(model, samples([6, 16]), [trt.SmoothQuantLayerNorm]).report.fired() == {}


def test_backend_quantize_with_smoothing_beats_plain_qdq_on_outlier_channels() -> None:
    set_backend("tensorrt")
    model = ln_block(outlier=50.0)
    data = samples([6, 16])
    smoothed, report = quantize(model, data)
    assert report.fired() == {"SmoothQuantLayerNorm": 1, "QuantizeGemm": 1, "QuantizeMatMul": 1}
    plain, _ = quantize(model, data, [trt.QuantizeGemm, trt.QuantizeMatMul])
    probe = samples([6, 16], 1)[0]
    assert relative_error(model, smoothed, probe) < relative_error(model, plain, probe)


def test_quantize_refuses_patterns_of_other_phases() -> None:
    with pytest.raises(PatternPhaseError, match="FuseConvActivation has phase 'fusion'"):
        quantize(ln_block(), samples([6, 16]), [trt.FuseConvActivation])
