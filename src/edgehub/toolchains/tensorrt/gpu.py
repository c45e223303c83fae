"""Is there an NVIDIA GPU on this host, and which TensorRT images can be used here?

`detect_gpu` looks at ``nvidia-smi -L`` and the ``/dev/nvidia*`` device nodes (no CUDA library is
loaded). `tensorrt_image_checks` is what ``hub doctor`` shows for TensorRT: the GPU, and for each
TensorRT image whether it is built and what it can do on this machine.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

__all__ = ["GpuCheck", "GpuStatus", "detect_gpu", "tensorrt_image_checks"]

RTX_IMAGE = "tensorrt-rtx"
FULL_IMAGE = "tensorrt"


@dataclass(frozen=True)
class GpuStatus:
    visible: bool
    devices: tuple[str, ...]
    source: str  # "nvidia-smi", "/dev/nvidia*"

    def describe(self) -> str:
        if not self.visible:
            return "no NVIDIA GPU visible (nvidia-smi and /dev/nvidia* show none)"
        return f"{len(self.devices)} visible ({self.source}): {'; '.join(self.devices)}"


@dataclass(frozen=True)
class GpuCheck:
    """One line of ``hub doctor``: same fields as ``ops.doctor.Check``."""

    name: str
    state: str  # "ok", "warn", "missing"
    detail: str


def detect_gpu() -> GpuStatus:
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            listed = subprocess.run(
                [smi, "-L"], capture_output=True, text=True, timeout=20, check=False
            )
        except (OSError, subprocess.SubprocessError):
            listed = None
        if listed is not None and listed.returncode == 0:
            names = tuple(line.strip() for line in listed.stdout.splitlines() if line.strip())
            return GpuStatus(bool(names), names, "nvidia-smi")
    nodes = tuple(sorted(glob.glob("/dev/nvidia[0-9]*")))
    return GpuStatus(bool(nodes), nodes, "/dev/nvidia*")


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
