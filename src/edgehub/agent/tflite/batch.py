"""``tflite.batch``: run a ``.tflite`` model over every sample of a dataset in one call.

Request::

    {"model": PATH (.tflite), "samples": NPZ | DIR, "stacked": false, "output": NPZ,
     "mapping": null | PATH, "threads": null | int, "xnnpack": true}

Samples are keyed by the ONNX input names in the ONNX layout (as ``tflite.invoke`` takes them
through the mapping sidecar; a model without one uses its own names), given as in ``ort.batch``
(a directory of ``.npz``, or one ``.npz`` with a leading samples axis when ``stacked``). The
outputs, keyed and laid out as the ONNX model's, are stacked along a new leading samples axis
in one ``.npz``. Metrics: inference_ms (total), load_ms. Data: samples, outputs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..inputs import load_samples, split_stacked
from ..protocol import CommandOutput, Params, RuntimeFailure
from ..report import Report
from ..stats import ms
from ..tensors import save_npz
from .edges import ModelEdges
from .inspect import find_mapping
from .interpreter import load_interpreter, resolve_tflite_path


def run(params: Params, report: Report) -> CommandOutput:
    import numpy as np

    model_arg = params.path("model")
    samples_arg = params.path("samples")
    output_arg = params.path("output")
    stacked = params.boolean("stacked", False)
    mapping_arg = params.path("mapping", required=False)
    threads = params.integer("threads", None, minimum=1)
    xnnpack = params.boolean("xnnpack", True)
    params.finish()
    assert model_arg is not None and samples_arg is not None and output_arg is not None

    path = resolve_tflite_path(model_arg, "TFLite eval")
    start = time.perf_counter_ns()
    interpreter = load_interpreter(path, threads=threads, xnnpack=xnnpack)
    loaded = time.perf_counter_ns() - start
    edges = ModelEdges(interpreter, find_mapping(Path(path), mapping_arg, report))
    specs = edges.original_specs()
    samples = split_stacked(samples_arg, specs) if stacked else load_samples(samples_arg, specs)
    collected: dict[str, list[Any]] = {}
    elapsed = 0
    for index, arrays in enumerate(samples):
        edges.set_inputs(edges.feeds(arrays, False))
        start = time.perf_counter_ns()
        edges.invoke()
        elapsed += time.perf_counter_ns() - start
        for name, value in edges.results(False).items():
            collected.setdefault(name, []).append(np.array(value))
        if index == 0:
            report.info(f"first sample run: outputs {', '.join(collected)}")
    outputs: dict[str, Any] = {}
    for name, values in collected.items():
        shapes = {tuple(v.shape) for v in values}
        if len(shapes) > 1:
            raise RuntimeFailure(
                f"output '{name}' changes shape across samples; eval compares outputs of one "
                "shape per dataset"
            )
        outputs[name] = np.stack(values)
    save_npz(output_arg, outputs)
    report.info(f"{len(samples)} samples run in {ms(elapsed):.1f} ms")
    data = {
        "samples": len(samples),
        "outputs": [
            {"name": n, "dtype": a.dtype.name, "shape": [int(d) for d in a.shape[1:]]}
            for n, a in outputs.items()
        ],
    }
    metrics = {"inference_ms": ms(elapsed), "load_ms": ms(loaded)}
    return CommandOutput(params=params.resolved, metrics=metrics, data=data)
