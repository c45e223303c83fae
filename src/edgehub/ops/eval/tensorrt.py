"""What an eval of a TensorRT engine needs before it starts: this host and its NVIDIA GPU.

Engines run in the tensorrt-rtx image with the GPU passed through (`TRTBatchRunner`), so the
device must be ``local``; without a GPU the eval is recorded as a FAILED EVAL run saying so
(`GpuUnavailableError`, exit 3) once its dataset and model are checked, before anything is
compiled or run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.ops.eval.run import EvalRequest

__all__ = ["check_tensorrt_device", "check_tensorrt_gpu"]


def check_tensorrt_device(request: EvalRequest, provider: str) -> None:
    """Refuse a TensorRT eval on another device than this host."""
    if provider != "local":
        raise UsageError(
            f"hub exec eval tensorrt runs the engine on this host's NVIDIA GPU; device "
            f"{request.device!r} uses {provider!r}: drop --device (or pick a local device)"
        )


def check_tensorrt_gpu(ctx: HubContext, request: EvalRequest) -> None:
    """Where this host shows no NVIDIA GPU, a FAILED EVAL run saying so (and the error)."""
    from edgehub.core import RunType
    from edgehub.toolchains.tensorrt.batch import require_gpu
    from edgehub.toolchains.tensorrt.gpu import detect_gpu

    if detect_gpu().visible:
        return
    model = request.model.stem if request.model is not None else request.from_run
    device = ctx.device(request.device or "local")
    name = request.name or f"eval-{model}"
    with ctx.open_run(RunType.EVAL, name, component="Evaluator", devices=[device]):
        ctx.client.log_param("$runtime", request.runtime)
        require_gpu("hub exec eval tensorrt")
