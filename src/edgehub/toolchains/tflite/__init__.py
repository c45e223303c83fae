"""The TFLite / LiteRT toolchain and its `RUNTIME` descriptor (not available yet)."""

from edgehub.core.runtimes import RuntimeDescriptor
from edgehub.toolchains.tflite.components import (
    TFLiteCompiledModel,
    TFLiteCompiler,
    TFLiteInvoker,
    TFLiteProfiler,
)

__all__ = ["RUNTIME"]

RUNTIME = RuntimeDescriptor(
    name="tflite",
    compiler=TFLiteCompiler,
    profiler=TFLiteProfiler,
    invoker=TFLiteInvoker,
    compiled_model=TFLiteCompiledModel,
    image="tflite",
    agent_namespace="tflite",
    available=False,
    issue="the TFLite / LiteRT toolchain",
)
