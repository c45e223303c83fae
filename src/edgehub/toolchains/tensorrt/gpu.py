"""Is there an NVIDIA GPU on this host, and which TensorRT images can be used here?

`detect_gpu` (from `edgehub.toolchains.host_gpu`) looks at the host; `tensorrt_image_checks`
is what ``hub doctor`` shows for TensorRT: the GPU, and for each TensorRT image whether it is
built and what it can do on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgehub.toolchains.host_gpu import GpuStatus, detect_gpu

__all__ = ["GpuCheck", "GpuStatus", "detect_gpu", "tensorrt_image_checks"]

RTX_IMAGE = "tensorrt-rtx"
FULL_IMAGE = "tensorrt"


@dataclass(frozen=True)
class GpuCheck:
    """One line of ``hub doctor``: same fields as ``ops.doctor.Check``."""

    name: str
    state: str  # "ok", "warn", "missing"
    detail: str


def _built(runtime: str, client: Any) -> bool | None:
    from edgehub import images
    from edgehub.errors import EdgehubError

    try:
        return images.image_status(runtime, client=client).built
    except EdgehubError:
        return None


def tensorrt_image_checks(
    client: Any | None = None, gpu: GpuStatus | None = None
) -> list[GpuCheck]:
    """The GPU, then the two TensorRT images: built or not, and what they can do here."""
    gpu = gpu or detect_gpu()
    checks = [GpuCheck("nvidia gpu", "ok" if gpu.visible else "warn", gpu.describe())]
    rtx = _built(RTX_IMAGE, client)
    run_note = "runs engines on an RTX GPU" if gpu.visible else "cannot run engines (no GPU)"
    if rtx:
        checks.append(
            GpuCheck(f"image {RTX_IMAGE}", "ok", f"builds engines without a GPU; {run_note}")
        )
    else:
        checks.append(
            GpuCheck(f"image {RTX_IMAGE}", "missing", f"run: hub images build {RTX_IMAGE}")
        )
    full = _built(FULL_IMAGE, client)
    if not gpu.visible:
        detail = "not usable here: needs an NVIDIA GPU (use the trtexec provider over SSH)"
        checks.append(GpuCheck(f"image {FULL_IMAGE}", "warn", detail))
    elif full:
        checks.append(GpuCheck(f"image {FULL_IMAGE}", "ok", "trtexec profile / invoke on this GPU"))
    else:
        detail = (
            f"needs NVIDIA's registry: see images/{FULL_IMAGE}/Dockerfile, "
            f"then hub images build {FULL_IMAGE}"
        )
        checks.append(GpuCheck(f"image {FULL_IMAGE}", "missing", detail))
    return checks
