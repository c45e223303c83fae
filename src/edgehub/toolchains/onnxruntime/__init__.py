"""The ONNX Runtime toolchain: its components, the providers registered on import, and the
`RUNTIME` descriptor registered through the ``edgehub.runtimes`` entry point."""

from collections.abc import Mapping
from typing import Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.core.device.configs import EmbedlONNXRuntimeConfig
from edgehub.core.runtimes import RuntimeDescriptor
from edgehub.toolchains import qai_hub
from edgehub.toolchains.evaluators import ONNXRuntimeEvaluator
from edgehub.toolchains.onnxruntime import embedl_onnxruntime, local, ssh  # noqa: F401 (providers)
from edgehub.toolchains.onnxruntime.components import (
    ONNXRuntimeCompiledModel,
    ONNXRuntimeCompiler,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
)
from edgehub.toolchains.qai_hub.config import QAIHubConfig
from edgehub.toolchains.remote.config import SSHAgentConfig

__all__ = ["RUNTIME"]


def _calibrates(options: Mapping[str, Any]) -> bool:
    """Static quantization (the default) is calibrated."""
    return bool(options.get("quantization", "static") == "static")


RUNTIME = RuntimeDescriptor(
    name="onnxruntime",
    compiler=ONNXRuntimeCompiler,
    profiler=ONNXRuntimeProfiler,
    invoker=ONNXRuntimeInvoker,
    compiled_model=ONNXRuntimeCompiledModel,
    image="onnxruntime",
    agent_namespace="ort",
    provider_configs=(EmbedlONNXRuntimeConfig, SSHAgentConfig, QAIHubConfig),
    inspect=local.inspect_model,
    evaluator=ONNXRuntimeEvaluator,
    calibrates=_calibrates,
)

for _component in (ONNXRuntimeCompiler, ONNXRuntimeProfiler, ONNXRuntimeInvoker):
    _component.provider_module(ProviderType.QAI_HUB, qai_hub.PROVIDERS)  # imported when used
del _component
