"""Small graph questions the TensorRT patterns share (constant operands, per-channel values)."""

from __future__ import annotations

import numpy as np
import onnx

from edgehub.deploy.graph import Graph

ACTIVATIONS = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Elu"}


def const_operand(graph: Graph, node: onnx.NodeProto) -> tuple[str, np.ndarray] | None:
    """For a binary op with exactly one constant input: (the other input, the constant)."""
    if len(node.input) != 2:
        return None
    first, second = graph.const(node.input[0]), graph.const(node.input[1])
    if second is not None and first is None:
        return node.input[0], second
    if first is not None and second is None:
        return node.input[1], first
    return None


def is_scalar(value: np.ndarray | None, expected: float, tolerance: float = 1e-4) -> bool:
    return (
        value is not None
        and value.size == 1
        and abs(float(value.ravel()[0]) - expected) <= (tolerance * max(1.0, abs(expected)))
    )


def channel_vector(value: np.ndarray, rank: int, channels: int, axis: int = 1) -> np.ndarray | None:
    """``value`` as a length-``channels`` vector if it broadcasts along ``axis`` only, for a
    tensor of ``rank`` dimensions; None otherwise."""
    if value.ndim > rank:
        return None
    shape = (1,) * (rank - value.ndim) + value.shape
    if any(size != 1 for i, size in enumerate(shape) if i != axis):
        return None
    if shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(value.reshape(-1), (channels,)).astype(np.float32)


def affine_chain(
    graph: Graph, start: onnx.NodeProto, rank: int, channels: int
) -> tuple[list[onnx.NodeProto], np.ndarray, np.ndarray]:
    """The longest run after ``start`` of per-channel affine ops (BatchNormalization, and Mul,
    Add, Sub, Div by a channel constant), each the single user of the previous output; and
    the combined ``y = x * scale + shift`` it computes."""
    scale = np.ones(channels, np.float32)
    shift = np.zeros(channels, np.float32)
    chain: list[onnx.NodeProto] = []
    current = start
    while True:
        node = graph.next_node(current, ("BatchNormalization", "Mul", "Add", "Sub", "Div"))
        if node is None:
            break
        step = _affine_step(graph, node, current.output[0], rank, channels)
        if step is None:
            break
        a, b = step
        scale, shift = scale * a, shift * a + b
        chain.append(node)
        current = node
    return chain, scale, shift


def _affine_step(
    graph: Graph, node: onnx.NodeProto, source: str, rank: int, channels: int
) -> tuple[np.ndarray, np.ndarray] | None:
    ones, zeros = np.ones(channels, np.float32), np.zeros(channels, np.float32)
    if node.op_type == "BatchNormalization":
        if node.input[0] != source or len(node.output) != 1 or graph.attr(node, "training_mode"):
            return None
        params = [graph.const(name) for name in node.input[1:5]]
        if any(p is None or p.size != channels for p in params):
            return None
        gamma, beta, mean, var = (np.asarray(p, np.float32).reshape(-1) for p in params)
        a = gamma / np.sqrt(var + float(graph.attr(node, "epsilon", 1e-5)))
        return a, beta - mean * a
    operand = const_operand(graph, node)
    if operand is None or operand[0] != source:
        return None
    if node.op_type in ("Sub", "Div") and node.input[0] != source:
        return None
    vector = channel_vector(operand[1], rank, channels)
    if vector is None or vector.dtype.kind != "f":
        return None
    if node.op_type == "Mul":
        return vector, zeros
    if node.op_type == "Div":
        return (1.0 / vector, zeros) if np.all(vector != 0) else None
    return ones, vector if node.op_type == "Add" else -vector
