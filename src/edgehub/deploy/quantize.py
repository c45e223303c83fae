"""`quantize`: smooth patterns, calibration, quantized patterns -> a QDQ ONNX model (symmetric
int8, per-channel weights, as TensorRT's explicit quantization takes them). Each stage measures
the tensors its matches ask for (``Match.observe``) with ONNX Runtime, then applies the rewrites.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgehub.deploy.calibrate import as_samples, calibrate
from edgehub.deploy.graph import Graph
from edgehub.deploy.model_io import ModelLike, load_model
from edgehub.deploy.pattern import Pattern, Phase, split_phases
from edgehub.deploy.planning import apply_matches, find_matches
from edgehub.deploy.report import TransformReport
from edgehub.deploy.transform import TransformResult
from edgehub.errors import ModelError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import onnx


MIN_QDQ_OPSET = 13  # per-axis DequantizeLinear


def quantize(
    model: ModelLike, calibration_data: Any, patterns: Sequence[type[Pattern]] | None = None
) -> TransformResult:
    """The quantized copy of ``model`` and its report.

    ``calibration_data``: one feed dict, an iterable of feed dicts, or (single-input models)
    an iterable of arrays. Without ``patterns`` the active backend's smooth and quantized
    patterns are used.
    """
    smooth, quantized = split_phases(patterns, (Phase.SMOOTH, Phase.QUANTIZED), "quantize()")
    graph = Graph(_at_least(load_model(model), MIN_QDQ_OPSET))
    samples = as_samples(graph.model, calibration_data)
    report = TransformReport.starting(graph.model, (*smooth, *quantized))
    for stage in (smooth, quantized):
        matches = find_matches(graph, stage)
        observe = {name: axis for m in matches if m.apply for name, axis in m.observe.items()}
        graph.stats = calibrate(graph.model, samples, observe)
        apply_matches(graph, matches, report)
    report.set_after(graph.model)
    return TransformResult(graph.model, report)


def _at_least(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    current = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if current >= opset:
        return model
    from onnx import version_converter

    try:
        return version_converter.convert_version(model, opset)
    except Exception as exc:
        raise ModelError(
            f"cannot lift the model from opset {current} to {opset} for QDQ ({exc}); "
            "re-export it at opset 13 or newer"
        ) from exc
