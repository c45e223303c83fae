"""An editable view of an ONNX model for patterns: producers, consumers, constants, shapes.

Patterns read the graph through these look-ups and change it through the helpers below; the
indexes are rebuilt lazily after every change (`changed`). Node names are made unique and
non-empty on construction, because matches refer to nodes by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

# Pure ops whose output is a constant when all their inputs are (weights stored as
# ConstantOfShape, parameters behind Unsqueeze/Reshape/Cast, ...).
_FOLDABLE = {"Constant", "ConstantOfShape", "Unsqueeze", "Squeeze", "Reshape", "Cast", "Identity"}


class Graph:
    """The model being transformed (``model``) with cached indexes over its main graph."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.stats: dict[str, np.ndarray] = {}  # calibration: tensor -> abs-max (per channel)
        self._names_unique()
        self._index: _Index | None = None

    # -- look-ups ---------------------------------------------------------------------------
    @property
    def nodes(self) -> Sequence[onnx.NodeProto]:
        return self.model.graph.node  # type: ignore[no-any-return]

    def opset(self, domain: str = "") -> int:
        for entry in self.model.opset_import:
            if entry.domain in (domain, "ai.onnx" if domain == "" else domain):
                return int(entry.version)
        return 0

    def node(self, name: str) -> onnx.NodeProto | None:
        return self._idx.by_name.get(name)

    def producer(self, tensor: str) -> onnx.NodeProto | None:
        return self._idx.producer.get(tensor)

    def consumers(self, tensor: str) -> list[onnx.NodeProto]:
        return list(self._idx.consumers.get(tensor, ()))

    def is_output(self, tensor: str) -> bool:
        return tensor in self._idx.outputs

    def only_feeds(self, tensor: str, node: onnx.NodeProto) -> bool:
        """True when ``tensor`` is used by ``node`` alone and is not a graph output."""
        users = self._idx.consumers.get(tensor, ())
        return len(users) == 1 and users[0] is node and not self.is_output(tensor)

    def next_node(self, node: onnx.NodeProto, op_types: Iterable[str]) -> onnx.NodeProto | None:
        """The single consumer of ``node``'s only output, if it is one of ``op_types``."""
        if len(node.output) < 1:
            return None
        users = self._idx.consumers.get(node.output[0], ())
        if len(users) != 1 or self.is_output(node.output[0]) or users[0].op_type not in op_types:
            return None
        return users[0]

    def const(self, tensor: str) -> np.ndarray | None:
        """The value of ``tensor`` if it is a constant (initializer or foldable subgraph)."""
        if not tensor:
            return None
        cache = self._idx.constants
        if tensor not in cache:
            cache[tensor] = self._evaluate(tensor)
        return cache[tensor]

    def attr(self, node: onnx.NodeProto, name: str, default: Any = None) -> Any:
        from onnx import helper

        for attribute in node.attribute:
            if attribute.name == name:
                return helper.get_attribute_value(attribute)
        return default

    def shape(self, tensor: str) -> list[int | None] | None:
        """The inferred static shape of ``tensor`` (None where unknown)."""
        if self._idx.shapes is None:
            self._idx.shapes = _infer_shapes(self.model)
        return self._idx.shapes.get(tensor)

    # -- edits ------------------------------------------------------------------------------
    def unique_name(self, hint: str) -> str:
        return _free_name(hint, self._idx.names)

    def add_initializer(self, array: np.ndarray, hint: str) -> str:
        from onnx import numpy_helper

        name = self.unique_name(hint)
        self.model.graph.initializer.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def new_node(
        self,
        op_type: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        hint: str,
        **attributes: Any,
    ) -> onnx.NodeProto:
        """A node with a fresh unique name (not yet in the graph: pass it to `replace`)."""
        from onnx import helper

        return helper.make_node(
            op_type, list(inputs), list(outputs), name=self.unique_name(hint), **attributes
        )

    def replace(self, old: Sequence[onnx.NodeProto], new: Sequence[onnx.NodeProto]) -> None:
        """Put ``new`` where the last of ``old`` was and drop ``old`` (nodes are found by name;
        order is fixed by `finish`). Node objects held from before are stale afterwards: look
        them up again with `node`."""
        graph_nodes = self.model.graph.node
        names = {n.name for n in old}
        position = max(i for i, n in enumerate(graph_nodes) if n.name in names)
        result = [n for n in graph_nodes[:position] if n.name not in names]
        result += [*new, *(n for n in graph_nodes[position + 1 :] if n.name not in names)]
        copies = [_copy(n) for n in result]
        del graph_nodes[:]
        graph_nodes.extend(copies)
        self.changed()

    def rename_tensor(self, old: str, new: str) -> None:
        """Make every user of ``old`` read ``new`` instead (graph outputs keep their names)."""
        for node in self.model.graph.node:
            for i, name in enumerate(node.input):
                if name == old:
                    node.input[i] = new
        self.changed()

    def changed(self) -> None:
        self._index = None

    def finish(self) -> None:
        """Topological order, dead nodes and unused initializers removed; for IR < 4 every
        initializer is declared as a graph input too, as those IR versions require."""
        _toposort(self.model.graph)
        _remove_dead(self.model.graph)
        if self.model.ir_version < 4:
            _declare_initializers(self.model.graph)
        self.changed()

    # -- internals --------------------------------------------------------------------------
    @property
    def _idx(self) -> _Index:
        if self._index is None:
            self._index = _Index(self.model)
        return self._index

    def _names_unique(self) -> None:
        seen: set[str] = set()
        for i, node in enumerate(self.model.graph.node):
            node.name = _free_name(node.name or f"{node.op_type}_{i}", seen)

    def _evaluate(self, tensor: str) -> np.ndarray | None:
        init = self._idx.initializers.get(tensor)
        if init is not None:
            from onnx import numpy_helper

            return np.asarray(numpy_helper.to_array(init))
        node = self.producer(tensor)
        if node is None or node.op_type not in _FOLDABLE or node.domain not in ("", "ai.onnx"):
            return None
        inputs = [self.const(name) if name else None for name in node.input]
        if any(value is None and name for value, name in zip(inputs, node.input, strict=True)):
            return None
        fast = _fold_fast(self, node, inputs)
        return fast if fast is not None else _run_node(node, inputs, self.opset(), tensor)


class _Index:
    def __init__(self, model: onnx.ModelProto) -> None:
        graph = model.graph
        self.by_name = {n.name: n for n in graph.node}
        self.producer = {out: n for n in graph.node for out in n.output if out}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        self.outputs = {o.name for o in graph.output}
        self.initializers = {t.name: t for t in graph.initializer}
        self.constants: dict[str, np.ndarray | None] = {}
        self.shapes: dict[str, list[int | None]] | None = None
        self.names = {n.name for n in graph.node} | set(self.producer) | set(self.initializers)
        self.names |= {i.name for i in graph.input}


def _free_name(hint: str, taken: set[str]) -> str:
    """``hint``, or ``hint_<n>`` for the first ``n`` not in ``taken``; added to ``taken``."""
    name, counter = hint, 0
    while name in taken:
        counter += 1
        name = f"{hint}_{counter}"
    taken.add(name)
    return name


def _fold_fast(
    graph: Graph, node: onnx.NodeProto, inputs: list[np.ndarray | None]
) -> np.ndarray | None:
    """numpy for the common cases (weights stored as ConstantOfShape, Unsqueezed parameters);
    None hands the node to the reference evaluator."""
    from onnx import numpy_helper

    if node.op_type == "ConstantOfShape" and inputs[0] is not None:
        value = graph.attr(node, "value")
        fill = (
            numpy_helper.to_array(value).reshape(-1)
            if value is not None
            else np.zeros(1, np.float32)
        )
        return np.full([int(d) for d in inputs[0].reshape(-1)], fill[0], dtype=fill.dtype)
    if node.op_type == "Unsqueeze" and inputs[0] is not None:
        axes = graph.attr(node, "axes") if len(inputs) < 2 else inputs[1]
        if axes is None:
            return None
        rank = inputs[0].ndim + len(list(np.reshape(axes, -1)))
        result = inputs[0]
        for axis in sorted(int(a) % rank for a in np.reshape(axes, -1)):
            result = np.expand_dims(result, axis)
        return result
    if node.op_type == "Identity" and inputs[0] is not None:
        return inputs[0]
    return None


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    copy = type(node)()
    copy.CopyFrom(node)
    return copy


def _run_node(
    node: onnx.NodeProto, inputs: list[np.ndarray | None], opset: int, tensor: str
) -> np.ndarray | None:
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    feeds = {f"in{i}": v for i, v in enumerate(inputs) if v is not None}
    names = [f"in{i}" if v is not None else "" for i, v in enumerate(inputs)]
    copy = helper.make_node(node.op_type, names, list(node.output), domain=node.domain)
    copy.attribute.extend(node.attribute)
    graph = helper.make_graph(
        [copy],
        "fold",
        [helper.make_tensor_value_info(n, 0, None) for n in feeds],
        [helper.make_tensor_value_info(tensor, 0, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(opset, 1))])
    try:
        (value,) = ReferenceEvaluator(model).run([tensor], feeds)
    except Exception:
        return None
    return np.asarray(value)


def _infer_shapes(model: onnx.ModelProto) -> dict[str, list[int | None]]:
    from onnx import shape_inference

    try:
        inferred = shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    graph = inferred.graph
    shapes: dict[str, list[int | None]] = {}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        tensor_type = info.type.tensor_type
        if tensor_type.HasField("shape"):
            shapes[info.name] = [
                d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim
            ]
    for init in graph.initializer:
        shapes[init.name] = list(init.dims)
    return shapes


def _toposort(graph: onnx.GraphProto) -> None:
    nodes = list(graph.node)
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    producers = {out for n in nodes for out in n.output}
    ordered: list[onnx.NodeProto] = []
    pending = nodes
    while pending:
        rest = []
        for node in pending:
            needed = [i for i in node.input if i in producers and i not in available]
            if needed:
                rest.append(node)
            else:
                ordered.append(node)
                available.update(node.output)
        if len(rest) == len(pending):  # a cycle or a missing producer: keep the rest as is
            ordered.extend(rest)
            break
        pending = rest
    del graph.node[:]
    graph.node.extend(ordered)


def _remove_dead(graph: onnx.GraphProto) -> None:
    """Drop nodes whose outputs nobody reads, then initializers nobody reads (and the graph
    inputs that only declared those initializers)."""
    needed = {o.name for o in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(list(graph.node)):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(node.input)
            needed.update(_subgraph_inputs(node))
    kept.reverse()
    del graph.node[:]
    graph.node.extend(kept)
    unused = [t for t in graph.initializer if t.name not in needed]
    unused_names = {t.name for t in unused}
    for init in unused:
        graph.initializer.remove(init)
    for info in [i for i in graph.input if i.name in unused_names]:
        graph.input.remove(info)


def _declare_initializers(graph: onnx.GraphProto) -> None:
    from onnx import helper

    declared = {i.name for i in graph.input}
    for init in graph.initializer:
        if init.name not in declared:
            graph.input.append(
                helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )


def _subgraph_inputs(node: onnx.NodeProto) -> set[str]:
    """Names read inside If/Loop/Scan bodies (they capture outer tensors)."""
    names: set[str] = set()
    for attribute in node.attribute:
        for sub in [attribute.g, *attribute.graphs] if attribute.type in (5, 10) else []:
            for inner in sub.node:
                names.update(inner.input)
                names.update(_subgraph_inputs(inner))
    return names
