"""Pooling windows as large as the input, written as the global pooling they are.

Some exporters write a global pool as an AveragePool / MaxPool whose kernel covers the whole
input (Hugging Face's EfficientNet pools its 4x4 features with a 640x640 kernel and ceil_mode):
onnx2tf pads the input to the kernel's size (gigabytes of memory), and TensorRT's parser refuses
a window larger than its input. Where the input's spatial size is known, there is no padding or
dilation, and every window covers it (kernel at least the input, ceil_mode where larger), the
node becomes GlobalAveragePool / GlobalMaxPool: one window over the whole input, the same values.
Sizes come from ONNX shape inference, else (padding computed from the input's shape leaves them
unknown) from one onnxruntime run at the inputs' static shapes, where onnxruntime is installed.
"""

from __future__ import annotations

from typing import Any

_POOLS = {"AveragePool": "GlobalAveragePool", "MaxPool": "GlobalMaxPool"}


def _spatial_sizes(model: Any) -> dict[str, list[int | None]]:
    """Each tensor's dims after shape inference (None where unknown); empty where it fails."""
    from onnx import shape_inference

    try:
        inferred = shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # shape inference is a help here, never a requirement
        return {}
    graph = inferred.graph
    sizes: dict[str, list[int | None]] = {}
    for value_info in [*graph.value_info, *graph.input]:
        tensor_type = value_info.type.tensor_type
        if tensor_type.HasField("shape"):
            sizes[value_info.name] = [
                int(d.dim_value) if d.HasField("dim_value") else None for d in tensor_type.shape.dim
            ]
    return sizes


def _measured_sizes(model: Any, names: list[str]) -> dict[str, list[int | None]]:
    """The dims of tensors ``names`` from one onnxruntime run on random inputs, where every
    input's shape is static and onnxruntime is installed; else empty."""
    import importlib.util

    from .models import graph_inputs
    from .tensors import random_inputs

    specs = graph_inputs(model)
    if importlib.util.find_spec("onnxruntime") is None or any(
        s.shape is None or not all(isinstance(d, int) for d in s.shape) for s in specs
    ):
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


def _covers_input(attrs: dict[str, Any], spatial: list[int | None]) -> bool:
    kernel = list(attrs.get("kernel_shape", []))
    if not kernel or len(kernel) != len(spatial) or any(s is None for s in spatial):
        return False
    if any(p != 0 for p in attrs.get("pads", [])) or any(
        d != 1 for d in attrs.get("dilations", [])
    ):
        return False
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID"):
        return False
    if attrs.get("storage_order", 0):  # MaxPool's second output's order: not written here
        return False
    sizes = [int(s) for s in spatial if s is not None]
    if any(k < s for k, s in zip(kernel, sizes)):
        return False
    larger = any(k > s for k, s in zip(kernel, sizes))
    return not larger or bool(attrs.get("ceil_mode", 0))


def globalize_pools(model: Any) -> list[str]:
    """Rewrite in place every pooling node whose window covers its whole input (module
    docstring); returns their names."""
    from onnx import helper

    candidates = [
        n
        for n in model.graph.node
        if n.op_type in _POOLS and n.domain in ("", "ai.onnx") and len(n.output) == 1
    ]
    if not candidates:
        return []
    sizes = _spatial_sizes(model)
    unknown = [
        n.input[0] for n in candidates if None in (sizes.get(n.input[0]) or [None, None, None])[2:]
    ]
    if unknown:
        sizes.update(_measured_sizes(model, sorted(set(unknown))))
    rewritten = []
    for node in candidates:
        dims = sizes.get(node.input[0])
        if not dims or len(dims) < 3:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if not _covers_input(attrs, dims[2:]):
            continue
        node.op_type = _POOLS[node.op_type]
        del node.attribute[:]
        rewritten.append(node.name or node.output[0])
    return rewritten
