"""A pooling window as large as its input becomes the global pool it is, with the same values
(Hugging Face's EfficientNet writes its global pool as a 640x640 AveragePool with ceil_mode)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

from edgehub.agent.pooling import globalize_pools


def _pool_model(
    kind: str, kernel: list[int], ceil_mode: int, through_shape: bool
) -> onnx.ModelProto:
    """x [1, 2, 4, 4] -> (Reshape to its own Shape: a size shape inference cannot know) -> pool."""
    nodes = []
    source = "x"
    if through_shape:
        nodes += [helper.make_node("Shape", ["x"], ["s"]),
                  helper.make_node("Reshape", ["x", "s"], ["r"])]  # fmt: skip
        source = "r"
    attrs = {"kernel_shape": kernel, "strides": kernel, "ceil_mode": ceil_mode}
    if kind == "AveragePool":
        attrs["count_include_pad"] = 1
    nodes.append(helper.make_node(kind, [source], ["y"], name="pool", **attrs))
    graph = helper.make_graph(
        nodes,
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return np.asarray(session.run(None, {"x": x})[0])


@pytest.mark.parametrize("kind", ["AveragePool", "MaxPool"])
@pytest.mark.parametrize("through_shape", [False, True], ids=["inferred", "measured"])
def test_a_window_covering_the_input_becomes_global(kind: str, through_shape: bool) -> None:
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    model = _pool_model(kind, [640, 640], 1, through_shape)
    before = _run(model, x)
    assert globalize_pools(model) == ["pool"]
    assert [n.op_type for n in model.graph.node][-1] == f"Global{kind}"
    np.testing.assert_allclose(_run(model, x), before, rtol=1e-6)


@pytest.mark.parametrize(
    ("kernel", "ceil_mode"),
    [([2, 2], 1), ([4, 2], 0), ([640, 640], 0)],
    ids=["smaller-window", "one-axis-smaller", "larger-without-ceil-mode"],
)
def test_other_windows_stay(kernel: list[int], ceil_mode: int) -> None:
    model = _pool_model("AveragePool", kernel, ceil_mode, False)
    assert globalize_pools(model) == []
    assert model.graph.node[-1].op_type == "AveragePool"
