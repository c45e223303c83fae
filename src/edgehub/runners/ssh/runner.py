"""`SSHCommandRunner`: commands and files on an edge device over SSH (paramiko).

Host keys are always verified against known_hosts (never added on the fly), every argv word is
quoted with `shlex.quote`, and archives coming back from the device are extracted with
`safe_extract`. Each command runs behind a one-line prologue that reports the remote shell's pid
(sshd makes it a process-group leader), so a timeout or `cancel()` can stop the whole remote
process group with a second command; the runner base does the rest. `exchange` moves a staged
directory in, runs a command and brings a folder back on one channel; `agent_exchange` hands a
job to the device's resident agent through a relay channel kept open (``ssh/relay.py``).
`work_folder` is the connection's folder on the device, removed with everything in it when the
connection ends, however it ends (``ssh/janitor.py``). A command runs at most the config's
``step_timeout`` unless its caller says otherwise; a device that stops answering or a link that
breaks fails the command with `SSHConnectionError` naming the device (``ssh/watchdog.py``),
never as the command's own failure. paramiko is imported only when a connection is made.
"""

from __future__ import annotations

import codecs
import contextlib
import secrets
import select
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

from edgehub.errors import CommandTimeout, RunnerError, SSHConnectionError
from edgehub.runners.base import STOP_GRACE_S, BaseRunner, Process
from edgehub.runners.exchange import Start, agent_exchange, exchange, split_script
from edgehub.runners.protocol import CommandResult, Exchange
from edgehub.runners.ssh.config import SSHConfig
from edgehub.runners.ssh.files import RemoteFiles, TransferStats
from edgehub.runners.ssh.janitor import Janitor
from edgehub.runners.ssh.relay import AgentRelay, RelayJob
from edgehub.runners.ssh.session import SSHSession
from edgehub.runners.ssh.shell import PidMarker, build_command, kill_script

RETRY_BACKOFF_S = 0.5
ANSWER_S = 2.0  # how long a device may take to answer before clean-up stops waiting for it


class SSHCommandRunner(BaseRunner):
    """Runs argv lists and moves files on an SSH device; connects on first use."""

    def __init__(self, config: SSHConfig) -> None:
        super().__init__()
        self.config = config
        self.where = f" on {config.host}"
        self._session = SSHSession(config)
        self._files = RemoteFiles(self._session)
        self._on_release: dict[str, str] = {}
        self._relay_argv: dict[str, list[str]] = {}
        self._relays: dict[str, AgentRelay] = {}
        self._relays_lock = threading.Lock()
        self._janitor: Janitor | None = None
        self._janitor_lock = threading.Lock()

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
    def network_address(self) -> SSHConfig:
        """The settings this runner connects with (`SupportsNetworkAddress`)."""
        return self.config

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

    def work_folder(self) -> PurePosixPath:
        """This connection's private folder on the device (``~/.cache/edgehub/work/...``,
        0700), removed when the connection ends, with the agent servers serving from it."""
        with self._janitor_lock:
            janitor = self._janitor
            self._session.connect()
            if janitor is None or janitor.closed or janitor.generation != self._session.generation:
                if janitor is not None:
                    janitor.close(wait=0)
                janitor = self._janitor = Janitor(self._session)
            return janitor.folder

    def release(self) -> None:
        with self._relays_lock:
            relays, self._relays = list(self._relays.values()), {}
        for relay in relays:
            relay.close()
        hooks, self._on_release = list(self._on_release.values()), {}
        # a device that does not answer now is not waited for: what runs there ends with the
        # connection anyway (the janitor and the commands' lifelines)
        answers = bool(hooks or self._janitor) and self._session.answers(within=ANSWER_S)
        for command in hooks if answers else []:
            with contextlib.suppress(Exception):
                self._session.capture(command, timeout=STOP_GRACE_S)
        with self._janitor_lock:
            janitor, self._janitor = self._janitor, None
        if janitor is not None:
            janitor.close(wait=STOP_GRACE_S if answers else 0)
        self._session.close()

    def timed_out(self, error: CommandTimeout, timeout: float | None) -> CommandTimeout:
        """``error``, saying where the limit comes from when it is the device's step_timeout."""
        if timeout is not None or self.config.step_timeout is None:
            return error
        name = self.device_name or "<name>"
        return CommandTimeout(
            f"{error} ({self._session.label}'s step_timeout is {self.config.step_timeout:g} s; "
            f"raise it in [devices.{name}.ssh] of hub.toml if the step needs longer)"
        )

    def limit(self, timeout: float | None) -> float | None:
        """``timeout``, else the config's ``step_timeout``."""
        return self.config.step_timeout if timeout is None else timeout

    @property
    def channels_opened(self) -> int:
        """Channels opened so far (commands, directory transfers, relays, kills)."""
        return self._session.channels_opened

    def start(
        self,
        argv: list[str],
        cwd: str | PurePath | None,
        env: Mapping[str, str] | None,
        setup: str | None = None,
        finish: str | None = None,
        stdin: bytes = b"",
    ) -> Process:
        """`BaseRunner.start`; ``setup``, ``finish``: see `build_command`, ``stdin``: sent first."""
        marker = PidMarker(secrets.token_hex(8))
        command = build_command(
            argv, cwd, env, marker.prefix, watched=True, setup=setup, finish=finish
        )
        try:
            return _RemoteProcess(self._session, command, marker, stdin)
        except SSHConnectionError:
            # the link dropped before the command started: one fresh connection, after a pause
            time.sleep(RETRY_BACKOFF_S)
            self._session.close()
            return _RemoteProcess(self._session, command, marker, stdin)

    def check_result(
        self, argv: list[str], cwd: str | PurePath | None, result: CommandResult
    ) -> None:
        if result.returncode == -1:  # cut off: no exit status
            self._raise_if_lost()

    def _raise_if_lost(self, cause: BaseException | None = None, wait: float = 2.0) -> None:
        """Raise `SSHConnectionError` when the connection went down under a call (``cause``:
        the error the call raised, unless it says so itself)."""
        lost = None if isinstance(cause, SSHConnectionError) else self._session.lost(wait=wait)
        if lost is not None:
            raise SSHConnectionError(lost) from cause

    @contextlib.contextmanager
    def _link_checked(self, timeout: float | None = None) -> Iterator[None]:
        """A call's own failure, or the lost connection's error where the link went down
        under it; a timeout says where its limit comes from (``timeout``: the caller's)."""
        try:
            yield
        except CommandTimeout as error:
            raise self.timed_out(error, timeout) from None
        except (RunnerError, OSError, EOFError, ValueError) as error:
            self._raise_if_lost(error, wait=1.0)
            raise

    def put(self, local: Path, remote: str | PurePath, *, content_named: bool = False) -> None:
        """Upload a file or directory; an unchanged file is not sent again to the same path
        (``content_named``: see `RemoteFiles.put`)."""
        with self._link_checked():
            self._files.put(local, remote, content_named=content_named)

    def put_content(self, local: Path, remote: str | PurePath) -> None:
        """`put` to a path named by the content (`SupportsContentUpload`)."""
        self.put(local, remote, content_named=True)

    def get(self, remote: str | PurePath, local: Path) -> None:
        """Download a file or directory (directories come as a tar stream, safely extracted)."""
        with self._link_checked():
            self._files.get(remote, local)

    def _exchange(
        self,
        job: Exchange,
        start: Start,
        target: PurePosixPath,
        *,
        packed: bytes | None = None,
        sparse: bool | None = None,
    ) -> CommandResult:
        """`exchange` of ``job`` (the step_timeout applies where it sets no timeout), or the
        lost connection's error where the link went down under it (a command cut off has no
        exit status, and its output may be cut off anywhere)."""
        limited = replace(job, timeout=self.limit(job.timeout))
        with self._link_checked(job.timeout):
            result = exchange(self.execute, start, limited, target, packed=packed, sparse=sparse)
        if result.returncode == -1:
            self._raise_if_lost()
        return result

    def exchange(self, job: Exchange) -> CommandResult:
        """`SupportsExchange.exchange` on one channel: the tar goes first on stdin (unpacked
        before the lifeline watches the rest), the command's output comes on stderr, the
        folder's tar on stdout (safely extracted)."""
        target = PurePosixPath(self.absolute_path(job.remote))

        def start(words: list[str], data: bytes) -> Process:
            unpack, command, send_back = split_script(words)
            return self.start(command, None, None, setup=unpack, finish=send_back, stdin=data)

        return self._exchange(job, start, target, sparse=self._sparse_tar())

    def _sparse_tar(self) -> bool | None:
        """Whether the device's tar makes sparse archives, as this connection's janitor found
        (None before there is one: the command then asks the device itself)."""
        janitor = self._janitor
        if janitor is None or janitor.generation != self._session.generation:
            return None
        return janitor.sparse_tar

    # -- the resident agent, through a relay (ssh/relay.py) ---------------------------------------

    def agent_relay(self, socket: str, argv: Sequence[str]) -> None:
        """Reach the agent server on the device socket ``socket`` through a relay started with
        ``argv`` (``python AGENT relay --socket SOCKET ...``), opened by the first
        `agent_exchange` to it and kept for the connection's life."""
        self._relay_argv[socket] = [str(word) for word in argv]

    def agent_exchange(self, job: Exchange, socket: str) -> CommandResult | None:
        """`exchange` run by the resident agent on ``socket`` (``job.argv``: ``[command,
        options...]``) through the relay: one round trip, no Python started. None when no
        server took the job (nothing ran): use `exchange` then."""
        relay = self._relay(socket)
        if relay is None:
            return None
        try:
            target = PurePosixPath(self.absolute_path(job.remote))
            return agent_exchange(
                lambda start, data: self._exchange(job, start, target, packed=data),
                job,
                target,
                lambda request: RelayJob(relay, request),
            )
        finally:
            relay.lock.release()

    def _relay(self, socket: str) -> AgentRelay | None:
        """The relay to ``socket``, held (its lock taken); None when there is none to use (not
        asked for, busy with another job, or one that died before taking any)."""
        argv = self._relay_argv.get(socket)
        if argv is None:
            return None
        with self._relays_lock:
            relay = self._relays.get(socket)
            if relay is not None and (relay.closed or relay.generation != self._session.generation):
                relay.close()
                del self._relays[socket]
                if relay.jobs == 0:  # it never took a job: do not start another one
                    self._relay_argv.pop(socket, None)
                    return None
                relay = None
            if relay is None:
                try:
                    relay = self._relays[socket] = AgentRelay(self._session, argv)
                except SSHConnectionError:
                    return None  # `exchange` retries, or says what is wrong
            if not relay.lock.acquire(blocking=False):
                return None
            return relay


class _RemoteProcess:
    """A command on one channel; killed through a second channel by its process group."""

    def __init__(
        self, session: SSHSession, command: str, marker: PidMarker, stdin: bytes = b""
    ) -> None:
        self._session = session
        self._marker = marker
        self._channel: Any = session.start(command, keep_stdin=True, stdin=stdin)
        self._kill_requested = threading.Event()
        self._kill_sent = threading.Lock()
        self._killed = False

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
        if not self._session.answers(within=ANSWER_S):
            return  # not answering: the lifeline stops it when the connection ends
        with contextlib.suppress(Exception):
            self._session.capture(kill_script(pid), timeout=STOP_GRACE_S)

    def wait(self) -> int:
        channel = self._channel
        return int(channel.recv_exit_status()) if channel.exit_status_ready() else -1

    def close(self) -> None:
        self._channel.close()
