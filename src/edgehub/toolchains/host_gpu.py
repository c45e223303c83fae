"""Is there an NVIDIA GPU on this host? For the runtimes whose A/B and eval run there
(``RuntimeDescriptor.host_gpu``).

`detect_gpu` looks at ``nvidia-smi -L`` and the ``/dev/nvidia*`` device nodes (no CUDA library is
loaded); `require_host_gpu` refuses in one line where there is none.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
from dataclasses import dataclass

from edgehub.errors import GpuUnavailableError

__all__ = ["GpuStatus", "detect_gpu", "require_host_gpu"]


@dataclass(frozen=True)
class GpuStatus:
    visible: bool
    devices: tuple[str, ...]
    source: str  # "nvidia-smi", "/dev/nvidia*"

    def describe(self) -> str:
        if not self.visible:
            return "no NVIDIA GPU visible (nvidia-smi and /dev/nvidia* show none)"
        return f"{len(self.devices)} visible ({self.source}): {'; '.join(self.devices)}"


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


def require_host_gpu(what: str, instead: str) -> None:
    """`GpuUnavailableError` where this host shows no NVIDIA GPU: ``what`` runs on one,
    nothing was started, and ``instead`` says what to do."""
    gpu = detect_gpu()
    if not gpu.visible:
        raise GpuUnavailableError(
            f"{what} on this host's NVIDIA GPU and this machine has none ({gpu.describe()}); "
            f"nothing was started. {instead}"
        )
