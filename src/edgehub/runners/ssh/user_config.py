"""The user's own OpenSSH client configuration (``~/.ssh/config``), read with paramiko's parser.

For the host an `SSHConfig` names (which may be an alias), the matching ``Host`` blocks give
``HostName``, ``Port`` (when the config keeps the default 22), ``IdentityFile`` (when no key file
is set) and ``ProxyJump`` (when no jump host is set); explicit settings win. ``User`` is taken
only where the config has none. A jump host is written ``[user@]host[:port]`` or as an alias.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from edgehub.errors import ConfigError
from edgehub.runners.ssh.config import SSHConfig


def _config_path(config: SSHConfig) -> Path:
    return config.ssh_config or Path.home() / ".ssh" / "config"


def _user_config(config: SSHConfig) -> Any:
    import paramiko

    path = _config_path(config)
    if not path.is_file():
        if config.ssh_config is not None:
            raise ConfigError(f"ssh_config file {path} does not exist; fix ssh_config in hub.toml")
        return None
    try:
        return paramiko.SSHConfig.from_path(str(path))
    except Exception as error:  # paramiko's parser errors are plain exceptions
        raise ConfigError(f"cannot read SSH client config {path}: {error}") from error


def resolve(config: SSHConfig) -> SSHConfig:
    """``config`` completed from ``~/.ssh/config`` (or its ``ssh_config`` file)."""
    parsed = _user_config(config)
    if parsed is None:
        return config
    entry = parsed.lookup(config.host)
    changes: dict[str, Any] = {}
    if entry.get("hostname") and entry["hostname"] != config.host:
        changes["host"] = entry["hostname"]
    if config.port == 22 and entry.get("port"):
        text = str(entry["port"])
        if not text.isdigit() or not 0 < int(text) < 65536:
            raise ConfigError(
                f"{_config_path(config)}: Host {config.host}: Port {text!r} is not a port number "
                "(1-65535); fix it there or set port in hub.toml"
            )
        changes["port"] = int(text)
    if config.private_key_path is None:
        for candidate in entry.get("identityfile", []):
            if Path(candidate).expanduser().is_file():
                changes["private_key_path"] = Path(candidate).expanduser()
                break
    jump = entry.get("proxyjump")
    if config.jump_host is None and jump and jump.lower() != "none":
        changes["jump_host"] = jump.split(",")[0].strip()  # the first hop; chains: set them
    if not config.username and entry.get("user"):
        changes["username"] = entry["user"]
    return dataclasses.replace(config, **changes) if changes else config


def jump_config(config: SSHConfig) -> SSHConfig:
    """The `SSHConfig` of ``config``'s jump host: same keys, known_hosts and timeouts; its own
    host, user and port from ``[user@]host[:port]`` and ``~/.ssh/config``."""
    assert config.jump_host is not None
    spec = config.jump_host
    user, _, hostport = spec.rpartition("@")
    host, port = hostport, 22
    if hostport.count(":") == 1:
        host, _, text = hostport.partition(":")
        if not text.isdigit():
            raise ConfigError(f"jump host {spec!r}: the port must be a number")
        port = int(text)
    jump = SSHConfig(
        host=host,
        username=user or config.username,
        port=port,
        private_key_path=config.private_key_path,
        known_hosts=config.known_hosts,
        connect_timeout=config.connect_timeout,
        keepalive_s=config.keepalive_s,
        ssh_config=config.ssh_config,
    )
    resolved = resolve(jump)
    if resolved.jump_host is not None:
        raise ConfigError(
            f"jump host {spec!r} needs a jump host itself; chains of jump hosts are not supported"
        )
    return resolved
