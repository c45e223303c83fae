"""How a ``.tflite`` model's inputs and outputs relate to the ONNX model it came from.

onnx2tf renames tensors (outputs become ``Identity``, ``output_0``, ...) and makes rank 3-5
tensors channels-last. The compiler records each tensor's ONNX name, TFLite name and axis
permutation in a JSON sidecar (``compiled_m.tflite`` -> ``compiled_m.mapping.json``)::

    {"format": "edgehub.tflite-io/1", "source": "m.onnx", "precision": "int8",
     "inputs": [{"onnx_name": "image", "tflite_name": "image", "onnx_shape": [1, 3, 32, 32],
                 "tflite_shape": [1, 32, 32, 3], "perm": [0, 2, 3, 1], "onnx_dtype": "float32",
                 "tflite_dtype": "int8"}],
     "outputs": [...], "tensors": [...]}

``tensors`` (optional) pairs intermediate tensors the same way (`layer_map`, for eval's
``--layers``). ``perm``: TFLite array = ONNX array transposed by perm. A model without a sidecar
maps every tensor onto itself.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..protocol import ModelError, write_json_atomic

FORMAT = "edgehub.tflite-io/1"
SIDECAR_SUFFIX = ".mapping.json"


@dataclass
class TensorMap:
    """One input or output: its ONNX and TFLite names, shapes, dtypes, and the permutation."""

    onnx_name: str
    tflite_name: str
    onnx_shape: list[int] | None
    tflite_shape: list[int] | None
    perm: list[int] | None
    onnx_dtype: str
    tflite_dtype: str

    def to_tflite(self, array: np.ndarray) -> np.ndarray:
        """An array in ONNX layout -> TFLite layout (dtype unchanged)."""
        return np.ascontiguousarray(np.transpose(array, self.perm)) if self.perm else array

    def to_onnx(self, array: np.ndarray) -> np.ndarray:
        """An array in TFLite layout -> ONNX layout (dtype unchanged)."""
        if not self.perm:
            return array
        return np.ascontiguousarray(np.transpose(array, np.argsort(self.perm)))


@dataclass
class IOMapping:
    inputs: list[TensorMap]
    outputs: list[TensorMap]
    source: str | None = None
    precision: str | None = None
    tensors: list[TensorMap] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "source": self.source,
            "precision": self.precision,
            "inputs": [asdict(t) for t in self.inputs],
            "outputs": [asdict(t) for t in self.outputs],
            "tensors": [asdict(t) for t in self.tensors],
        }

    @classmethod
    def from_json(cls, raw: Any, where: str) -> IOMapping:
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ModelError(
                f"'{where}' is not an edgehub TFLite mapping ({FORMAT}): remove it or recompile"
            )
        try:
            return cls(
                inputs=[TensorMap(**t) for t in raw["inputs"]],
                outputs=[TensorMap(**t) for t in raw["outputs"]],
                source=raw.get("source"),
                precision=raw.get("precision"),
                tensors=[TensorMap(**t) for t in raw.get("tensors") or []],
            )
        except (KeyError, TypeError) as exc:
            raise ModelError(f"'{where}' is a damaged TFLite mapping ({exc}): recompile") from exc

    def write(self, path: str | Path) -> None:
        write_json_atomic(path, self.to_json())


def sidecar_path(model: str | Path) -> Path:
    """``dir/compiled_m.tflite`` -> ``dir/compiled_m.mapping.json``."""
    model = Path(model)
    return model.with_name(model.stem + SIDECAR_SUFFIX)


def read_mapping(path: str | Path) -> IOMapping:
    try:
        with open(str(path), encoding="utf-8") as fh:
            raw = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ModelError(f"TFLite mapping '{path}' cannot be read ({exc}): recompile") from exc
    return IOMapping.from_json(raw, str(path))


def channels_last(rank: int) -> list[int]:
    """NC... -> N...C: ``[0, 2, ..., rank - 1, 1]``."""
    return [0, *range(2, rank), 1]


def permute(shape: Sequence[int], perm: Sequence[int] | None) -> list[int]:
    return [int(shape[p]) for p in perm] if perm else [int(d) for d in shape]


def layout_candidates(
    onnx_shape: Sequence[int], tflite_shape: Sequence[int], any_order: bool = False
) -> list[list[int]]:
    """The permutations (identity ``[]`` or channels-last) that turn one shape into the other;
    with ``any_order``, then every other permutation that does (rank <= 5): an input whose
    layout onnx2tf kept can come out with its axes in another order (``[2, 1, 64]`` as
    ``[1, 2, 64]``)."""
    found: list[list[int]] = []
    if len(onnx_shape) != len(tflite_shape):
        return found
    if list(onnx_shape) == list(tflite_shape):
        found.append([])
    rank = len(onnx_shape)
    if rank >= 3:
        perm = channels_last(rank)
        if permute(onnx_shape, perm) == list(tflite_shape) and perm != list(range(rank)):
            found.append(perm)
    if any_order and 2 <= rank <= 5:
        for order in itertools.permutations(range(rank)):
            other = list(order)
            if other == list(range(rank)) or other in found:
                continue
            if permute(onnx_shape, other) == list(tflite_shape):
                found.append(other)
    return found


def onnx2tf_input_perm(rank: int) -> list[int]:
    """onnx2tf's rule for graph inputs: rank 3, 4 and 5 become channels-last, others stay."""
    return channels_last(rank) if rank in (3, 4, 5) else []
