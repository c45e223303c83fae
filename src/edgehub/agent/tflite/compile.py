"""``tflite.compile``: convert an ONNX model to ``.tflite`` with onnx2tf.

Request::

    {"model": PATH (.onnx), "output": PATH (.tflite), "mapping": null | PATH (default: the
     output's ``<stem>.mapping.json``), "precision": "float32" | "float16" | "dynamic_int8" |
     "int8" | "int16x8", "input_shape": null | [ints] (first input) | {name: [ints]},
     "calibration": null | NPZ | DIRECTORY, "quantize_io": false, "per_channel": true,
     "random_samples": 8, "seed": 0, "verify": true, "exclude_nodes": null | [ONNX node names],
     "param_replacement": null | PATH (onnx2tf's parameter replacement JSON, its -prf)}

The model is fixed for onnx2tf (:mod:`.onnx_fixups`), converted (:mod:`.converter`) and loaded
in LiteRT. With ``verify`` both models run on the same inputs (the first calibration sample,
else random), which pairs the outputs with their ONNX names and layouts and measures the
conversion error; the mapping is written beside the model. ``exclude_nodes`` (int8 with float
I/O) keeps those nodes in float: found through the layer pairs (`layer_map`), the model is
requantized without them (`selective`); an int8 model with integer or boolean inputs is
requantized the same way (onnx2tf calibrates as float32). Recurrent ops of an integer model are
unrolled (``-eru``, ``rnn_unrolled``): TensorFlow's calibrator crashes on WHILE loops.
``calibration`` serves int8/int16x8 (random samples, with a warning, without it);
``quantize_io`` makes those take and return integer tensors.
Metrics: compile_time_s, converter_time_s, input_size_bytes, output_size_bytes, size_ratio,
max_abs_error_vs_onnxruntime (with verify). Data: the .tflite's inputs/outputs, the mapping,
the per-output errors, the toolchain versions.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..calibration import calibration_samples
from ..models import (
    graph_inputs,
    graph_outputs,
    load_model,
    model_size_bytes,
    resolve_model_path,
    save_model,
)
from ..protocol import CommandOutput, ModelError, Params, UsageError, one_line
from ..report import Report
from ..tensors import Arrays, TensorSpec, random_inputs
from . import converter, layer_map, matching, selective
from .edges import ModelEdges
from .graph_rewrites import layout_free_inputs
from .interpreter import is_tflite_file, load_interpreter, toolchain_versions
from .layout import IOMapping, TensorMap, onnx2tf_input_perm, permute, sidecar_path
from .onnx_fixups import prepare

# max abs error (relative to the outputs' magnitude, at least 1) a float32 conversion may show
FLOAT32_TOLERANCE = 1e-3
# what `prepare` did that the result's data.fixes records
RECORDED_FIXES = (
    "kernel_shape_added", "softmax_flattened", "scalars_as_vectors", "lstm_zero_states",
    "gathers_as_reshapes")  # fmt: skip


def _check_source(path: Path) -> None:
    if is_tflite_file(path) or path.suffix.lower() == ".tflite":
        raise ModelError(
            f"'{path.name}' is a TFLite model, but TFLiteCompiler takes an ONNX model: profile "
            "or invoke it with TFLiteProfiler / TFLiteInvoker"
        )


def _reference(model_path: Path, feeds: Arrays, report: Report) -> Arrays | None:
    """The ONNX model's outputs in onnxruntime, or None (with a warning) if it cannot run."""
    try:
        from ..ort.sessions import create_session

        session = create_session(model_path)
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds)))
    except Exception as exc:
        report.warn(
            f"onnxruntime cannot run the ONNX model ({exc}): TFLite outputs are paired with the "
            "ONNX outputs by name and order only, and the conversion error is not measured"
        )
        return None


def _samples(
    precision: str,
    calibration: str | None,
    count: int,
    seed: int,
    specs: Any,
    model: Any,
    report: Report,
) -> list[Arrays]:
    if precision not in converter.INTEGER_PRECISIONS:
        if calibration is not None:
            report.warn(f"calibration only applies to int8 and int16x8; ignored for {precision}")
        return []
    samples = calibration_samples(calibration, specs, count, seed, model, report)
    if calibration is not None:
        report.info(f"calibration: {len(samples)} sample(s) from {calibration}")
    return samples


def _warn_if_inexact(
    precision: str,
    errors: dict[str, float],
    reference: Arrays | None,
    originals: dict[str, str],
    report: Report,
) -> None:
    """A float32 conversion should match onnxruntime to rounding: say so when it does not."""
    if precision != "float32" or not reference:
        return
    scale = max((float(abs(a).max()) for a in reference.values() if a.size), default=1.0)
    tolerance = FLOAT32_TOLERANCE * max(1.0, scale)
    off = {originals.get(k, k): v for k, v in errors.items() if v > tolerance}
    if off:
        report.warn(
            "the float32 TFLite model differs from onnxruntime by up to "
            + ", ".join(f"{v:.3g} on '{k}'" for k, v in off.items())
            + f" (outputs up to {scale:.3g}): onnx2tf may have converted an op wrongly; "
            "compare per output with the invoker before relying on it"
        )


def _cut_by_batch(specs: list[TensorSpec], perms: dict[str, list[int]]) -> list[str]:
    """The inputs whose samples onnx2tf's int8 calibration would cut apart: it feeds every
    input the same rows of its axis 0 (as many as the first input's), so an input whose axis 0
    in the TFLite layout differs from the first one's (an RNN state ``[layers, batch, H]``)
    gets parts of samples. Empty when every axis 0 agrees."""
    dims = {s.name: [d if isinstance(d, int) else -1 for d in s.shape or [1]] for s in specs}
    firsts = [(name, permute(shape, perms.get(name))[0]) for name, shape in dims.items()]
    return [name for name, first in firsts if first != firsts[0][1]] if firsts else []


def _layer_maps(
    fixed: Path,
    scratch: Path,
    produced: Path,
    feeds: Arrays,
    inputs: list[TensorMap],
    originals: dict[str, str],
    report: Report,
    strict: bool = False,
) -> list[TensorMap]:
    """The intermediate tensors' pairs (`layer_map`), found on the float32 model onnx2tf
    wrote beside ``produced``; none, with a warning, where they cannot be found (with
    ``strict``, a ModelError)."""
    float_model = converter.output_file(scratch / "out", "model", "float32", False)
    if not float_model.is_file():
        if strict:
            raise ModelError("onnx2tf wrote no float32 model to pair the layers on")
        return []
    try:
        edges = ModelEdges(load_interpreter(float_model, xnnpack=False), None)
        edges.mapping = IOMapping(inputs=inputs, outputs=[])
        renamed = {originals.get(k, k): v for k, v in feeds.items()}
        tflite_feeds = edges.feeds(renamed, compiled_names=False)
        found = layer_map.layer_maps(
            fixed, float_model, produced, feeds, tflite_feeds, originals, scratch
        )
    except Exception as exc:  # the model itself converted: only --layers goes without
        if strict:
            raise
        report.warn(f"intermediate tensors not mapped ({one_line(str(exc))}): eval --layers "
                    "cannot compare this model's layers")  # fmt: skip
        return []
    report.info(f"mapped {len(found)} intermediate ONNX tensor(s) onto TFLite tensors")
    return found


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    output_arg = params.path("output")
    mapping_arg = params.path("mapping", required=False)
    precision = params.choice("precision", converter.PRECISIONS, "float32")
    raw_shape = params.raw_value("input_shape")
    calibration = params.path("calibration", required=False)
    quantize_io = params.boolean("quantize_io", False)
    per_channel = params.boolean("per_channel", True)
    random_samples = params.integer("random_samples", 8, minimum=1)
    seed = params.integer("seed", 0)
    verify = params.boolean("verify", True)
    exclude_nodes = params.string_list("exclude_nodes") or []
    replacement = params.path("param_replacement", required=False)
    params.finish()

    path = resolve_model_path(model_arg)
    _check_source(path)
    out = Path(output_arg)
    if out.is_dir():
        raise UsageError(f"output '{out}' is a directory: give the .tflite file's path")
    mapping_path = Path(mapping_arg) if mapping_arg else sidecar_path(out)
    if quantize_io and precision not in converter.INTEGER_PRECISIONS:
        report.warn(f"quantize_io only applies to int8 and int16x8; ignored for {precision}")
        quantize_io = False
    if exclude_nodes and (precision != "int8" or quantize_io or not verify):
        raise UsageError(
            "exclude_nodes keeps layers of an int8 model with float inputs and outputs in "
            "float (and needs verify): use precision int8 without quantize_io"
        )
    kept_outputs = selective.node_outputs(path, exclude_nodes) if exclude_nodes else {}
    missing = converter.onnx2tf_available()
    if missing:
        raise ModelError(missing)

    started = time.perf_counter()
    model = load_model(path)
    fixes = prepare(model, raw_shape, report)
    originals = {new: old for old, new in fixes["renamed"].items()}
    in_specs, out_specs = graph_inputs(model), graph_outputs(model)
    # calibration files are keyed by the user's (original) input names
    user_specs = [
        TensorSpec(originals.get(s.name, s.name), s.dtype, s.shape, s.values_below)
        for s in in_specs
    ]
    sanitized = {originals.get(s.name, s.name): s.name for s in in_specs}
    samples = [
        {sanitized[k]: v for k, v in sample.items()}
        for sample in _samples(
            precision, calibration, random_samples, seed, user_specs, model, report
        )
    ]

    with tempfile.TemporaryDirectory(prefix="edgehub-agent-tflite-") as tmpdir:
        scratch = Path(tmpdir)
        fixed = scratch / "source" / "model.onnx"
        fixed.parent.mkdir()
        save_model(model, fixed)
        # onnx2tf overwrites its input with its own simplified graph: it converts a copy
        given = scratch / "convert" / "model.onnx"
        converter.write_sample_file(scratch)
        perms = {s.name: onnx2tf_input_perm(len(s.shape or [])) for s in in_specs}
        calib_files = converter.calibration_arrays(samples, perms, scratch) if samples else {}
        # with exclude_nodes, onnx2tf only makes the float model and the SavedModel, which
        # `selective` quantizes (its own int8 variants would be thrown away); so does an int8
        # model with integer or boolean inputs, whose calibration onnx2tf would feed as float32
        typed = [s.name for s in in_specs if not s.dtype.startswith("float")]
        cut = _cut_by_batch(in_specs, perms) if samples else []
        requantized = bool(exclude_nodes) or (
            precision == "int8" and not quantize_io and bool(typed or cut)
        )
        converted = "float32" if requantized else precision
        integer = precision in converter.INTEGER_PRECISIONS
        unrolled = converter.recurrent_nodes(model) if integer else []
        if unrolled:
            report.info(
                f"{', '.join(unrolled)}: recurrent op(s) unrolled over their time steps for "
                f"{precision} (TensorFlow's calibrator crashes running them as WHILE loops)"
            )
        argv = converter.command(
            given, scratch / "out", converted, quantize_io, calib_files, per_channel,
            bool(unrolled),
        )  # fmt: skip
        if replacement is not None:  # onnx2tf runs in the scratch folder: an absolute path
            argv += ["-prf", str(Path(replacement).resolve())]
        feeds = dict(samples[0]) if samples else random_inputs(in_specs, seed=seed)[0]
        # onnxruntime's reference run overlaps the conversion (onnx2tf is mostly one thread)
        pool = ThreadPoolExecutor(max_workers=1)
        pending = pool.submit(_reference, fixed, feeds, report) if verify else None
        try:
            report.info(f"onnx2tf: converting {path.name} to {precision}")
            model_ops = {node.op_type for node in model.graph.node}
            converter_time, remedy = converter.convert(
                argv, scratch, fixed.parent, scratch / "out", model_ops, report,
                layout_free_inputs(model),
            )  # fmt: skip
            kept = remedy.get("kept_input_layouts", [])
            produced = converter.expect_output(
                converter.output_file(scratch / "out", "model", converted, quantize_io)
            )
            reference = pending.result() if pending is not None else None
        finally:
            pool.shutdown(wait=False)
        float_tensors: list[str] = []
        if requantized:
            edges = ModelEdges(load_interpreter(produced), None)
            inputs = matching.input_maps(in_specs, edges.inputs, originals, kept)
            if exclude_nodes:
                pairs = _layer_maps(
                    fixed, scratch, produced, feeds, inputs, originals, report, True
                )
                float_tensors = selective.float_tensors(kept_outputs, pairs, report)
            else:
                why = [f"{', '.join(typed)} are not float"] if typed else []
                why += [f"{', '.join(cut)} have no batch on axis 0"] if cut else []
                report.info(
                    "int8: quantizing onnx2tf's SavedModel here, calibration fed sample by "
                    f"sample in the inputs' own dtypes ({'; '.join(why)})"
                )
            produced = scratch / "out" / "model_selective.tflite"
            whole = converter.sample_arrays(samples, inputs, originals, scratch / "samples")
            converter_time += selective.requantize(
                scratch / "out", whole, float_tensors, per_channel, produced, report
            )

        edges = ModelEdges(load_interpreter(produced), None)
        inputs = matching.input_maps(in_specs, edges.inputs, originals, kept)
        values: dict[str, Any] | None = None
        if verify and reference is not None:
            edges.mapping = IOMapping(inputs=inputs, outputs=[])
            renamed = {originals.get(k, k): v for k, v in feeds.items()}
            edges.set_inputs(edges.feeds(renamed, compiled_names=False))
            edges.invoke()
            values = edges.results(compiled_names=True)
        outputs, errors = matching.output_maps(
            out_specs, edges.outputs, originals, reference, values
        )
        mapping = IOMapping(inputs, outputs, path.name, precision)
        if verify and reference is not None:
            mapping.tensors = _layer_maps(
                fixed, scratch, produced, feeds, inputs, originals, report
            )

        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(str(produced), str(out))
    mapping.write(mapping_path)
    compile_time = time.perf_counter() - started

    input_size = model_size_bytes(path)
    output_size = out.stat().st_size
    metrics: dict[str, Any] = {
        "compile_time_s": round(compile_time, 3),
        "converter_time_s": round(converter_time, 3),
        "input_size_bytes": input_size,
        "output_size_bytes": output_size,
        "size_ratio": round(output_size / input_size, 4) if input_size else None,
    }
    if errors:
        metrics["max_abs_error_vs_onnxruntime"] = max(errors.values())
        _warn_if_inexact(precision, errors, reference, originals, report)
        report.info(
            "conversion error vs onnxruntime (max abs): "
            + ", ".join(f"{k} {v:.3g}" for k, v in errors.items())
        )
    report.info(f"compiled in {compile_time:.2f} s: {out} ({output_size} bytes, {precision})")
    resolved = dict(params.resolved)
    resolved["mapping"] = str(mapping_path)
    resolved["input_shapes"] = fixes["input_shapes"]
    skipped_passes = remedy.pop("onnxsim_skipped_passes", [])
    resolved.update(remedy)  # onnx2tf's remedy for its own failure, as it was applied
    if unrolled:
        resolved["rnn_unrolled"] = unrolled
    if exclude_nodes:
        resolved.pop("exclude_nodes", None)
        resolved["excluded_nodes"] = exclude_nodes
        resolved["float_tensors"] = float_tensors
    if precision not in converter.INTEGER_PRECISIONS:
        for key in ("calibration", "random_samples", "per_channel", "quantize_io"):
            resolved.pop(key, None)
    data: dict[str, Any] = {
        "path": str(out),
        "mapping_path": str(mapping_path),
        "mapping": mapping.to_json(),
        "inputs": [t.to_json() for t in edges.inputs],
        "outputs": [t.to_json() for t in edges.outputs],
        "errors_vs_onnxruntime": errors,
        "fixes": {
            **{key: fixes[key] for key in RECORDED_FIXES},
            "onnxsim_skipped_passes": skipped_passes,
            "renamed": fixes["renamed"],
        },
        "calibration_samples": len(samples),
        "toolchain": toolchain_versions(),
        "converter_argv": [os.path.basename(a) if a == argv[0] else a for a in argv],
    }
    return CommandOutput(params=resolved, metrics=metrics, data=data)
