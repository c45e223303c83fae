"""`SSHSession`: one device connection shared by commands and transfers.

It opens the transport on first use and again after the link dropped (each opening bumps
``generation``, so caches tied to a connection know to forget), opens channels with large
windows, runs short helper lines, and keeps one SFTP client. When the connection ends under a
command, `lost` says why in one line naming the device: it stopped answering (the
`~edgehub.runners.ssh.watchdog.Watchdog` gave it up) or the link went down.
"""

from __future__ import annotations

import contextlib
import posixpath
import threading
import time
from typing import Any

from edgehub.errors import ConfigError, HostKeyError, SSHConnectionError
from edgehub.runners.ssh.config import SSHConfig
from edgehub.runners.ssh.connect import (
    COMMAND_WINDOW_SIZE,
    MAX_PACKET_SIZE,
    WINDOW_SIZE,
    close_transport,
    open_transport,
    watchdog_of,
)
from edgehub.runners.ssh.known_hosts import UnknownHostKeyError
from edgehub.runners.ssh.shell import start_command


class SSHSession:
    """The connection to ``config``'s device; every method is thread-safe."""

    def __init__(self, config: SSHConfig) -> None:
        self.config = config
        self.device_name: str | None = None  # the hub.toml name, for the trust hint
        self.generation = 0
        self.channels_opened = 0  # exec channels over this session's life (tests, benchmarks)
        self._lock = threading.RLock()
        self._transport: Any = None
        self._sftp: Any = None
        self._home: str | None = None
        self._silent: str | None = None  # "stopped responding" of the last connection, if so

    @property
    def is_active(self) -> bool:
        transport = self._transport
        return transport is not None and bool(transport.is_active())

    def connect(self) -> Any:
        """The open transport (host key verified, authenticated), opened if need be."""
        if self.config.unusable:
            raise ConfigError(self.config.unusable)
        with self._lock:
            if not self.is_active:
                silent = self.lost(wait=0)
                self.close()
                try:
                    self._transport = open_transport(self.config, self.device_name)
                except UnknownHostKeyError as error:
                    if not self.device_name:
                        raise
                    raise HostKeyError(
                        f"unknown SSH host key for {error.described}; check the fingerprint on "
                        f"the device, then trust it with `hub devices trust {self.device_name}`"
                    ) from None
                except SSHConnectionError as error:
                    if silent is not None and silent == self._silent:
                        raise SSHConnectionError(silent) from error  # it still does not answer
                    raise
                self._silent = None
                self.generation += 1
            return self._transport

    @property
    def label(self) -> str:
        """``device 'NAME'`` (or the address where the device has no name), for messages."""
        name = self.device_name
        return f"device {name!r}" if name else f"device {self.config.address}"

    def answers(self, within: float = 2.0) -> bool:
        """Whether the connection is open and the device answers within ``within`` seconds
        (True where keepalives are off: it cannot tell)."""
        transport = self._transport
        if transport is None or not transport.is_active():
            return False
        watchdog = watchdog_of(transport)
        return watchdog is None or watchdog.answers(within)

    def lost(self, wait: float = 2.0) -> str | None:
        """Why the connection is gone, in one line naming the device; None while it is open
        (``wait``: how long a closing connection may take to say so)."""
        deadline = time.monotonic() + wait
        while self.is_active:
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
        transport = self._transport
        watchdog = watchdog_of(transport) if transport is not None else None
        if watchdog is not None and watchdog.silent_s is not None:
            self._silent = (
                f"{self.label} stopped responding (no reply for {watchdog.silent_s:.0f} s); "
                "check that it is powered, not frozen, and on the network"
            )
        if self._silent is not None:
            return self._silent
        return (
            f"lost the connection to {self.label} ({self.config.address}); check the network "
            "and the device's sshd"
        )

    def close(self) -> None:
        with self._lock:
            sftp, transport = self._sftp, self._transport
            self._sftp = self._transport = self._home = None
        for thing in (sftp, transport):
            if thing is not None:
                with contextlib.suppress(Exception):
                    close_transport(thing) if thing is transport else thing.close()

    def open_channel(self) -> Any:
        import paramiko

        transport = self.connect()
        self.channels_opened += 1
        try:
            return transport.open_session(
                window_size=COMMAND_WINDOW_SIZE,
                max_packet_size=MAX_PACKET_SIZE,
                timeout=self.config.connect_timeout,
            )
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise SSHConnectionError(
                f"cannot open a session on {self.config.address}: {error}; "
                "check MaxSessions in the device's sshd_config"
            ) from error

    def start(self, command: str, *, keep_stdin: bool = False, stdin: bytes = b"") -> Any:
        """A new channel running the shell line ``command`` (`start_command`), sent ``stdin``
        first (with ``keep_stdin``); closed again where it does not start."""
        channel = self.open_channel()
        try:
            start_command(channel, command, self.config, keep_stdin=keep_stdin)
            if stdin:
                channel.sendall(stdin)
        except BaseException as error:
            channel.close()
            if isinstance(error, OSError):
                raise SSHConnectionError(
                    f"cannot send files to {self.config.address}: {error}; check the connection"
                ) from error
            raise
        return channel

    def capture(self, command: str, timeout: float = 30.0) -> tuple[int, bytes, bytes]:
        """Run a shell line of our own to its end; (exit status, stdout, stderr)."""
        channel = self.start(command)
        try:
            channel.settimeout(timeout)
            stdout = channel.makefile("rb").read()
            stderr = channel.makefile_stderr("rb").read()
            return int(channel.recv_exit_status()), stdout, stderr
        finally:
            channel.close()

    def sftp(self) -> Any:
        """The SFTP client of this connection (opened on first use)."""
        import paramiko

        with self._lock:
            transport = self.connect()
            if self._sftp is None or self._sftp.get_channel().closed:
                try:
                    self._sftp = paramiko.SFTPClient.from_transport(
                        transport, window_size=WINDOW_SIZE, max_packet_size=MAX_PACKET_SIZE
                    )
                    self._home = self._sftp.normalize(".")
                except (paramiko.SSHException, OSError, EOFError) as error:
                    raise SSHConnectionError(
                        f"cannot start SFTP on {self.config.address}: {error}; "
                        "check that the device's sshd enables the sftp subsystem"
                    ) from error
            return self._sftp

    def remote_path(self, remote: str) -> str:
        """An absolute, normalized device path; relative paths and ``~`` are under the home
        directory (known once SFTP is open)."""
        home = self._home or "/"
        if remote == "~" or remote.startswith("~/"):
            remote = home + remote[1:]
        elif not remote.startswith("/"):
            remote = posixpath.join(home, remote)
        return posixpath.normpath(remote)
