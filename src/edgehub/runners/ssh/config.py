"""`SSHConfig`: how to reach one SSH device (a leaf module: every other ssh module imports it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edgehub.errors import ConfigError


@dataclass(frozen=True)
class SSHConfig:
    """How to reach one SSH device. The password never appears in ``repr``."""

    host: str
    username: str
    port: int = 22
    password: str | None = field(default=None, repr=False)
    private_key_path: Path | None = None
    known_hosts: Path | None = None
    connect_timeout: float = 10.0
    keepalive_s: float = 15.0  # seconds of silence before a keepalive; 0: none
    keepalive_count: int = 3  # keepalives unanswered before the device counts as gone
    step_timeout: float | None = 3600.0  # the longest a command may run (None: no limit)
    jump_host: str | None = None  # "[user@]host[:port]" or an ~/.ssh/config alias
    ssh_config: Path | None = None  # the OpenSSH client config to read (default ~/.ssh/config)
    unusable: str | None = None  # why this device cannot be reached as configured (raised on use)

    def __post_init__(self) -> None:
        if not self.host or not self.username:
            raise ConfigError("SSH device needs both host and username; set them in hub.toml")
        if not 0 < int(self.port) < 65536:
            raise ConfigError(f"SSH port must be between 1 and 65535, got {self.port}")
        if int(self.keepalive_count) < 1:
            raise ConfigError(f"SSH keepalive_count must be at least 1, got {self.keepalive_count}")
        for name in ("private_key_path", "known_hosts", "ssh_config"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, Path(value).expanduser())

    @property
    def address(self) -> str:
        """``user@host:port``, for messages."""
        return f"{self.username}@{self.host}:{self.port}"

    @property
    def known_hosts_name(self) -> str:
        """The host as known_hosts names it: ``host``, or ``[host]:port`` off port 22."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"
