"""Is there an NVIDIA GPU on this host (``nvidia-smi -L`` and the ``/dev/nvidia*`` nodes; no CUDA
library is loaded)? For the runtimes whose A/B and eval run there (``RuntimeDescriptor.host_gpu``).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgehub.agent.trt.gpu import gpu_devices
from edgehub.errors import GpuUnavailableError


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
    found = gpu_devices()  # the agent's own look (standard library only), here on the host
    return GpuStatus(bool(found["visible"]), tuple(found["devices"]), str(found["source"]))


def require_host_gpu(what: str, instead: str) -> None:
    """`GpuUnavailableError` where this host shows no NVIDIA GPU: ``what`` runs on one,
    nothing was started, and ``instead`` says what to do."""
    gpu = detect_gpu()
    if not gpu.visible:
        raise GpuUnavailableError(
            f"{what} on this host's NVIDIA GPU and this machine has none ({gpu.describe()}); "
            f"nothing was started. {instead}"
        )
