"""Finding, loading, describing and saving ONNX model files (onnx is imported lazily).

A model is a ``.onnx`` file (its external data, if any, beside it) or a directory holding exactly
one ``.onnx`` file and its external data.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from .protocol import MissingDependencyError, ModelError, one_line
from .tensors import ONNX_ELEM_TYPES, Dim, Shape, TensorSpec, is_named_dim

# Above this many bytes of initializers a model is saved with external data (protobuf's limit
# for one message is 2 GiB).
EXTERNAL_DATA_THRESHOLD = 1_800_000_000


def import_onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:
        raise MissingDependencyError(
            f"this command needs the 'onnx' package, which cannot be imported here ({exc}): "
            "install onnx next to onnxruntime (pip install onnx)"
        ) from exc
    return onnx


def resolve_model_path(path: str) -> Path:
    """The .onnx file for ``path`` (a file, or a directory with exactly one .onnx)."""
    p = Path(path)
    if not p.exists():
        raise ModelError(
            f"model '{path}' does not exist: check the path "
            f"(relative paths are resolved from {os.getcwd()})"
        )
    if p.is_dir():
        found = sorted(c for c in p.iterdir() if c.suffix == ".onnx" and c.is_file())
        if len(found) != 1:
            listed = ", ".join(c.name for c in found) or "none"
            raise ModelError(
                f"model directory '{path}' holds {len(found)} .onnx files ({listed}): a model "
                "directory must hold exactly one .onnx file (its external data beside it)"
            )
        return found[0]
    return p


def not_onnx_error(path: Path) -> ModelError:
    return ModelError(
        f"'{path.name}' is not an ONNX model (protobuf parse failed): export the model to .onnx "
        "first"
    )


def load_model(path: Path, load_external_data: bool = True) -> Any:
    """Parse ``path`` into a ModelProto; a file that is not ONNX is a ModelError."""
    onnx = import_onnx()
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise not_onnx_error(path) from exc
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise not_onnx_error(path)
    if load_external_data:
        attach_external_data(model, path)
    return model


def attach_external_data(model: Any, path: Path) -> None:
    """Load into ``model`` (read from ``path`` without it) the external data it references."""
    if not uses_external_data(model):
        return
    try:
        from onnx.external_data_helper import load_external_data_for_model

        load_external_data_for_model(model, str(path.parent))
    except Exception as exc:
        raise ModelError(
            f"'{path.name}' references external data that cannot be read "
            f"({one_line(str(exc))}): keep the .data file(s) beside the .onnx file"
        ) from exc


def _subgraphs(node: Any) -> list[Any]:
    """The graphs ``node``'s attributes hold (If/Loop/Scan bodies)."""
    return [
        graph
        for attr in node.attribute
        for graph in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
    ]


def _initializers(model: Any) -> list[Any]:
    found = list(model.graph.initializer)
    stack = list(model.graph.node)
    while stack:  # initializers of subgraphs, at any depth
        for graph in _subgraphs(stack.pop()):
            found.extend(graph.initializer)
            stack.extend(graph.node)
    return found


def external_locations(model: Any) -> list[str]:
    """The external data files the model's tensors point to (unique, in order)."""
    locations: list[str] = []
    for tensor in _initializers(model):
        if tensor.data_location == 1:  # TensorProto.EXTERNAL
            for entry in tensor.external_data:
                if entry.key == "location" and entry.value not in locations:
                    locations.append(entry.value)
    return locations


def uses_external_data(model: Any) -> bool:
    return bool(external_locations(model))


def model_size_bytes(path: Path, model: Any | None = None) -> int:
    """Size on disk of the .onnx file plus its external data files."""
    if model is None:
        try:
            model = load_model(path, load_external_data=False)
        except Exception:
            return path.stat().st_size
    total = path.stat().st_size
    for location in external_locations(model):
        data = path.parent / location
        if data.is_file():
            total += data.stat().st_size
    return total


def constant_tensors(graph: Any) -> dict[str, Any]:
    """Initializers and ``Constant`` node values (as TensorProto), by tensor name."""
    found = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    found[node.output[0]] = attr.t
    return found


def inferred_dims(model: Any, data_prop: bool = False) -> dict[str, list[int | None]] | None:
    """The dims shape inference finds for each tensor it gives a shape (None where a dim is
    unknown); None where inference fails."""
    from onnx import shape_inference

    try:
        graph = shape_inference.infer_shapes(model, strict_mode=False, data_prop=data_prop).graph
    except Exception:
        return None
    return {
        info.name: [int(d.dim_value) if d.HasField("dim_value") else None for d in dims]
        for info in [*graph.value_info, *graph.input, *graph.output]
        if info.type.tensor_type.HasField("shape")
        for dims in [info.type.tensor_type.shape.dim]
    }


def static_shapes(model: Any, data_prop: bool = False) -> dict[str, list[int]]:
    """The fully static shapes of `inferred_dims` (empty where inference fails)."""
    found = inferred_dims(model, data_prop) or {}
    return {n: [d for d in dims if d is not None] for n, dims in found.items() if None not in dims}


def initializer_bytes(model: Any) -> int:
    return sum(len(t.raw_data) for t in _initializers(model))


def save_model(model: Any, path: Path) -> None:
    """Save ``model``; with external data (``<name>.data``) when it is too big for one file."""
    onnx = import_onnx()
    path.parent.mkdir(parents=True, exist_ok=True)
    if initializer_bytes(model) > EXTERNAL_DATA_THRESHOLD:
        onnx.save(
            model,
            str(path),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=f"{path.name}.data",
            size_threshold=1024,
        )
    else:
        onnx.save(model, str(path))


def _dims(value_info: Any) -> tuple[str, Shape]:
    if not value_info.type.HasField("tensor_type"):
        return str(value_info.type.WhichOneof("value") or "unknown"), None
    tensor_type = value_info.type.tensor_type
    dtype = ONNX_ELEM_TYPES.get(tensor_type.elem_type, f"elem_type_{tensor_type.elem_type}")
    if not tensor_type.HasField("shape"):
        return dtype, None
    return dtype, [_dim(d) for d in tensor_type.shape.dim]


def _dim(dim: Any) -> Dim:
    if dim.HasField("dim_value") and dim.dim_value >= 0:
        return int(dim.dim_value)
    if dim.HasField("dim_param") and is_named_dim(dim.dim_param):
        return str(dim.dim_param)
    return None


def graph_inputs(model: Any) -> list[TensorSpec]:
    """The model's real inputs (graph inputs that are not initializers), each integer input
    that indexes a table with the table's size (`index_limits`)."""
    initializers = {t.name for t in model.graph.initializer}
    limits = index_limits(model)
    return [
        TensorSpec(v.name, *_dims(v), limits.get(v.name))
        for v in model.graph.input
        if v.name not in initializers
    ]


# ops that pass an index tensor on with its values unchanged (only its shape or type changes)
_VALUE_PRESERVING = frozenset(
    {"Cast", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Expand", "Transpose",
     "Slice", "Split", "Concat", "Tile"}
)  # fmt: skip
# ops that make a constant table from one of the same shape (a quantized embedding)
_TABLE_PRESERVING = frozenset({"DequantizeLinear", "Cast", "Identity"})


def index_limits(model: Any) -> dict[str, int]:
    """Input name -> how far its values may go: an integer graph input that reaches a Gather's
    indices over a constant table (an embedding's rows, a token-type table of 2) must stay below
    the table's size, less any constant it was offset by on the way (per-column offsets into one
    table), and below the smallest such limit where it reaches several (one column each). It
    may pass through ops that keep its values, and Gathers of constant positions (a column).
    Inputs that index no table are absent."""
    import numpy as np
    from onnx import numpy_helper

    graph = model.graph
    values = constant_tensors(graph)
    tables: dict[str, list[int]] = {name: list(t.dims) for name, t in values.items()}
    consumers: dict[str, list[tuple[Any, int]]] = {}
    for node in graph.node:
        if node.op_type in _TABLE_PRESERVING and node.input and node.input[0] in tables:
            tables[node.output[0]] = tables[node.input[0]]
        for position, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, position))

    def largest(name: str) -> int | None:
        if name not in values:
            return None
        array = numpy_helper.to_array(values[name])
        return int(array.max()) if array.size and array.dtype.kind in "iu" else None

    limits: dict[str, int] = {}
    for value_info in graph.input:
        dtype, _ = _dims(value_info)
        if not dtype.startswith(("int", "uint")) or value_info.name in tables:
            continue
        found: list[int] = []
        seen = {value_info.name}
        frontier = [(value_info.name, 0)]  # a tensor holding the input's values + offset
        while frontier:
            name, offset = frontier.pop()
            for node, position in consumers.get(name, []):
                passed: int | None = None
                if node.op_type == "Gather" and position == 1 and node.input[0] in tables:
                    dims = tables[node.input[0]]
                    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                    if dims and -len(dims) <= axis < len(dims) and dims[axis] - offset > 0:
                        found.append(int(dims[axis]) - offset)
                elif node.op_type == "Gather" and position == 0 and node.input[1] in tables:
                    passed = offset  # a column of the input
                elif node.op_type == "Add" and len(node.input) == 2:
                    shift = largest(node.input[1 - position])
                    passed = None if shift is None or shift < 0 else offset + shift
                elif node.op_type in _VALUE_PRESERVING and (
                    position == 0 or node.op_type == "Concat"
                ):
                    passed = offset
                if passed is None:
                    continue
                for output in node.output:
                    if output and output not in seen:
                        seen.add(output)
                        frontier.append((output, passed))
        if found:
            limits[value_info.name] = max(1, int(np.min(found)))
    return limits


def graph_outputs(model: Any) -> list[TensorSpec]:
    return [TensorSpec(v.name, *_dims(v)) for v in model.graph.output]


def default_opset(model: Any) -> int | None:
    return next((int(e.version) for e in model.opset_import if e.domain in ("", "ai.onnx")), None)


def describe_model(model: Any) -> dict[str, Any]:
    """The ``inspect`` data for a loaded ModelProto."""
    producer = " ".join(p for p in (model.producer_name, model.producer_version) if p) or None
    return {
        "inputs": [s.to_json() for s in graph_inputs(model)],
        "outputs": [s.to_json() for s in graph_outputs(model)],
        "opset": default_opset(model),
        "opsets": {(e.domain or "ai.onnx"): int(e.version) for e in model.opset_import},
        "ir_version": int(model.ir_version),
        "producer": producer,
        "graph_name": model.graph.name or None,
        "num_nodes": len(model.graph.node),
        "external_data": external_locations(model),
    }


def inspect_onnx(path: Path) -> dict[str, Any]:
    """The ``inspect`` data of the ONNX model at ``path`` (read with onnx, without its external
    data): `describe_model`'s, with ``source: "onnx"``, ``size_bytes`` and ``path``."""
    model = load_model(path, load_external_data=False)
    data = describe_model(model)
    data.update(source="onnx", size_bytes=model_size_bytes(path, model), path=str(path))
    return data


def graph_nodes(path: Path) -> list[dict[str, Any]]:
    """The nodes of the model at ``path`` in graph order: ``{name, op, inputs, outputs}`` (a
    node without a name is named ``<op>_<index>``)."""
    model = load_model(path)
    return [
        {
            "name": node.name or f"{node.op_type}_{index}",
            "op": node.op_type,
            "inputs": [n for n in node.input if n],
            "outputs": [n for n in node.output if n],
        }
        for index, node in enumerate(model.graph.node)
    ]


def with_graph_outputs(path: Path, names: Sequence[str]) -> Path:
    """A copy of the model at ``path`` (``.probe-<name>`` beside it) whose graph outputs also
    include the tensors ``names``; the caller removes it."""
    onnx = import_onnx()
    model = load_model(path)
    present = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in present)
    target = path.with_name(f".probe-{path.name}")
    save_model(model, target)
    return target


def self_contained(src: Path, tmp: Path) -> Path:
    """A copy of ``src`` without external data (quant_pre_process cannot follow it) when the
    model fits in one file; otherwise ``src`` itself."""
    model = load_model(src, load_external_data=False)
    if not uses_external_data(model) or model_size_bytes(src, model) > EXTERNAL_DATA_THRESHOLD:
        return src
    inline = tmp / f"inline_{src.name}"
    save_model(load_model(src), inline)
    return inline


def replace_items(field: Any, items: Iterable[Any]) -> None:
    """Make the repeated protobuf ``field`` (a graph's nodes, say) hold ``items`` in order."""
    items = list(items)
    del field[:]
    field.extend(items)


def tensors_read(nodes: Iterable[Any]) -> set[str]:
    """The tensor names ``nodes`` read, with those their subgraphs (If/Loop/Scan bodies, at any
    depth) read or give as outputs."""
    read: set[str] = set()
    for node in nodes:
        read.update(node.input)
        for graph in _subgraphs(node):
            read |= tensors_read(graph.node) | {o.name for o in graph.output}
    return read


def drop_unused(model: Any, names: set[str]) -> None:
    """Remove the initializers, graph inputs and Constant nodes among ``names`` nothing reads
    any more."""
    graph = model.graph
    unused = names - tensors_read(graph.node) - {o.name for o in graph.output}
    if not unused:
        return
    replace_items(graph.initializer, [t for t in graph.initializer if t.name not in unused])
    replace_items(graph.input, [i for i in graph.input if i.name not in unused])
    replace_items(
        graph.node,
        [n for n in graph.node if not (n.op_type == "Constant" and n.output[0] in unused)],
    )


def drop_initializer_inputs(model: Any) -> int:
    """For IR < 4 models, which must list every initializer as a graph input too: drop those
    inputs and raise the IR version to 4, so tools see only the real inputs (ONNX Runtime's
    calibrator asks for every graph input). Returns how many inputs were dropped."""
    if model.ir_version >= 4:
        return 0
    names = {t.name for t in model.graph.initializer}
    real = [i for i in model.graph.input if i.name not in names]
    dropped = len(model.graph.input) - len(real)
    if dropped:
        replace_items(model.graph.input, real)
    model.ir_version = 4
    return dropped
