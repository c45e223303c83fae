"""The ONNX Runtime toolchain: its components, its providers (each module imported when a device
of its type first runs a component), and the `RUNTIME` descriptor registered through the
``edgehub.runtimes`` entry point."""

from collections.abc import Mapping
from typing import Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.core.device.configs import EmbedlONNXRuntimeConfig
from edgehub.core.runtimes import Repair, RuntimeDescriptor
from edgehub.toolchains import qai_hub
from edgehub.toolchains.deferred import deferred
from edgehub.toolchains.evaluators import ONNXRuntimeEvaluator
from edgehub.toolchains.onnxruntime import local
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


def _repair_problem(options: Mapping[str, Any]) -> str | None:
    """Only a static int8 model keeps layers in float (``nodes_to_exclude``)."""
    if options.get("quantization", "static") != "static":
        return "--fix keeps layers of a static int8 model in float; drop --set quantization"
    return None


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
    batch_runner=deferred(f"{__name__}.batch:ORTBatchRunner"),
    reference=True,
    repair=Repair(
        "quantization",
        "none",
        ("calibration_data", "calibration_method", "per_channel", "quantize_io"),
        _repair_problem,
    ),
    ab=deferred("edgehub.toolchains.ab_agent:agent_ab"),
    ab_inputs=True,
    device_packages=(("onnxruntime", "onnxruntime"),),
)

for _component in (
    ONNXRuntimeCompiler,
    ONNXRuntimeProfiler,
    ONNXRuntimeInvoker,
):  # each imported when used; local and ssh count as registered (a second one is refused)
    _component.provider_module(ProviderType.LOCAL, local.__name__, registered=True)
    _component.provider_module(SSHAgentConfig.provider_type, local.__name__, registered=True)
    _component.provider_module(ProviderType.QAI_HUB, qai_hub.PROVIDERS[_component.run_type])
    _component.provider_module(ProviderType.EMBEDL_ONNXRUNTIME, f"{__name__}.embedl_onnxruntime")
del _component
