"""Per-layer information of a TensorRT network (and of an engine, where it can be opened).

Without a GPU an engine cannot be deserialized, so the engine inspector is out of reach; the
network TensorRT parsed (before fusion) is always available: every layer's name, type, precision
and its input / output tensors with shapes and types. With a GPU the engine inspector's JSON
(fused layers and tactics, ``ProfilingVerbosity.DETAILED``) is added.
"""

from __future__ import annotations

import json
from typing import Any

_ENUM_NAMES: dict[Any, str] = {}


def _enum_name(value: Any) -> str:
    name = _ENUM_NAMES.get(value)
    if name is None:
        name = _ENUM_NAMES[value] = str(getattr(value, "name", value)).split(".")[-1]
    return name


def _tensor(tensor: Any, seen: dict[str, dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """A tensor's name, shape and type (``seen``: those described already, by name: a layer's
    output is the next layer's input, and each read through the bindings costs; the layers
    that share a tensor share its description, which nothing changes)."""
    if tensor is None:
        return None
    name = tensor.name
    if seen is not None:
        known = seen.get(name)
        if known is not None:
            return known
    dims = tensor.shape
    described = {
        "name": name,
        # by index: iterating a Dims ends in an IndexError raised through the bindings, which
        # costs a tensor more than the lookups (bench_tensorrt.py times the whole build)
        "shape": [int(dims[i]) for i in range(len(dims))],
        "dtype": _enum_name(tensor.dtype),
    }
    if seen is not None:
        seen[name] = described
    return described


def network_layers(network: Any) -> list[dict[str, Any]]:
    layers = []
    seen: dict[str, dict[str, Any]] = {}
    for index in range(network.num_layers):
        layer = network.get_layer(index)
        layers.append(
            {
                "index": index,
                "name": layer.name,
                "type": _enum_name(layer.type),
                "metadata": getattr(layer, "metadata", None) or None,
                "inputs": [_tensor(layer.get_input(i), seen) for i in range(layer.num_inputs)],
                "outputs": [_tensor(layer.get_output(i), seen) for i in range(layer.num_outputs)],
            }
        )
    return layers


def network_io(network: Any) -> dict[str, list[dict[str, Any] | None]]:
    return {
        "inputs": [_tensor(network.get_input(i)) for i in range(network.num_inputs)],
        "outputs": [_tensor(network.get_output(i)) for i in range(network.num_outputs)],
    }


def precision_counts(layers: list[dict[str, Any]]) -> dict[str, int]:
    """How many layers produce each output type (``HALF``, ``FLOAT``, ``INT8`` ...)."""
    counts: dict[str, int] = {}
    for layer in layers:
        for output in layer["outputs"]:
            if output is not None:
                counts[output["dtype"]] = counts.get(output["dtype"], 0) + 1
    return counts


def engine_layers(trt_module: Any, engine: Any) -> dict[str, Any] | None:
    """The engine inspector's JSON for every layer, or None where it gives nothing."""
    inspector = engine.create_engine_inspector()
    if inspector is None:
        return None
    text = inspector.get_engine_information(trt_module.LayerInformationFormat.JSON)
    try:
        parsed: dict[str, Any] = json.loads(text)
    except ValueError:
        return None
    return parsed
