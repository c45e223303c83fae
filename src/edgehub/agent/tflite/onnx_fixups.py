"""Making an ONNX model palatable to onnx2tf, so its known pitfalls never reach the user.

- Dynamic input dimensions are fixed (``input_shape``, else a dynamic batch becomes 1).
- Conv / ConvTranspose without ``kernel_shape`` (the dynamo exporter's) get it from their
  weight: onnx2tf fails on them ("axes don't match array").
- Names outside TensorFlow's scope-name pattern (``Softmax@0``, ``a:0``, ``/lead``) are
  renamed to ``[A-Za-z0-9_./>-]`` names; the renames are reported to map them back.
- Softmax / LogSoftmax / Hardmax before opset 13 (over the input flattened at ``axis``) get the
  opset-13 form, Flatten + op + Reshape: onnx2tf converts them as if over ``axis`` alone.
- Erf is written with LiteRT builtins (`expand_erf`): TensorFlow's Erf needs the Flex delegate.
- A pooling window as large as its input becomes the global pool it is (`..pooling`).
- A Div by a float constant becomes a Mul by its reciprocal (`divisions_as_products`).
- The rewrites of :mod:`.graph_rewrites` (0-d constants as vectors, LSTM zero states, softmax
  expectations as a Conv) and :mod:`.gathers` (a GatherND reading its data in order).
- Ops onnx2tf has no converter for are reported up front with their node names.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from ..models import constant_tensors, drop_unused, graph_inputs, replace_items, static_shapes
from ..pooling import globalize_pools
from ..protocol import ModelError, UsageError
from ..report import Report
from ..shapes import fix_input_shapes, named_sizes, parse_input_shape, shape_example
from ..tensors import TensorSpec
from .gathers import gathers_as_reshapes
from .graph_rewrites import (
    add_initializer,
    expectations_as_conv,
    scalars_as_vectors,
    zero_states_at_run_time,
)
from .simplifier import onnx2tf_ops

_INVALID = re.compile(r"[^A-Za-z0-9_./>-]")
_VALID_START = re.compile(r"^[A-Za-z0-9.]")


def static_shapes_to_fix(
    specs: Sequence[TensorSpec], raw: Any, report: Report
) -> dict[str, list[int]]:
    """Shapes to fix: ``raw`` (``input_shape``); every other dynamic input's named dims from
    the inputs that share them; a dynamic leading (batch) dim set nowhere else is 1, and so is
    its name wherever it appears."""
    shapes = parse_input_shape(raw, specs) if raw is not None else {}
    symbols = named_sizes(shapes, {spec.name: spec.shape or [] for spec in specs})
    pending = [spec for spec in specs if spec.name not in shapes and spec.is_dynamic]
    for spec in pending:
        lead = spec.shape[0] if spec.shape else 0
        if lead is None or (isinstance(lead, str) and lead not in symbols):
            report.warn(f"input '{spec.name}' has a dynamic batch dimension: converted with 1")
            if isinstance(lead, str):
                symbols[lead] = 1
    unresolved = []
    for spec in pending:
        if spec.shape is None:
            unresolved.append(spec.describe())
            continue
        dims = [symbols.get(d, d) if isinstance(d, str) else d for d in spec.shape]
        dims[0] = 1 if dims[0] is None else dims[0]
        fixed = [d for d in dims if isinstance(d, int)]
        if len(fixed) != len(dims):
            unresolved.append(TensorSpec(spec.name, spec.dtype, dims).describe())
            continue
        shapes[spec.name] = fixed
    if unresolved:
        raise UsageError(
            f"TFLite needs static input shapes but {', '.join(unresolved)} has dynamic "
            f"dimensions: pass input_shape; {shape_example(specs)}"
        )
    return shapes


def add_kernel_shapes(model: Any, report: Report) -> list[str]:
    """Give Conv/ConvTranspose nodes without ``kernel_shape`` the one their weight implies."""
    from onnx import helper

    weights = {name: list(t.dims) for name, t in constant_tensors(model.graph).items()}
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


_FLATTENING_OPS = ("Softmax", "LogSoftmax", "Hardmax")


def flatten_old_softmax(model: Any, report: Report) -> list[str]:
    """Rewrite pre-opset-13 Softmax-like nodes over rank > 2 inputs to their opset-13 form."""
    from onnx import helper

    opset = next((e.version for e in model.opset_import if e.domain in ("", "ai.onnx")), 13)
    candidates = [n for n in model.graph.node if n.op_type in _FLATTENING_OPS]
    if opset >= 13 or not candidates:
        return []
    shapes = static_shapes(model)
    rewritten = []
    nodes = list(model.graph.node)
    for node in candidates:
        shape = shapes.get(node.input[0])
        axis = next((int(a.i) for a in node.attribute if a.name == "axis"), 1)
        if shape is None or len(shape) <= 2:
            continue
        axis = axis + len(shape) if axis < 0 else axis
        if axis == len(shape) - 1:
            continue  # flattening at the last axis changes nothing
        name = node.name or node.output[0]
        flat, out = f"{name}_flat", f"{name}_flat_out"
        target = add_initializer(model, np.asarray(shape, dtype=np.int64), f"{name}_shape")
        flatten = helper.make_node(
            "Flatten", [node.input[0]], [flat], name=f"{name}_flatten", axis=axis
        )
        reshape = helper.make_node(
            "Reshape", [out, target], [node.output[0]], name=f"{name}_reshape"
        )
        node.input[0] = flat
        node.output[0] = out
        for attr in list(node.attribute):
            if attr.name == "axis":
                node.attribute.remove(attr)
        index = nodes.index(node)
        nodes[index : index + 1] = [flatten, node, reshape]
        rewritten.append(name)
    if rewritten:
        replace_items(model.graph.node, nodes)
        report.info(
            f"{len(rewritten)} pre-opset-13 Softmax-like node(s) rewritten as Flatten + op + "
            "Reshape (onnx2tf converts their axis wrongly)"
        )
    return rewritten


# Abramowitz and Stegun 7.1.26: erf(x) = sign(x) (1 - (a1 t + ... + a5 t^5) exp(-x^2)) with
# t = 1 / (1 + p |x|), within 1.5e-7 of erf
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def expand_erf(model: Any, report: Report) -> list[str]:
    """Rewrite each float Erf node with ops LiteRT has builtins for (see `_ERF_P`); returns the
    nodes rewritten. LiteRT has no Erf (only the Flex delegate runs TensorFlow's); onnx2tf's own
    pseudo Erf divides by ``|x| + 1e-11``, a divisor int8 rounds to zero."""
    graph = model.graph
    candidates = [n for n in graph.node if n.op_type == "Erf" and n.domain in ("", "ai.onnx")]
    if not candidates:
        return []
    values = {"one": 1.0, "p": _ERF_P, **{f"a{i + 1}": a for i, a in enumerate(_ERF_A)}}
    names = {
        key: add_initializer(model, np.array(value, dtype=np.float32), f"edgehub_erf_{key}")
        for key, value in values.items()
    }
    nodes = list(graph.node)
    rewritten = []
    for node in candidates:
        name = node.name or node.output[0]
        made = _erf_nodes(node.input[0], node.output[0], f"{name}_erf", names)
        index = nodes.index(node)
        nodes[index : index + 1] = made
        rewritten.append(name)
    replace_items(graph.node, nodes)
    report.info(
        f"Erf written with LiteRT builtins ({len(rewritten)} node(s); within 5e-7 of erf): "
        "LiteRT has no Erf of its own"
    )
    return rewritten


def divisions_as_products(model: Any) -> list[str]:
    """Rewrite each Div by a float constant (an attention's ``/ sqrt(d)``) as a Mul by its
    reciprocal (the same to a rounding); returns the nodes rewritten. onnx2tf folds a Mul by a
    constant into the Div after it and can then emit the divisor itself as the Div's value."""
    from onnx import numpy_helper

    graph = model.graph
    constants = constant_tensors(graph)
    made: dict[str, str] = {}
    rewritten = []
    for node in graph.node:
        if node.op_type != "Div" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
            continue
        divisor = node.input[1]
        if divisor not in made:
            if divisor not in constants:
                continue
            value = numpy_helper.to_array(constants[divisor])
            if value.dtype.kind != "f" or value.size > 1 or not np.all(np.isfinite(value)):
                continue
            if np.any(value == 0):
                continue
            made[divisor] = add_initializer(
                model, (1 / value).astype(value.dtype), f"{divisor}_reciprocal"
            )
        node.op_type = "Mul"
        node.input[1] = made[divisor]
        rewritten.append(node.name or node.output[0])
    drop_unused(model, set(made))
    return rewritten


def _erf_nodes(x: str, y: str, prefix: str, constants: dict[str, str]) -> list[Any]:
    """The nodes computing ``y = erf(x)`` by A&S 7.1.26 from the named ``constants``."""
    from onnx import helper

    made: list[Any] = []

    def op(kind: str, *inputs: str, out: str | None = None) -> str:
        result = out or f"{prefix}_{len(made)}"
        made.append(helper.make_node(kind, list(inputs), [result], name=result))
        return result

    size = op("Abs", x)
    t = op("Reciprocal", op("Add", op("Mul", size, constants["p"]), constants["one"]))
    poly = op("Mul", constants["a5"], t)
    for key in ("a4", "a3", "a2", "a1"):
        poly = op("Mul", op("Add", poly, constants[key]), t)
    decay = op("Exp", op("Neg", op("Mul", size, size)))
    op("Mul", op("Sign", x), op("Sub", constants["one"], op("Mul", poly, decay)), out=y)
    return made


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
    available = onnx2tf_ops()
    if available is None:
        return []
    return [
        f"{n.op_type} (node '{n.name}')" for n in model.graph.node if n.op_type not in available
    ]


# the info line of each rewrite that writes none itself: {count} and {names} of its nodes
_NOTES = {
    "divisions_as_products": "{count} division(s) by a constant written as products",
    "scalars_as_vectors": (
        "{count} scalar constant operand(s) given as 1-element tensors (onnx2tf mistakes a 0-d "
        "constant for a layer output)"
    ),
    "lstm_zero_states": (
        "{names}: LSTM given its zero initial state computed at run time (onnx2tf's LSTM fails "
        "without an initial state; a constant one is folded away)"
    ),
    "gathers_as_reshapes": (
        "{names}: a GatherND reading its data whole and in order written as a Reshape (onnx2tf "
        "mislays the rank-5 indices of an attention mask)"
    ),
    "expectations_as_conv": (
        "{names}: a softmax expectation over an axis written as a 1x1 Conv over channels "
        "(onnx2tf loses the layout of the 4-D softmax and its sum)"
    ),
    "pools_made_global": (
        "{names}: a pooling window as large as its input, converted as the global pooling it "
        "is (onnx2tf would pad the input to the window's size)"
    ),
}


def prepare(model: Any, raw_shape: Any, report: Report) -> dict[str, Any]:
    """Apply every fix to ``model`` in place; returns what was done, for the result."""
    specs = graph_inputs(model)
    shapes = static_shapes_to_fix(specs, raw_shape, report)
    if shapes:
        for note in fix_input_shapes(model, shapes):
            report.warn(note)
    done: dict[str, Any] = {  # in this order
        "input_shapes": shapes,
        "kernel_shape_added": add_kernel_shapes(model, report),
        "softmax_flattened": flatten_old_softmax(model, report),
        "erf_expanded": expand_erf(model, report),
        "pools_made_global": globalize_pools(model),
        "divisions_as_products": divisions_as_products(model),
        "scalars_as_vectors": scalars_as_vectors(model),
        "lstm_zero_states": zero_states_at_run_time(model),
        "gathers_as_reshapes": gathers_as_reshapes(model),
        "expectations_as_conv": expectations_as_conv(model),
    }
    for key, note in _NOTES.items():
        if done[key]:
            report.info(note.format(count=len(done[key]), names=", ".join(done[key])))
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
    done["divisions_as_products"] = len(done["divisions_as_products"])
    done["scalars_as_vectors"] = len(done["scalars_as_vectors"])
    done["renamed"] = renamed
    return done
