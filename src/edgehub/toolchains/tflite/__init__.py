"""The TFLite / LiteRT toolchain: its `RUNTIME` descriptor; the local providers (onnx2tf and
the LiteRT interpreter in the pinned image) register on import, the others when a device of
their type first runs a component."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.core.runtimes import Repair, RuntimeDescriptor
from edgehub.toolchains import aws, qai_hub
from edgehub.toolchains.aws.config import DeviceFarmConfig
from edgehub.toolchains.deferred import deferred
from edgehub.toolchains.evaluators import TFLiteEvaluator
from edgehub.toolchains.qai_hub.config import QAIHubConfig
from edgehub.toolchains.remote.config import SSHAgentConfig
from edgehub.toolchains.tflite import local
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


def _repair_problem(options: Mapping[str, Any]) -> str | None:
    """An int8 model with float inputs and outputs keeps layers in float."""
    implied = "int8" if "calibration_data" in options or options.get("quantize_io") else None
    if (options.get("precision") or implied) != "int8":
        return (
            "--fix keeps layers of an int8 TFLite model in float: give --set "
            "calibration_data=DIR (or --set precision=int8)"
        )
    if options.get("quantize_io"):
        return (
            "--fix keeps layers in float in TFLite models with float inputs and outputs; "
            "drop --set quantize_io"
        )
    return None


def _model_file(path: Path) -> str | None:
    """LiteRT runs .tflite models: an ONNX model is compiled first."""
    if path.suffix.lower() == ".onnx":
        return (
            f"'{path.name}' is an ONNX model, but tflite runs .tflite models: compile each "
            "first (hub exec compile tflite MODEL)"
        )
    return None


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
    batch_runner=deferred(f"{__name__}.batch:TFLiteBatchRunner"),
    repair=Repair(
        "precision", "float32", ("calibration_data", "per_channel", "quantize_io"), _repair_problem
    ),
    model_file=_model_file,
    deterministic_compile=False,  # TFLite conversion is not bit-reproducible
    ab=deferred("edgehub.toolchains.ab_agent:agent_ab"),
    device_packages=(("ai_edge_litert", "ai-edge-litert"), ("tflite_runtime", "tflite-runtime")),
)

for _component in (TFLiteCompiler, TFLiteProfiler, TFLiteInvoker):
    if _component is not TFLiteCompiler:  # ssh serves the profiler and invoker; registered
        _component.provider_module(SSHAgentConfig.provider_type, local.__name__, registered=True)
    _component.provider_module(
        ProviderType.QAI_HUB, qai_hub.PROVIDERS[_component.run_type]
    )  # imported when used
del _component
TFLiteProfiler.provider_module(ProviderType.AWS, aws.PROVIDERS)
