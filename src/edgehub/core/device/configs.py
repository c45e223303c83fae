"""The built-in provider configs."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgehub.core.device.spec import ProviderConfig
from edgehub.paths import RemotePath

__all__ = ["DockerConfig", "EmbedlONNXRuntimeConfig", "TrtexecConfig"]


@dataclass(frozen=True)
class EmbedlONNXRuntimeConfig(ProviderConfig):
    """Settings of the ``embedl_onnxruntime`` provider (the device-side CLI over SSH)."""

    embedl_onnxruntime_path: RemotePath | str = "embedl-onnxruntime"
    cli_args: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class TrtexecConfig(ProviderConfig):
    """Settings of the ``trtexec`` provider."""

    trtexec_path: RemotePath | str = "trtexec"
    trtexec_cli_args: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class DockerConfig(ProviderConfig):
    """Settings of the ``local`` provider's toolchain containers.

    ``cpus`` and ``memory`` ("4g") limit the container; ``image`` overrides the pinned image
    tag (for experiments; the run records what was used). ``keep_warm`` (seconds) leaves the
    container running after the context ends, for the next process to reuse, until it has been
    idle that long (also set by ``$EDGEHUB_KEEP_WARM``); by default containers are removed.
    """

    cpus: float | None = None
    memory: str | None = None
    image: str | None = None
    keep_warm: float | None = None
