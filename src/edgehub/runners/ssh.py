"""`SSHCommandRunner`: commands and files on an edge device over SSH (paramiko).

Host keys are always verified against known_hosts (never added on the fly), every argv word is
quoted with `shlex.quote`, and archives coming back from the device are extracted with
`safe_extract`. Each command runs behind a one-line prologue that reports the remote shell's pid
(sshd makes it a process-group leader), so a timeout or `cancel()` can stop the whole remote
process group with a second command. paramiko is imported only when a connection is made.
"""

from __future__ import annotations

import codecs
import secrets
import select
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from types import TracebackType
from typing import Any

from edgehub.core.device.runner import CommandResult
from edgehub.core.events import current_sink
from edgehub.errors import (
    ConfigError,
    SSHConnectionError,
)
from edgehub.runners.outcome import command_result, raise_for_outcome
from edgehub.runners.ssh_connect import MAX_PACKET_SIZE, WINDOW_SIZE, open_transport
from edgehub.runners.ssh_files import SSHFiles, TransferStats
from edgehub.runners.ssh_shell import PidMarker, build_command, kill_script, start_command
from edgehub.runners.streaming import LineCollector

__all__ = ["SSHCommandRunner", "SSHConfig", "TransferStats"]

STOP_GRACE_S = 10.0


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
    keepalive_s: float = 15.0

    def __post_init__(self) -> None:
        if not self.host or not self.username:
            raise ConfigError("SSH device needs both host and username; set them in hub.toml")
        if not 0 < int(self.port) < 65536:
            raise ConfigError(f"SSH port must be between 1 and 65535, got {self.port}")
        for name in ("private_key_path", "known_hosts"):
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


class _Job:
    """One command in flight: ``cancel()`` sets the event, the thread in ``run`` acts on it."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()


class SSHCommandRunner(SSHFiles):
    """Runs argv lists and moves files on an SSH device; connects on first use."""

    device_name: str | None = None

    def __init__(self, config: SSHConfig) -> None:
        self.config = config
        self.transfer_stats = TransferStats()
        self._lock = threading.RLock()
        self._xfer_lock = threading.Lock()
        self._transport: Any = None
        self._sftp: Any = None
        self._home: str | None = None
        self._uploaded = {}
        self._jobs: set[_Job] = set()
        self._jobs_lock = threading.Lock()

    def __repr__(self) -> str:
        state = "connected" if self.is_active else "not connected"
        return f"SSHCommandRunner({self.config.address}, {state})"

    # -- connection -------------------------------------------------------------------------------

    def __enter__(self) -> SSHCommandRunner:
        return self.connect()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def is_active(self) -> bool:
        transport = self._transport
        return transport is not None and bool(transport.is_active())

    def connect(self) -> SSHCommandRunner:
        """Open the connection if it is not open (host key verified, then authenticated)."""
        with self._lock:
            if self.is_active:
                return self
            self._drop_connection()
            self._transport = open_transport(self.config)
            self.transfer_stats = TransferStats()
            return self

    def close(self) -> None:
        """Stop commands in flight, then close SFTP and the connection."""
        self.cancel()
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline:
            with self._jobs_lock:
                if not self._jobs:
                    break
            time.sleep(0.05)
        with self._lock:
            self._drop_connection()

    def _drop_connection(self) -> None:
        sftp, transport = self._sftp, self._transport
        self._sftp = self._transport = self._home = None
        self._uploaded.clear()
        for thing in (sftp, transport):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # closing a dead link must not fail
                    pass

    def _ensure(self) -> Any:
        with self._lock:
            if not self.is_active:
                self.connect()
            return self._transport

    def _open_channel(self) -> Any:
        import paramiko

        transport = self._ensure()
        try:
            return transport.open_session(
                window_size=WINDOW_SIZE,
                max_packet_size=MAX_PACKET_SIZE,
                timeout=self.config.connect_timeout,
            )
        except (paramiko.SSHException, OSError) as error:
            raise SSHConnectionError(
                f"cannot open a session on {self.config.address}: {error}; "
                "check MaxSessions in the device's sshd_config"
            ) from error

    # -- commands ---------------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        cwd: str | PurePath | None = None,
        *,
        hide: bool = False,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult:
        words = [str(word) for word in argv]
        if not words:
            raise ValueError("argv must name a command")
        sink = None if hide else current_sink()
        marker = PidMarker(secrets.token_hex(8))
        command = build_command(words, cwd, env, marker=marker.prefix)
        job = _Job()
        started = time.monotonic()
        channel = self._open_channel()
        with self._jobs_lock:
            self._jobs.add(job)
        try:
            start_command(channel, command, self.config)
            out, err = LineCollector("stdout", sink), LineCollector("stderr", sink)
            reason = self._pump(channel, job, marker, out, err, timeout, started)
            out.close()
            err.close()
            returncode = channel.recv_exit_status() if channel.exit_status_ready() else -1
            lost = reason is None and returncode == -1 and not self.is_active
        except BaseException:
            if marker.pid is not None and self.is_active:
                self._kill_remote(marker.pid)
            raise
        finally:
            with self._jobs_lock:
                self._jobs.discard(job)
            channel.close()
        result = command_result(words, returncode, out, err, started)
        if lost and reason is None:
            raise SSHConnectionError(
                f"connection to {self.config.address} was lost while {words[0]!r} ran; "
                "check the network and the device"
            )
        where = f" on {self.config.host}"
        return raise_for_outcome(result, stopped=reason, timeout=timeout, check=check, where=where)

    def _pump(
        self,
        channel: Any,
        job: _Job,
        marker: PidMarker,
        out: LineCollector,
        err: LineCollector,
        timeout: float | None,
        started: float,
    ) -> str | None:
        """Forward output until the command ends; stop it on timeout or cancel.

        Returns ``None`` when the command ended by itself, else ``"timeout"`` or ``"cancel"``.
        """
        out_text = codecs.getincrementaldecoder("utf-8")("replace")
        err_text = codecs.getincrementaldecoder("utf-8")("replace")
        deadline = None if timeout is None else started + timeout
        reason: str | None = None
        give_up = 0.0
        killed = False
        while True:
            now = time.monotonic()
            if reason is None:
                if job.cancelled.is_set():
                    reason = "cancel"
                elif deadline is not None and now >= deadline:
                    reason = "timeout"
                if reason is not None:
                    give_up = now + STOP_GRACE_S
            if reason is not None:
                if not killed and marker.pid is not None:
                    self._kill_remote(marker.pid)
                    killed = True
                if now >= give_up:
                    break
            got = False
            while channel.recv_ready():
                out.feed_text(out_text.decode(channel.recv(65536)))
                got = True
            while channel.recv_stderr_ready():
                err.feed_text(marker.filter(err_text.decode(channel.recv_stderr(65536))))
                got = True
            if got:
                continue
            if channel.closed or (channel.eof_received and channel.exit_status_ready()):
                break
            wait = 0.1
            if deadline is not None and reason is None:
                wait = max(0.0, min(wait, deadline - now))
            if channel.eof_received:
                channel.status_event.wait(wait)
            else:
                select.select([channel], [], [], wait)
        while channel.recv_ready():
            out.feed_text(out_text.decode(channel.recv(65536)))
        while channel.recv_stderr_ready():
            err.feed_text(marker.filter(err_text.decode(channel.recv_stderr(65536))))
        out.feed_text(out_text.decode(b"", final=True))
        err.feed_text(marker.filter(err_text.decode(b"", final=True)) + marker.flush())
        return reason

    def _exec(self, command: str, timeout: float = 30.0) -> tuple[int, bytes, bytes]:
        """Run a shell line of our own and capture its output (no streaming, no marker)."""
        channel = self._open_channel()
        try:
            start_command(channel, command, self.config)
            channel.settimeout(timeout)
            stdout = channel.makefile("rb").read()
            stderr = channel.makefile_stderr("rb").read()
            return int(channel.recv_exit_status()), stdout, stderr
        finally:
            channel.close()

    def _kill_remote(self, pid: int) -> None:
        try:
            self._exec(kill_script(pid), timeout=STOP_GRACE_S)
        except Exception:  # best effort; the channel is closed anyway
            pass

    def cancel(self) -> None:
        """Stop every command this runner has in flight (callable from any thread).

        Returns at once; each ``run`` stops its remote process group and raises
        `CommandCancelled`. Transfers in progress are not interrupted.
        """
        with self._jobs_lock:
            jobs = list(self._jobs)
        for job in jobs:
            job.cancelled.set()
