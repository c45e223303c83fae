"""Intermediate ONNX tensors of a TensorRT engine, for the layer search of an eval.

An engine keeps only its network outputs, so an intermediate tensor is read by building the
engine again from its ONNX model (``source``, at the compile's precision and shapes) with the
tensors asked for marked as network outputs too, for the GPU present. `graph_nodes` lists the
ONNX nodes with only the outputs the parser's network has (a missing one was folded or renamed,
as the host reports: ``edgehub.ops.eval.layers``). Marking a tensor keeps TensorRT from fusing
across it: `build_marked`'s caller counts the layers so the host can say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import models
from ..protocol import ModelError, UsageError
from ..report import Report
from ..scratch import Scratch
from .build import build_failure, parse_network, parser_error
from .gpu import gpu_visible
from .layers import network_io
from .logger import make_logger
from .prepare import prepare_model
from .runtime import TensorRT, resolve_targets, set_targets
from .shapes import name_unknown_dims, optimization_profile, parse_shapes


def graph_nodes(source: Path, made: set[str]) -> list[dict[str, Any]]:
    """The ONNX model's nodes in graph order ``{name, op, inputs, outputs}``, each output kept
    only where the parsed network has a tensor of that name (``made``)."""
    nodes = models.graph_nodes(source)
    for node in nodes:
        node["outputs"] = [n for n in node["outputs"] if n in made]
    return nodes


def network_tensors(network: Any) -> dict[str, Any]:
    """Every tensor of a parsed network by name: its inputs and each layer's outputs."""
    found: dict[str, Any] = {}
    for index in range(network.num_inputs):
        tensor = network.get_input(index)
        found[tensor.name] = tensor
    for index in range(network.num_layers):
        layer = network.get_layer(index)
        for out in range(layer.num_outputs):
            tensor = layer.get_output(out)
            if tensor is not None:
                found[tensor.name] = tensor
    return found


def check_marks(marks: list[str], tensors: dict[str, Any], model: str) -> None:
    """Refuse marks the parsed network has no tensor of (the host asks only for those the
    graph listed, so this means another model than the one the engine came from)."""
    unknown = [name for name in marks if name not in tensors]
    if unknown:
        raise UsageError(
            f"extra_outputs {', '.join(repr(n) for n in unknown[:5])} are not tensors of "
            f"TensorRT's network of '{model}' (fused or renamed by its ONNX parser)"
        )


class Parsed:
    """``source`` prepared for ``precision`` and parsed into a strongly typed network."""

    def __init__(self, trt: TensorRT, source: Path, precision: str, report: Report) -> None:
        self.trt = trt
        self.name = source.name
        self.logger = make_logger(trt.module, report)
        self._tmp = Scratch("edgehub-agent-trt-probe-")
        prepared, _ = prepare_model(source, self._tmp, precision, report)
        named = self._tmp.file(f"n_{source.name}")
        prepared, self.dim_names, _ = name_unknown_dims(prepared, named, report)
        self.builder = trt.module.Builder(self.logger)
        self.network, self.parser, parsed = parse_network(trt, self.builder, self.logger, prepared)
        if not parsed:
            self.close()
            raise parser_error(self.parser, source)
        self.tensors = network_tensors(self.network)

    def close(self) -> None:
        self._tmp.close()

    def build_marked(self, marks: list[str], shapes: Any, static: Any) -> bytes:
        """An engine for the GPU present with ``marks`` made network outputs too."""
        check_marks(marks, self.tensors, self.name)
        outputs = {self.network.get_output(i).name for i in range(self.network.num_outputs)}
        for name in marks:
            if name not in outputs:
                self.network.mark_output(self.tensors[name])
        io = network_io(self.network)
        profile = parse_shapes(shapes, io["inputs"], static, self.dim_names)
        config = self.builder.create_builder_config()
        targets = resolve_targets(self.trt, None, gpu_visible())
        set_targets(self.trt, config, targets)
        if profile:
            config.add_optimization_profile(optimization_profile(self.builder, profile))
        blob = self.builder.build_serialized_network(self.network, config)
        if blob is None:
            raise build_failure(self.logger, targets, profile)
        return bytes(blob)


def require_source(source: str | None, what: str) -> Path:
    if source is None:
        raise ModelError(
            f"{what} needs the ONNX model the engine was built from, which this engine does not "
            "record: evaluate a compile run (--from-run) or the ONNX model itself"
        )
    return Path(source)
