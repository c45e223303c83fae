"""Which TensorRT layers the ONNX nodes kept in float became, read from a build's layer info.

TensorRT for RTX builds strongly typed networks only, so a node is kept in float by quantizing
the model without Q/DQ around it (``exclude_nodes``). `float_layers` checks that this happened:
each kept node's network layers (by name, or by the ``[ONNX Layer: NAME]`` metadata the parser
writes), and a problem for a node with no layer or whose layers still read dequantized constant
weights (what TensorRT fuses into an int8 kernel).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_ONNX_LAYER = re.compile(r"\[ONNX Layer: ([^\]]+)\]")


@dataclass
class FloatLayers:
    """``layers``: node -> the names of its network layers; ``problems``: one line each."""

    layers: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def layer_nodes(layer: dict[str, Any]) -> set[str]:
    """The ONNX nodes a network layer came from: its name, and those its metadata names."""
    found = {str(layer.get("name", ""))}
    metadata = layer.get("metadata")
    if isinstance(metadata, str):
        found.update(match.strip() for match in _ONNX_LAYER.findall(metadata))
    return found


def float_layers(layers: list[dict[str, Any]], nodes: list[str]) -> FloatLayers:
    """The network layers (``layer_info.json``'s ``layers``) of each node of ``nodes``."""
    producer: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for tensor in layer.get("outputs") or []:
            if tensor is not None:
                producer[tensor["name"]] = layer
    result = FloatLayers()
    for node in nodes:
        own = [layer for layer in layers if node in layer_nodes(layer)]
        result.layers[node] = [str(layer["name"]) for layer in own]
        if not own:
            result.problems.append(
                f"node {node!r} kept in float has no layer in TensorRT's network (folded or "
                "renamed by its ONNX parser); the layers around it decide its precision"
            )
            continue
        quantized = [layer["name"] for layer in own if _reads_quantized_weights(layer, producer)]
        if quantized:
            result.problems.append(
                f"node {node!r} kept in float still reads quantized weights in layer(s) "
                f"{', '.join(quantized)}, which TensorRT may run in int8"
            )
    return result


def _reads_quantized_weights(layer: dict[str, Any], producer: dict[str, dict[str, Any]]) -> bool:
    for tensor in layer.get("inputs") or []:
        source = producer.get(tensor["name"]) if tensor is not None else None
        if source is None or source.get("type") != "DEQUANTIZE":
            continue
        data = (source.get("inputs") or [None])[0]
        origin = producer.get(data["name"]) if data is not None else None
        if origin is not None and origin.get("type") == "CONSTANT":
            return True
    return False
