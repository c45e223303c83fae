"""`ORTBatchRunner`: a dataset through an ONNX model in ONNX Runtime (agent ``ort.batch``)."""

from __future__ import annotations

from edgehub.toolchains.batch import BatchRunner
from edgehub.toolchains.onnxruntime.components import ONNXRuntimeInvoker


class ORTBatchRunner(BatchRunner):
    runtime = "onnxruntime"
    command = "ort.batch"
    component = ONNXRuntimeInvoker
