"""Devices, their specs and configs, and the runners that reach them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgehub.core.device.configs import DockerConfig, EmbedlONNXRuntimeConfig, TrtexecConfig
from edgehub.core.device.runner import CommandResult, CommandRunner
from edgehub.core.device.spec import Device, DeviceSpec, ProviderConfig
from edgehub.errors import SSHConnectionError
from edgehub.runners.local import LocalCommandRunner

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

_LAZY = {
    "DockerCommandRunner": "edgehub.runners.docker.runner",
    "SSHCommandRunner": "edgehub.runners.ssh.runner",
    "SSHConfig": "edgehub.runners.ssh.config",
}


def __getattr__(name: str) -> Any:
    """Runner classes load on first use, so importing this module stays light."""
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
