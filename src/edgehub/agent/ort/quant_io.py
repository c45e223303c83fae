"""``quantize_io``: make a QDQ model take and return quantized tensors.

For each graph input consumed only by a QuantizeLinear, that node is removed and the input takes
the quantized type; for each graph output produced by a DequantizeLinear, that node is removed and
the output carries the quantized tensor. Each one's scale and zero point are returned so the
caller can (de)quantize: ``real = (q - zero_point) * scale``. Tensors that are not quantized this
way (per-axis scales, several consumers, no Q/DQ) stay float, with a warning.
"""

from __future__ import annotations

from typing import Any

from ..models import constant_tensors, drop_unused
from ..report import Report
from ..tensors import ONNX_ELEM_TYPES

_ELEM_TYPE_OF = {name: code for code, name in ONNX_ELEM_TYPES.items()}


def _qparams(node: Any, constants: dict[str, Any]) -> tuple[float, int, int] | None:
    """(scale, zero_point, onnx elem type) of a per-tensor Q/DQ node, else None."""
    if len(node.input) < 3 or node.input[1] not in constants or node.input[2] not in constants:
        return None
    from onnx import numpy_helper

    scale = numpy_helper.to_array(constants[node.input[1]])
    zero_point = numpy_helper.to_array(constants[node.input[2]])
    if scale.size != 1 or zero_point.size != 1:
        return None
    elem_type = _ELEM_TYPE_OF.get(zero_point.dtype.name)
    if elem_type is None:
        return None
    return float(scale.reshape(-1)[0]), int(zero_point.reshape(-1)[0]), elem_type


def _quantized(value_info: Any, scale: float, zero_point: int, elem_type: int) -> dict[str, Any]:
    """Give the graph input or output ``value_info`` the quantized type; its record."""
    value_info.type.tensor_type.elem_type = elem_type
    dtype = ONNX_ELEM_TYPES.get(elem_type, str(elem_type))
    return {"dtype": dtype, "scale": scale, "zero_point": zero_point}


def _rename_input(graph: Any, old: str, new: str) -> None:
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new


def strip_io_qdq(model: Any, report: Report) -> dict[str, dict[str, dict[str, Any]]]:
    """Edit ``model`` in place; returns ``{"inputs": {name: qparams}, "outputs": {...}}``."""
    graph = model.graph
    constants = constant_tensors(graph)
    initializers = {t.name for t in graph.initializer}
    result: dict[str, dict[str, dict[str, Any]]] = {"inputs": {}, "outputs": {}}
    skipped: list[str] = []
    removed_params: list[str] = []

    def consumers(name: str) -> list[Any]:
        return [n for n in graph.node if name in n.input]

    for value_info in graph.input:
        if value_info.name in initializers:
            continue
        users = consumers(value_info.name)
        node = users[0] if len(users) == 1 else None
        params = _qparams(node, constants) if node is not None else None
        if node is None or node.op_type != "QuantizeLinear" or params is None:
            skipped.append(f"input '{value_info.name}'")
            continue
        _rename_input(graph, node.output[0], value_info.name)
        removed_params.extend(node.input[1:])
        graph.node.remove(node)
        result["inputs"][value_info.name] = _quantized(value_info, *params)

    graph_inputs = {v.name for v in graph.input}
    for value_info in graph.output:
        producers = [n for n in graph.node if value_info.name in n.output]
        node = producers[0] if len(producers) == 1 else None
        params = _qparams(node, constants) if node is not None else None
        if (
            node is None
            or node.op_type != "DequantizeLinear"
            or params is None
            or consumers(value_info.name)
            or node.input[0] in graph_inputs
            or node.input[0] in initializers
        ):
            skipped.append(f"output '{value_info.name}'")
            continue
        quantized = node.input[0]
        removed_params.extend(node.input[1:])
        graph.node.remove(node)
        for other in graph.node:
            for i, name in enumerate(other.output):
                if name == quantized:
                    other.output[i] = value_info.name
        _rename_input(graph, quantized, value_info.name)
        result["outputs"][value_info.name] = _quantized(value_info, *params)

    drop_unused(model, set(removed_params))
    if skipped:
        report.warn(
            f"quantize_io: {', '.join(skipped)} stay float (not a single per-tensor "
            "QuantizeLinear/DequantizeLinear at the graph boundary)"
        )
    return result
