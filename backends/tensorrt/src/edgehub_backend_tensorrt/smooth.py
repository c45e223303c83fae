"""SmoothQuant-style migration (before quantization): move per-channel activation outliers
into the weights of the MatMul/Gemm that read the activation, so both quantize well."""

from __future__ import annotations

import numpy as np
import onnx

from edgehub.deploy.graph import Graph
from edgehub.deploy.pattern import Match, Pattern, Phase


def _weight_rows(graph: Graph, node: onnx.NodeProto, x: str) -> tuple[np.ndarray, int] | None:
    """The constant weight ``node`` multiplies ``x`` with, and the weight axis that runs over
    ``x``'s channels (its last axis)."""
    if node.op_type == "MatMul" and node.input[0] == x:
        weight = graph.const(node.input[1])
        return (weight, 0) if weight is not None and weight.ndim == 2 else None
    if node.op_type == "Gemm" and node.input[0] == x and not graph.attr(node, "transA", 0):
        weight = graph.const(node.input[1])
        if weight is None or weight.ndim != 2:
            return None
        return weight, 1 if graph.attr(node, "transB", 0) else 0
    return None


class SmoothQuantLayerNorm(Pattern):
    phase = Phase.SMOOTH
    alpha = 0.5  # migration strength: 0 keeps activations, 1 moves everything into weights
    description = (
        "LayerNormalization -> MatMul/Gemm readers: divide the LN scale/bias per channel by"
        " s = max|x|^a / max|W|^(1-a) and multiply the weight rows by s (float-equivalent)."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type != "LayerNormalization" or len(node.output) != 1:
            return None
        y = node.output[0]
        readers = graph.consumers(y)
        if not readers or graph.is_output(y) or graph.const(node.input[1]) is None:
            return None
        if len(node.input) > 2 and node.input[2] and graph.const(node.input[2]) is None:
            return None
        shape = graph.shape(node.input[0])
        if shape is None or graph.attr(node, "axis", -1) not in (-1, len(shape) - 1):
            return None
        if any(_weight_rows(graph, r, y) is None for r in readers):
            return None
        match = cls.hit(node, *readers)
        match.observe[y] = -1
        return match

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        ln, *readers = (graph.node(n) for n in match.nodes)
        assert ln is not None
        y = ln.output[0]
        x_max = np.maximum(np.asarray(graph.stats[y], np.float32), 1e-5)
        weights = [_weight_rows(graph, r, y) for r in readers if r is not None]
        w_max = np.ones_like(x_max) * 1e-5
        for weight, axis in (w for w in weights if w is not None):
            per_channel = np.abs(weight).max(axis=1 - axis)
            w_max = np.maximum(w_max, per_channel)
        scale = np.clip(x_max**cls.alpha / w_max ** (1 - cls.alpha), 1e-4, 1e4).astype(np.float32)
        gamma = np.asarray(graph.const(ln.input[1]), np.float32)
        ln.input[1] = graph.add_initializer(gamma / scale, f"{ln.name}_scale_smoothed")
        if len(ln.input) > 2 and ln.input[2]:
            beta = np.asarray(graph.const(ln.input[2]), np.float32)
            ln.input[2] = graph.add_initializer(beta / scale, f"{ln.name}_bias_smoothed")
        for reader, found in zip(readers, weights, strict=True):
            assert reader is not None and found is not None
            weight, axis = found
            shape = (-1, 1) if axis == 0 else (1, -1)
            smoothed = (weight * scale.reshape(shape)).astype(weight.dtype)
            reader.input[1] = graph.add_initializer(smoothed, f"{reader.name}_w_smoothed")
        graph.changed()
