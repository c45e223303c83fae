"""`SSHAgentConfig`: the settings of the ``ssh`` provider (edgehub's agent on a device)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from edgehub.core.device.spec import ProviderConfig


@dataclass(frozen=True)
class SSHAgentConfig(ProviderConfig):
    """Settings of the ``ssh`` provider: the device's Python (>= 3.8, with onnxruntime,
    ai-edge-litert or tflite-runtime importable) and whether the agent stays resident on the device
    for the life of the context (a warm call then skips Python's and the runtime's start-up)."""

    provider_type: ClassVar[str] = "ssh"
    settings_table: ClassVar[str] = "agent"

    python: str = field(
        default="python3", metadata={"help": "the device's Python with the runtime installed"}
    )
    resident: bool = field(
        default=True, metadata={"help": "keep the agent loaded on the device between calls"}
    )
