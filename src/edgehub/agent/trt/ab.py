"""``trt.ab``: two TensorRT engines on the GPU in one process, timed in alternating short blocks.

Request::

    {"model_a": ENGINE, "model_b": ENGINE, "rounds": 30, "block_ms": 40, "warmup": 10, "seed": 0,
     "input_seed": 0, "input_shape": null | [ints] | {name: [ints]},
     "profile_json_a": null | PATH, "profile_json_b": null | PATH}

As ``ort.ab`` (:mod:`..ab_rounds`), with two execution contexts per engine (each with its own
device buffers and CUDA stream) where ``ort.ab`` has sessions. A timed run is one
``execute_async_v3`` and its stream's synchronisation, the inputs already on the GPU (random
from ``input_seed``: floats normal, others zero); no host copy is timed. Dynamic inputs run at
``input_shape`` (a list: the first input), else at the profile's ``opt`` shape. Needs an NVIDIA
GPU and the TensorRT bindings (the full tensorrt image).
"""

from __future__ import annotations

import math
import time
from typing import Any

from ..ab_rounds import SIDES, ab_output, measure_rounds, read_request, session_sets, timed_block
from ..ab_rounds import warm_up as interleaved_warm_up
from ..protocol import CommandOutput, Params, RuntimeFailure, UsageError
from ..report import Report
from ..stats import ms
from .cuda import Cuda
from .engine_check import require_engine_file
from .gpu import gpu_visible
from .runtime import import_tensorrt, load_engine, tensor_mode


def open_cuda() -> Cuda:
    """The GPU's context (a seam the tests replace with a stand-in for the GPU)."""
    return Cuda()


def _shapes(engine: Any, raw: Any, label: str) -> dict[str, list[int]]:
    """The shape each input of ``engine`` runs at."""
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    inputs = [n for n in names if tensor_mode(engine, n) == "INPUT"]
    if raw is None:
        asked: dict[str, Any] = {}
    elif isinstance(raw, list) and inputs:
        asked = {inputs[0]: raw}
    elif isinstance(raw, dict):
        unknown = sorted(set(raw) - set(inputs))
        if unknown:
            raise UsageError(
                f"input_shape names {', '.join(unknown)}, which engine {label} does not have; "
                f"its inputs: {', '.join(inputs)}"
            )
        asked = dict(raw)
    else:
        raise UsageError(f"input_shape must be [ints] or {{input: [ints]}}, got {raw!r}")
    shapes: dict[str, list[int]] = {}
    for name in inputs:
        shape = asked.get(name)
        if shape is None:
            shape = [int(d) for d in engine.get_tensor_shape(name)]
            if any(d < 0 for d in shape):  # dynamic: the profile's optimum
                shape = [int(d) for d in engine.get_tensor_profile_shape(name, 0)[1]]
        if not isinstance(shape, list) or not all(isinstance(d, int) and d > 0 for d in shape):
            raise UsageError(f"input_shape of {name!r} must be positive integers, got {shape!r}")
        shapes[name] = shape
    return shapes


class EngineRun:
    """One execution context of an engine with its own device buffers and stream."""

    def __init__(self, trt: Any, engine: Any, cuda: Cuda, feeds: dict[str, Any]) -> None:
        self.cuda = cuda
        self.buffers: list[int] = []
        self.context = engine.create_execution_context()
        if self.context is None:
            raise RuntimeFailure("TensorRT could not create an execution context (GPU memory?)")
        self.stream = cuda.new_stream()
        try:
            self._bind(trt, engine, feeds)
        except BaseException:
            self.close()  # what was allocated so far
            raise

    def _bind(self, trt: Any, engine: Any, feeds: dict[str, Any]) -> None:
        """Set the input shapes, then give every I/O tensor a device buffer; inputs uploaded."""
        cuda = self.cuda
        for name, array in feeds.items():
            if self.context.set_input_shape(name, list(array.shape)) is False:
                raise UsageError(
                    f"input {name!r} cannot run at {list(array.shape)}: outside the shapes the "
                    "engine was built for; give input_shape within its range"
                )
        for index in range(engine.num_io_tensors):
            name = engine.get_tensor_name(index)
            shape = [int(d) for d in self.context.get_tensor_shape(name)]
            if any(d < 0 for d in shape):
                raise UsageError(
                    f"output {name!r} has a data-dependent shape, which trt.ab cannot allocate"
                )
            itemsize = trt.module.nptype(engine.get_tensor_dtype(name))().itemsize
            pointer = cuda.malloc(math.prod(shape) * itemsize)
            self.buffers.append(pointer)
            self.context.set_tensor_address(name, pointer)
            if name in feeds:
                cuda.upload(pointer, feeds[name])

    def run(self) -> None:
        if not self.context.execute_async_v3(self.stream):
            raise RuntimeFailure("TensorRT failed running the engine (execute_async_v3)")
        self.cuda.synchronize(self.stream)

    def close(self) -> None:
        self.context = None
        for pointer in self.buffers:
            self.cuda.free(pointer)
        self.buffers = []
        self.cuda.destroy_stream(self.stream)


def _feeds(trt: Any, engine: Any, shapes: dict[str, list[int]], seed: int) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape in shapes.items():
        dtype = np.dtype(trt.module.nptype(engine.get_tensor_dtype(name)))
        if dtype.kind == "f":
            array = rng.standard_normal(shape).astype(dtype)
        else:
            array = np.zeros(shape, dtype)
        feeds[name] = np.ascontiguousarray(array)
    return feeds


def run(params: Params, report: Report) -> CommandOutput:
    request = read_request(params)
    raw_shape = params.raw_value("input_shape")
    params.finish()
    for side in SIDES:
        require_engine_file(request.paths[side])
    if not gpu_visible():
        raise UsageError(
            "trt.ab runs TensorRT engines, which needs an NVIDIA GPU, and none is visible here: "
            "run it in the full tensorrt image with the GPU passed through"
        )
    trt = import_tensorrt()
    cuda = open_cuda()
    runtime = trt.module.Runtime(trt.module.Logger(trt.module.Logger.WARNING))
    engines: dict[str, Any] = {}
    load_ms: dict[str, float] = {}
    for side in SIDES:  # each engine deserialised once
        path = request.paths[side]
        begin = time.perf_counter_ns()
        label = f"engine {side.upper()} ({path.rsplit('/', 1)[-1]})"
        engines[side] = load_engine(runtime, path, label)
        load_ms[side] = ms(time.perf_counter_ns() - begin)
    shapes = {side: _shapes(engines[side], raw_shape, side.upper()) for side in SIDES}
    feeds = {side: _feeds(trt, engines[side], shapes[side], request.input_seed) for side in SIDES}
    params.resolved["shapes_a"] = shapes["a"]
    params.resolved["shapes_b"] = shapes["b"]
    made: list[EngineRun] = []

    def create(side: str) -> EngineRun:
        made.append(EngineRun(trt, engines[side], cuda, feeds[side]))
        return made[-1]

    try:
        sets, context_ms = session_sets(create)
        report.info(f"warmup: {request.warmup} runs of each of 2 execution contexts per engine")
        interleaved_warm_up(request.warmup, lambda side, index, i: sets[index][side].run())

        def block(side: str, index: int, runs: int, start_at: int) -> list[int]:
            return timed_block(sets[index][side].run, runs)

        found = measure_rounds(block, request.rounds, request.block_ms, request.seed, report)
    finally:
        for engine_run in made:
            engine_run.close()
        cuda.close()
    load = {side: load_ms[side] + context_ms[side] for side in SIDES}
    return ab_output(found, params.resolved, load, request.paths, request.json_paths, request.seed)
