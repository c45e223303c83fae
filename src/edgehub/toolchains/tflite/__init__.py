"""The TFLite / LiteRT toolchain: its `RUNTIME` descriptor; the local providers (onnx2tf and
the LiteRT interpreter in the pinned image) register on import."""

from collections.abc import Mapping
from typing import Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.core.runtimes import RuntimeDescriptor
from edgehub.toolchains import aws, qai_hub
from edgehub.toolchains.aws.config import DeviceFarmConfig
from edgehub.toolchains.evaluators import TFLiteEvaluator
from edgehub.toolchains.qai_hub.config import QAIHubConfig
from edgehub.toolchains.remote.config import SSHAgentConfig
from edgehub.toolchains.tflite import local, ssh  # noqa: F401 (providers)
from edgehub.toolchains.tflite.components import (
    TFLiteCompiledModel,
    TFLiteCompiler,
    TFLiteInvoker,
    TFLiteProfiler,
)

__all__ = ["RUNTIME"]


def _calibrates(options: Mapping[str, Any]) -> bool:
    """The integer precisions are calibrated: asked for, or implied by ``quantize_io``."""
    precision = options.get("precision") or ("int8" if options.get("quantize_io") else None)
    return precision in ("int8", "int16x8")


RUNTIME = RuntimeDescriptor(
    name="tflite",
    compiler=TFLiteCompiler,
    profiler=TFLiteProfiler,
    invoker=TFLiteInvoker,
    compiled_model=TFLiteCompiledModel,
    image="tflite",
    agent_namespace="tflite",
    provider_configs=(SSHAgentConfig, QAIHubConfig, DeviceFarmConfig),
    inspect=local.inspect_model,
    evaluator=TFLiteEvaluator,
    calibrates=_calibrates,
)

for _component in (TFLiteCompiler, TFLiteProfiler, TFLiteInvoker):
    _component.provider_module(ProviderType.QAI_HUB, qai_hub.PROVIDERS)  # imported when used
del _component
TFLiteProfiler.provider_module(ProviderType.AWS, aws.PROVIDERS)
