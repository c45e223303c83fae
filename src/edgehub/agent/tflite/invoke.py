"""``tflite.invoke``: run a ``.tflite`` model once on given inputs and save its outputs.

Request::

    {"model": PATH (.tflite), "input": NPZ (a bare .npy for a one-input model), "output": NPZ,
     "mapping": null | PATH, "use_compiled_names": false, "threads": null | int,
     "xnnpack": true}

Inputs and outputs are keyed by the ONNX names in the ONNX layout through the mapping sidecar
(``<stem>.mapping.json`` beside the model, or ``mapping``), int8/int16 tensors (de)quantized at
the edges; ``use_compiled_names`` uses the TFLite names, layout and dtypes (:mod:`.edges`).
Metrics: inference_ms, load_ms. Data: outputs and inputs ``[{name, dtype, shape}]``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..inputs import describe
from ..protocol import CommandOutput, Params
from ..report import Report
from ..stats import ms
from ..tensors import array_info, by_name, load_arrays, load_inputs, save_npz
from .edges import ModelEdges
from .inspect import find_mapping
from .interpreter import load_interpreter, resolve_tflite_path, toolchain_versions


def run(params: Params, report: Report) -> CommandOutput:
    model_arg = params.path("model")
    input_arg = params.path("input")
    output_arg = params.path("output")
    mapping_arg = params.path("mapping", required=False)
    compiled = params.boolean("use_compiled_names", False)
    threads = params.integer("threads", None, minimum=1)
    xnnpack = params.boolean("xnnpack", True)
    params.finish()

    path = resolve_tflite_path(model_arg, "TFLiteInvoker")
    start = time.perf_counter_ns()
    interpreter = load_interpreter(path, threads=threads, xnnpack=xnnpack)
    loaded = time.perf_counter_ns() - start
    edges = ModelEdges(interpreter, find_mapping(Path(path), mapping_arg, report))
    arrays = load_model_inputs(input_arg, edges, compiled)
    report.info(f"invoke: {describe(arrays)}")
    feeds = edges.feeds(arrays, compiled)
    edges.set_inputs(feeds)
    start = time.perf_counter_ns()
    edges.invoke()
    elapsed = time.perf_counter_ns() - start
    outputs = edges.results(compiled)
    save_npz(output_arg, outputs)
    report.info(f"outputs written to {output_arg} ({ms(elapsed):.3f} ms)")
    data: dict[str, Any] = {
        "outputs": [array_info(name, array) for name, array in outputs.items()],
        "inputs": [array_info(name, array) for name, array in arrays.items()],
        "output_path": output_arg,
        "names": "tflite" if compiled else "onnx",
        "toolchain": toolchain_versions(),
    }
    metrics = {"inference_ms": ms(elapsed), "load_ms": ms(loaded)}
    return CommandOutput(params=params.resolved, metrics=metrics, data=data)


def load_model_inputs(input_arg: str, edges: ModelEdges, compiled: bool) -> Any:
    """The inputs in ``input_arg``, keyed by ONNX name and checked; ``compiled``: keyed by
    TFLite name, the dtype check after quantizing, in ``feeds``."""
    if not compiled:
        return load_inputs(input_arg, edges.original_specs())
    return by_name(load_arrays(input_arg), edges.compiled_specs(), f"input file '{input_arg}'")
