"""``tflite.inspect``: the inputs and outputs a model takes, as the TFLite invoker sees them.

Request: ``{"model": PATH, "mapping": null | PATH, "compiled_names": false}``.

For a ``.tflite``, ``inputs``/``outputs`` (``{name, dtype, shape}``) in the invoker's default
naming: the ONNX names and layout where a mapping sidecar is found, else the TFLite names
(``compiled_names``: always those); with ``compiled_inputs``/``compiled_outputs`` (with
quantization parameters), ``mapping``, ``num_ops``, ``size_bytes`` and ``source: "tflite"``.
An ONNX model is described as ``ort.inspect`` does (``source: "onnx"``).
"""

from __future__ import annotations

from pathlib import Path

from ..models import inspect_onnx, resolve_model_path
from ..protocol import CommandOutput, Params
from ..report import Report
from .edges import ModelEdges
from .interpreter import is_tflite_file, load_interpreter, op_list, toolchain_versions
from .layout import IOMapping, read_mapping, sidecar_path


def find_mapping(model: Path, mapping_arg: str | None, report: Report) -> IOMapping | None:
    """The mapping given, else the sidecar beside the model, else None."""
    if mapping_arg:
        return read_mapping(mapping_arg)
    candidate = sidecar_path(model)
    if candidate.is_file():
        report.info(f"mapping: {candidate.name}")
        return read_mapping(candidate)
    return None


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    mapping_arg = params.path("mapping", required=False)
    compiled_names = params.boolean("compiled_names", False)
    params.finish()
    path = Path(model_arg)
    if path.is_dir() or not is_tflite_file(path):
        data = inspect_onnx(resolve_model_path(model_arg))
        return CommandOutput(params=params.resolved, data=data)

    report.info(f"inspect: {path}")
    interpreter = load_interpreter(path)
    edges = ModelEdges(interpreter, find_mapping(path, mapping_arg, report))
    mapped = not compiled_names
    data = {
        "inputs": [s.to_json() for s in edges.original_specs()]
        if mapped
        else [t.spec().to_json() for t in edges.inputs],
        "outputs": [
            {"name": m.onnx_name, "dtype": m.onnx_dtype, "shape": m.onnx_shape}
            for m in edges.mapping.outputs
        ]
        if mapped
        else [t.spec().to_json() for t in edges.outputs],
        "compiled_inputs": [t.to_json() for t in edges.inputs],
        "compiled_outputs": [t.to_json() for t in edges.outputs],
        "mapping": edges.mapping.to_json(),
        "num_ops": len(op_list(interpreter)),
        "size_bytes": path.stat().st_size,
        "source": "tflite",
        "path": str(path),
        "toolchain": toolchain_versions(),
    }
    return CommandOutput(params=params.resolved, data=data)
