"""Opening an SSH connection: socket (TCP_NODELAY, keepalives), handshake, host key, login
(key files others may read are refused, as OpenSSH does), then its `Watchdog`."""

from __future__ import annotations

import os
import socket
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgehub.errors import SSHConnectionError
from edgehub.runners.ssh.config import SSHConfig
from edgehub.runners.ssh.known_hosts import (
    fingerprint,
    load_known_hosts,
    prefer_known_types,
    verify_host_key,
)
from edgehub.runners.ssh.watchdog import Link, Watchdog

WINDOW_SIZE = 128 * 1024 * 1024  # SFTP: the device sends only the blocks asked for
# A command's channel: what a device may send ahead of our reading, which paramiko holds in
# memory (and reads from more slowly the longer it is). 16 MiB still carries 160 MB/s at a
# tenth of a second's round trip, more than the cipher does here; a flood of output took six
# times as long and twice this process's memory with 128 MiB (bench_ssh.py (c) keeps transfers).
COMMAND_WINDOW_SIZE = 16 * 1024 * 1024
MAX_PACKET_SIZE = 256 * 1024
_DEFAULT_KEY_FILES = ("id_ed25519", "id_ecdsa", "id_rsa")
# AES-GCM first: ~25% faster than AES-CTR + HMAC in paramiko on our machines (220 vs 175 MB/s);
# CBC and 3DES are left out, as in OpenSSH's own defaults.
_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
)


def open_transport(config: SSHConfig, name: str | None = None) -> Any:
    """Socket (TCP_NODELAY) -> SSH handshake -> host key check -> authentication; then the
    `Watchdog` watches it. ``name``: the hub.toml device, for hints."""
    import paramiko

    from edgehub.runners.ssh.user_config import resolve

    config = resolve(config)
    key = config.private_key_path
    if key is not None:
        if not key.is_file():
            raise SSHConnectionError(
                f"private key file {key} does not exist; fix {key_setting(name)}"
            )
        _check_key_mode(key)
    trusted, revoked = load_known_hosts(config)
    jump = _open_jump(config) if config.jump_host else None
    sock: Link | None = None
    transport: Any = None
    try:
        sock = Link(open_socket(config) if jump is None else _tunnel(jump, config))
        transport = paramiko.Transport(
            sock, default_window_size=COMMAND_WINDOW_SIZE, default_max_packet_size=MAX_PACKET_SIZE
        )
        handshake(transport, config, trusted)
        verify_host_key(config, transport.get_remote_server_key(), trusted, revoked)
        _authenticate(transport, config, name)
        watchdog = None
        if config.keepalive_s > 0:
            watchdog = Watchdog(transport, sock, config.keepalive_s, config.keepalive_count)
            watchdog.start()
    except BaseException:
        for opened in (transport, sock):
            if opened is not None:
                opened.close()
        if jump is not None:
            close_transport(jump)
        raise
    with _UNDER_LOCK:
        _UNDER[transport] = _Under(jump, watchdog)  # closed with it (`close_transport`)
    return transport


def handshake(transport: Any, config: SSHConfig, trusted: list[Any]) -> None:
    """Negotiate with the device's sshd (the host key types that ``trusted``, from known_hosts,
    holds asked for first, so a match is a match; the fastest ciphers first)."""
    transport.banner_timeout = config.connect_timeout + 1
    options = transport.get_security_options()
    options.key_types = prefer_known_types(list(options.key_types), trusted)
    options.ciphers = [name for name in _CIPHERS if name in options.ciphers] or options.ciphers
    negotiated = threading.Event()
    transport.start_client(event=negotiated)
    if not negotiated.wait(config.connect_timeout):
        raise SSHConnectionError(
            f"SSH handshake with {config.host}:{config.port} timed out after "
            f"{config.connect_timeout:g} s; check that the device is not frozen and that an "
            "SSH server (not another service) listens on that port"
        )
    if not transport.is_active():
        raise SSHConnectionError(
            f"SSH handshake with {config.host}:{config.port} failed "
            f"({transport.get_exception() or 'connection closed'}); check that an SSH server "
            "listens on that port and shares an algorithm with paramiko"
        )


@dataclass(frozen=True)
class _Under:
    """What a transport from `open_transport` holds beside paramiko's own state."""

    jump: Any  # the jump host's transport, or None
    watchdog: Watchdog | None


# Kept here rather than as attributes set on paramiko's Transport (not its API). Every transport
# from `open_transport` ends in `close_transport`, which drops its entry.
_UNDER: weakref.WeakKeyDictionary[Any, _Under] = weakref.WeakKeyDictionary()
_UNDER_LOCK = threading.Lock()


def watchdog_of(transport: Any) -> Watchdog | None:
    """The `Watchdog` of a transport from `open_transport` (None: keepalives are off)."""
    with _UNDER_LOCK:
        under = _UNDER.get(transport)
    return under.watchdog if under is not None else None


def close_transport(transport: Any) -> None:
    """Close a transport from `open_transport` and the jump host connection under it."""
    with _UNDER_LOCK:
        under = _UNDER.pop(transport, None)
    if under is not None and under.watchdog is not None:
        under.watchdog.stop()
    transport.close()
    if under is not None and under.jump is not None:
        close_transport(under.jump)


def _open_jump(config: SSHConfig) -> Any:
    from edgehub.runners.ssh.user_config import jump_config

    try:
        return open_transport(jump_config(config))
    except SSHConnectionError as error:
        raise type(error)(f"jump host {config.jump_host}: {error}") from error


def _tunnel(jump: Any, config: SSHConfig) -> Any:
    """A channel through the jump host to the device's sshd, used as the device's socket."""
    import paramiko

    try:
        return jump.open_channel(
            "direct-tcpip",
            (config.host, config.port),
            ("127.0.0.1", 0),
            timeout=config.connect_timeout,
        )
    except (paramiko.SSHException, OSError) as error:
        raise SSHConnectionError(
            f"jump host {config.jump_host} could not reach {config.host}:{config.port} "
            f"({error}); check the address and that the jump host allows TCP forwarding"
        ) from error


def open_socket(config: SSHConfig) -> socket.socket:
    where = f"{config.host}:{config.port}"
    try:
        sock = socket.create_connection((config.host, config.port), timeout=config.connect_timeout)
    except socket.gaierror as error:
        raise SSHConnectionError(
            f"cannot resolve SSH host {config.host!r} ({error.strerror}); check host in hub.toml"
        ) from error
    except ConnectionRefusedError as error:
        raise SSHConnectionError(
            f"connection to {where} refused; check that sshd runs on the device and the port"
        ) from error
    except TimeoutError as error:
        raise SSHConnectionError(
            f"connecting to {where} timed out after {config.connect_timeout:g} s; "
            "check the address, the network and any firewall"
        ) from error
    except OSError as error:
        raise SSHConnectionError(
            f"cannot reach {where} ({error.strerror or error}); check the address and network"
        ) from error
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if config.keepalive_s > 0:
        # Notice a dead link in keepalive_count periods instead of TCP's hours (the Watchdog
        # notices a device that is frozen while its kernel still answers).
        period = max(1, round(config.keepalive_s))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in (
            ("TCP_KEEPIDLE", period),
            ("TCP_KEEPINTVL", period),
            ("TCP_KEEPCNT", config.keepalive_count),
            ("TCP_USER_TIMEOUT", config.keepalive_count * period * 1000),
        ):
            if hasattr(socket, option):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
    return sock


def _candidate_keys(config: SSHConfig, name: str | None) -> tuple[list[tuple[str, Any]], Any]:
    """The keys to offer, labelled, and the agent connection to close afterwards."""
    import paramiko

    if config.private_key_path is not None:
        return [(str(config.private_key_path), _load_key(config.private_key_path, name))], None
    keys: list[tuple[str, Any]] = []
    agent = None
    if os.environ.get("SSH_AUTH_SOCK"):
        try:
            agent = paramiko.Agent()
            keys.extend((f"agent key {fingerprint(key)}", key) for key in agent.get_keys())
        except Exception:  # an unusable agent is the same as no agent
            agent = None
    for file_name in _DEFAULT_KEY_FILES:
        path = Path.home() / ".ssh" / file_name
        if path.is_file():
            try:
                _check_key_mode(path)
                keys.append((f"~/.ssh/{file_name}", paramiko.PKey.from_path(path)))
            except Exception:  # keys readable by others, encrypted or unsupported: skipped
                continue
    return keys, agent


def key_setting(name: str | None) -> str:
    """Where hub.toml names a device's key file, for hints."""
    table = f"[devices.{name}.ssh]" if name else "the device's [devices.<name>.ssh] table"
    return f"`key` in {table} of hub.toml"


def _check_key_mode(path: Path) -> None:
    """Refuse a key file that others may read or write, as OpenSSH does."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise SSHConnectionError(
            f"key file {path} is readable by others (mode {mode:04o}); chmod 600 {path}"
        )


def _load_key(path: Path, name: str | None) -> Any:
    import paramiko

    encrypted = (
        f"private key {path} is encrypted; load it into ssh-agent (`ssh-add {path}`) and "
        f"remove {key_setting(name)}, or use a key without a passphrase"
    )
    try:
        return paramiko.PKey.from_path(path)
    except paramiko.PasswordRequiredException as error:
        raise SSHConnectionError(encrypted) from error
    except Exception as error:
        if "password" in str(error).lower():
            raise SSHConnectionError(encrypted) from error
        raise SSHConnectionError(f"cannot load private key {path}: {error}") from error


def _authenticate(transport: Any, config: SSHConfig, name: str | None) -> None:
    """Key file, else agent keys, else default keys; then the password if one is set."""
    import paramiko

    keys, agent = _candidate_keys(config, name)
    tried: list[str] = []
    allowed: list[str] | None = None
    try:
        for label, key in keys:
            try:
                transport.auth_publickey(config.username, key)
            except paramiko.BadAuthenticationType as error:
                allowed = list(error.allowed_types)
                break
            except paramiko.AuthenticationException:
                tried.append(label)
                continue
            except (paramiko.SSHException, OSError) as error:
                raise _lost_during_auth(config, error) from error
            if transport.is_authenticated():
                return
        if config.password is not None and (allowed is None or "password" in allowed):
            try:
                transport.auth_password(config.username, config.password)
            except paramiko.BadAuthenticationType as error:
                allowed = list(error.allowed_types)
            except paramiko.AuthenticationException:
                tried.append("password")
            except (paramiko.SSHException, OSError) as error:
                raise _lost_during_auth(config, error) from error
            if transport.is_authenticated():
                return
    finally:
        if agent is not None:
            agent.close()
    offered = ", ".join(tried) if tried else "no usable key or password"
    accepts = f"; the device accepts only {', '.join(allowed)}" if allowed else ""
    raise SSHConnectionError(
        f"SSH authentication as {config.address} failed (tried: {offered}){accepts}; check that "
        f"the public key is in ~{config.username}/.ssh/authorized_keys on the device, or set "
        f"{key_setting(name)}"
    )


def _lost_during_auth(config: SSHConfig, error: BaseException) -> SSHConnectionError:
    return SSHConnectionError(
        f"connection to {config.address} dropped during authentication ({error}); "
        "check the device's sshd logs"
    )
