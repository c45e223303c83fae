"""Profilers of the built-in runtimes."""

import edgehub.toolchains.onnxruntime  # noqa: F401  (registers the providers)
from edgehub.errors import ProfileError
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeProfiler,
    ONNXRuntimeProfilingResult,
)
from edgehub.toolchains.outputs import ProfilingMethod
from edgehub.toolchains.tensorrt.components import TensorRTProfiler, TensorRTProfilingResult
from edgehub.toolchains.tflite.components import TFLiteProfiler, TFLiteProfilingResult

TensorRTProfilingMethod = ProfilingMethod
ONNXRuntimeProfilingMethod = ProfilingMethod

__all__ = [
    "ONNXRuntimeProfiler",
    "ONNXRuntimeProfilingMethod",
    "ONNXRuntimeProfilingResult",
    "ProfileError",
    "ProfilingMethod",
    "TFLiteProfiler",
    "TFLiteProfilingResult",
    "TensorRTProfiler",
    "TensorRTProfilingMethod",
    "TensorRTProfilingResult",
]
