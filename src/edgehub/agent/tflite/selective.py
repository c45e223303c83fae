"""Selective int8 quantization: requantize onnx2tf's SavedModel with some operators in float.

TensorFlow's converter keeps operators out of quantization by their output tensors' names
(``QuantizationDebugOptions(denylisted_nodes=...)``, applied by
``QuantizationDebugger.get_nondebug_quantized_model``). The SavedModel onnx2tf left is converted
as onnx2tf converts it to int8 (``TFLITE_BUILTINS_INT8`` with ``SELECT_TF_OPS``, per-channel
unless told otherwise, float I/O), calibrated on whole samples (`converter.sample_arrays`: an
RNN state gets its part of each; integer and boolean inputs keep their dtype, which onnx2tf's
own int8 conversion cannot), with those operators left in float. It runs in a child process
(``python -c`` importing this module from the agent's archive), so TensorFlow's memory goes with
it and a cancelled compile kills it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterator

from ..models import load_model
from ..protocol import UsageError
from ..report import Report
from . import converter, simplifier
from .layout import TensorMap


def command(saved_model: Path, calibration: dict[str, Path], float_tensors: list[str],
            per_channel: bool, output: Path) -> list[str]:  # fmt: skip
    """The child's argv: this module's `main` with its job as one JSON argument."""
    job = {
        "saved_model": str(saved_model),
        "calibration": {name: str(path) for name, path in calibration.items()},
        "float_tensors": list(float_tensors),
        "per_channel": per_channel,
        "output": str(output),
    }
    code = (
        f"import sys; sys.path.insert(0, {str(simplifier.agent_root())!r}); "
        f"from {__package__} import selective; selective.main(sys.argv[1])"
    )
    return [sys.executable, "-c", code, json.dumps(job)]


def node_outputs(model: Path, nodes: list[str]) -> dict[str, list[str]]:
    """The output tensors of each of ``model``'s ``nodes`` (named as onnxruntime's graph lists
    them: the name, else ``<op>_<index>``); an unknown name is a UsageError."""
    graph = load_model(model, load_external_data=False).graph
    outputs = {
        node.name or f"{node.op_type}_{index}": [n for n in node.output if n]
        for index, node in enumerate(graph.node)
    }
    unknown = [name for name in nodes if name not in outputs]
    if unknown:
        raise UsageError(
            f"exclude_nodes names {', '.join(repr(n) for n in unknown)}, which the model has "
            "no node of; use the node names eval --layers lists"
        )
    return {name: outputs[name] for name in nodes}


def float_tensors(
    outputs: dict[str, list[str]], pairs: list[TensorMap], report: Report
) -> list[str]:
    """The TFLite tensors whose operators carry the ONNX nodes ``outputs`` (see
    `node_outputs`). A node with no TFLite tensor of its own was fused into the operator after
    it, which carries it."""
    nodes = list(outputs)
    paired = {t.onnx_name: t.tflite_name for t in pairs}
    found: list[str] = []
    fused: list[str] = []
    for name in nodes:
        tensors = [paired[t] for t in outputs[name] if t in paired]
        if not tensors:
            fused.append(name)
        found += [t for t in tensors if t not in found]
    if not found:
        raise UsageError(
            f"exclude_nodes {', '.join(nodes)} have no TFLite operator of their own (fused into "
            "the next one) or make a model output, which stays quantized: name the layer eval "
            "--layers says they were fused into"
        )
    if fused:
        report.info(f"{', '.join(fused)}: fused into a TFLite operator kept in float with it")
    return found


def requantize(saved_model: Path, calibration: dict[str, Path], float_tensors: list[str],
               per_channel: bool, output: Path, report: Report) -> float:  # fmt: skip
    """Write the selectively quantized model to ``output``; returns the seconds it took."""
    argv = command(saved_model, calibration, float_tensors, per_channel, output)
    if float_tensors:
        report.info(f"requantizing with {len(float_tensors)} operator(s) kept in float")
    elapsed = converter.run_onnx2tf(argv, output.parent, report, tool="selective quantization")
    converter.expect_output(output)
    return elapsed


def main(raw: str) -> None:  # pragma: no cover - runs in the child process
    import importlib

    import numpy as np

    tf = importlib.import_module("tensorflow")
    job: dict[str, Any] = json.loads(raw)
    arrays = {name: np.load(path) for name, path in job["calibration"].items()}
    count = min(len(a) for a in arrays.values())

    def samples() -> Iterator[dict[str, Any]]:
        for index in range(count):
            yield {
                name: a[index] if a.dtype.kind in "iub" else a[index].astype(np.float32)
                for name, a in arrays.items()
            }  # fmt: skip

    model = tf.lite.TFLiteConverter.from_saved_model(job["saved_model"])
    model.optimizations = [tf.lite.Optimize.DEFAULT]
    model.target_spec.supported_ops = [
        tf.lite.OpsSet.TFLITE_BUILTINS_INT8,
        tf.lite.OpsSet.SELECT_TF_OPS,
    ]
    model._experimental_disable_per_channel = not job["per_channel"]
    model.representative_dataset = samples
    if not job["float_tensors"]:  # nothing kept in float: the plain converter
        Path(job["output"]).write_bytes(model.convert())
        return
    options = tf.lite.experimental.QuantizationDebugOptions(
        denylisted_nodes=list(job["float_tensors"])
    )
    debugger = tf.lite.experimental.QuantizationDebugger(
        converter=model, debug_dataset=samples, debug_options=options
    )
    Path(job["output"]).write_bytes(debugger.get_nondebug_quantized_model())
