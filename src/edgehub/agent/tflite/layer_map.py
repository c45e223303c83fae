"""Which TFLite tensor carries which intermediate ONNX tensor: the layer part of the mapping.

onnx2tf names TFLite tensors after Keras layers, not ONNX nodes, so they are paired by value, as
the outputs are (`matching`): on the verify sample the ONNX model runs in onnxruntime with every
node output a graph output, and the float32 ``.tflite`` onnx2tf writes beside the quantized one
runs in LiteRT with every operator output marked (`marking`). A TFLite tensor is the ONNX tensor
whose values it equals (to float rounding) in the ONNX layout or channels-last; where several
ONNX tensors hold the same values (a ReLU that changes nothing, an Identity) the last one in
graph order takes it (the earlier ones were fused into it). The quantized model keeps the float
model's tensor names; pairs whose tensor it lacks are dropped. This runs once, at compile time,
and is written into the sidecar as ``tensors``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..models import graph_nodes, load_model, with_graph_outputs
from ..tensors import Arrays
from .interpreter import load_interpreter, op_list
from .layout import TensorMap, layout_candidates
from .marking import dequantized, tensor_names, with_outputs

# relative to the tensor's largest magnitude: float32 TFLite against onnxruntime
TOLERANCE = 1e-3


def onnx_values(model_path: Path, feeds: Arrays) -> tuple[list[str], Arrays]:
    """Every node output of the ONNX model on ``feeds`` (names in graph order, values)."""
    from ..ort.sessions import create_session

    names = [n for node in graph_nodes(model_path) for n in node["outputs"]]
    probe = with_graph_outputs(model_path, names)
    try:
        session = create_session(probe)
        wanted = [o.name for o in session.get_outputs() if o.name in set(names)]
        values = dict(zip(wanted, session.run(wanted, feeds)))
    finally:
        probe.unlink(missing_ok=True)
    return [n for n in names if n in values], values


def tflite_values(model_path: Path, feeds: dict[int, Any], scratch: Path) -> Arrays:
    """Every operator output of the ``.tflite`` model on ``feeds`` (by tensor index), by name."""
    data = model_path.read_bytes()
    names = tensor_names(data)
    interpreter = load_interpreter(model_path, xnnpack=False)
    produced = sorted(
        {int(i) for op in op_list(interpreter) for i in op.get("outputs", []) if int(i) >= 0}
    )
    marked = scratch / f"marked-{model_path.name}"
    marked.write_bytes(with_outputs(data, produced))
    probe = load_interpreter(marked, xnnpack=False)
    for index, array in feeds.items():
        probe.set_tensor(index, array)
    probe.invoke()
    return {names[i]: dequantized(probe, i) for i in produced if names[i]}


def _signature(array: np.ndarray) -> tuple[int, float, float]:
    """Layout-free: size, sum of squares and largest magnitude."""
    a = array.astype(np.float64)
    return a.size, float(np.sum(a * a)), float(np.max(np.abs(a))) if a.size else 0.0


def pair(
    order: Sequence[str],
    onnx: Arrays,
    tflite: Arrays,
    available: set[str],
    originals: dict[str, str],
) -> list[TensorMap]:
    """The pairs, in the ONNX graph order (see the module)."""
    signatures = {name: _signature(a) for name, a in tflite.items() if name in available}
    taken: set[str] = set()
    found: dict[str, TensorMap] = {}
    for name in reversed(order):
        value = onnx.get(name)
        if value is None or value.dtype.kind != "f" or not value.size:
            continue
        size, energy, peak = _signature(value)
        if peak == 0.0:
            continue  # all zeros: any zero tensor would do, so none is meant
        tolerance = TOLERANCE * peak
        best: tuple[float, str, list[int]] | None = None
        for other, (o_size, o_energy, o_peak) in signatures.items():
            if other in taken or o_size != size or abs(o_peak - peak) > tolerance:
                continue
            if abs(o_energy - energy) > 4 * tolerance * peak * size:
                continue
            for perm in layout_candidates(list(value.shape), list(tflite[other].shape)):
                mine = np.transpose(value, perm) if perm else value
                error = float(np.max(np.abs(tflite[other] - mine)))
                if error <= tolerance and (best is None or error < best[0]):
                    best = (error, other, perm)
        if best is None:
            continue
        _, other, perm = best
        taken.add(other)
        onnx_shape, tflite_shape = ([int(d) for d in a.shape] for a in (value, tflite[other]))
        found[name] = TensorMap(
            originals.get(name, name), other, onnx_shape, tflite_shape, perm or None,
            value.dtype.name, "float32",
        )  # fmt: skip
    return [found[n] for n in order if n in found]


def layer_maps(
    onnx_model: Path,
    float_tflite: Path,
    shipped: Path,
    feeds: Arrays,
    tflite_feeds: dict[int, Any],
    originals: dict[str, str],
    scratch: Path,
) -> list[TensorMap]:
    """The pairs of ``onnx_model``'s intermediate tensors (not its outputs) with ``shipped``'s
    tensors, found on ``float_tflite`` (see the module); ``tflite_feeds`` are ``feeds`` for
    the float model, by tensor index."""
    order, onnx = onnx_values(onnx_model, feeds)
    graph_outputs = {v.name for v in load_model(onnx_model).graph.output}  # mapped already
    tflite = tflite_values(float_tflite, tflite_feeds, scratch)
    available = set(tensor_names(shipped.read_bytes()))
    inner = [name for name in order if name not in graph_outputs]
    return pair(inner, onnx, tflite, available, originals)
