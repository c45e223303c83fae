"""TensorRT fusions around Conv and Gemm: fold per-channel affine ops into weights, and hand
Conv/Gemm + activation pairs over in the form TensorRT fuses into one kernel."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from edgehub.deploy.graph import Graph
from edgehub.deploy.pattern import Match, Pattern, Phase
from edgehub_backend_tensorrt._util import ACTIVATIONS, affine_chain

FUSED_KEY = "edgehub.fused_with"  # node metadata: the activation TensorRT fuses into this op


def _conv_weights(graph: Graph, conv: onnx.NodeProto) -> tuple[np.ndarray, np.ndarray] | None:
    weight = graph.const(conv.input[1]) if len(conv.input) > 1 else None
    if conv.op_type != "Conv" or weight is None or weight.ndim < 3 or weight.dtype.kind != "f":
        return None
    bias = graph.const(conv.input[2]) if len(conv.input) > 2 and conv.input[2] else None
    if len(conv.input) > 2 and conv.input[2] and bias is None:
        return None
    return weight, (np.zeros(weight.shape[0], weight.dtype) if bias is None else bias)


def _fold_into_conv(graph: Graph, conv: onnx.NodeProto, chain: list[onnx.NodeProto]) -> None:
    """Fold ``chain`` (per-channel affine ops after ``conv``) into its weights; the Conv then
    writes the chain's output tensor."""
    if not chain:
        return
    found = _conv_weights(graph, conv)
    assert found is not None
    weight, bias = found
    now, scale, shift = affine_chain(graph, conv, weight.ndim, weight.shape[0])
    assert [n.name for n in now] == [n.name for n in chain], "the chain changed since planning"
    shape = (-1,) + (1,) * (weight.ndim - 1)
    new_weight = (weight * scale.reshape(shape)).astype(weight.dtype)
    new_bias = (bias * scale + shift).astype(weight.dtype)
    conv.input[1] = graph.add_initializer(new_weight, f"{conv.name}_w_folded")
    del conv.input[2:]
    conv.input.append(graph.add_initializer(new_bias, f"{conv.name}_b_folded"))
    conv.output[0] = chain[-1].output[0]
    graph.replace([conv, *chain], [conv])


def _activation_ok(graph: Graph, act: onnx.NodeProto) -> bool:
    if act.op_type != "Clip":
        return True
    return all(graph.const(name) is not None for name in act.input[1:] if name)


def _canonical_activation(graph: Graph, act: onnx.NodeProto) -> onnx.NodeProto:
    """Clip(0, +inf) becomes Relu; Clip bounds become initializers (TensorRT wants constants)."""
    if act.op_type != "Clip":
        return act
    if len(act.input) == 1 and graph.opset() < 11:
        low, high = graph.attr(act, "min", -np.inf), graph.attr(act, "max", np.inf)
    else:
        bounds = [graph.const(n) if n else None for n in [*act.input[1:3], "", ""][:2]]
        low = -np.inf if bounds[0] is None else float(bounds[0])
        high = np.inf if bounds[1] is None else float(bounds[1])
    if low == 0 and high == np.inf:
        return helper.make_node("Relu", [act.input[0]], [act.output[0]], name=act.name)
    if graph.opset() >= 11:
        for i, name in enumerate(act.input[1:3], start=1):
            if name and graph.producer(name) is not None:
                value = np.asarray(graph.const(name))
                act.input[i] = graph.add_initializer(value, f"{act.name}_bound{i}")
    return act


def _tag(node: onnx.NodeProto, act: onnx.NodeProto) -> None:
    for prop in node.metadata_props:
        if prop.key == FUSED_KEY:
            prop.value = act.name
            return
    node.metadata_props.add(key=FUSED_KEY, value=act.name)


class FuseConvActivation(Pattern):
    phase = Phase.FUSION
    description = (
        "Conv [-> BN/scale/shift] -> Relu/Clip/...: fold the affine ops into the Conv, make"
        " Clip[0,inf) a Relu, tag the pair as one TensorRT conv+activation kernel."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        found = _conv_weights(graph, node)
        if found is None:
            return None
        chain, _, _ = affine_chain(graph, node, found[0].ndim, found[0].shape[0])
        act = graph.next_node(chain[-1] if chain else node, ACTIVATIONS)
        if act is None or not _activation_ok(graph, act):
            return None
        return cls.hit(node, *chain, act)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        conv, *chain, act = (graph.node(n) for n in match.nodes)
        assert conv is not None
        _fold_into_conv(graph, conv, [n for n in chain if n is not None])
        conv, act = graph.node(match.nodes[0]), graph.node(match.anchor)  # fresh after the fold
        assert conv is not None and act is not None
        act_new = _canonical_activation(graph, act)
        _tag(conv, act_new)
        graph.replace([act], [act_new])


class FoldConvAffine(Pattern):
    phase = Phase.FUSION
    description = (
        "Conv -> BatchNormalization/Mul/Add/Sub/Div by channel constants: fold into the Conv"
        " weights and bias."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        found = _conv_weights(graph, node)
        if found is None:
            return None
        chain, _, _ = affine_chain(graph, node, found[0].ndim, found[0].shape[0])
        return cls.hit(node, *chain) if chain else None

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        conv, *chain = (graph.node(n) for n in match.nodes)
        assert conv is not None
        _fold_into_conv(graph, conv, [n for n in chain if n is not None])


class FoldBatchNormAffine(Pattern):
    phase = Phase.FUSION
    description = (
        "BatchNormalization -> Mul/Add by channel constants: fold into the BatchNormalization."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type != "BatchNormalization" or len(node.output) != 1:
            return None
        shape = graph.shape(node.input[0])
        gamma = graph.const(node.input[1])
        if shape is None or gamma is None or any(graph.const(n) is None for n in node.input[1:5]):
            return None
        chain, _, _ = affine_chain(graph, node, len(shape), gamma.size)
        return cls.hit(node, *chain, rank=len(shape)) if chain else None

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        bn, *chain = (graph.node(n) for n in match.nodes)
        assert bn is not None
        gamma, beta = (np.asarray(graph.const(n), np.float32).reshape(-1) for n in bn.input[1:3])
        found, scale, shift = affine_chain(graph, bn, match.data["rank"], gamma.size)
        assert [n.name for n in found] == list(match.nodes[1:]), "the chain changed since planning"
        bn.input[1] = graph.add_initializer(gamma * scale, f"{bn.name}_scale_folded")
        bn.input[2] = graph.add_initializer(beta * scale + shift, f"{bn.name}_bias_folded")
        bn.output[0] = chain[-1].output[0]  # type: ignore[union-attr]
        graph.replace([bn, *(n for n in chain if n is not None)], [bn])


class FuseGemmActivation(Pattern):
    phase = Phase.FUSION
    description = (
        "Gemm -> Relu/Clip/...: make Clip[0,inf) a Relu and tag the pair as one TensorRT kernel."
    )

    @classmethod
    def match_at(cls, graph: Graph, node: onnx.NodeProto) -> Match | None:
        if node.op_type != "Gemm":
            return None
        act = graph.next_node(node, ACTIVATIONS)
        if act is None or not _activation_ok(graph, act):
            return None
        return cls.hit(node, act)

    @classmethod
    def rewrite(cls, graph: Graph, match: Match) -> None:
        gemm, act = graph.node(match.nodes[0]), graph.node(match.nodes[1])
        assert gemm is not None and act is not None
        act_new = _canonical_activation(graph, act)
        _tag(gemm, act_new)
        graph.replace([act], [act_new])
