"""`SSHCommandRunner`: commands and files on an edge device over SSH (paramiko).

Host keys are always verified against known_hosts (never added on the fly), every argv word is
quoted with `shlex.quote`, and archives coming back from the device are extracted with
`safe_extract`. Each command runs behind a one-line prologue that reports the remote shell's pid
(sshd makes it a process-group leader), so a timeout or `cancel()` can stop the whole remote
process group with a second command; the runner base does the rest. paramiko is imported only
when a connection is made.
"""

from __future__ import annotations

import codecs
import secrets
import select
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePath
from typing import Any

from edgehub.errors import SSHConnectionError
from edgehub.runners.base import STOP_GRACE_S, BaseRunner, Process
from edgehub.runners.protocol import CommandResult
from edgehub.runners.ssh.config import SSHConfig
from edgehub.runners.ssh.files import RemoteFiles, TransferStats
from edgehub.runners.ssh.session import SSHSession
from edgehub.runners.ssh.shell import PidMarker, build_command, kill_script, start_command

__all__ = ["SSHCommandRunner"]

RETRY_BACKOFF_S = 0.5


class SSHCommandRunner(BaseRunner):
    """Runs argv lists and moves files on an SSH device; connects on first use."""

    def __init__(self, config: SSHConfig) -> None:
        super().__init__()
        self.config = config
        self.where = f" on {config.host}"
        self._session = SSHSession(config)
        self._files = RemoteFiles(self._session)
        self._on_release: dict[str, str] = {}

    def __repr__(self) -> str:
        state = "connected" if self.is_active else "not connected"
        return f"SSHCommandRunner({self.config.address}, {state})"

    def __enter__(self) -> SSHCommandRunner:
        super().__enter__()
        return self.connect()

    @property
    def is_active(self) -> bool:
        return self._session.is_active

    @property
    def transfer_stats(self) -> TransferStats:
        """What ``put``/``get`` moved on the current connection."""
        return self._files.stats

    def connect(self) -> SSHCommandRunner:
        """Open the connection if it is not open (host key verified, then authenticated)."""
        self._session.connect()
        return self

    @property
    def device_name(self) -> str | None:
        """The hub.toml device this runner reaches (named in the unknown-host-key hint)."""
        return self._session.device_name

    @device_name.setter
    def device_name(self, name: str | None) -> None:
        self._session.device_name = name

    def on_release(self, command: str, *, key: str) -> None:
        """Run the shell line ``command`` on the device before the connection closes (once per
        ``key``; best effort), e.g. to stop a server a call left running."""
        self._on_release[key] = command

    def absolute_path(self, remote: str | PurePath) -> str:
        """``remote`` as an absolute device path (relative and ``~`` paths are under home)."""
        self._session.sftp()
        return self._session.remote_path(str(remote))

    def release(self) -> None:
        hooks, self._on_release = list(self._on_release.values()), {}
        for command in hooks:
            if self._session.is_active:
                try:
                    self._session.capture(command, timeout=STOP_GRACE_S)
                except Exception:
                    pass
        self._session.close()

    def start(
        self, argv: list[str], cwd: str | PurePath | None, env: Mapping[str, str] | None
    ) -> Process:
        marker = PidMarker(secrets.token_hex(8))
        command = build_command(argv, cwd, env, marker.prefix, watched=True)
        try:
            return _RemoteProcess(self._session, command, marker)
        except SSHConnectionError:
            # the link dropped before the command started: one fresh connection, after a pause
            time.sleep(RETRY_BACKOFF_S)
            self._session.close()
            return _RemoteProcess(self._session, command, marker)

    def check_result(
        self, argv: list[str], cwd: str | PurePath | None, result: CommandResult
    ) -> None:
        if result.returncode == -1 and not self.is_active:
            raise SSHConnectionError(
                f"connection to {self.config.address} was lost while {argv[0]!r} ran; "
                "check the network and the device"
            )

    def put(self, local: Path, remote: str | PurePath, *, content_named: bool = False) -> None:
        """Upload a file or directory; an unchanged file is not sent again to the same path.
        ``content_named``: the remote name holds the content's hash, so a file of the same size
        there is taken as it."""
        self._files.put(local, remote, content_named=content_named)

    def get(self, remote: str | PurePath, local: Path) -> None:
        """Download a file or directory (directories come as a tar stream, safely extracted)."""
        self._files.get(remote, local)


class _RemoteProcess:
    """A command on one channel; killed through a second channel by its process group."""

    def __init__(self, session: SSHSession, command: str, marker: PidMarker) -> None:
        self._session = session
        self._marker = marker
        self._channel: Any = session.open_channel()
        self._kill_requested = threading.Event()
        self._kill_sent = threading.Lock()
        self._killed = False
        try:
            start_command(self._channel, command, session.config, keep_stdin=True)
        except BaseException:
            self._channel.close()
            raise

    def read(self) -> Iterator[tuple[str, bytes]]:
        channel = self._channel
        errors = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            if self._kill_requested.is_set():
                self._send_kill()
            got = False
            while channel.recv_ready():
                yield "stdout", channel.recv(65536)
                got = True
            while channel.recv_stderr_ready():
                text = self._marker.filter(errors.decode(channel.recv_stderr(65536)))
                if text:
                    yield "stderr", text.encode()
                got = True
            if got:
                continue
            if channel.closed or (channel.eof_received and channel.exit_status_ready()):
                break
            if channel.eof_received:
                channel.status_event.wait(0.1)
            else:
                select.select([channel], [], [], 0.1)
        rest = self._marker.filter(errors.decode(b"", final=True)) + self._marker.flush()
        if rest:
            yield "stderr", rest.encode()

    def kill(self) -> None:
        self._kill_requested.set()
        self._send_kill()

    def _send_kill(self) -> None:
        """Stop the remote process group, once its pid is known (the reader retries)."""
        pid = self._marker.pid
        if pid is None or not self._session.is_active:
            return
        with self._kill_sent:
            if self._killed:
                return
            self._killed = True
        try:
            self._session.capture(kill_script(pid), timeout=STOP_GRACE_S)
        except Exception:
            pass

    def wait(self) -> int:
        channel = self._channel
        return int(channel.recv_exit_status()) if channel.exit_status_ready() else -1

    def close(self) -> None:
        self._channel.close()
