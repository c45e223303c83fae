"""Pooling windows as large as the input, written as the global pooling they are.

Some exporters write a global pool as an AveragePool / MaxPool whose kernel covers the whole
input (Hugging Face's EfficientNet: a 640x640 kernel with ceil_mode on 4x4 features): onnx2tf
pads the input to the kernel's size (gigabytes), and TensorRT's parser refuses the window. Where
the input's spatial size is known, there is no dilation and the node's one window per axis
covers the whole input, pads included (output size 1 by the ONNX formula), the node becomes
GlobalAveragePool / GlobalMaxPool: the same values where the pads change nothing (none, a
MaxPool's, or an AveragePool's with count_include_pad 0). Sizes come from shape inference at
``shapes`` (the input shapes compiled for) once small constant subgraphs (an exported Pad's
pads) are folded, else from one onnxruntime run at static input shapes.
"""

from __future__ import annotations

import math
from typing import Any

_POOLS = {"AveragePool": "GlobalAveragePool", "MaxPool": "GlobalMaxPool"}
_SMALL = 4096  # elements: a constant this small is a shape, pads or axes, cheap to fold


def fold_small_constants(model: Any) -> int:
    """Replace (in place) the nodes computing small tensors from small constants alone by
    initializers, with onnx's reference evaluator, so shape inference can read them (a Pad
    whose pads an exporter computes); returns how many nodes went."""
    from onnx import ValueInfoProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    known = {t.name for t in graph.initializer if math.prod(t.dims) <= _SMALL}
    folded: list[Any] = []
    for node in graph.node:
        inputs = [i for i in node.input if i]
        plain = node.domain in ("", "ai.onnx") and not any(a.g.node for a in node.attribute)
        if plain and all(i in known for i in inputs) and (inputs or node.op_type == "Constant"):
            folded.append(node)
            known.update(node.output)
    if not folded:
        return 0
    used = {i for n in folded for i in n.input}
    small = [t for t in graph.initializer if t.name in used]
    names = [o for n in folded for o in n.output if o]
    probe = helper.make_model(
        helper.make_graph(folded, "constants", [], [ValueInfoProto(name=n) for n in names], small),
        opset_imports=list(model.opset_import),
    )
    try:
        values = ReferenceEvaluator(probe).run(names, {})
    except Exception:  # an op the reference evaluator lacks: shape inference does without
        return 0
    results = dict(zip(names, values))
    gone = [n for n in folded if all(results[o].size <= _SMALL for o in n.output)]
    for node in gone:
        for name in node.output:
            graph.initializer.append(numpy_helper.from_array(results[name], name))
        graph.node.remove(node)
    return len(gone)


def _measured_sizes(model: Any, names: list[str]) -> dict[str, list[int | None]]:
    """The dims of tensors ``names`` from one onnxruntime run on random inputs, where every
    input's shape is static and onnxruntime is installed; else empty."""
    import importlib.util

    from .models import graph_inputs
    from .tensors import random_inputs

    specs = graph_inputs(model)
    if importlib.util.find_spec("onnxruntime") is None or any(s.is_dynamic for s in specs):
        return {}
    import onnx
    import onnxruntime

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
    try:
        session = onnxruntime.InferenceSession(
            probe.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        values = session.run(names, random_inputs(specs, seed=0)[0])
    except Exception:  # too large to serialize, or it does not run here: no rewrite then
        return {}
    return {name: [int(d) for d in value.shape] for name, value in zip(names, values)}


def _one_window(kind: str, attrs: dict[str, Any], spatial: list[int | None]) -> bool:
    """Whether the pool has one output per spatial axis, its window covering the whole input
    with pads that change no value (module docstring)."""
    rank = len(spatial)
    kernel = [int(k) for k in attrs.get("kernel_shape", [])]
    if not kernel or len(kernel) != rank or any(s is None for s in spatial):
        return False
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID"):
        return False
    if any(d != 1 for d in attrs.get("dilations", [])):
        return False
    if attrs.get("storage_order", 0):  # MaxPool's second output's order: not written here
        return False
    pads = [int(p) for p in attrs.get("pads", [])] or [0] * (2 * rank)
    if attrs.get("auto_pad", b"NOTSET") == b"VALID":
        pads = [0] * (2 * rank)
    strides = [int(s) for s in attrs.get("strides", [])] or [1] * rank
    if len(pads) != 2 * rank or len(strides) != rank or min(strides) < 1:
        return False
    if any(pads) and kind == "AveragePool" and attrs.get("count_include_pad", 0):
        return False
    ceil = bool(attrs.get("ceil_mode", 0))
    for axis, size in enumerate(int(s) for s in spatial if s is not None):
        begin, end, k, stride = pads[axis], pads[axis + rank], kernel[axis], strides[axis]
        span = size + begin + end - k
        outputs = (-(-span // stride) if ceil else span // stride) + 1
        if outputs != 1 or k - begin < size:
            return False
    return True


def globalize_pools(model: Any, shapes: dict[str, list[int]] | None = None) -> list[str]:
    """Rewrite in place every pooling node whose one window covers its whole input (module
    docstring), its sizes found at input ``shapes`` where given; returns their names."""
    import onnx

    from .models import inferred_dims
    from .protocol import UsageError
    from .shapes import fix_input_shapes

    candidates = [
        n
        for n in model.graph.node
        if n.op_type in _POOLS and n.domain in ("", "ai.onnx") and len(n.output) == 1
    ]
    if not candidates:
        return []
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    if shapes:
        try:
            fix_input_shapes(probe, shapes)
        except UsageError:  # the caller reports shapes that do not fit; sizes stay unknown
            pass
    fold_small_constants(probe)
    sizes = inferred_dims(probe, data_prop=True) or {}  # a help here, never a requirement
    unknown = [
        n.input[0] for n in candidates if None in (sizes.get(n.input[0]) or [None, None, None])[2:]
    ]
    if unknown:
        sizes.update(_measured_sizes(probe, sorted(set(unknown))))
    rewritten = []
    for node in candidates:
        dims = sizes.get(node.input[0])
        if not dims or len(dims) < 3:
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if not _one_window(node.op_type, attrs, dims[2:]):
            continue
        node.op_type = _POOLS[node.op_type]
        del node.attribute[:]
        rewritten.append(node.name or node.output[0])
    return rewritten
