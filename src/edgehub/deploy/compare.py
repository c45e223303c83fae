"""Checking a rewrite on the host: run a model before and after in ONNX Runtime and compare."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from edgehub.deploy.calibrate import cpu_session, model_inputs

if TYPE_CHECKING:
    import onnx

_NUMPY_TYPES = {
    1: np.float32,
    6: np.int32,
    7: np.int64,
    10: np.float16,
    11: np.float64,
    9: np.bool_,
}


def ramp_inputs(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Deterministic inputs (``arange(n) / n`` in the input's shape; unknown dims are 1), the
    way ONNX's backend tests feed its ``light`` models."""
    fed = set(model_inputs(model))
    feeds: dict[str, np.ndarray] = {}
    for info in (i for i in model.graph.input if i.name in fed):
        tensor = info.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim]
        count = int(np.prod(shape)) if shape else 1
        dtype = _NUMPY_TYPES.get(tensor.elem_type, np.float32)
        feeds[info.name] = (np.arange(count).reshape(shape) / count).astype(dtype)
    return feeds


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal float inputs in the shapes of the model's inputs (unknown dims: 1)."""
    rng = np.random.default_rng(seed)
    return {
        name: rng.standard_normal(value.shape).astype(value.dtype)
        for name, value in ramp_inputs(model).items()
    }


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """All outputs of ``model`` on ``feeds`` (ONNX Runtime, CPU, one thread: reproducible)."""
    session = cpu_session(model, threads=1)
    return [np.asarray(v) for v in session.run(None, {k: feeds[k] for k in model_inputs(model)})]


def max_abs_difference(
    before: onnx.ModelProto, after: onnx.ModelProto, feeds: dict[str, np.ndarray]
) -> float:
    """The largest absolute difference over all outputs of the two models on ``feeds``."""
    outputs = zip(run(before, feeds), run(after, feeds), strict=True)
    return max(float(np.max(np.abs(a.astype(np.float64) - b))) for a, b in outputs)
