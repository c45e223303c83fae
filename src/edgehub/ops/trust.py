"""Trusting an SSH device's host key (`hub devices trust NAME`): show it, then record it.

The two steps are separate so the caller can show the fingerprint and ask in between; the key
written is exactly the one shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from edgehub.errors import ConfigError, DeviceError

if TYPE_CHECKING:
    from edgehub.ops.project import Project
    from edgehub.runners.ssh import SSHConfig
    from edgehub.runners.ssh.trust import OfferedHostKey


def ssh_config_of(project: Project, name: str) -> SSHConfig:
    """The `SSHConfig` of hub.toml's device ``name``; a device without ``ssh`` is an error."""
    from edgehub.config.devices import to_device

    if name not in project.config.devices:
        known = ", ".join(project.config.devices) or "none"
        raise DeviceError(f"no device {name!r} in hub.toml (devices: {known})")
    from edgehub.config.user_trust import known_hosts_refusal
    from edgehub.runners.protocol import SupportsNetworkAddress

    ssh = project.config.devices[name].ssh
    refused = known_hosts_refusal(project.config, name, ssh) if ssh is not None else None
    if refused is not None:  # a key added there would still not vouch for the host
        raise ConfigError(refused)
    runner = to_device(project.config, name).runner
    if not isinstance(runner, SupportsNetworkAddress):
        raise DeviceError(
            f"device {name!r} is not reached over SSH (no [devices.{name}.ssh] table); "
            "it has no host key to trust"
        )
    return runner.network_address


def host_key_of(project: Project, name: str) -> OfferedHostKey:
    """The host key device ``name`` offers now, and how it stands against known_hosts."""
    from edgehub.runners.ssh.trust import offered_host_key

    return offered_host_key(ssh_config_of(project, name))


def trust_host_key(offer: OfferedHostKey) -> Path:
    """Record ``offer`` in its known_hosts file (changed or revoked keys are refused)."""
    from edgehub.runners.ssh.trust import add_known_host

    return add_known_host(offer)
