"""TFLite conversions: rewrite graphs onnx2tf cannot take into ones it converts."""

from __future__ import annotations

import re

import onnx
from onnx import helper

from edgehub.deploy.graph import Graph
from edgehub.deploy.pattern import Match, Pattern, Phase

_SCOPE_CHAR = re.compile(r"[^A-Za-z0-9_./>-]")


class InferConvKernelShape(Pattern):
    phase = Phase.CONVERSION
    description = (
        "Conv/ConvTranspose without kernel_shape: set it from the weight shape (onnx2tf needs it)."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type not in ("Conv", "ConvTranspose") or len(node.input) < 2:
            return None
        if graph.attr(node, "kernel_shape") is not None or _kernel(graph, node) is None:
            return None
        return cls.hit(node)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        node = graph.node(match.anchor)
        assert node is not None
        kernel = _kernel(graph, node)
        assert kernel is not None
        node.attribute.append(helper.make_attribute("kernel_shape", kernel))


def _kernel(graph: Graph, node: onnx.NodeProto) -> list[int] | None:
    weight = graph.const(node.input[1])
    shape = list(weight.shape) if weight is not None else graph.shape(node.input[1])
    if shape is None or len(shape) < 3 or any(d is None for d in shape[2:]):
        return None
    return [int(d) for d in shape[2:]]  # type: ignore[arg-type]


class SanitizeNodeNames(Pattern):
    phase = Phase.CONVERSION
    description = (
        "Node names with characters outside [A-Za-z0-9_./>-] (e.g. 'Softmax@0'): replace"
        " them with '_'."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        return cls.hit(node) if _SCOPE_CHAR.search(node.name) else None

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        node = graph.node(match.anchor)
        assert node is not None
        node.name = graph.unique_name(_SCOPE_CHAR.sub("_", node.name) or node.op_type)
        graph.changed()
