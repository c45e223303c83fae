"""Invokers of the built-in runtimes."""

import edgehub.toolchains.onnxruntime  # noqa: F401  (registers the providers)
from edgehub.errors import InvokeError
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeInvocationResult,
    ONNXRuntimeInvoker,
)
from edgehub.toolchains.tensorrt.components import TensorRTInvocationResult, TensorRTInvoker
from edgehub.toolchains.tflite.components import TFLiteInvocationResult, TFLiteInvoker

__all__ = [
    "InvokeError",
    "ONNXRuntimeInvocationResult",
    "ONNXRuntimeInvoker",
    "TFLiteInvocationResult",
    "TFLiteInvoker",
    "TensorRTInvocationResult",
    "TensorRTInvoker",
]
