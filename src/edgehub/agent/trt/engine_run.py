"""Running a serialized TensorRT engine over many samples on the GPU (one context, one stream).

Each sample's inputs are copied to device buffers (grown as needed, reused across samples),
the engine is enqueued on the stream, and every output is copied back once the stream is done.
"""

from __future__ import annotations

import time
from typing import Any

from ..inputs import OutputStack
from ..protocol import ModelError, RuntimeFailure
from ..tensors import Arrays, TensorSpec
from .cuda import Cuda
from .runtime import TensorRT


class EngineRunner:
    """An engine deserialized for the GPU present, with its I/O tensors' names and types."""

    def __init__(self, trt: TensorRT, logger: Any, blob: bytes, name: str) -> None:
        self.trt = trt
        self.runtime = trt.module.Runtime(logger)  # kept as long as its engine
        self.engine = self.runtime.deserialize_cuda_engine(blob)
        if self.engine is None:
            raise ModelError(
                f"'{name}' cannot be opened by {trt.flavor} TensorRT {trt.version} on this GPU: "
                "build it with the same TensorRT for this GPU's compute capability"
            )
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.dtypes: dict[str, Any] = {}
        shapes: dict[str, list[int]] = {}
        mode_input = trt.module.TensorIOMode.INPUT
        for index in range(self.engine.num_io_tensors):
            tensor = self.engine.get_tensor_name(index)
            self.dtypes[tensor] = trt.module.nptype(self.engine.get_tensor_dtype(tensor))
            shapes[tensor] = [int(d) for d in self.engine.get_tensor_shape(tensor)]
            is_input = self.engine.get_tensor_mode(tensor) == mode_input
            (self.inputs if is_input else self.outputs).append(tensor)
        self.specs = [
            TensorSpec(n, self.dtypes[n].__name__, [d if d >= 0 else None for d in shapes[n]])
            for n in self.inputs
        ]

    @property
    def num_layers(self) -> int:
        return int(getattr(self.engine, "num_layers", 0) or 0)

    def run_all(self, cuda: Cuda, samples: list[Arrays]) -> tuple[dict[str, Any], int]:
        """Each output stacked over ``samples``, and the nanoseconds the runs took (copies in
        and out included, as a session's run does)."""
        import numpy as np

        context = self.engine.create_execution_context()
        stack = OutputStack(len(samples))
        elapsed = 0
        for index, feeds in enumerate(samples):
            start = time.perf_counter_ns()
            for name in self.inputs:
                array = np.ascontiguousarray(feeds[name], dtype=self.dtypes[name])
                context.set_input_shape(name, tuple(array.shape))
                address = cuda.buffer(name, array.nbytes)
                cuda.upload(address, array)
                context.set_tensor_address(name, address)
            results = {}
            for name in self.outputs:
                shape = tuple(int(d) for d in context.get_tensor_shape(name))
                if any(d < 0 for d in shape):
                    raise RuntimeFailure(
                        f"output '{name}' has a data-dependent shape {list(shape)}, which eval "
                        "does not read from TensorRT yet"
                    )
                results[name] = np.empty(shape, self.dtypes[name])
                context.set_tensor_address(name, cuda.buffer(name, results[name].nbytes))
            if not context.execute_async_v3(cuda.stream):
                raise RuntimeFailure(f"TensorRT failed to run sample #{index}; see the log")
            cuda.synchronize()
            for name, value in results.items():
                cuda.download(value, cuda.buffer(name, value.nbytes))
            elapsed += time.perf_counter_ns() - start
            for name, value in results.items():
                stack.add(index, name, value)
        return stack.stacked, elapsed
