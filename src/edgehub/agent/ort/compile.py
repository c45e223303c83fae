"""``ort.compile``: graph-optimize or quantize an ONNX model with onnxruntime.

Request::

    {"model": PATH, "output": PATH,
     "mode": "optimize" | "quantize-static" | "quantize-dynamic",
     "input_shape": null | [ints] (first input) | {name: [ints]},
     "calibration": null | NPZ | DIRECTORY, "calibration_method": "minmax" | "entropy",
     "per_channel": false, "quantize_io": false, "random_samples": 8, "seed": 0,
     "exclude_nodes": null | [node names kept in float (quantize-static)],
     "optimization_level": "basic" | "extended" | "all" (optimize only; default "extended")}

``input_shape`` fixes dynamic dims first. ``optimize`` checks the model with onnx.checker and
saves onnxruntime's optimized graph (``SessionOptions.optimized_model_filepath``); quantization:
:mod:`.quantize`. The output must load in onnxruntime. Metrics: compile_time_s,
input_size_bytes, output_size_bytes, size_ratio. Data: the output model as ``ort.inspect``
describes it (+ ``io_quantization`` with quantize_io).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ..models import (
    describe_model,
    drop_initializer_inputs,
    graph_inputs,
    import_onnx,
    load_model,
    model_size_bytes,
    resolve_model_path,
    save_model,
    self_contained,
    uses_external_data,
)
from ..protocol import CommandOutput, ModelError, Params, RuntimeFailure, UsageError, one_line
from ..report import Report
from ..shapes import fix_input_shapes, parse_input_shape
from .quantize import quantize_dynamic, quantize_static
from .sessions import create_session, session_options

MODES = ("optimize", "quantize-static", "quantize-dynamic")


def optimize(src: Path, out: Path, tmp: Path, level: str, report: Report) -> dict[str, Any]:
    onnx = import_onnx()
    try:
        onnx.checker.check_model(str(src))
    except Exception as exc:
        raise ModelError(
            f"'{src.name}' fails the ONNX checker: {one_line(str(exc))}: fix the model's export"
        ) from exc
    if level == "all":
        report.warn(
            "optimization_level 'all' bakes in layout optimizations for this CPU and onnxruntime "
            "version: run the saved model only with the same hardware and runtime"
        )
    options = session_options(optimization_level=level)
    options.optimized_model_filepath = str(out)
    # ORT would keep an external-data source's references (relative to the source) in the
    # optimized model: optimize a self-contained copy, or (too big for one file) have ORT write
    # its own <output>.data.
    src = self_contained(src, tmp)
    source = load_model(src, load_external_data=False)
    if uses_external_data(source):
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", f"{out.name}.data"
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
    report.info(f"optimize: onnxruntime graph optimizations, level {level}")
    create_session(src, options, ["CPUExecutionProvider"])
    if not out.is_file():
        raise RuntimeFailure(f"onnxruntime did not write the optimized model to '{out}'")
    return {"params": {"optimization_level": level}, "data": {}}


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    output_arg = params.path("output")
    mode = params.choice("mode", MODES)
    raw_shape = params.raw_value("input_shape")
    calibration = params.path("calibration", required=False)
    method = params.choice("calibration_method", ("minmax", "entropy"), "minmax")
    per_channel = params.boolean("per_channel", False)
    quantize_io = params.boolean("quantize_io", False)
    random_samples = params.integer("random_samples", 8, minimum=1)
    seed = params.integer("seed", 0)
    level = params.choice("optimization_level", ("basic", "extended", "all"), "extended")
    exclude_nodes = params.string_list("exclude_nodes") or []
    params.finish()

    path = resolve_model_path(model_arg)
    out = Path(output_arg)
    if out.is_dir():
        raise UsageError(f"output '{out}' is a directory: give the output model's file path")
    if out.exists() and out.resolve() == path.resolve():
        raise UsageError(f"output '{out}' is the input model: choose another output path")
    if mode != "quantize-static":
        given = {
            "calibration": calibration,
            "quantize_io": quantize_io,
            "exclude_nodes": exclude_nodes,
        }
        ignored = [name for name, on in given.items() if on]
        if ignored:
            report.warn(f"{', '.join(ignored)} only apply to quantize-static; ignored in {mode}")
    if mode == "optimize" and per_channel:
        report.warn("per_channel only applies to quantization; ignored in optimize")

    input_size = model_size_bytes(path)
    extra_params: dict[str, Any] = {}
    existed = out.exists()
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="edgehub-agent-compile-") as tmpdir:
            tmp = Path(tmpdir)
            src = path
            model = load_model(path, load_external_data=False)  # a clear error if not ONNX
            if raw_shape is not None or model.ir_version < 4:
                model = load_model(path)
                dropped = drop_initializer_inputs(model)
                if dropped:
                    report.info(f"old IR model: {dropped} initializers no longer listed as inputs")
                if raw_shape is not None:
                    shapes = parse_input_shape(raw_shape, graph_inputs(model))
                    for note in fix_input_shapes(model, shapes):
                        report.warn(note)
                    extra_params["input_shapes"] = shapes
                    report.info(f"input shapes fixed: {shapes}")
                src = tmp / path.name
                save_model(model, src)
            out.parent.mkdir(parents=True, exist_ok=True)
            if mode == "optimize":
                result = optimize(src, out, tmp, level, report)
            elif mode == "quantize-static":
                result = quantize_static(
                    src,
                    out,
                    tmp,
                    calibration=calibration,
                    method=method,
                    per_channel=per_channel,
                    quantize_io=quantize_io,
                    random_samples=random_samples,
                    seed=seed,
                    exclude_nodes=exclude_nodes,
                    report=report,
                )
            else:
                result = quantize_dynamic(src, out, tmp, per_channel=per_channel, report=report)
    except BaseException:
        if not existed and out.is_file():
            os.unlink(str(out))
        raise
    compile_time = time.perf_counter() - started

    try:
        create_session(out)
    except ModelError as exc:
        raise RuntimeFailure(f"the compiled model does not load in onnxruntime: {exc}") from exc
    out_model = load_model(out, load_external_data=False)
    data = describe_model(out_model)
    data["path"] = str(out)
    data.update(result["data"])
    output_size = model_size_bytes(out, out_model)
    extra_params.update(result["params"])
    resolved = dict(params.resolved)
    if mode != "optimize":
        resolved.pop("optimization_level", None)
    if mode != "quantize-static":
        for key in (
            "calibration",
            "calibration_method",
            "random_samples",
            "seed",
            "quantize_io",
            "exclude_nodes",
        ):
            resolved.pop(key, None)
    resolved.update(extra_params)
    metrics = {
        "compile_time_s": round(compile_time, 3),
        "input_size_bytes": input_size,
        "output_size_bytes": output_size,
        "size_ratio": round(output_size / input_size, 4) if input_size else None,
    }
    report.info(
        f"compiled in {compile_time:.2f} s: {out} ({output_size} bytes, "
        f"{metrics['size_ratio']}x the input)"
    )
    return CommandOutput(params=resolved, metrics=metrics, data=data)
