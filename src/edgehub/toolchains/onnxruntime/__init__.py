"""The ONNX Runtime toolchain: its components, the providers registered on import, and the
`RUNTIME` descriptor registered through the ``edgehub.runtimes`` entry point."""

from edgehub.core.device.configs import EmbedlONNXRuntimeConfig
from edgehub.core.runtimes import RuntimeDescriptor
from edgehub.toolchains.onnxruntime import local
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeCompiledModel,
    ONNXRuntimeCompiler,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
)

__all__ = ["RUNTIME"]

RUNTIME = RuntimeDescriptor(
    name="onnxruntime",
    compiler=ONNXRuntimeCompiler,
    profiler=ONNXRuntimeProfiler,
    invoker=ONNXRuntimeInvoker,
    compiled_model=ONNXRuntimeCompiledModel,
    image="onnxruntime",
    agent_namespace="ort",
    provider_configs=(EmbedlONNXRuntimeConfig,),
    inspect=local.inspect_model,
)
