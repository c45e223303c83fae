"""The built-in provider configs.

Each is also the schema of its settings table in hub.toml (see `edgehub.config.settings`):
``provider_type`` names the provider it serves, ``settings_table`` the table (default: the
provider type), each field a key (``metadata["toml"]`` renames it, ``metadata["help"]``
explains it, ``metadata["tool_path"]`` resolves a path on this host against hub.toml), and the
field's type, bounds (``Annotated[..., Range(...)]``) and default are checked and applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from edgehub.core.device.spec import ProviderConfig
from edgehub.core.values import Matches, Range
from edgehub.paths import RemotePath

__all__ = ["DockerConfig", "EmbedlONNXRuntimeConfig", "LabgridConfig", "TrtexecConfig"]

_POSITIVE = Range(0, open_low=True)
_SIZE = Matches(r"[0-9]+(\.[0-9]+)?[bkmg]?", 'a size like "4g" or "512m"')
_DOCKER_HOST = Matches(r"(unix|ssh|tcp)://\S+", 'a daemon address like "ssh://user@host"')
_CLI_ARGS = {"toml": "cli_args", "help": "extra arguments of every call"}


@dataclass(frozen=True)
class EmbedlONNXRuntimeConfig(ProviderConfig):
    """Settings of the ``embedl_onnxruntime`` provider (the device-side CLI over SSH)."""

    provider_type: ClassVar[str] = "embedl_onnxruntime"

    embedl_onnxruntime_path: RemotePath | str = field(
        default="embedl-onnxruntime",
        metadata={"toml": "path", "tool_path": True, "help": "the embedl-onnxruntime command"},
    )
    cli_args: tuple[str, ...] = field(default_factory=tuple, metadata=_CLI_ARGS)


@dataclass(frozen=True)
class TrtexecConfig(ProviderConfig):
    """Settings of the ``trtexec`` provider."""

    provider_type: ClassVar[str] = "trtexec"

    trtexec_path: RemotePath | str = field(
        default="trtexec",
        metadata={"toml": "path", "tool_path": True, "help": "the trtexec command"},
    )
    trtexec_cli_args: tuple[str, ...] = field(default_factory=tuple, metadata=_CLI_ARGS)


@dataclass(frozen=True)
class DockerConfig(ProviderConfig):
    """Settings of the ``local`` provider's toolchain containers.

    ``cpus`` and ``memory`` ("4g") limit the container; ``image`` overrides the pinned image
    tag (for experiments; the run records what was used). ``keep_warm`` (seconds) leaves the
    container running after the context ends, for the next process to reuse, until it has been
    idle that long (also set by ``$EDGEHUB_KEEP_WARM``); by default containers are removed.
    ``host`` is the Docker daemon to run them on (``ssh://user@host``, ``unix://``, ``tcp://``),
    instead of ``$DOCKER_HOST``'s; files reach a remote one through the Docker API. Over
    ``ssh://`` its host key is checked against ``~/.ssh/known_hosts`` only (the docker SDK's
    client, which takes no other file).
    """

    provider_type: ClassVar[str] = "local"
    settings_table: ClassVar[str] = "docker"
    in_container: ClassVar[bool] = True

    cpus: Annotated[float, _POSITIVE] | None = field(
        default=None, metadata={"help": "CPUs the container may use"}
    )
    memory: Annotated[str, _SIZE] | None = field(
        default=None, metadata={"help": 'memory limit ("4g")'}
    )
    image: str | None = field(default=None, metadata={"help": "image tag override"})
    keep_warm: Annotated[float, _POSITIVE] | None = field(
        default=None, metadata={"help": "seconds an idle container stays up for the next job"}
    )
    host: Annotated[str, _DOCKER_HOST] | None = field(
        default=None,
        metadata={"help": 'the Docker daemon ("ssh://user@host"; default: DOCKER_HOST)'},
    )


@dataclass(frozen=True)
class LabgridConfig(ProviderConfig):
    """A device that is a place of a shared labgrid pool: ``[devices.<name>.labgrid]``.

    Any provider may take it (it is not the device's provider table): a measurement on the
    device first acquires a free place matching ``place`` (a name or a glob) and ``tags``
    through the coordinator, and releases it after. Needs ``pip install 'edgehub[labgrid]'``.
    """

    provider_type: ClassVar[str] = "labgrid"

    coordinator: str = field(
        default="127.0.0.1:20408", metadata={"help": "the labgrid coordinator, HOST:PORT"}
    )
    place: str = field(default="*", metadata={"help": "a place name, or a glob of names"})
    tags: tuple[str, ...] = field(
        default_factory=tuple, metadata={"help": 'place tags to match, e.g. ["board=rpi4"]'}
    )
    acquire_timeout: Annotated[float, _POSITIVE] = field(
        default=3600.0, metadata={"help": "seconds to wait for a free place"}
    )
    holder_ttl: Annotated[float, _POSITIVE] = field(
        default=60.0,
        metadata={
            "help": "seconds a holder's claim on a place lasts unrenewed (renewed while it "
            "runs); after that a waiter takes the place over"
        },
    )
