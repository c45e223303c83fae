"""``tflite.batch``: run ``.tflite`` models over every sample of a dataset in one call.

Request::

    {"samples": NPZ | DIR, "stacked": false,
     "runs": [{"model": PATH (.tflite), "output": NPZ, "mapping": null | PATH,
               "extra_outputs": [TFLite tensor names], "graph": false}],
     "threads": null | int, "xnnpack": true}

Samples as in ``ort.batch``, keyed by the ONNX input names in the ONNX layout (through the
mapping sidecar, as ``tflite.invoke``). Each run's outputs, keyed and laid out as the ONNX
model's, are stacked along a new leading axis in one uncompressed ``.npz``. ``extra_outputs``
names intermediate tensors to save too (keyed by TFLite name, as float32, in the ONNX layout
where the mapping pairs them; a copy of the model with them marked as outputs runs:
`marking`); ``graph`` reports the mapping's pairs (``tensors``: {ONNX name: TFLite name}).
Metrics: inference_ms, load_ms (totals). Data: samples, runs [{outputs, inference_ms, load_ms,
tensors (with ``graph``)}].
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..inputs import OutputStack, batch_output, batch_request, dataset, stacked_info
from ..protocol import CommandOutput, ModelError, Params, UsageError
from ..report import Report
from ..stats import ms
from ..tensors import Arrays, save_npz
from .edges import ModelEdges
from .inspect import find_mapping
from .interpreter import load_interpreter, resolve_tflite_path
from .layout import TensorMap
from .marking import dequantized, tensor_names, with_outputs


def run(params: Params, report: Report) -> CommandOutput:
    samples_arg, stacked, runs = batch_request(params, "tflite.batch")
    threads = params.integer("threads", None, minimum=1)
    xnnpack = params.boolean("xnnpack", True)
    params.finish()
    samples: list[Arrays] | None = None
    results: list[dict[str, Any]] = []
    for index, raw in enumerate(runs):
        job = Params(raw, f"tflite.batch run {index}")
        model_arg, output_arg = job.path("model"), job.path("output")
        mapping_arg = job.path("mapping", required=False)
        extra = job.string_list("extra_outputs") or []
        graph = job.boolean("graph", False)
        job.finish()
        path = resolve_tflite_path(model_arg, "TFLite eval")
        mapping = find_mapping(Path(path), mapping_arg, report)
        marked = _marked(path, extra) if extra else {}
        start = time.perf_counter_ns()
        probe = path.with_name(f".probe-{path.name}") if extra else path
        interpreter = load_interpreter(probe, threads=threads, xnnpack=xnnpack)
        loaded = time.perf_counter_ns() - start
        edges = ModelEdges(interpreter, mapping)
        samples = dataset(samples, samples_arg, stacked, edges.original_specs())
        named = _by_tensor_name(edges)
        outputs, elapsed = _run_all(edges, samples, marked, named)
        save_npz(output_arg, outputs, compress=False)
        report.info(f"{Path(path).name}: {len(samples)} samples run in {ms(elapsed):.1f} ms")
        results.append(
            {
                "outputs": stacked_info(outputs),
                "inference_ms": ms(elapsed),
                "load_ms": ms(loaded),
                "samples": len(samples),
                **({"tensors": {m.onnx_name: n for n, m in named.items()}} if graph else {}),
            }
        )
    return batch_output(params, results, samples, "inference_ms", "load_ms")


def _marked(path: Path, names: list[str]) -> dict[str, int]:
    """Write ``.probe-<model>`` beside ``path``: the model with the tensors ``names`` marked
    as outputs; returns their indices by name."""
    data = path.read_bytes()
    index = {name: i for i, name in reversed(list(enumerate(tensor_names(data))))}
    unknown = [n for n in names if n not in index]
    if unknown:
        raise UsageError(
            f"extra_outputs {', '.join(repr(n) for n in unknown)} are not tensors of '{path.name}'"
        )
    marked = {name: index[name] for name in names}
    path.with_name(f".probe-{path.name}").write_bytes(with_outputs(data, list(marked.values())))
    return marked


def _by_tensor_name(edges: ModelEdges) -> dict[str, TensorMap]:
    """The mapping's intermediate tensors and outputs by TFLite tensor name (an output's
    ``tflite_name`` may be its signature key)."""
    names = {int(d["index"]): str(d["name"]) for d in edges.interpreter.get_tensor_details()}
    found = {t.tflite_name: t for t in edges.mapping.tensors}
    for entry in edges.mapping.outputs:
        tensor = edges.output_named.get(entry.tflite_name)
        if tensor is not None:
            found[names.get(tensor.index, entry.tflite_name)] = entry
    return found


def _run_all(
    edges: ModelEdges,
    samples: list[Any],
    marked: dict[str, int],
    maps: dict[str, TensorMap],
) -> tuple[dict[str, Any], int]:
    stack = OutputStack(len(samples))
    elapsed = 0
    for number, arrays in enumerate(samples):
        edges.set_inputs(edges.feeds(arrays, False))
        start = time.perf_counter_ns()
        edges.invoke()
        elapsed += time.perf_counter_ns() - start
        for name, value in edges.results(False).items():
            stack.add(number, name, value)
        for name, index in marked.items():
            value = dequantized(edges.interpreter, index)
            entry = maps.get(name)
            if entry is not None and entry.perm and sorted(entry.perm) != list(range(value.ndim)):
                raise ModelError(
                    f"the mapping's layout {entry.perm} of tensor '{name}' does not fit its "
                    f"shape {list(value.shape)}: recompile the model"
                )
            stack.add(number, name, entry.to_onnx(value) if entry else value)
    return stack.stacked, elapsed
