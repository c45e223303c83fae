"""Compilers of the built-in runtimes."""

import edgehub.toolchains.onnxruntime  # noqa: F401  (registers the providers)
from edgehub.errors import CompileError
from edgehub.toolchains.onnxruntime.components import ONNXRuntimeCompiledModel, ONNXRuntimeCompiler
from edgehub.toolchains.tensorrt.components import TensorRTCompiledModel, TensorRTCompiler
from edgehub.toolchains.tflite.components import TFLiteCompiledModel, TFLiteCompiler

__all__ = [
    "CompileError",
    "ONNXRuntimeCompiledModel",
    "ONNXRuntimeCompiler",
    "TFLiteCompiledModel",
    "TFLiteCompiler",
    "TensorRTCompiledModel",
    "TensorRTCompiler",
]
