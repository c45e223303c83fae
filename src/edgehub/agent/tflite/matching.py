"""Working out which TFLite tensor is which ONNX tensor, and in which layout.

onnx2tf keeps input names (the fixups made them valid) and makes rank 3-5 inputs channels-last.
Outputs lose their names (``Identity``, ``output_0``) and their order is not guaranteed, so they
are matched by value: the ONNX model runs in onnxruntime and the TFLite model in LiteRT on the
same inputs, and each TFLite output is paired with the ONNX output (and layout) it agrees with
best. Without onnxruntime the pairing falls back to names, then order and shape.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..protocol import RuntimeFailure
from ..tensors import Arrays, TensorSpec
from .edges import dequantize
from .interpreter import TFLiteTensor
from .layout import TensorMap, channels_last, layout_candidates, onnx2tf_input_perm


def _fixed(spec: TensorSpec) -> list[int]:
    return [d if isinstance(d, int) else -1 for d in (spec.shape or [])]


def _resolved(spec: TensorSpec, tflite_shape: Sequence[int], reference: Arrays | None) -> list[int]:
    """An ONNX output's shape for pairing: as the reference run produced it (its dynamic dims
    resolved), else as declared with each unknown dim taken as the TFLite tensor's size."""
    if reference is not None and spec.name in reference:
        return [int(d) for d in np.shape(reference[spec.name])]
    fixed = _fixed(spec)
    if len(fixed) != len(tflite_shape):
        return fixed
    return [int(t) if d < 0 else d for d, t in zip(fixed, tflite_shape)]


def _entry(
    originals: dict[str, str],
    spec: TensorSpec,
    onnx_shape: list[int],
    tensor: TFLiteTensor,
    perm: list[int],
) -> TensorMap:
    name = originals.get(spec.name, spec.name)
    return TensorMap(
        name, tensor.name, onnx_shape, list(tensor.shape), perm or None, spec.dtype, tensor.dtype
    )


def _loose(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


def _pair_inputs(
    specs: Sequence[TensorSpec], tensors: Sequence[TFLiteTensor]
) -> list[tuple[TensorSpec, TFLiteTensor]]:
    remaining = list(tensors)
    pairs: list[tuple[TensorSpec, TFLiteTensor]] = []
    unmatched: list[TensorSpec] = []
    for spec in specs:
        found = next((t for t in remaining if t.name == spec.name), None)
        if found is None:
            found = next((t for t in remaining if _loose(t.name) == _loose(spec.name)), None)
        if found is None:
            unmatched.append(spec)
            continue
        remaining.remove(found)
        pairs.append((spec, found))
    for spec, tensor in zip(unmatched, list(remaining)):  # by position, as a last resort
        pairs.append((spec, tensor))
        remaining.remove(tensor)
    if len(pairs) != len(specs) or remaining:
        raise RuntimeFailure(
            f"the TFLite model has inputs {[t.name for t in tensors]} that do not match the ONNX "
            f"inputs {[s.name for s in specs]}"
        )
    return pairs


def input_maps(
    specs: Sequence[TensorSpec],
    tensors: Sequence[TFLiteTensor],
    originals: dict[str, str],
    kept: Sequence[str] = (),
) -> list[TensorMap]:
    """Inputs by name; the layout from the shapes, onnx2tf's rule deciding a symmetric shape
    (the identity for the inputs whose layout onnx2tf was told to keep, ``kept``)."""
    maps = []
    for spec, tensor in _pair_inputs(specs, tensors):
        onnx_shape = _fixed(spec)
        options = layout_candidates(onnx_shape, tensor.shape)
        if not options:
            raise RuntimeFailure(
                f"TFLite input '{tensor.name}' {tensor.shape} is neither the ONNX input "
                f"'{spec.name}' {onnx_shape} nor its channels-last transpose"
            )
        rule = [] if spec.name in kept else onnx2tf_input_perm(len(onnx_shape))
        perm = rule if rule in options else options[0]
        maps.append(_entry(originals, spec, onnx_shape, tensor, perm))
    return maps


def _as_float(array: np.ndarray, tensor: TFLiteTensor) -> np.ndarray:
    return dequantize(array, tensor) if tensor.quantized else array.astype(np.float64)


def _unlikeliness(perm: list[int]) -> float:
    """How unlikely onnx2tf gave an output this layout: none, channels-last, any other order."""
    if not perm:
        return 0.0
    return 0.5 if perm == channels_last(len(perm)) else 0.75


def output_maps(
    specs: Sequence[TensorSpec],
    tensors: Sequence[TFLiteTensor],
    originals: dict[str, str],
    reference: Arrays | None,
    produced: dict[str, np.ndarray] | None,
) -> tuple[list[TensorMap], dict[str, float]]:
    """Pair outputs (by value when ``reference``/``produced`` are given); returns the maps and
    each ONNX output's max abs error against onnxruntime (empty without a reference)."""
    scored: list[tuple[float, int, int, list[int]]] = []
    for ti, tensor in enumerate(tensors):
        for si, spec in enumerate(specs):
            shape = _resolved(spec, tensor.shape, reference)
            for perm in layout_candidates(shape, tensor.shape, any_order=True):
                if reference is not None and produced is not None:
                    ours = _as_float(produced[tensor.name], tensor)
                    theirs = (
                        np.transpose(reference[spec.name], perm) if perm else reference[spec.name]
                    )
                    error = float(np.max(np.abs(ours - theirs))) if ours.size else 0.0
                    if not np.isfinite(error):
                        error = float("inf")
                else:  # no values: prefer a name match, then the same position
                    error = 0.0 if tensor.name == spec.name else (1.0 if ti == si else 2.0)
                    error += _unlikeliness(perm)
                scored.append((error, ti, si, perm))
    scored.sort(key=lambda item: (item[0], item[1] != item[2]))
    taken_t: dict[int, tuple[int, list[int], float]] = {}
    taken_s = set()
    for error, ti, si, perm in scored:
        if ti in taken_t or si in taken_s:
            continue
        taken_t[ti] = (si, perm, error)
        taken_s.add(si)
    if len(taken_t) != len(tensors) or len(taken_s) != len(specs):
        onnx_shapes = [
            (s.name, list(np.shape(reference[s.name])) if reference and s.name in reference
             else _fixed(s))
            for s in specs
        ]  # fmt: skip
        raise RuntimeFailure(
            f"cannot pair the TFLite outputs {[(t.name, t.shape) for t in tensors]} with the ONNX "
            f"outputs {onnx_shapes} by shape: onnx2tf changed an output's shape; compare the "
            "two models' last nodes, or convert with input_shape set"
        )
    maps: list[TensorMap] = []
    errors: dict[str, float] = {}
    for ti, tensor in enumerate(tensors):
        si, perm, error = taken_t[ti]
        spec = specs[si]
        maps.append(_entry(originals, spec, _fixed(spec), tensor, perm))
        if reference is not None:
            errors[maps[-1].onnx_name] = error
    order = {originals.get(s.name, s.name): i for i, s in enumerate(specs)}
    maps.sort(key=lambda m: order[m.onnx_name])
    return maps, errors
