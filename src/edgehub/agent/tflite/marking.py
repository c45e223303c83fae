"""Reading a few intermediate tensors of a ``.tflite`` model: mark them as outputs.

LiteRT reuses an intermediate tensor's memory once its consumers ran, and XNNPACK never writes
the tensors inside its partitions: a tensor survives ``invoke`` only as a subgraph output
(``experimental_preserve_all_tensors`` keeps every one, and still nothing inside a delegate). So
a probe gets a new outputs vector for the main subgraph (the old outputs, then the marked
tensors) appended to the flatbuffer, and the subgraph's ``outputs`` field pointed at it
(offsets are unsigned and point forward, so appended data is reachable and nothing moves).
"""

from __future__ import annotations

import struct
from typing import Any, Sequence

import numpy as np

from ..protocol import ModelError

# field numbers in the TFLite schema (tensorflow/lite/schema/schema.fbs)
_MODEL_SUBGRAPHS = 2
_SUBGRAPH_TENSORS = 0
_SUBGRAPH_OUTPUTS = 2
_TENSOR_NAME = 3


def _u32(data: bytes | bytearray, at: int) -> int:
    value: int = struct.unpack_from("<I", data, at)[0]
    return value


def _field(data: bytes | bytearray, table: int, number: int) -> int | None:
    """The position of field ``number`` of the table at ``table``, or None when absent."""
    vtable = table - struct.unpack_from("<i", data, table)[0]
    size = struct.unpack_from("<H", data, vtable)[0]
    slot = 4 + 2 * number
    if slot + 2 > size:
        return None
    offset = struct.unpack_from("<H", data, vtable + slot)[0]
    return table + offset if offset else None


def _target(data: bytes | bytearray, at: int) -> int:
    return at + _u32(data, at)


def _main_subgraph(data: bytes | bytearray) -> int:
    try:
        root = _u32(data, 0)
        subgraphs = _field(data, root, _MODEL_SUBGRAPHS)
        if subgraphs is None:
            raise ValueError("no subgraphs")
        vector = _target(data, subgraphs)
        if _u32(data, vector) < 1:
            raise ValueError("no subgraphs")
        return _target(data, vector + 4)
    except (struct.error, ValueError) as exc:
        raise ModelError(f"the .tflite flatbuffer cannot be read ({exc}): recompile it") from exc


def tensor_names(data: bytes) -> list[str]:
    """The names of the main subgraph's tensors, by index."""
    graph = _main_subgraph(data)
    field = _field(data, graph, _SUBGRAPH_TENSORS)
    if field is None:
        return []
    vector = _target(data, field)
    names = []
    for index in range(_u32(data, vector)):
        tensor = _target(data, vector + 4 + 4 * index)
        name_field = _field(data, tensor, _TENSOR_NAME)
        if name_field is None:
            names.append("")
            continue
        text = _target(data, name_field)
        length = _u32(data, text)
        names.append(bytes(data[text + 4 : text + 4 + length]).decode("utf-8", "replace"))
    return names


def with_outputs(data: bytes, extra: Sequence[int]) -> bytes:
    """The model ``data`` with the tensors ``extra`` (indices) added to its main subgraph's
    outputs, after the existing ones."""
    graph = _main_subgraph(data)
    field = _field(data, graph, _SUBGRAPH_OUTPUTS)
    if field is None:
        raise ModelError("the .tflite model's main subgraph has no outputs field; recompile it")
    vector = _target(data, field)
    current = list(struct.unpack_from(f"<{_u32(data, vector)}i", data, vector + 4))
    wanted = current + [int(i) for i in extra if int(i) not in current]
    patched = bytearray(data)
    patched += b"\0" * (-len(patched) % 8)
    start = len(patched)
    patched += struct.pack(f"<I{len(wanted)}i", len(wanted), *wanted)
    struct.pack_into("<I", patched, field, start - field)
    return bytes(patched)


def dequantized(interpreter: Any, index: int) -> np.ndarray:
    """Tensor ``index`` after ``invoke``, as float32: integer tensors dequantized with their
    scale and zero point (per tensor, or per channel along the quantized dimension)."""
    detail = next(d for d in interpreter.get_tensor_details() if d["index"] == index)
    array = np.array(interpreter.get_tensor(index))
    if array.dtype.kind not in "iu":
        return array.astype(np.float32)
    params = detail.get("quantization_parameters") or {}
    scales = np.asarray(params.get("scales", []), dtype=np.float32)
    zeros = np.asarray(params.get("zero_points", []), dtype=np.float32)
    if scales.size == 0:
        return array.astype(np.float32)
    if scales.size > 1:
        axis = int(params.get("quantized_dimension", 0))
        shape = [1] * array.ndim
        shape[axis] = scales.size
        scales, zeros = scales.reshape(shape), zeros.reshape(shape)
    return np.asarray((array.astype(np.float32) - zeros) * scales, dtype=np.float32)
