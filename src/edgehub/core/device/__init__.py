"""Devices, their specs and configs, and the runners that reach them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.core.device.configs import DockerConfig, EmbedlONNXRuntimeConfig, TrtexecConfig
from edgehub.core.device.spec import Device, DeviceSpec, ProviderConfig
from edgehub.errors import SSHConnectionError
from edgehub.lazy import names_from
from edgehub.runners.local import LocalCommandRunner
from edgehub.runners.protocol import CommandResult, CommandRunner

if TYPE_CHECKING:
    from edgehub.runners.docker import DockerCommandRunner
    from edgehub.runners.ssh import SSHCommandRunner, SSHConfig

__all__ = [
    "CommandResult",
    "CommandRunner",
    "Device",
    "DeviceSpec",
    "DockerCommandRunner",
    "DockerConfig",
    "EmbedlONNXRuntimeConfig",
    "LocalCommandRunner",
    "ProviderConfig",
    "SSHCommandRunner",
    "SSHConfig",
    "SSHConnectionError",
    "TrtexecConfig",
]

# the runner classes load on first use, so that importing this module stays light
__getattr__ = names_from(
    __name__,
    {
        "DockerCommandRunner": "edgehub.runners.docker.runner",
        "SSHCommandRunner": "edgehub.runners.ssh.runner",
        "SSHConfig": "edgehub.runners.ssh.config",
    },
)
