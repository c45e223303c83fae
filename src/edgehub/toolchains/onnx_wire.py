"""Reading and setting an ONNX model's graph input shapes at the protobuf wire level.

The host needs no ``onnx`` package for this (it is not a dependency of edgehub): a model is
``ModelProto.graph`` (field 7) → ``GraphProto.input`` (11) → ``ValueInfoProto.type`` (2) →
``TypeProto.tensor_type`` (1) → ``shape`` (2) → ``dim`` (1), each dim a ``dim_value`` (1,
varint) or ``dim_param`` (2, string). Only the input entries are decoded and re-encoded; every
other byte (weights included) is copied as it is.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from edgehub.errors import ModelError

Dim = int | str | None  # a size, a dim_param, or unknown (neither set)

_MODEL_GRAPH, _GRAPH_INPUT, _GRAPH_INITIALIZER, _TENSOR_NAME = 7, 11, 5, 8


@dataclass(frozen=True)
class GraphInput:
    """One graph input: its name and dims (``None`` when it declares no shape)."""

    name: str
    dims: tuple[Dim, ...] | None

    @property
    def dynamic(self) -> bool:
        return self.dims is not None and any(not isinstance(d, int) or d < 1 for d in self.dims)


class _Bad(Exception):
    pass


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _Bad
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(data: memoryview) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, start of the field, end); a length-delimited field's value
    is ``data[end - length:end]``."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = _varint(data, pos)
            pos += length
        else:
            raise _Bad
        if pos > len(data):
            raise _Bad
        yield number, wire, start, pos


def _value(data: memoryview, start: int, end: int) -> memoryview:
    """The payload of the length-delimited field at ``data[start:end]``."""
    _, pos = _varint(data, start)
    _, pos = _varint(data, pos)
    return data[pos:end]


def _child(data: memoryview, number: int) -> memoryview | None:
    found = None
    for field, wire, start, end in _fields(data):
        if field == number and wire == 2:
            found = _value(data, start, end)
    return found


def _dims(value_info: memoryview) -> tuple[Dim, ...] | None:
    tensor = _child(_child(value_info, 2) or memoryview(b""), 1)
    shape = _child(tensor, 2) if tensor is not None else None
    if shape is None:
        return None
    dims: list[Dim] = []
    for field, wire, start, end in _fields(shape):
        if field != 1 or wire != 2:
            continue
        dim: Dim = None
        entry = _value(shape, start, end)
        for number, kind, s, e in _fields(entry):
            if number == 1 and kind == 0:
                size = _varint(entry, _varint(entry, s)[1])[0]
                dim = size if size < 1 << 63 else size - (1 << 64)
            elif number == 2 and kind == 2:
                dim = bytes(_value(entry, s, e)).decode("utf-8", "replace")
        dims.append(dim)
    return tuple(dims)


def _text(data: memoryview | None) -> str:
    return bytes(data or b"").decode("utf-8", "replace")


def _graph(data: memoryview) -> tuple[int, int, memoryview]:
    spot = None
    for field, wire, start, end in _fields(data):
        if field == _MODEL_GRAPH and wire == 2:
            spot = (start, end, _value(data, start, end))
    if spot is None:
        raise _Bad
    return spot


def _load(path: Path) -> memoryview:
    try:
        return memoryview(path.read_bytes())
    except OSError as error:
        raise ModelError(f"cannot read model {path}: {error.strerror}") from None


_READ: dict[str, list[GraphInput]] = {}  # by the model file's stamp (`hash_memo.stamp_key`)
_READ_KEPT = 32


def read_inputs(path: Path) -> list[GraphInput]:
    """The graph inputs of the model at ``path`` that are not initializers (remembered in this
    process by the file's stamp, once the file had settled: a warm invoke reads them per call,
    and a model changed since has another stamp)."""
    from edgehub.tracking.hash_memo import settled

    began = time.time_ns()
    before, key = _stamp(path)
    known = _READ.get(key) if key is not None else None
    if known is not None:
        return list(known)
    found = _read_inputs(path)
    if before is not None and settled(before, began) and _stamp(path)[1] == key:
        if len(_READ) >= _READ_KEPT:
            _READ.pop(next(iter(_READ)))
        _READ[str(key)] = list(found)
    return found


def _stamp(path: Path) -> tuple[os.stat_result | None, str | None]:
    """The file's stat and its `~edgehub.tracking.hash_memo.stamp_key` (None, None: none)."""
    from edgehub.tracking.hash_memo import stamp_key

    try:
        found = os.stat(path)
    except OSError:
        return None, None
    return found, stamp_key(found)


def _read_inputs(path: Path) -> list[GraphInput]:
    data = _load(path)
    try:
        _, _, graph = _graph(data)
        weights: set[str] = set()
        entries: list[GraphInput] = []
        for field, wire, start, end in _fields(graph):
            if wire != 2 or field not in (_GRAPH_INPUT, _GRAPH_INITIALIZER):
                continue
            value = _value(graph, start, end)
            if field == _GRAPH_INITIALIZER:
                weights.add(_text(_child(value, _TENSOR_NAME)))
                continue
            entries.append(GraphInput(_text(_child(value, 1)), _dims(value)))
    except _Bad:
        raise ModelError(f"{path} is not a readable ONNX model (its protobuf is damaged)") from None
    return [entry for entry in entries if entry.name not in weights]


def _length_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


def _replace(data: memoryview, number: int, make: Callable[[memoryview], bytes]) -> bytes:
    """``data`` with its (last) length-delimited field ``number`` replaced by ``make(old)``."""
    out = bytearray()
    for field, wire, start, end in _fields(data):
        if field == number and wire == 2:
            out += _length_field(number, make(_value(data, start, end)))
        else:
            out += data[start:end]
    return bytes(out)


def _sized(shape: memoryview, sizes: tuple[int, ...]) -> bytes:
    """A ``TensorShapeProto`` with its first dims set to ``sizes`` (each one's denotation kept)."""
    out, index = bytearray(), 0
    for field, wire, start, end in _fields(shape):
        if field != 1 or wire != 2 or index >= len(sizes):
            out += shape[start:end]
            continue
        entry = _value(shape, start, end)
        kept = b"".join(bytes(entry[s:e]) for n, _, s, e in _fields(entry) if n not in (1, 2))
        dim = _encode_varint(1 << 3 | 0) + _encode_varint(sizes[index]) + kept
        out += _length_field(1, dim)
        index += 1
    return bytes(out)


def _fixed_input(value_info: memoryview, sizes: tuple[int, ...]) -> bytes:
    """A ``ValueInfoProto`` with its tensor shape's dims set to ``sizes``."""

    def type_proto(data: memoryview) -> bytes:  # its tensor_type (1), that one's shape (2)
        return _replace(data, 1, lambda tensor: _replace(tensor, 2, lambda s: _sized(s, sizes)))

    return _replace(value_info, 2, type_proto)


def write_fixed(path: Path, target: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """Write ``path`` to ``target`` with the named inputs' dims set to ``shapes``."""
    data = _load(path)
    try:
        start, end, graph = _graph(data)
        pieces: list[bytes | memoryview] = []
        for field, wire, s, e in _fields(graph):
            value = _value(graph, s, e) if field == _GRAPH_INPUT and wire == 2 else None
            name = _text(_child(value, 1)) if value is not None else ""
            if value is not None and name in shapes:
                pieces.append(_length_field(_GRAPH_INPUT, _fixed_input(value, shapes[name])))
            else:
                pieces.append(graph[s:e])
        body_length = sum(len(p) for p in pieces)
        with target.open("wb") as out:
            out.write(data[:start])
            out.write(_encode_varint(_MODEL_GRAPH << 3 | 2) + _encode_varint(body_length))
            for piece in pieces:
                out.write(piece)
            out.write(data[end:])
    except _Bad:
        raise ModelError(f"{path} is not a readable ONNX model (its protobuf is damaged)") from None
