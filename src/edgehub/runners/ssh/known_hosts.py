"""Host key trust for SSH: known_hosts files, OpenSSH host patterns, and the key check.

A host key is accepted only if a known_hosts file lists it for the host; it is never added on
the fly, and a key marked ``@revoked`` is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from pathlib import Path
from typing import TYPE_CHECKING

from edgehub.errors import HostKeyError, SSHConnectionError
from edgehub.runners.ssh.config import SSHConfig

if TYPE_CHECKING:
    import paramiko


_RSA_ALGORITHMS = ("rsa-sha2-512", "rsa-sha2-256")


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def _known_hosts_files(config: SSHConfig) -> list[Path]:
    files = [Path.home() / ".ssh" / "known_hosts", Path("/etc/ssh/ssh_known_hosts")]
    files = [path for path in files if path.is_file()]
    if config.known_hosts is not None:
        if not config.known_hosts.is_file():
            raise SSHConnectionError(
                f"known_hosts file {config.known_hosts} does not exist; fix known_hosts in hub.toml"
            )
        files.append(config.known_hosts)
    return files


def load_known_hosts(config: SSHConfig) -> tuple[list[paramiko.PKey], set[bytes]]:
    """Keys trusted for this host (from every known_hosts file) and keys marked @revoked.

    Lines that cannot be used (bad base64, unknown key types, @cert-authority) are skipped, as
    OpenSSH does; a @revoked key is refused whatever host pattern it is listed under.
    """
    import paramiko

    trusted: list[paramiko.PKey] = []
    revoked: set[bytes] = set()
    for path in _known_hosts_files(config):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise SSHConnectionError(f"cannot read known_hosts file {path}: {error}") from error
        for line in text.splitlines():
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            marker = words.pop(0) if words[0].startswith("@") else None
            if len(words) < 3:
                continue
            patterns, key_type, encoded = words[:3]
            try:
                blob = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError):
                continue
            if marker == "@revoked":
                revoked.add(blob)
            elif marker is None and _host_matches(patterns, config.known_hosts_name):
                try:
                    trusted.append(paramiko.PKey.from_type_string(key_type, blob))
                except Exception:  # a key type paramiko cannot use
                    continue
    return trusted, revoked


def _host_matches(patterns: str, name: str) -> bool:
    """OpenSSH host patterns: comma list, ``*``/``?`` wildcards, ``!`` negation, ``|1|`` hashes."""
    matched = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        pattern = pattern[1:] if negated else pattern
        if pattern.startswith("|1|"):
            hit = _hashed_name_matches(pattern, name)
        else:
            wildcard = "".join(
                ".*" if char == "*" else "." if char == "?" else re.escape(char)
                for char in pattern.lower()
            )
            hit = re.fullmatch(wildcard, name.lower()) is not None
        if hit and negated:
            return False
        matched = matched or hit
    return matched


def _hashed_name_matches(pattern: str, name: str) -> bool:
    parts = pattern.split("|")
    if len(parts) != 4:
        return False
    try:
        salt = base64.b64decode(parts[2], validate=True)
        expected = base64.b64decode(parts[3], validate=True)
    except (binascii.Error, ValueError):
        return False
    actual = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return hmac.compare_digest(actual, expected)


def prefer_known_types(offered: list[str], trusted: list[paramiko.PKey]) -> list[str]:
    """Ask for the host key algorithms we already trust first, as OpenSSH does."""
    wanted: list[str] = []
    for key in trusted:
        name = key.get_name()
        wanted.extend(_RSA_ALGORITHMS if name == "ssh-rsa" else (name,))
    first = [name for name in offered if name in wanted]
    return first + [name for name in offered if name not in first]


def verify_host_key(
    config: SSHConfig, key: paramiko.PKey, trusted: list[paramiko.PKey], revoked: set[bytes]
) -> None:
    name = config.known_hosts_name
    blob = key.asbytes()
    described = f"{key.get_name()} key {fingerprint(key)}"
    if blob in revoked:
        raise HostKeyError(
            f"SSH host key of {name} ({described}) is marked @revoked in known_hosts; "
            "refusing to connect"
        )
    if any(known.asbytes() == blob for known in trusted):
        return
    if trusted:
        raise HostKeyError(
            f"SSH host key of {name} ({described}) does not match known_hosts: possible "
            "man-in-the-middle attack; if the device was reinstalled, check the new fingerprint "
            f"and replace the entry (`ssh-keygen -R '{name}'`)"
        )
    port = f"-p {config.port} " if config.port != 22 else ""
    scan = f"ssh-keyscan {port}{config.host}"
    raise UnknownHostKeyError(
        f"unknown SSH host key for {name} ({described}); after checking the fingerprint on the "
        f"device, run `{scan} >> ~/.ssh/known_hosts`, or set known_hosts in hub.toml",
        described=f"{name} ({described})",
    )


class UnknownHostKeyError(HostKeyError):
    """No known_hosts file lists a key for the host; ``described`` names the host and key."""

    def __init__(self, message: str, *, described: str) -> None:
        super().__init__(message)
        self.described = described
