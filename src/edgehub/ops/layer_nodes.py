"""Engine layers mapped back to the ONNX nodes they came from (for `hub runs report`).

A runtime's profiler names its layers after the graph it ran, not the model file: ONNX
Runtime's optimizers name a layer after a node or after the tensor it writes, with suffixes
(``r1_nchwc`` for the NCHWc Conv that writes ``r1``, ``conv_fused``, ``..._token_5`` where a name
was taken); TensorRT joins fused layers with `` + ``. The rule, per layer name:

1. Split it at `` + `` into parts; strip from each part, repeatedly, the optimizers' suffixes
   (``_nchwc``, ``_fused``, ``_token_N``...) and a ``fused `` prefix, trying each shorter name.
2. A name is a node's name, or else the name of a tensor (the node that writes it).
3. A layer whose op differs from its node's (``r1``'s Conv against ``relu1``'s Relu) absorbed
   the nodes upstream of it: walk back through single-consumer producers to a node of the
   layer's op; all of them form its group (``conv1+relu1``).

A layer no name of which is found (``ReorderOutput_token_5``, which the runtime inserted) keeps
its own name and is marked unmapped. Groups are labelled by their nodes in graph order, joined
with ``+``; the axis orders labels by graph position, the unmapped last.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


# what ONNX Runtime's optimizers append to a node's or tensor's name
_SUFFIX = re.compile(r"(_token_\d+|_nchwc|_fused|_NchwcTransformer|_output_\d+)$", re.IGNORECASE)
_PREFIX = re.compile(r"^(fused[ _])", re.IGNORECASE)
_MAX_WALK = 4  # nodes a fused layer absorbs upstream of the one it is named after


@dataclass(frozen=True)
class NodeGroup:
    """The ONNX nodes one engine layer ran (``label``: ``a+b``), its graph position (the last
    node's index; unmapped: a large number) and whether it was mapped at all."""

    label: str
    position: int
    mapped: bool


@dataclass
class GraphNodes:
    """A model's nodes: names, ops, inputs and outputs by index (graph order)."""

    names: list[str]
    ops: list[str]
    inputs: list[list[str]]
    outputs: list[list[str]]

    def __post_init__(self) -> None:
        self._by_name = {name: i for i, name in enumerate(self.names) if name}
        self._writer = {t: i for i, outs in enumerate(self.outputs) for t in outs if t}
        self._readers = Counter(tensor for ins in self.inputs for tensor in ins)

    def group(self, layer: str, op: str) -> NodeGroup:
        """The nodes engine layer ``layer`` (of op ``op``) came from; see the module."""
        found: list[int] = []
        for part in layer.split(" + "):
            anchor = self._anchor(part.strip())
            if anchor is not None:
                found += self._absorbed(anchor, op)
        if not found:
            return NodeGroup(f"{layer} (unmapped)", 1 << 30, False)
        ordered = sorted(set(found))
        label = "+".join(self.names[i] or f"{self.ops[i]}_{i}" for i in ordered)
        return NodeGroup(label, ordered[-1], True)

    def _anchor(self, name: str) -> int | None:
        for candidate in _candidates(name):
            if candidate in self._by_name:
                return self._by_name[candidate]
            if candidate in self._writer:
                return self._writer[candidate]
        return None

    def _absorbed(self, anchor: int, op: str) -> list[int]:
        """``anchor`` and, when the layer's op is not the anchor's, the single-consumer
        producers up to one of the layer's op."""
        wanted = op.removeprefix("Fused")
        if not wanted or self.ops[anchor] == wanted:
            return [anchor]
        chain, node = [anchor], anchor
        for _ in range(_MAX_WALK):
            producer = next((self._writer[t] for t in self.inputs[node] if t in self._writer), None)
            if producer is None or any(self._readers.get(t, 0) > 1 for t in self.outputs[producer]):
                break
            chain.append(producer)
            if self.ops[producer] == wanted:
                return chain
            node = producer
        return [anchor]


def _candidates(name: str) -> list[str]:
    """``name`` and each shorter name left by stripping one optimizer suffix or prefix."""
    names = [name]
    while True:
        shorter = _PREFIX.sub("", _SUFFIX.sub("", names[-1]))
        if not shorter or shorter == names[-1]:
            return names
        names.append(shorter)


def load_graph_nodes(path: Path) -> GraphNodes | None:
    """The nodes of the ONNX model at ``path`` (weights not loaded); None when it is no
    readable ONNX model or the onnx package is missing."""
    try:
        import onnx
    except ImportError:
        return None
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # not an ONNX model (a .tflite, an engine): nothing to map onto
        return None
    nodes = model.graph.node
    return GraphNodes(
        names=[n.name for n in nodes],
        ops=[n.op_type for n in nodes],
        inputs=[list(n.input) for n in nodes],
        outputs=[list(n.output) for n in nodes],
    )
