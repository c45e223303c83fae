"""TensorRT conversions: ops its ONNX parser lacks or handles badly, into equivalents."""

from __future__ import annotations

import numpy as np
import onnx

from edgehub.deploy.graph import Graph
from edgehub.deploy.pattern import Match, Pattern, Phase


class RemoveIdentity(Pattern):
    phase = Phase.CONVERSION
    description = "Drop Identity and inference-time Dropout nodes (readers take the input)."

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type not in ("Identity", "Dropout") or not node.input:
            return None
        if node.op_type == "Dropout" and (
            (len(node.output) > 1 and graph.consumers(node.output[1]))
            or (len(node.input) > 2 and graph.const(node.input[2]) is None)
            or (len(node.input) > 2 and bool(np.asarray(graph.const(node.input[2])).any()))
        ):
            return None
        if graph.is_output(node.output[0]):
            return None
        return cls.hit(node)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        node = graph.node(match.anchor)
        assert node is not None
        source, target = node.input[0], node.output[0]
        graph.replace([node], [])
        graph.rename_tensor(target, source)


def _dq(graph: Graph, tensor: str, scale: str, zero: str, axis: int | None) -> onnx.NodeProto:
    inputs = [tensor, scale, zero] if zero else [tensor, scale]
    extra = {} if axis is None else {"axis": axis}
    return graph.new_node(
        "DequantizeLinear", inputs, [graph.unique_name(f"{tensor}_dq")], f"{tensor}_dq", **extra
    )


def _per_axis(graph: Graph, scale: str) -> bool | None:
    """Whether a quantization scale is per-channel; None if it is not a constant."""
    value = graph.const(scale)
    return None if value is None else value.size > 1


class QLinearConvToQDQ(Pattern):
    phase = Phase.CONVERSION
    description = "QLinearConv (no TensorRT importer) -> DequantizeLinear + Conv + QuantizeLinear."

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type != "QLinearConv" or graph.opset() < 13:
            return None
        if _per_axis(graph, node.input[1]) is None or _per_axis(graph, node.input[4]) is None:
            return None
        return cls.hit(node)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        node = graph.node(match.anchor)
        assert node is not None
        x, xs, xz, w, ws, wz, ys, yz = node.input[:8]
        new = [
            _dq(graph, x, xs, xz, None),
            _dq(graph, w, ws, wz, 0 if _per_axis(graph, ws) else None),
        ]
        conv_inputs = [new[0].output[0], new[1].output[0]]
        if len(node.input) > 8 and node.input[8]:
            bias_scale = np.asarray(graph.const(xs), np.float32) * np.asarray(
                graph.const(ws), np.float32
            )
            scale_name = graph.add_initializer(bias_scale.reshape(-1), f"{node.name}_bias_scale")
            new.append(
                _dq(graph, node.input[8], scale_name, "", 0 if bias_scale.size > 1 else None)
            )
            conv_inputs.append(new[-1].output[0])
        conv_out = graph.unique_name(f"{node.name}_float")
        conv = graph.new_node("Conv", conv_inputs, [conv_out], f"{node.name}_conv")
        conv.attribute.extend(node.attribute)
        quant = graph.new_node("QuantizeLinear", [conv_out, ys, yz], [node.output[0]], node.name)
        graph.replace([node], [*new, conv, quant])


class QLinearMatMulToQDQ(Pattern):
    phase = Phase.CONVERSION
    description = (
        "QLinearMatMul (no TensorRT importer) -> DequantizeLinear + MatMul + QuantizeLinear."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type != "QLinearMatMul" or graph.opset() < 13:
            return None
        if _per_axis(graph, node.input[1]) is not False or _per_axis(graph, node.input[4]) is None:
            return None
        return cls.hit(node)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        node = graph.node(match.anchor)
        assert node is not None
        a, a_s, a_z, b, b_s, b_z, ys, yz = node.input[:8]
        per_column = _per_axis(graph, b_s)
        new = [_dq(graph, a, a_s, a_z, None), _dq(graph, b, b_s, b_z, -1 if per_column else None)]
        out = graph.unique_name(f"{node.name}_float")
        matmul = graph.new_node("MatMul", [n.output[0] for n in new], [out], f"{node.name}_matmul")
        quant = graph.new_node("QuantizeLinear", [out, ys, yz], [node.output[0]], node.name)
        graph.replace([node], [*new, matmul, quant])
