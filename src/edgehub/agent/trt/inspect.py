"""``trt.inspect``: the inputs and outputs of an ONNX model (with onnx) or of an engine.

Request: ``{"model": PATH}``. An ``.onnx`` file is read with onnx; anything else is opened as a
serialized engine, which needs a GPU. Data: ``{inputs, outputs, source}`` (each tensor
``{name, dtype, shape}``, dynamic dims as ``"?"`` or their symbol); an ONNX model's as
``ort.inspect`` gives it.
"""

from __future__ import annotations

from typing import Any

from ..models import inspect_onnx, resolve_model_path
from ..protocol import CommandOutput, Params, UsageError
from ..report import Report
from .engine_check import check_engine
from .gpu import gpu_visible
from .invoke import engine_specs


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    record = params.raw_value("engine_record")
    params.finish()
    path = resolve_model_path(model_arg)
    if path.suffix.lower() == ".onnx":
        return CommandOutput(params=params.resolved, metrics={}, data=inspect_onnx(path))
    check_engine(record)
    if not gpu_visible():
        raise UsageError(
            f"'{path.name}' is a TensorRT engine; reading its inputs means opening it, which "
            "needs an NVIDIA GPU: inspect the ONNX model it was built from instead"
        )
    specs = engine_specs(str(path))
    tensors: dict[str, list[dict[str, Any]]] = {"INPUT": [], "OUTPUT": []}
    for s in specs:
        if s["mode"] not in tensors:
            continue
        shape = [d if d >= 0 else "?" for d in s["shape"]]
        tensors[s["mode"]].append({"name": s["name"], "dtype": s["dtype"], "shape": shape})
    data = {"inputs": tensors["INPUT"], "outputs": tensors["OUTPUT"], "source": "engine"}
    return CommandOutput(params=params.resolved, metrics={}, data=data)
