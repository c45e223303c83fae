"""Preparing an ONNX model for TensorRT's parser: FP16 conversion and QDQ clean-up.

TensorRT for RTX builds only strongly typed networks, so a precision is a property of the model:

- ``fp32``: the model as it is.
- ``fp16``: float32 tensors converted to float16 (onnxconverter-common; I/O kept float32).
- ``int8``: the model must hold QuantizeLinear / DequantizeLinear pairs. A DequantizeLinear of
  an int32 initializer (a quantized bias) is folded into a float initializer, and non-zero zero
  points become symmetric int8 with the scale widened to the same real range.

Whatever the precision, what the parser refuses in valid ONNX is rewritten first
(`parser_rewrites`): a pooling window covering its whole input (Hugging Face's EfficientNet)
becomes the global pool it is (`..pooling`), at the build's static input shapes. An fp32 model
is parsed as it is first (no onnx import) and rewritten only where that parse fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..models import attach_external_data, graph_inputs, load_model, replace_items, save_model
from ..pooling import globalize_pools
from ..protocol import MissingDependencyError, ModelError, UsageError, one_line
from ..report import Report
from ..scratch import Scratch
from ..tensors import positive_ints

PRECISIONS = ("fp32", "fp16", "int8")
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")


def count_qdq(model: Any) -> int:
    return sum(1 for node in model.graph.node if node.op_type in QDQ_OPS)


def to_fp16(model: Any) -> Any:
    try:
        from onnxconverter_common import float16  # type: ignore[import-not-found]
    except ImportError as exc:
        raise MissingDependencyError(
            f"precision fp16 needs onnxconverter-common, which cannot be imported here ({exc})"
        ) from exc
    try:
        return float16.convert_float_to_float16(model, keep_io_types=True)
    except Exception as exc:
        raise ModelError(f"converting the model to float16 failed: {one_line(str(exc))}") from exc


def _initializers(model: Any) -> dict[str, Any]:
    return {tensor.name: tensor for tensor in model.graph.initializer}


def fold_int32_dequantize(model: Any) -> int:
    """Replace DequantizeLinear nodes of int32 initializers by float initializers."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    inits = _initializers(model)
    kept: list[Any] = []
    folded = 0
    for node in model.graph.node:
        source = inits.get(node.input[0]) if node.op_type == "DequantizeLinear" else None
        if source is None or source.data_type != TensorProto.INT32 or len(node.input) < 2:
            kept.append(node)
            continue
        values = numpy_helper.to_array(source).astype(np.float64)
        scale = numpy_helper.to_array(inits[node.input[1]]).astype(np.float64)
        zero: Any = 0.0
        if len(node.input) > 2 and node.input[2]:
            zero = numpy_helper.to_array(inits[node.input[2]]).astype(np.float64)
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        if np.ndim(scale) == 1 and np.ndim(values) > 1:
            shape = [1] * np.ndim(values)
            shape[axis] = -1
            scale = scale.reshape(shape)
            zero = np.reshape(zero, shape) if np.ndim(zero) == 1 else zero
        real = ((values - zero) * scale).astype(np.float32)
        model.graph.initializer.append(numpy_helper.from_array(real, node.output[0]))
        folded += 1
    replace_items(model.graph.node, kept)
    return folded


def symmetric_zero_points(model: Any) -> int:
    """Make every non-zero (or uint8) zero point of a Q/DQ node a symmetric int8 zero."""
    import numpy as np
    from onnx import numpy_helper

    inits = _initializers(model)
    pairs: dict[str, str] = {}
    for node in model.graph.node:
        if node.op_type in QDQ_OPS and len(node.input) > 2 and node.input[2]:
            pairs[node.input[2]] = node.input[1]
    changed = 0
    for zero_name, scale_name in pairs.items():
        zero_t, scale_t = inits.get(zero_name), inits.get(scale_name)
        if zero_t is None or scale_t is None:
            continue
        zero = numpy_helper.to_array(zero_t)
        if zero.dtype not in (np.int8, np.uint8) or (zero.dtype == np.int8 and not zero.any()):
            continue
        info = np.iinfo(zero.dtype)
        scale = numpy_helper.to_array(scale_t).astype(np.float64)
        low = np.abs((info.min - zero.astype(np.float64)) * scale)
        high = np.abs((info.max - zero.astype(np.float64)) * scale)
        new_scale = (np.maximum(low, high) / 127.0).astype(numpy_helper.to_array(scale_t).dtype)
        scale_t.CopyFrom(numpy_helper.from_array(new_scale, scale_name))
        zero_t.CopyFrom(numpy_helper.from_array(np.zeros(zero.shape, np.int8), zero_name))
        changed += 1
    return changed


def static_shapes(model: Any, raw_static: Any, raw_ranges: Any) -> dict[str, list[int]]:
    """The static input shapes a build is for: ``input_shape`` (a list: the first input's) and
    ranges with min = max. A malformed entry is left out: `.shapes.parse_shapes` reports it."""
    names = [spec.name for spec in graph_inputs(model)]
    given: dict[str, Any] = {}
    if isinstance(raw_static, list) and names:
        given[names[0]] = raw_static
    elif isinstance(raw_static, dict):
        given.update(raw_static)
    if isinstance(raw_ranges, dict) and sorted(raw_ranges) == ["max", "min", "opt"]:
        raw_ranges = {names[0]: raw_ranges} if len(names) == 1 else {}
    for name, entry in (raw_ranges if isinstance(raw_ranges, dict) else {}).items():
        if isinstance(entry, dict) and entry.get("min") == entry.get("max"):
            entry = entry.get("min")
        given.setdefault(name, entry)
    return {
        name: [int(d) for d in shape]
        for name, shape in given.items()
        if name in names and positive_ints(shape)
    }


def parser_rewrites(model: Any, raw_static: Any, raw_ranges: Any, report: Report) -> dict[str, Any]:
    """Rewrite in place what TensorRT's parser refuses in valid ONNX (module docstring), sizes
    found at the build's static input shapes; returns the notes of what was rewritten."""
    pools = globalize_pools(model, static_shapes(model, raw_static, raw_ranges))
    if not pools:
        return {}
    report.info(
        f"{len(pools)} pooling node(s) whose window covers the whole input written as global "
        f"pooling (TensorRT's parser limits a pooling window's size): {', '.join(pools)}"
    )
    return {"global_pools": pools}


def rewritten_for_parser(
    src: Path, scratch: Scratch, report: Report, raw_static: Any, raw_ranges: Any
) -> tuple[Path, dict[str, Any]]:
    """``src`` with `parser_rewrites` applied, a copy in ``scratch``; ``src`` itself and no
    notes where nothing changes. For an fp32 model TensorRT did not parse as it is."""
    model = load_model(src, load_external_data=False)
    notes = parser_rewrites(model, raw_static, raw_ranges, report)
    if not notes:
        return src, {}
    attach_external_data(model, src)
    dst = scratch.file(src.name)
    save_model(model, dst)
    return dst, notes


def prepare_model(
    src: Path,
    scratch: Scratch,
    precision: str,
    report: Report,
    raw_static: Any = None,
    raw_ranges: Any = None,
) -> tuple[Path, dict[str, Any]]:
    """The model file to parse for ``precision`` at the build's ``input_shape`` /
    ``input_shape_range`` (raw): ``src`` itself when nothing changes, else a rewritten copy in
    ``scratch``."""
    if precision not in PRECISIONS:
        raise UsageError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "fp32":  # parsed as it is; build.py warns about Q/DQ layers it finds
        return src, {}
    model = load_model(src)
    notes = parser_rewrites(model, raw_static, raw_ranges, report)
    qdq = count_qdq(model)
    notes["qdq_nodes"] = qdq
    if precision == "fp16":
        if qdq:
            raise UsageError(
                "precision fp16 needs a float model, but this one is quantized (Q/DQ nodes): "
                "give the float model, or use precision int8"
            )
        report.info("fp16: converting float32 tensors to float16 (inputs and outputs stay float32)")
        dst = scratch.file(src.name)
        save_model(to_fp16(model), dst)
        return dst, notes
    if not qdq:
        raise UsageError(
            "precision int8 needs a QDQ model (QuantizeLinear/DequantizeLinear nodes): TensorRT "
            "for RTX has no INT8 calibrator; quantize first with ONNXRuntimeCompiler "
            "(quantization='static', calibration_data=...), or pass calibration_data to "
            "TensorRTCompiler to have that done for you"
        )
    folded = fold_int32_dequantize(model)
    symmetric = symmetric_zero_points(model)
    notes.update({"folded_int32_dequantize": folded, "symmetrized_zero_points": symmetric})
    if folded:
        report.info(f"int8: {folded} int32 bias DequantizeLinear node(s) folded into float weights")
    if symmetric:
        report.warn(
            f"int8: {symmetric} asymmetric zero point(s) made symmetric (TensorRT supports zero "
            "point 0 only); quantize with symmetric activations to avoid the widened scales"
        )
    dst = scratch.file(src.name)
    save_model(model, dst)
    return dst, notes
