"""TensorRT's parser refuses a pooling window past its kernel limit (Hugging Face's EfficientNet
pools its 7x7 features with a 1280x1280 AveragePool and ceil_mode): before TensorRT parses a
model, a pool whose one window covers its whole input, pads included, becomes the global pool
it is, with the same ONNX Runtime outputs; ordinary pools and pads that change values stay."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgehub.agent.report import Report
from edgehub.agent.scratch import Scratch
from edgehub.agent.trt.prepare import rewritten_for_parser, static_shapes

SHAPE = [1, 3, 8, 8]  # the Conv (3x3, stride 2) makes it a [1, 4, 4, 4] map


def pool_model(kind: str, dims: list[Any] | None = None, **attrs: Any) -> onnx.ModelProto:
    """x -> Conv (stride 2) -> ``kind`` pool named "pool" -> Flatten -> y."""
    weight = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
         helper.make_node(kind, ["c"], ["p"], name="pool", **attrs),
         helper.make_node("Flatten", ["p"], ["y"])],
        "pools",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims or SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weight, "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def run(path: Path) -> np.ndarray:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    return np.asarray(session.run(None, {"x": x})[0])


def rewrite(
    model: onnx.ModelProto, tmp_path: Path, raw_static: Any = None
) -> tuple[Path, Path, dict[str, Any], str]:
    """The model saved, its copy as prepared for TensorRT's parser, the notes, the report."""
    src = tmp_path / "model.onnx"
    onnx.save(model, str(src))
    stream = io.StringIO()
    with Scratch("pools-") as scratch:
        dst, notes = rewritten_for_parser(src, scratch, Report(stream), raw_static, None)
        kept = tmp_path / "prepared.onnx"
        kept.write_bytes(dst.read_bytes())
    return src, kept, notes, stream.getvalue()


def op_of(path: Path) -> str:
    return str(next(n.op_type for n in onnx.load(str(path)).graph.node if n.name == "pool"))


COVERING = {
    "torch-ceil-mode": ("AveragePool", {"kernel_shape": [64, 64], "strides": [64, 64],
                                         "ceil_mode": 1, "count_include_pad": 1}),
    "exact-kernel": ("AveragePool", {"kernel_shape": [4, 4]}),
    "pads-not-counted": ("AveragePool", {"kernel_shape": [6, 6], "pads": [1, 1, 1, 1],
                                          "count_include_pad": 0}),
    "max-ceil-mode": ("MaxPool", {"kernel_shape": [640, 640], "strides": [640, 640],
                                   "ceil_mode": 1}),
    "max-with-pads": ("MaxPool", {"kernel_shape": [5, 5], "pads": [1, 1, 0, 0]}),
}  # fmt: skip


@pytest.mark.parametrize(("kind", "attrs"), COVERING.values(), ids=COVERING.keys())
def test_a_window_covering_the_input_becomes_global(
    kind: str, attrs: dict[str, Any], tmp_path: Path
) -> None:
    src, dst, notes, said = rewrite(pool_model(kind, **attrs), tmp_path)
    assert notes == {"global_pools": ["pool"]}
    assert op_of(dst) == f"Global{kind}"
    assert "1 pooling node(s) whose window covers the whole input" in said and "pool" in said
    np.testing.assert_allclose(run(dst), run(src), rtol=0, atol=1e-6)


ORDINARY = {
    "kernel-2-stride-2": ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
    "max-kernel-2-stride-2": ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
    "one-axis-smaller": ("AveragePool", {"kernel_shape": [4, 2]}),
    "same-padding": ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    "counted-pads": ("AveragePool", {"kernel_shape": [6, 6], "pads": [1, 1, 1, 1],
                                      "count_include_pad": 1}),
    "larger-without-ceil-mode": ("AveragePool", {"kernel_shape": [5, 5]}),  # no output at all
    "dilated": ("MaxPool", {"kernel_shape": [2, 2], "dilations": [3, 3]}),
}  # fmt: skip


@pytest.mark.parametrize(("kind", "attrs"), ORDINARY.values(), ids=ORDINARY.keys())
def test_ordinary_pools_are_untouched(kind: str, attrs: dict[str, Any], tmp_path: Path) -> None:
    src, dst, notes, said = rewrite(pool_model(kind, **attrs), tmp_path)
    assert notes == {} and said == "", said
    assert dst.read_bytes() == src.read_bytes()


def test_dynamic_sizes_are_known_at_the_builds_input_shape(tmp_path: Path) -> None:
    attrs: dict[str, Any] = {"kernel_shape": [64, 64], "strides": [64, 64], "ceil_mode": 1}
    model = pool_model("AveragePool", ["batch", 3, "h", "w"], **attrs)
    assert rewrite(model, tmp_path)[2] == {}  # a 64x64 window over an input of unknown size
    src, dst, notes, _ = rewrite(model, tmp_path, {"x": SHAPE})
    assert notes == {"global_pools": ["pool"]}
    np.testing.assert_allclose(run(dst), run(src), rtol=0, atol=1e-6)
    assert rewrite(model, tmp_path, {"x": [1, 3, 256, 256]})[2] == {}  # 64 x 64: 2x2 windows


def test_static_shapes_take_input_shape_and_fixed_ranges() -> None:
    model = pool_model("AveragePool", ["batch", 3, "h", "w"], kernel_shape=[2, 2])
    assert static_shapes(model, SHAPE, None) == {"x": SHAPE}
    fixed = {"min": SHAPE, "opt": SHAPE, "max": SHAPE}
    assert static_shapes(model, None, fixed) == {"x": SHAPE}
    assert static_shapes(model, None, {"x": {**fixed, "max": [4, 3, 8, 8]}}) == {}
    assert static_shapes(model, "1x3", {"y": SHAPE}) == {}  # left to parse_shapes to refuse
