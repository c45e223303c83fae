"""Static (QDQ, calibrated) and dynamic int8 quantization with onnxruntime.quantization.

Static: QDQ format, QInt8 activations (asymmetric) and QInt8 weights (symmetric), MinMax or
Entropy calibration, optional per-channel weights (opset >= 13). Dynamic: QInt8 weights, runtime
activation scales. Both first run onnxruntime's ``quant_pre_process`` (ORT graph optimization and
ONNX shape inference; symbolic shape inference too when sympy is installed); if that fails the
model is quantized as is, with a warning.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from ..calibration import calibration_samples
from ..models import (
    EXTERNAL_DATA_THRESHOLD,
    default_opset,
    graph_inputs,
    load_model,
    model_size_bytes,
    save_model,
    self_contained,
)
from ..protocol import MissingDependencyError, ModelError, RuntimeFailure, UsageError, one_line
from ..report import Report
from ..tensors import Arrays
from .quant_io import strip_io_qdq
from .sessions import create_session

STATIC_SETTINGS = {
    "quant_format": "QDQ",
    "activation_type": "QInt8",
    "weight_type": "QInt8",
    "activation_symmetric": False,
    "weight_symmetric": True,
}


def import_quantization() -> Any:
    try:
        from onnxruntime import quantization
    except ImportError as exc:
        raise MissingDependencyError(
            f"onnxruntime.quantization cannot be imported here ({exc}): install onnx and "
            "ml_dtypes next to onnxruntime"
        ) from exc
    return quantization


def preprocess(src: Path, tmp: Path, report: Report) -> tuple[Path, dict[str, Any]]:
    """Run quant_pre_process on a self-contained copy of ``src`` (in ``tmp``); the model to
    quantize, and what was done (for params)."""
    src = self_contained(src, tmp)
    dst = tmp / "preprocessed.onnx"
    symbolic = importlib.util.find_spec("sympy") is not None
    try:
        from onnxruntime.quantization.shape_inference import quant_pre_process

        quant_pre_process(str(src), str(dst), skip_symbolic_shape=not symbolic)
    except Exception as exc:
        report.warn(f"quantization preprocessing failed ({one_line(str(exc))}); quantizing as is")
        return src, {"preprocess": False, "preprocessed_path": None}
    steps = "ort-optimize+onnx-shape" + ("+symbolic-shape" if symbolic else "")
    if not symbolic:
        report.info("preprocess: sympy not installed, symbolic shape inference skipped")
    return dst, {"preprocess": steps, "preprocessed_path": str(dst)}


def quantize_static(
    src: Path,
    out: Path,
    tmp: Path,
    *,
    calibration: str | None,
    method: str,
    per_channel: bool,
    quantize_io: bool,
    random_samples: int,
    seed: int,
    report: Report,
    exclude_nodes: list[str] | None = None,
) -> dict[str, Any]:
    """Quantize ``src`` into ``out``; returns extra params and data. ``exclude_nodes`` (node
    names) stay in float: they get no quantize/dequantize pairs of their own."""
    quantization = import_quantization()
    model = load_model(src, load_external_data=False)
    specs = graph_inputs(model)
    opset = default_opset(model) or 0
    if per_channel and opset < 13:
        raise UsageError(
            f"per_channel quantization needs opset >= 13 but the model has opset {opset}: "
            "re-export with opset 13+ or set per_channel to false"
        )
    samples = calibration_samples(calibration, specs, random_samples, seed, model, report)
    directory = calibration is not None and Path(calibration).is_dir()
    source = "random" if calibration is None else ("directory" if directory else "npz")
    report.info(f"calibration: {len(samples)} samples ({source}), method {method}")

    excluded = list(exclude_nodes or [])
    known = {node.name for node in model.graph.node}
    missing = [name for name in excluded if name not in known]
    if missing:
        raise UsageError(
            f"exclude_nodes names {', '.join(missing)}, which the model has no node of; "
            "give node names as the ONNX model spells them"
        )
    if excluded:
        report.info(f"kept in float: {', '.join(excluded)}")
    big = model_size_bytes(src, model) > EXTERNAL_DATA_THRESHOLD
    model_in, extra = preprocess(src, tmp, report)
    methods = {
        "minmax": quantization.CalibrationMethod.MinMax,
        "entropy": quantization.CalibrationMethod.Entropy,
    }
    report.info(f"quantize-static: QDQ, int8 activations/weights, per_channel={per_channel}")
    try:
        quantization.quantize_static(
            str(model_in),
            str(out),
            make_reader(samples),
            quant_format=quantization.QuantFormat.QDQ,
            per_channel=per_channel,
            activation_type=quantization.QuantType.QInt8,
            weight_type=quantization.QuantType.QInt8,
            calibrate_method=methods[method],
            use_external_data_format=big,
            nodes_to_exclude=excluded,
            extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
        )
    except Exception as exc:  # onnxruntime's own error types: its calibration session failed
        if not type(exc).__module__.startswith("onnxruntime."):
            raise
        raise RuntimeFailure(
            f"onnxruntime failed while calibrating the model: {one_line(str(exc))}"
        ) from exc
    params: dict[str, Any] = dict(STATIC_SETTINGS)
    params.update(
        {
            "method": method,
            "calibration_source": source,
            "num_calibration_samples": len(samples),
            "preprocess": extra["preprocess"],
            "excluded_nodes": excluded,
        }
    )
    data: dict[str, Any] = {}
    if quantize_io:
        quantized = load_model(out)
        io = strip_io_qdq(quantized, report)
        save_model(quantized, out)
        data["io_quantization"] = io
        params["quantized_inputs"] = sorted(io["inputs"])
        params["quantized_outputs"] = sorted(io["outputs"])
    return {"params": params, "data": data}


def _dynamic_op_types(exclude: list[str]) -> list[str]:
    try:
        from onnxruntime.quantization.registry import IntegerOpsRegistry

        op_types = list(IntegerOpsRegistry)
    except Exception:
        op_types = ["Conv", "MatMul", "Attention", "LSTM", "Gather", "Transpose"]
    return [op for op in op_types if op not in exclude]


def quantize_dynamic(
    src: Path, out: Path, tmp: Path, *, per_channel: bool, report: Report
) -> dict[str, Any]:
    """Dynamic quantization; if this onnxruntime lacks int8 ConvInteger, Conv stays float."""
    quantization = import_quantization()
    big = model_size_bytes(src) > EXTERNAL_DATA_THRESHOLD
    model_in, extra = preprocess(src, tmp, report)
    report.info(f"quantize-dynamic: int8 weights, per_channel={per_channel}")
    params: dict[str, Any] = {
        "weight_type": "QInt8",
        "activation_quantization": "dynamic (uint8, computed at run time)",
        "preprocess": extra["preprocess"],
    }
    op_types: list[str] | None = None
    for _attempt in range(2):
        quantization.quantize_dynamic(
            str(model_in),
            str(out),
            op_types_to_quantize=op_types,
            per_channel=per_channel,
            weight_type=quantization.QuantType.QInt8,
            use_external_data_format=big,
        )
        try:
            create_session(out)
        except ModelError as exc:
            if op_types is None and "ConvInteger" in str(exc):
                op_types = _dynamic_op_types(exclude=["Conv"])
                report.warn(
                    "this onnxruntime has no int8 ConvInteger kernel, so Conv layers stay float "
                    "in quantize-dynamic; use quantize-static to quantize them"
                )
                params["excluded_op_types"] = ["Conv"]
                continue
            raise
        break
    return {"params": params, "data": {}}


def make_reader(samples: list[Arrays]) -> Any:
    """An onnxruntime CalibrationDataReader over an in-memory list of samples."""
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.rewind()

        def get_next(self) -> Arrays | None:
            return next(self.left, None)

        def rewind(self) -> None:
            self.left = iter(samples)

        def __len__(self) -> int:
            return len(samples)

    return Reader()
