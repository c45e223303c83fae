"""Small ONNX graphs for the deploy tests, built with onnx.helper, and a numerics check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgehub.deploy.compare import max_abs_difference, random_inputs

RNG = np.random.default_rng(0)


def weights(*shape: int, scale: float = 0.5) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, list(inputs), list(outputs), name=f"{op}_{outputs[0]}", **attrs)


def build(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, Sequence[int]],
    outputs: Sequence[str],
    inits: dict[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """A model over float inputs of fixed shapes; outputs of unknown shape."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, n) for n, v in (inits or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def assert_close(before: onnx.ModelProto, after: onnx.ModelProto, atol: float = 1e-5) -> None:
    """Outputs on random inputs agree within ``atol`` (ONNX Runtime on the host)."""
    difference = max_abs_difference(before, after, random_inputs(before, seed=1))
    assert difference <= atol, f"outputs differ by {difference:.3g} > {atol}"


def conv_bn(act: str | None = "Relu", *, extra: Sequence[onnx.NodeProto] = ()) -> onnx.ModelProto:
    """x -> Conv -> BatchNormalization [-> act] -> y."""
    inits = {
        "w": weights(4, 3, 3, 3),
        "b": weights(4),
        "gamma": weights(4) + 1,
        "beta": weights(4),
        "mean": weights(4),
        "var": np.abs(weights(4)) + 0.5,
    }
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n" if act else "y"]),
    ]
    if act:
        nodes.append(node(act, ["n"], ["y"]))
    return build([*nodes, *extra], {"x": [1, 3, 8, 8]}, ["y"], inits)
