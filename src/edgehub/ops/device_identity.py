"""What a device *is*, whatever hub.toml calls it: the identity that results are keyed on.

`device_identity` gives a device's `DeviceIdentity` from its ``[devices.<name>]`` table:

- ``address``: where its measurements run, resolved as leases resolve the board
  (`edgehub.acquire.boards`) except that no host name is looked up in DNS. An SSH device:
  ``ssh HOST:PORT`` completed from ``~/.ssh/config`` (an alias's ``HostName``, ``Port`` and
  ``ProxyJump``), with `` via JUMP:PORT`` when a jump host is used. A labgrid pool device: its
  coordinator, place and tags. A cloud device (``qai_hub``, ``aws``): its catalog device. A
  ``local`` device: ``docker ENDPOINT``, the Docker daemon its containers run on. Any other
  device: this host.
- ``provider``: the provider type.
- ``settings``: a hash of the provider settings table and its per-component overrides.

Two names for one board have one identity; a name whose host changed has a new one. The SSH
user, key and password are how we log in, not what the board is, and are left out.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgehub.config.schema import CLOUD_PROVIDERS
from edgehub.errors import EdgehubError

if TYPE_CHECKING:
    from edgehub.config.schema import DeviceSection, HubConfig, SSHSection
    from edgehub.config.settings import ProviderSettings


@dataclass(frozen=True)
class DeviceIdentity:
    """What a device is: where it runs, with which provider and settings."""

    address: str
    provider: str
    settings: str  # a short hash of the provider settings (and overrides)

    @property
    def key(self) -> str:
        """A short stable hash of the whole identity."""
        return _short_hash("\0".join((self.address, self.provider, self.settings)))

    def describe(self) -> str:
        """``ssh 10.0.0.5:22, embedl_onnxruntime, settings 1a2b3c4d``, for messages."""
        return f"{self.address}, {self.provider}, settings {self.settings[:8]}"


def device_identity(config: HubConfig, name: str) -> DeviceIdentity:
    """The identity of the device ``name`` of ``config`` (a `DeviceError` if there is none)."""
    section = config.devices.get(name)
    if section is None:
        from edgehub.errors import DeviceError

        raise DeviceError(f"device {name!r} is not in hub.toml; known: {', '.join(config.devices)}")
    return DeviceIdentity(
        address=_address(section),
        provider=section.provider or "(none)",
        settings=_settings_hash(section),
    )


def _address(section: DeviceSection) -> str:
    if section.labgrid is not None:
        values = dict(section.labgrid.values)
        tags = ",".join(sorted(str(t) for t in values.get("tags") or ()))
        return f"labgrid {values.get('coordinator', '')} place {values.get('place', '*')} {tags}"
    if section.provider in CLOUD_PROVIDERS:
        return f"{section.provider} {section.spec or ''}"
    if section.ssh is not None:
        return _ssh_address(section.ssh)
    if section.provider == "local":
        from edgehub.acquire.boards import docker_endpoint

        return f"docker {docker_endpoint()}"
    return "this host"


def _ssh_address(ssh: SSHSection) -> str:
    """``ssh HOST:PORT[ via JUMP:PORT]``, completed from the user's OpenSSH client config."""
    from edgehub.acquire.boards import ssh_board
    from edgehub.runners.ssh import SSHConfig

    config = SSHConfig(host=ssh.host, username=ssh.user, port=ssh.port, jump_host=ssh.jump_host)
    try:
        board = ssh_board(config, look_up=False)
    except EdgehubError:  # an unreadable ~/.ssh/config or a bad jump host: hub.toml as written
        text = f"ssh {ssh.host.lower()}:{ssh.port}"
        return text if ssh.jump_host is None else f"{text} via {ssh.jump_host.lower()}"
    text = f"ssh {board.host}:{board.port}"
    return text if board.jump_host is None else f"{text} via {board.jump_host}:{board.jump_port}"


def _settings_hash(section: DeviceSection) -> str:
    def values(settings: ProviderSettings | None) -> Any:
        if settings is None:
            return None
        return {"table": settings.config_type.__name__, "values": dict(settings.values)}

    data = {
        "settings": values(section.settings),
        "overrides": {name: values(s) for name, s in sorted(section.overrides.items())},
    }
    return _short_hash(json.dumps(data, sort_keys=True, default=str))


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
