"""The TensorRT toolchain: its `RUNTIME` descriptor; the local providers (engines built with
TensorRT for RTX without a GPU; profile and invoke where a GPU is present) register on import."""

from collections.abc import Mapping
from typing import Any

from edgehub.core.device.configs import TrtexecConfig
from edgehub.core.runtimes import RuntimeDescriptor
from edgehub.toolchains.evaluators import TensorRTEvaluator
from edgehub.toolchains.tensorrt import local, trtexec  # noqa: F401 (providers)
from edgehub.toolchains.tensorrt.components import (
    TensorRTCompiledModel,
    TensorRTCompiler,
    TensorRTInvoker,
    TensorRTProfiler,
)

__all__ = ["RUNTIME"]


def _calibrates(options: Mapping[str, Any]) -> bool:
    """An int8 engine of a float model is quantized first, calibrated."""
    return bool(options.get("precision") == "int8")


RUNTIME = RuntimeDescriptor(
    name="tensorrt",
    compiler=TensorRTCompiler,
    profiler=TensorRTProfiler,
    invoker=TensorRTInvoker,
    compiled_model=TensorRTCompiledModel,
    image="tensorrt-rtx",
    agent_namespace="trt",
    provider_configs=(TrtexecConfig,),
    inspect=local.inspect_model,
    evaluator=TensorRTEvaluator,
    calibrates=_calibrates,
)
