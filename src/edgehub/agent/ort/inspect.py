"""``ort.inspect``: a model's inputs, outputs, opset, IR version and producer.

Request: ``{"model": PATH}``.
Data: ``{inputs: [{name, dtype, shape}], outputs: [...], opset, opsets, ir_version, producer,
graph_name, num_nodes, external_data, size_bytes, source}``; ``source`` is ``"onnx"``, or
``"onnxruntime"`` when the onnx package is missing (then opset/ir_version are null).
"""

from __future__ import annotations

from typing import Any

from ..models import inspect_onnx, resolve_model_path
from ..protocol import CommandOutput, MissingDependencyError, Params
from ..report import Report
from .sessions import create_session, session_signature


def inspect_with_ort(path: Any) -> dict[str, Any]:
    """Fallback when onnx is not installed: what an onnxruntime session tells."""
    session = create_session(path)
    meta = session.get_modelmeta()
    data = session_signature(session)
    producer = getattr(meta, "producer_name", None) or None
    graph_name = getattr(meta, "graph_name", None) or None
    data.update(opset=None, opsets={}, ir_version=None, producer=producer, graph_name=graph_name)
    data.update(num_nodes=None, external_data=[])
    return data


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    params.finish()
    path = resolve_model_path(model_arg)
    report.info(f"inspect: {path}")
    try:
        data = inspect_onnx(path)
    except MissingDependencyError:
        data = inspect_with_ort(path)
        data.update(source="onnxruntime", size_bytes=path.stat().st_size, path=str(path))
    return CommandOutput(params=params.resolved, metrics={}, data=data)
