"""Trusting a device's host key on purpose: read the key the device offers (no login), say how it
stands against known_hosts, and add it to a known_hosts file atomically.

A key that differs from the one known_hosts lists is never replaced here: that is what a
man-in-the-middle looks like, and the user has to remove the old entry knowingly.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from edgehub.errors import HostKeyError
from edgehub.fsutil import atomic_write
from edgehub.runners.ssh.config import SSHConfig
from edgehub.runners.ssh.connect import handshake, open_socket
from edgehub.runners.ssh.known_hosts import fingerprint, load_known_hosts


@dataclass(frozen=True)
class OfferedHostKey:
    """The key a device offered and how it stands: ``trusted``, ``unknown`` or ``changed``."""

    host: str  # as known_hosts names it
    key_type: str
    key_base64: str
    fingerprint: str
    state: str
    known_hosts: Path  # where `add_known_host` writes

    @property
    def line(self) -> str:
        return f"{self.host} {self.key_type} {self.key_base64}"


def offered_host_key(config: SSHConfig) -> OfferedHostKey:
    """Connect, take the host key from the handshake, disconnect (no authentication)."""
    import paramiko

    readable = config.known_hosts is None or config.known_hosts.is_file()
    trusted, revoked = load_known_hosts(config) if readable else ([], set())
    sock = open_socket(config)
    transport = paramiko.Transport(sock)
    try:
        handshake(transport, config, trusted)
        key = transport.get_remote_server_key()
    finally:
        transport.close()
        sock.close()
    blob = key.asbytes()
    if blob in revoked:
        state = "revoked"
    elif any(k.asbytes() == blob for k in trusted):
        state = "trusted"
    else:
        state = "changed" if trusted else "unknown"
    return OfferedHostKey(
        host=config.known_hosts_name,
        key_type=key.get_name(),
        key_base64=base64.b64encode(blob).decode("ascii"),
        fingerprint=fingerprint(key),
        state=state,
        known_hosts=config.known_hosts or Path.home() / ".ssh" / "known_hosts",
    )


def add_known_host(offer: OfferedHostKey) -> Path:
    """Append ``offer``'s key to its known_hosts file (temp file + rename; mode 0600, or the
    file's own). Refuses changed and revoked keys; a trusted key is left as it is."""
    if offer.state in ("changed", "revoked"):
        raise HostKeyError(
            f"the host key {offer.host} offers ({offer.key_type} {offer.fingerprint}) is "
            f"{offer.state} against known_hosts: possible man-in-the-middle attack; not trusting "
            f"it. If the device was reinstalled, remove the old entry (`ssh-keygen -R "
            f"'{offer.host}'`) after checking the new fingerprint on the device"
        )
    path = offer.known_hosts
    if offer.state == "trusted":
        return path
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    existing = path.read_text(encoding="utf-8") if path.is_file() else ""
    if existing and not existing.endswith("\n"):
        existing += "\n"
    atomic_write(path, (existing + offer.line + "\n").encode("utf-8"), new_mode=0o600)
    return path
