"""TensorRT fusions for transformer blocks: MatMul+Add into Gemm, and the LayerNorm and GELU
subgraphs exporters write out op by op into LayerNormalization (opset 17) and Gelu (opset 20)."""

from __future__ import annotations

import math

import numpy as np
import onnx

from edgehub.deploy.graph import Graph
from edgehub.deploy.pattern import Match, Pattern, Phase
from edgehub_backend_tensorrt._util import const_operand, is_scalar


class FuseMatMulAdd(Pattern):
    phase = Phase.FUSION
    description = "MatMul(2-D x, 2-D weight) -> Add(bias) into one Gemm."

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type != "Add":
            return None
        operand = const_operand(graph, node)
        matmul = graph.producer(operand[0]) if operand else None
        if operand is None or matmul is None or matmul.op_type != "MatMul":
            return None
        if not graph.only_feeds(matmul.output[0], node):
            return None
        a_shape, b_shape = graph.shape(matmul.input[0]), graph.shape(matmul.input[1])
        if a_shape is None or b_shape is None or len(a_shape) != 2 or len(b_shape) != 2:
            return None
        bias, columns = operand[1], b_shape[1]
        if bias.ndim > 2 or (bias.ndim == 2 and bias.shape[0] not in (1, a_shape[0])):
            return None
        if bias.ndim >= 1 and bias.shape[-1] not in (1, columns):
            return None
        return cls.hit(matmul, node)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        matmul, add = graph.node(match.nodes[0]), graph.node(match.nodes[1])
        assert matmul is not None and add is not None
        operand = const_operand(graph, add)
        assert operand is not None
        bias = graph.add_initializer(operand[1], f"{add.name}_bias")
        gemm = graph.new_node("Gemm", [*matmul.input, bias], [add.output[0]], f"{matmul.name}_gemm")
        graph.replace([matmul, add], [gemm])


def _reduce_axes(graph: Graph, node: onnx.NodeProto) -> list[int] | None:
    if node.op_type != "ReduceMean" or graph.attr(node, "keepdims", 1) != 1:
        return None
    if len(node.input) > 1:
        value = graph.const(node.input[1])
        return None if value is None else [int(v) for v in value.reshape(-1)]
    axes = graph.attr(node, "axes")
    return None if axes is None else [int(v) for v in axes]


def _layer_norm_axis(graph: Graph, x: str, axes: list[int]) -> int | None:
    """The LayerNormalization axis if ``axes`` are the trailing dims of ``x``."""
    shape = graph.shape(x)
    if shape is None or any(d is None for d in shape):
        return None
    rank = len(shape)
    normal = sorted(a % rank for a in axes)
    if normal != list(range(rank - len(normal), rank)):
        return None
    return normal[0] - rank


class FuseLayerNorm(Pattern):
    phase = Phase.FUSION
    description = (
        "ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] into one LayerNormalization"
        " (opset >= 17)."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type != "Div" or graph.opset() < 17:
            return None
        sub, sqrt = graph.producer(node.input[0]), graph.producer(node.input[1])
        if sub is None or sqrt is None or sub.op_type != "Sub" or sqrt.op_type != "Sqrt":
            return None
        add_eps = graph.producer(sqrt.input[0])
        eps_operand = (
            const_operand(graph, add_eps) if add_eps and add_eps.op_type == "Add" else None
        )
        var = graph.producer(eps_operand[0]) if eps_operand else None
        square = graph.producer(var.input[0]) if var is not None else None
        mean = graph.producer(sub.input[1])
        if (
            eps_operand is None
            or eps_operand[1].size != 1
            or var is None
            or square is None
            or mean is None
        ):
            return None
        x = sub.input[0]
        axes = _reduce_axes(graph, mean)
        if axes is None or mean.input[0] != x or _reduce_axes(graph, var) != axes:
            return None
        diff = sub.output[0]
        if not (
            (
                square.op_type == "Pow"
                and square.input[0] == diff
                and is_scalar(graph.const(square.input[1]), 2.0)
            )
            or (square.op_type == "Mul" and list(square.input) == [diff, diff])
        ):
            return None
        axis = _layer_norm_axis(graph, x, axes)
        if axis is None or {n.name for n in graph.consumers(diff)} != {square.name, node.name}:
            return None
        inner: list[onnx.NodeProto] = [mean, sub, square, var, add_eps, sqrt]  # type: ignore[list-item]
        if any(
            not graph.only_feeds(n.output[0], nxt)
            for n, nxt in zip(inner[2:], [*inner[3:], node], strict=True)
        ):
            return None
        if not graph.only_feeds(mean.output[0], sub):
            return None
        tail = _affine_tail(graph, node)
        return cls.hit(
            *inner, node, *tail, x=x, axis=axis, epsilon=float(eps_operand[1].reshape(-1)[0])
        )

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        nodes = [graph.node(n) for n in match.nodes]
        assert all(n is not None for n in nodes)
        div_index = 6
        tail = nodes[div_index + 1 :]
        x, axis = match.data["x"], match.data["axis"]
        normalized = [int(d) for d in (graph.shape(x) or [])[axis:]]  # type: ignore[arg-type]
        scale = np.ones(normalized, np.float32)
        bias = np.zeros(normalized, np.float32)
        for node in tail:
            assert node is not None
            operand = const_operand(graph, node)
            assert operand is not None
            value = np.broadcast_to(operand[1], normalized).astype(np.float32)
            if node.op_type == "Mul":
                scale, bias = scale * value, bias * value
            else:
                bias = bias + value
        last = nodes[-1]
        assert last is not None
        layer_norm = graph.new_node(
            "LayerNormalization",
            [
                x,
                graph.add_initializer(scale, f"{last.name}_gamma"),
                graph.add_initializer(bias, f"{last.name}_beta"),
            ],
            [last.output[0]],
            f"{last.name}_layernorm",
            axis=axis,
            epsilon=match.data["epsilon"],
        )
        graph.replace([n for n in nodes if n is not None], [layer_norm])


def _affine_tail(graph: Graph, div: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Up to a Mul(gamma) then an Add(beta) after the normalisation."""
    tail: list[onnx.NodeProto] = []
    current = div
    for op in ("Mul", "Add"):
        nxt = graph.next_node(current, (op,))
        operand = const_operand(graph, nxt) if nxt is not None else None
        if nxt is None or operand is None or operand[0] != current.output[0]:
            continue
        tail.append(nxt)
        current = nxt
    return tail


def _gelu_outer(
    graph: Graph, node: onnx.NodeProto
) -> tuple[str, onnx.NodeProto, list[onnx.NodeProto]] | None:
    """``x * 0.5 * (1 + inner)`` ending at ``node`` in either common order: (x, the Add(1)
    node, the Mul nodes)."""
    if node.op_type != "Mul":
        return None
    half = const_operand(graph, node)
    if half is not None and is_scalar(half[1], 0.5):  # (x * (1 + inner)) * 0.5
        product = graph.producer(half[0])
        if (
            product is None
            or product.op_type != "Mul"
            or not graph.only_feeds(product.output[0], node)
        ):
            return None
        for x, other in (product.input, reversed(product.input)):
            plus = graph.producer(other)
            if plus is not None and plus.op_type == "Add":
                return x, plus, [product, node]
        return None
    for halved, other in (node.input, reversed(node.input)):  # (x * 0.5) * (1 + inner)
        mul_half, plus = graph.producer(halved), graph.producer(other)
        if mul_half is None or plus is None or mul_half.op_type != "Mul" or plus.op_type != "Add":
            continue
        operand = const_operand(graph, mul_half)
        if operand is not None and is_scalar(operand[1], 0.5) and graph.only_feeds(halved, node):
            return operand[0], plus, [mul_half, node]
    return None


def _plus_one(graph: Graph, plus: onnx.NodeProto, anchor: onnx.NodeProto) -> onnx.NodeProto | None:
    operand = const_operand(graph, plus)
    if (
        operand is None
        or not is_scalar(operand[1], 1.0)
        or not graph.only_feeds(plus.output[0], anchor)
    ):
        return None
    return graph.producer(operand[0])


def _scaled(graph: Graph, tensor: str, factor: float) -> tuple[str, onnx.NodeProto] | None:
    """``tensor`` = y * factor (or y / (1/factor)): (y, the node)."""
    node = graph.producer(tensor)
    operand = const_operand(graph, node) if node is not None else None
    if node is None or operand is None:
        return None
    if node.op_type == "Mul" and is_scalar(operand[1], factor):
        return operand[0], node
    if node.op_type == "Div" and node.input[0] == operand[0] and is_scalar(operand[1], 1 / factor):
        return operand[0], node
    return None


class _Gelu(Pattern):
    approximate = "none"

    @classmethod
    def inner(cls, graph: Graph, func: onnx.NodeProto, x: str) -> list[onnx.NodeProto] | None:
        raise NotImplementedError

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if graph.opset() < 20:
            return None
        outer = _gelu_outer(graph, node)
        if outer is None:
            return None
        x, plus, muls = outer
        func = _plus_one(graph, plus, next(m for m in muls if plus.output[0] in m.input))
        inner = cls.inner(graph, func, x) if func is not None else None
        if inner is None or func is None or not graph.only_feeds(func.output[0], plus):
            return None
        return cls.hit(*inner, func, plus, *muls, x=x)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        nodes = [graph.node(n) for n in match.nodes]
        last = nodes[-1]
        assert last is not None and all(n is not None for n in nodes)
        gelu = graph.new_node(
            "Gelu",
            [match.data["x"]],
            [last.output[0]],
            f"{last.name}_gelu",
            approximate=cls.approximate,
        )
        graph.replace([n for n in nodes if n is not None], [gelu])


class FuseGeluErf(_Gelu):
    phase = Phase.FUSION
    description = "x*0.5*(1+Erf(x/sqrt(2))) into Gelu (opset >= 20; older opsets are left alone)."

    @classmethod
    def inner(cls, graph: Graph, func: onnx.NodeProto, x: str) -> list[onnx.NodeProto] | None:
        if func.op_type != "Erf":
            return None
        scaled = _scaled(graph, func.input[0], 1 / math.sqrt(2))
        if scaled is None or scaled[0] != x or not graph.only_feeds(func.input[0], func):
            return None
        return [scaled[1]]


class FuseGeluTanh(_Gelu):
    phase = Phase.FUSION
    approximate = "tanh"
    description = (
        "x*0.5*(1+Tanh(sqrt(2/pi)*(x+0.044715*x^3))) into Gelu(approximate='tanh') (opset >= 20)."
    )

    @classmethod
    def inner(cls, graph: Graph, func: onnx.NodeProto, x: str) -> list[onnx.NodeProto] | None:
        if func.op_type != "Tanh":
            return None
        outer = _scaled(graph, func.input[0], math.sqrt(2 / math.pi))
        add = graph.producer(outer[0]) if outer else None
        if outer is None or add is None or add.op_type != "Add" or x not in add.input:
            return None
        cubic = _scaled(graph, add.input[1] if add.input[0] == x else add.input[0], 0.044715)
        power = graph.producer(cubic[0]) if cubic else None
        if cubic is None or power is None:
            return None
        nodes = [power, cubic[1], add, outer[1]]
        if (
            power.op_type == "Pow"
            and power.input[0] == x
            and is_scalar(graph.const(power.input[1]), 3.0)
        ):
            pass
        elif power.op_type == "Mul" and x in power.input:
            square = graph.producer(power.input[1] if power.input[0] == x else power.input[0])
            if square is None or square.op_type != "Mul" or list(square.input) != [x, x]:
                return None
            nodes.insert(0, square)
        else:
            return None
        for node, nxt in zip(nodes, [*nodes[1:], func], strict=True):
            if not graph.only_feeds(node.output[0], nxt):
                return None
        return nodes
