"""Calibration on the host: abs-max ranges of chosen tensors over sample inputs (ONNX Runtime)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from edgehub.deploy.model_io import load_model
from edgehub.errors import InputDataError

if TYPE_CHECKING:
    import onnx

Samples = list[dict[str, np.ndarray]]


def model_inputs(model: onnx.ModelProto) -> list[str]:
    """Graph inputs that are not initializers (the ones a caller feeds)."""
    inits = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def as_samples(model: onnx.ModelProto, data: Any) -> Samples:
    """``data`` as a list of feeds: one dict, an iterable of dicts, or (for a model with one
    input) an iterable of arrays."""
    names = model_inputs(model)
    items: Iterable[Any] = [data] if isinstance(data, Mapping) else data
    samples: Samples = []
    for item in items:
        feed = dict(item) if isinstance(item, Mapping) else {names[0]: item}
        if not isinstance(item, Mapping) and len(names) != 1:
            raise InputDataError(
                f"the model has {len(names)} inputs ({', '.join(names)}); "
                "pass calibration samples as dicts of input name -> array"
            )
        missing = [n for n in names if n not in feed]
        if missing:
            raise InputDataError(
                f"calibration sample lacks input {missing[0]!r}; the model takes {names}"
            )
        samples.append({k: np.asarray(v) for k, v in feed.items()})
    if not samples:
        raise InputDataError("no calibration samples; pass at least one input dict")
    return samples


def calibrate(
    model: onnx.ModelProto, samples: Samples, observe: Mapping[str, int | None]
) -> dict[str, np.ndarray]:
    """For each observed tensor: max |value| over all samples, per channel along the given
    axis (a 1-D array) or over the whole tensor (axis None: a 0-D array)."""
    if not observe:
        return {}
    import onnx

    probe = load_model(model)
    outputs = {o.name for o in probe.graph.output}
    for name in observe:
        if name not in outputs:
            probe.graph.output.append(
                onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
            )
    session = cpu_session(probe)
    names = list(observe)
    ranges: dict[str, np.ndarray] = {}
    for feed in samples:
        for name, value in zip(names, session.run(names, feed), strict=True):
            current = _absmax(np.asarray(value, dtype=np.float32), observe[name])
            previous = ranges.get(name)
            ranges[name] = current if previous is None else np.maximum(previous, current)
    return ranges


def cpu_session(model: onnx.ModelProto, threads: int | None = None) -> Any:
    """An ONNX Runtime session on ``model`` on the CPU, its warnings off (``threads``: its
    intra-op threads; None: ONNX Runtime's choice)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads is not None:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _absmax(value: np.ndarray, axis: int | None) -> np.ndarray:
    if axis is None:
        return np.asarray(np.abs(value).max(), dtype=np.float32)
    axis = axis % value.ndim
    others = tuple(i for i in range(value.ndim) if i != axis)
    return np.asarray(np.abs(value).max(axis=others), dtype=np.float32)
