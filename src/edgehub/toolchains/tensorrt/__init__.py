"""The TensorRT toolchain: its `RUNTIME` descriptor; the local providers (engines built with
TensorRT for RTX without a GPU; profile and invoke where a GPU is present) register on import,
trtexec's when a ``trtexec`` device first runs a component."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.agent.trt.engine_file import engine_problem
from edgehub.core.component.provider_type import ProviderType
from edgehub.core.device.configs import TrtexecConfig
from edgehub.core.runtimes import Repair, RuntimeDescriptor
from edgehub.errors import UsageError
from edgehub.toolchains.deferred import deferred
from edgehub.toolchains.evaluators import TensorRTEvaluator
from edgehub.toolchains.tensorrt import local
from edgehub.toolchains.tensorrt.components import (
    TensorRTCompiledModel,
    TensorRTCompiler,
    TensorRTInvoker,
    TensorRTProfiler,
)
from edgehub.toolchains.tensorrt.gpu import tensorrt_image_checks

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.toolchains.agent_call import AgentResult

__all__ = ["RUNTIME"]


def _calibrates(options: Mapping[str, Any]) -> bool:
    """An int8 engine of a float model is quantized first, calibrated."""
    return bool(options.get("precision") == "int8")


def _repair_problem(options: Mapping[str, Any]) -> str | None:
    """The repair quantizes the model again without the kept layers: int8 from data."""
    if options.get("precision") != "int8" or "calibration_data" not in options:
        return (
            "--fix keeps layers of an int8 TensorRT engine in float by quantizing the model "
            "without them: give --set precision=int8 --set calibration_data=DIR"
        )
    return None


def _model_file(path: Path) -> str | None:
    return engine_problem(path.name)


def _ab(
    ctx: HubContext, runtime: RuntimeDescriptor, a: Path, b: Path, **settings: Any
) -> AgentResult:
    """``trt.ab`` in the full tensorrt image on this host's GPU (a local device only)."""
    from edgehub.toolchains.ab_agent import agent_ab
    from edgehub.toolchains.tensorrt.local import gpu_agent

    device = settings.pop("device")
    provider = ctx.device(device or "local").provider_type
    if provider == "ssh":
        raise UsageError(
            f"hub exec ab tensorrt runs on this host's GPU (a local device); {device!r} is "
            f"{provider}: profile each engine there and use hub runs compare"
        )
    agent = gpu_agent(ctx, device) if provider == "local" else None
    return agent_ab(ctx, runtime, a, b, device=device, agent=agent, **settings)


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
    batch_runner=deferred(f"{__name__}.batch:TRTBatchRunner"),
    repair=Repair("precision", "fp32", ("calibration_data",), _repair_problem),
    model_file=_model_file,
    host_gpu=True,
    ab=_ab,
    device_packages=(("tensorrt", "tensorrt"),),
    image_checks=tensorrt_image_checks,
)

for _component in (TensorRTCompiler, TensorRTProfiler, TensorRTInvoker):  # counts as registered
    _component.provider_module(ProviderType.TRTEXEC, f"{__name__}.trtexec", registered=True)
del _component
