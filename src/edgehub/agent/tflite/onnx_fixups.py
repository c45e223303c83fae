"""Making an ONNX model palatable to onnx2tf, so its known pitfalls never reach the user.

- Dynamic input dimensions are fixed (``input_shape``, else a dynamic batch becomes 1); any
  other dynamic dimension needs ``input_shape`` (onnx2tf would need ``-ois``/``-b``).
- Conv / ConvTranspose nodes without ``kernel_shape`` (legal ONNX, e.g. from the PyTorch dynamo
  exporter) get it from their weight's shape; onnx2tf fails on them with "axes don't match
  array".
- Node and tensor names outside TensorFlow's scope-name pattern (``Softmax@0``, ``a:0``,
  ``/leading/slash``) are renamed to ``[A-Za-z0-9_./>-]`` names starting with a letter or digit;
  the graph's input and output names are reported so the caller can map them back.
- Ops onnx2tf has no converter for are reported up front with their node names.
"""

from __future__ import annotations

import importlib.util
import os
import re
from typing import Any, Sequence

from ..models import graph_inputs
from ..protocol import ModelError, UsageError
from ..report import Report
from ..shapes import fix_input_shapes, parse_input_shape
from ..tensors import TensorSpec

_INVALID = re.compile(r"[^A-Za-z0-9_./>-]")
_VALID_START = re.compile(r"^[A-Za-z0-9.]")


def static_shapes(specs: Sequence[TensorSpec], raw: Any, report: Report) -> dict[str, list[int]]:
    """Shapes to fix: ``raw`` (``input_shape``), plus a dynamic leading (batch) dim set to 1."""
    shapes = parse_input_shape(raw, specs) if raw is not None else {}
    unresolved = []
    for spec in specs:
        if spec.name in shapes or not spec.is_dynamic:
            continue
        if spec.shape is None:
            unresolved.append(spec.describe())
            continue
        dims = list(spec.shape)
        if not isinstance(dims[0], int):
            dims[0] = 1
            spec = TensorSpec(spec.name, spec.dtype, dims)
            report.warn(f"input '{spec.name}' has a dynamic batch dimension: converted with 1")
        fixed = [d for d in dims if isinstance(d, int)]
        if len(fixed) != len(dims):
            unresolved.append(spec.describe())
            continue
        shapes[spec.name] = fixed
    if unresolved:
        raise UsageError(
            f"TFLite needs static input shapes but {', '.join(unresolved)} has dynamic "
            "dimensions: pass input_shape, e.g. [1, 3, 224, 224] (or {input name: shape})"
        )
    return shapes


def _constant_shapes(graph: Any) -> dict[str, list[int]]:
    shapes = {t.name: list(t.dims) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    shapes[node.output[0]] = list(attr.t.dims)
    return shapes


def add_kernel_shapes(model: Any, report: Report) -> list[str]:
    """Give Conv/ConvTranspose nodes without ``kernel_shape`` the one their weight implies."""
    from onnx import helper

    weights = _constant_shapes(model.graph)
    fixed = []
    for node in model.graph.node:
        if node.op_type not in ("Conv", "ConvTranspose") or len(node.input) < 2:
            continue
        if any(attr.name == "kernel_shape" for attr in node.attribute):
            continue
        shape = weights.get(node.input[1])
        if shape is None or len(shape) < 3:
            report.warn(
                f"{node.op_type} node '{node.name}' has no kernel_shape and its weight is not a "
                "constant: onnx2tf may fail on it"
            )
            continue
        node.attribute.append(helper.make_attribute("kernel_shape", [int(d) for d in shape[2:]]))
        fixed.append(node.name or node.output[0])
    if fixed:
        report.info(f"kernel_shape inferred from the weights for {len(fixed)} Conv node(s)")
    return fixed


def _clean(name: str, taken: set[str], fallback: str) -> str:
    cleaned = _INVALID.sub("_", name).lstrip("/")
    if not cleaned or not _VALID_START.match(cleaned):
        cleaned = f"t{cleaned}" if cleaned else fallback
    candidate, n = cleaned, 1
    while candidate in taken:
        n += 1
        candidate = f"{cleaned}_{n}"
    taken.add(candidate)
    return candidate


def _needs_cleaning(name: str) -> bool:
    return bool(_INVALID.search(name)) or not _VALID_START.match(name)


def sanitize_names(model: Any) -> dict[str, str]:
    """Rename nodes and tensors TensorFlow rejects; returns {old tensor name: new} for renamed
    tensors (graph inputs and outputs included)."""
    graph = model.graph
    tensors: list[str] = [v.name for v in graph.input] + [t.name for t in graph.initializer]
    for node in graph.node:
        tensors.extend(node.output)
    taken = {n for n in tensors if n and not _needs_cleaning(n)}
    renamed = {
        n: _clean(n, taken, "tensor") for n in dict.fromkeys(tensors) if n and _needs_cleaning(n)
    }
    node_names: set[str] = {n.name for n in graph.node if n.name and not _needs_cleaning(n.name)}
    for index, node in enumerate(graph.node):
        if not node.name or _needs_cleaning(node.name):
            node.name = _clean(node.name, node_names, f"{node.op_type}_{index}")
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
        for i, name in enumerate(node.output):
            if name in renamed:
                node.output[i] = renamed[name]
    for value_info in [*graph.input, *graph.output, *graph.value_info]:
        if value_info.name in renamed:
            value_info.name = renamed[value_info.name]
    for tensor in graph.initializer:
        if tensor.name in renamed:
            tensor.name = renamed[tensor.name]
    return renamed


def unsupported_ops(model: Any) -> list[str]:
    """``op (node)`` for each node onnx2tf has no converter module for (empty if unknown)."""
    spec = importlib.util.find_spec("onnx2tf")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        return []
    ops_dir = os.path.join(locations[0], "ops")
    if not os.path.isdir(ops_dir):
        return []
    available = {name[:-3] for name in os.listdir(ops_dir) if name.endswith(".py")}
    missing = []
    for node in model.graph.node:
        if node.op_type not in available:
            missing.append(f"{node.op_type} (node '{node.name}')")
    return missing


def prepare(model: Any, raw_shape: Any, report: Report) -> dict[str, Any]:
    """Apply every fix to ``model`` in place; returns what was done, for the result."""
    specs = graph_inputs(model)
    shapes = static_shapes(specs, raw_shape, report)
    if shapes:
        for note in fix_input_shapes(model, shapes):
            report.warn(note)
    kernel_fixed = add_kernel_shapes(model, report)
    renamed = sanitize_names(model)
    if renamed:
        shown = ", ".join(f"{a!r} -> {b!r}" for a, b in list(renamed.items())[:5])
        more = f" and {len(renamed) - 5} more" if len(renamed) > 5 else ""
        report.info(f"renamed {len(renamed)} tensor(s) TensorFlow rejects: {shown}{more}")
    missing = unsupported_ops(model)
    if missing:
        raise ModelError(
            "onnx2tf has no converter for "
            + ", ".join(missing[:5])
            + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            + ": replace these ops before converting to TFLite"
        )
    return {"input_shapes": shapes, "kernel_shape_added": kernel_fixed, "renamed": renamed}


def original_name(renamed: dict[str, str], name: str) -> str | None:
    for old, new in renamed.items():
        if new == name:
            return old
    return None
