"""GatherND reading its data whole, in order, written as the Reshape it is.

Exporters build an attention mask's broadcast by indexing (torch's dynamo writes a GatherND
with indices ``[b, 1, 1, s, 2]`` made from the inputs' shapes); onnx2tf lays those rank-5
indices out channels-last and mislays the result. Once the input shapes are static the indices
are known before the model runs: where they list every element of the data's indexed axes
once, in row-major order, the GatherND is a Reshape of its data to the output's shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..models import constant_tensors, drop_unused, replace_items, static_shapes, tensors_read
from .graph_rewrites import add_initializer

# ops whose output depends on their input's shape only, never its values
_SHAPE_ONLY = ("Shape", "Size")
# ops a value computed before the model runs must not hold
_NONDETERMINISTIC = ("RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                     "Multinomial", "Bernoulli")  # fmt: skip


def fold(model: Any, names: list[str], shapes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """The values of those of ``names`` that depend on the graph inputs' shapes only (read
    through Shape/Size of statically shaped tensors, or of tensors computed so), computed
    in onnxruntime on the nodes that make them; the others are left out."""
    from onnx import helper, numpy_helper

    graph = model.graph
    constants = constant_tensors(graph)
    producers = {o: n for n in graph.node for o in n.output if o}
    wanted: list[str] = []
    needed: dict[int, Any] = {}
    for name in names:
        stack, seen, ok, nodes = [name], set(), True, {}
        while stack and ok:
            tensor = stack.pop()
            if tensor in seen or tensor in constants or not tensor:
                continue
            seen.add(tensor)
            node = producers.get(tensor)
            if (
                node is None
                or node.op_type in _NONDETERMINISTIC
                or node.domain not in ("", "ai.onnx")
            ):
                ok = False  # a graph input's values, or an op not folded here
            elif node.op_type in _SHAPE_ONLY and node.input[0] in shapes:
                nodes[id(node)] = node
            else:  # (a Shape of a tensor of unknown shape: that tensor is computed too)
                nodes[id(node)] = node
                stack.extend(node.input)
        if ok:
            wanted.append(name)
            needed.update(nodes)
    if not wanted:
        return {}
    made = []
    for node in graph.node:  # graph order is topological
        if id(node) not in needed:
            continue
        if node.op_type in _SHAPE_ONLY and node.input[0] in shapes:  # as a constant
            shape = np.array(shapes[node.input[0]], dtype=np.int64)
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            value = (
                np.array(int(np.prod(shape)), dtype=np.int64)
                if node.op_type == "Size"
                else shape[attrs.get("start", 0) : attrs.get("end", len(shape))]
            )
            made.append(
                helper.make_node(
                    "Constant", [], [node.output[0]], value=numpy_helper.from_array(value)
                )
            )
        else:
            made.append(node)
    used = {i for n in made for i in n.input}
    inits = [t for t in graph.initializer if t.name in used]
    consts = [n for n in graph.node if n.op_type == "Constant" and n.output[0] in used]
    outputs = [helper.make_empty_tensor_value_info(name) for name in wanted]
    sub = helper.make_graph([*consts, *made], "folded", [], outputs, inits)
    folded = helper.make_model(sub, opset_imports=list(model.opset_import))
    folded.ir_version = model.ir_version
    try:
        from ..ort.sessions import import_ort

        session = import_ort().InferenceSession(
            folded.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return dict(zip(wanted, session.run(wanted, {})))
    except Exception:
        return {}


def _in_order(indices: np.ndarray, dims: list[int]) -> bool:
    """Whether ``indices`` (``[..., k]``) list every index of ``dims[:k]`` once, in order."""
    k = indices.shape[-1]
    if k == 0 or k > len(dims):
        return False
    flat = indices.reshape(-1, k).astype(np.int64)
    bounds = np.array(dims[:k], dtype=np.int64)
    flat = np.where(flat < 0, flat + bounds, flat)
    if flat.shape[0] != int(np.prod(bounds)) or (flat < 0).any() or (flat >= bounds).any():
        return False
    linear = np.ravel_multi_index(tuple(flat.T), tuple(int(d) for d in bounds))
    return bool(np.array_equal(linear, np.arange(flat.shape[0])))


def gathers_as_reshapes(model: Any) -> list[str]:
    """Rewrite each GatherND (``batch_dims`` 0) whose indices, known before the model runs,
    read its data's indexed axes whole and in order (`_in_order`) as a Reshape of the data to
    the output's shape; the nodes only those indices needed are dropped. Returns the nodes
    rewritten."""
    from onnx import helper, numpy_helper

    graph = model.graph
    gathers = [
        n
        for n in graph.node
        if n.op_type == "GatherND"
        and n.domain in ("", "ai.onnx")
        and not any(a.name == "batch_dims" and a.i != 0 for a in n.attribute)
    ]
    if not gathers:
        return []
    shapes = static_shapes(model, data_prop=True)
    shapes.update({t.name: list(t.dims) for t in graph.initializer})
    gathers = [n for n in gathers if n.input[0] in shapes]
    constants = constant_tensors(graph)
    known = fold(model, [n.input[1] for n in gathers if n.input[1] not in constants], shapes)
    known.update(
        {n.input[1]: numpy_helper.to_array(constants[n.input[1]]) for n in gathers
         if n.input[1] in constants}
    )  # fmt: skip
    changed: list[str] = []
    nodes = list(graph.node)
    for gather in gathers:
        indices = known.get(gather.input[1])
        dims = shapes[gather.input[0]]
        if indices is None or indices.ndim < 1 or not _in_order(np.asarray(indices), dims):
            continue
        name = gather.name or gather.output[0]
        target = [*indices.shape[:-1], *dims[indices.shape[-1] :]]
        shape = add_initializer(model, np.array(target, dtype=np.int64), f"{name}_shape")
        reshape = helper.make_node("Reshape", [gather.input[0], shape], [gather.output[0]],
                                   name=name)  # fmt: skip
        nodes[nodes.index(gather)] = reshape
        changed.append(name)
    if changed:
        replace_items(graph.node, _live(nodes, {o.name for o in graph.output}))
        drop_unused(model, set(constants))
    return changed


def _live(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """``nodes`` less those nothing reads (transitively) and that make no graph output."""
    while True:
        read = tensors_read(nodes) | outputs
        kept = [n for n in nodes if any(o in read for o in n.output if o)]
        if len(kept) == len(nodes):
            return nodes
        nodes = kept
