"""QDQ placement as TensorRT's explicit quantization expects: symmetric int8 (zero point 0),
a QuantizeLinear/DequantizeLinear pair on each activation input (per tensor, calibrated) and
int8 weights behind a per-channel DequantizeLinear on the inputs of Conv, Gemm and MatMul."""

from __future__ import annotations

import numpy as np
import onnx

from edgehub.deploy.graph import Graph
from edgehub.deploy.pattern import Match, Pattern, Phase

INT8_MAX = 127.0


def _activation_qdq(graph: Graph, tensor: str, absmax: float, reader: str) -> str:
    """The dequantized copy of ``tensor`` (shared by every quantized reader), placed before
    node ``reader``."""
    dequantized = f"{tensor}_qdq"
    existing = graph.producer(dequantized)
    if existing is not None and existing.op_type == "DequantizeLinear":
        return dequantized
    scale = graph.add_initializer(np.float32(max(absmax, 1e-8) / INT8_MAX), f"{tensor}_scale")
    zero = graph.add_initializer(np.int8(0), f"{tensor}_zero_point")
    quantized = graph.unique_name(f"{tensor}_q")
    q = graph.new_node("QuantizeLinear", [tensor, scale, zero], [quantized], f"{tensor}_quantize")
    dq = graph.new_node(
        "DequantizeLinear", [quantized, scale, zero], [dequantized], f"{tensor}_dequantize"
    )
    before = graph.node(reader)
    assert before is not None
    graph.replace([before], [q, dq, before])
    return dequantized


def _weight_dq(graph: Graph, name: str, axis: int, hint: str) -> str:
    weight = np.asarray(graph.const(name), np.float32)
    others = tuple(i for i in range(weight.ndim) if i != axis)
    absmax = np.abs(weight).max(axis=others)
    scale = (np.where(absmax > 0, absmax, 1.0) / INT8_MAX).astype(np.float32)
    shape = [1] * weight.ndim
    shape[axis] = -1
    values = np.clip(np.round(weight / scale.reshape(shape)), -INT8_MAX, INT8_MAX).astype(np.int8)
    q_name = graph.add_initializer(values, f"{hint}_w_int8")
    s_name = graph.add_initializer(scale, f"{hint}_w_scale")
    z_name = graph.add_initializer(np.zeros(scale.shape, np.int8), f"{hint}_w_zero_point")
    out = graph.unique_name(f"{hint}_w_dq")
    dq = graph.new_node(
        "DequantizeLinear", [q_name, s_name, z_name], [out], f"{hint}_w_dequantize", axis=axis
    )
    reader = graph.node(hint)
    assert reader is not None
    graph.replace([reader], [dq, reader])
    return out


class _QuantizeInputs(Pattern):
    phase = Phase.QUANTIZED
    op_type = ""

    @classmethod
    def weight_axis(cls, graph: Graph, node: onnx.NodeProto, weight: np.ndarray) -> int | None:
        raise NotImplementedError

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type != cls.op_type or len(node.input) < 2:
            return None
        x = node.input[0]
        producer = graph.producer(x)
        if graph.const(x) is not None or (
            producer is not None and producer.op_type == "DequantizeLinear"
        ):
            return None
        weight = graph.const(node.input[1])
        if (
            weight is None
            or weight.dtype != np.float32
            or cls.weight_axis(graph, node, weight) is None
        ):
            return None
        match = cls.hit(node)
        match.observe[x] = None
        return match

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        node = graph.node(match.anchor)
        assert node is not None
        weight = np.asarray(graph.const(node.input[1]))
        axis = cls.weight_axis(graph, node, weight)
        assert axis is not None
        x = node.input[0]
        x_dq = _activation_qdq(graph, x, float(graph.stats[x]), node.name)
        w_dq = _weight_dq(graph, node.input[1], axis, node.name)
        node = graph.node(match.anchor)  # fresh after the insertions
        assert node is not None
        node.input[0], node.input[1] = x_dq, w_dq
        graph.changed()


class QuantizeConv(_QuantizeInputs):
    op_type = "Conv"
    description = "Conv: int8 QDQ on the input (per tensor) and the weight (per output channel)."

    @classmethod
    def weight_axis(cls, graph: Graph, node: onnx.NodeProto, weight: np.ndarray) -> int | None:
        return 0 if weight.ndim >= 3 else None


class QuantizeGemm(_QuantizeInputs):
    op_type = "Gemm"
    description = "Gemm: int8 QDQ on input A (per tensor) and weight B (per output column)."

    @classmethod
    def weight_axis(cls, graph: Graph, node: onnx.NodeProto, weight: np.ndarray) -> int | None:
        if weight.ndim != 2 or graph.attr(node, "transA", 0):
            return None
        return 0 if graph.attr(node, "transB", 0) else 1


class QuantizeMatMul(_QuantizeInputs):
    op_type = "MatMul"
    description = (
        "MatMul by a 2-D weight: int8 QDQ on the input (per tensor) and weight (per column)."
    )

    @classmethod
    def weight_axis(cls, graph: Graph, node: onnx.NodeProto, weight: np.ndarray) -> int | None:
        return 1 if weight.ndim == 2 else None
