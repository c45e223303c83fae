"""`ProviderType`: the well-known provider type strings."""

from __future__ import annotations

from enum import Enum

__all__ = ["ProviderType"]


class ProviderType(str, Enum):
    """Well-known provider types; any plain string works as a provider type too."""

    LOCAL = "local"
    QAI_HUB = "qai_hub"
    AWS = "aws"
    EMBEDL_ONNXRUNTIME = "embedl_onnxruntime"
    TRTEXEC = "trtexec"

    def __str__(self) -> str:
        return self.value
