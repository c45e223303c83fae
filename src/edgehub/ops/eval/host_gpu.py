"""What an eval of a runtime that runs on this host's NVIDIA GPU (``host_gpu``) needs before it
starts: this host as the device, and a GPU on it.

Such a runtime's batch runner starts a container with the GPU passed through, so the device must
be one whose models run in containers here; without a GPU the eval is recorded as a FAILED EVAL
run saying so (`GpuUnavailableError`, exit 3) once its dataset and model are checked, before
anything is compiled or run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.ops.eval.run import EvalRequest

__all__ = ["check_host_device", "check_host_gpu"]


def check_host_device(request: EvalRequest, in_container: bool, provider: str) -> None:
    """Refuse an eval on another device than this host."""
    if not in_container:
        raise UsageError(
            f"hub exec eval {request.runtime} runs the compiled model on this host's NVIDIA "
            f"GPU; device {request.device!r} uses {provider!r}: drop --device (or pick a local "
            "device)"
        )


def check_host_gpu(ctx: HubContext, request: EvalRequest) -> None:
    """Where this host shows no NVIDIA GPU, a FAILED EVAL run saying so (and the error)."""
    from edgehub.core import RunType
    from edgehub.toolchains import host_gpu

    if host_gpu.detect_gpu().visible:
        return
    model = request.model.stem if request.model is not None else request.from_run
    device = ctx.device(request.device or "local")
    name = request.name or f"eval-{model}"
    with ctx.open_run(RunType.EVAL, name, component="Evaluator", devices=[device]):
        ctx.client.log_param("$runtime", request.runtime)
        host_gpu.require_host_gpu(
            f"hub exec eval {request.runtime} runs the compiled model",
            "Run it on a host with a GPU (and the NVIDIA Container Toolkit), or evaluate "
            "another runtime's compilation here",
        )
