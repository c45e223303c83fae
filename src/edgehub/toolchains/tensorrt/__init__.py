"""The TensorRT toolchain and its `RUNTIME` descriptor (not available yet)."""

from edgehub.core.device.configs import TrtexecConfig
from edgehub.core.runtimes import RuntimeDescriptor
from edgehub.toolchains.tensorrt.components import (
    TensorRTCompiledModel,
    TensorRTCompiler,
    TensorRTInvoker,
    TensorRTProfiler,
)

__all__ = ["RUNTIME"]

RUNTIME = RuntimeDescriptor(
    name="tensorrt",
    compiler=TensorRTCompiler,
    profiler=TensorRTProfiler,
    invoker=TensorRTInvoker,
    compiled_model=TensorRTCompiledModel,
    image="tensorrt",
    agent_namespace="trt",
    provider_configs=(TrtexecConfig,),
    available=False,
    issue="the TensorRT toolchain",
)
