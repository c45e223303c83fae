"""ONNX rewrites for patterns onnx2tf mis-converts, applied before (or between) its own steps.

- A scalar (0-d) float constant operand of a broadcasting binary op (an attention's
  ``q * 32**-0.25``) becomes a 1-element tensor (`scalars_as_vectors`): onnx2tf's
  accuracy-correction pass turns a 0-d constant into a Python number and then fails to build a
  Keras model on it ("Output tensors of a Functional model must be the output of a TensorFlow
  Layer. Found: 0.42..."). Broadcast against an operand of rank >= 1 the result is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_BROADCASTING = ("Add", "Sub", "Mul", "Div", "Pow")


def _ranks(model: Any) -> dict[str, int]:
    """The rank of every tensor shape inference knows it of (empty if inference fails)."""
    from onnx import shape_inference

    try:
        inferred = shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:
        return {}
    graph = inferred.graph
    ranks = {t.name: len(t.dims) for t in graph.initializer}
    for value_info in [*graph.value_info, *graph.input, *graph.output]:
        tensor_type = value_info.type.tensor_type
        if tensor_type.HasField("shape"):
            ranks[value_info.name] = len(tensor_type.shape.dim)
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    ranks[node.output[0]] = len(attr.t.dims)
    return ranks


def _constants(graph: Any) -> dict[str, Any]:
    """Initializers and ``Constant`` node values (as TensorProto), by tensor name."""
    found = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    found[node.output[0]] = attr.t
    return found


def add_initializer(model: Any, array: np.ndarray, name: str) -> str:
    """Add ``array`` as an initializer named ``name`` (also a graph input before IR 4)."""
    from onnx import helper, numpy_helper

    tensor = numpy_helper.from_array(array, name)
    model.graph.initializer.append(tensor)
    if model.ir_version < 4:  # initializers must be graph inputs too before IR 4
        model.graph.input.append(
            helper.make_tensor_value_info(name, tensor.data_type, list(array.shape))
        )
    return name


def scalars_as_vectors(model: Any) -> list[str]:
    """Give each broadcasting binary node (`_BROADCASTING`) whose operand is a 0-d float
    constant, and whose other operand has rank >= 1, that constant as a 1-element tensor;
    returns the nodes changed."""
    from onnx import numpy_helper

    graph = model.graph
    constants = _constants(graph)
    ranks: dict[str, int] | None = None
    made: dict[str, str] = {}
    changed = []
    for node in graph.node:
        if node.op_type not in _BROADCASTING or node.domain not in ("", "ai.onnx"):
            continue
        if len(node.input) != 2:
            continue
        for index, name in enumerate(node.input):
            tensor = constants.get(name)
            if tensor is None or len(tensor.dims) != 0:
                continue
            value = numpy_helper.to_array(tensor)
            if value.dtype.kind != "f":
                continue
            if ranks is None:
                ranks = _ranks(model)
            if ranks.get(node.input[1 - index], 0) < 1:
                continue  # a scalar op (or one of unknown rank): its output must stay 0-d
            if name not in made:
                made[name] = add_initializer(model, value.reshape(1), f"{name}_vector")
            node.input[index] = made[name]
            changed.append(node.name or node.output[0])
    if made:
        drop_unused(model, set(made))
    return changed


def drop_unused(model: Any, names: set[str]) -> None:
    """Remove the initializers and Constant nodes among ``names`` nothing reads any more."""
    graph = model.graph
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    used |= {
        name for node in graph.node for attr in node.attribute for name in _subgraph_inputs(attr)
    }
    unused = names - used
    if not unused:
        return
    kept = [t for t in graph.initializer if t.name not in unused]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    kept_inputs = [i for i in graph.input if i.name not in unused]
    del graph.input[:]
    graph.input.extend(kept_inputs)
    kept_nodes = [n for n in graph.node if not (n.op_type == "Constant" and n.output[0] in unused)]
    del graph.node[:]
    graph.node.extend(kept_nodes)


def _subgraph_inputs(attr: Any) -> set[str]:
    """Tensor names the subgraphs of an attribute (If/Loop/Scan bodies) read."""
    graphs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
    return {name for g in graphs for node in g.node for name in node.input}
