"""`SSHCommandRunner`: commands and files on an edge device over SSH (paramiko).

Host keys are always verified against known_hosts (never added on the fly), every argv word is
quoted with `shlex.quote`, and archives coming back from the device are extracted with
`safe_extract`. Each command runs behind a one-line prologue that reports the remote shell's pid
(sshd makes it a process-group leader), so a timeout or `cancel()` can stop the whole remote
process group with a second command. paramiko is imported only when a connection is made.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import hashlib
import hmac
import os
import posixpath
import re
import secrets
import select
import shlex
import socket
import stat
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, cast

from edgehub.core.device.runner import CommandResult
from edgehub.core.events import current_sink
from edgehub.errors import (
    CommandCancelled,
    CommandError,
    CommandTimeout,
    ConfigError,
    HostKeyError,
    RunnerError,
    SSHConnectionError,
)
from edgehub.runners.archive import safe_extract
from edgehub.runners.local import describe_failure
from edgehub.runners.streaming import LineCollector

if TYPE_CHECKING:
    import paramiko

__all__ = ["SSHCommandRunner", "SSHConfig", "TransferStats"]

WINDOW_SIZE = 128 * 1024 * 1024
MAX_PACKET_SIZE = 256 * 1024
SFTP_REQUEST_SIZE = 128 * 1024
PREFETCH_REQUESTS = 64
REMOTE_HASH_MIN_BYTES = 256 * 1024
STOP_GRACE_S = 10.0
_DEFAULT_KEY_FILES = ("id_ed25519", "id_ecdsa", "id_rsa")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RSA_ALGORITHMS = ("rsa-sha2-512", "rsa-sha2-256")
# AES-GCM first: ~25% faster than AES-CTR + HMAC in paramiko on our machines (220 vs 175 MB/s);
# CBC and 3DES are left out, as in OpenSSH's own defaults.
_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
)


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


@dataclass
class TransferStats:
    """What ``put``/``get`` moved on the current connection (for tests and benchmarks)."""

    uploads: int = 0
    upload_bytes: int = 0
    cache_hits: int = 0
    downloads: int = 0
    download_bytes: int = 0


@dataclass(frozen=True)
class _Uploaded:
    sha256: str
    size: int
    mtime: int


class _Job:
    """One command in flight: ``cancel()`` sets the event, the thread in ``run`` acts on it."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()


class _PidMarker:
    """Picks the prologue's ``edgehub-pid-<token>=<pid>`` line out of the stderr stream."""

    def __init__(self, token: str) -> None:
        self.prefix = f"edgehub-pid-{token}="
        self.pid: int | None = None
        self._pending = ""

    def filter(self, text: str) -> str:
        if self.pid is not None:
            return text
        self._pending += text
        kept: list[str] = []
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            value = line[len(self.prefix) :].strip()
            if line.startswith(self.prefix) and value.isdigit():
                self.pid = int(value)
                rest, self._pending = self._pending, ""
                return "".join(kept) + rest
            kept.append(line + "\n")
        return "".join(kept)

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return rest


def build_command(
    argv: Sequence[str],
    cwd: str | PurePath | None,
    env: Mapping[str, str] | None,
    marker: str | None = None,
) -> str:
    """The remote shell line for ``argv``: every word quoted, ``cd`` and ``env`` in front."""
    parts: list[str] = []
    if marker is not None:
        parts.append(f"printf '%s%s\\n' {shlex.quote(marker)} \"$$\" >&2; ")
    if cwd is not None:
        parts.append(f"cd -- {_quote_path(str(cwd))} && ")
    parts.append("exec ")
    if env:
        for name in env:
            if not _ENV_NAME.match(name):
                raise ValueError(f"invalid environment variable name {name!r}")
        parts.append("env -- ")
        parts.extend(shlex.quote(f"{name}={value}") + " " for name, value in env.items())
    parts.append(" ".join(shlex.quote(str(word)) for word in argv))
    return "".join(parts)


def _quote_path(path: str) -> str:
    """Quote a remote path; a leading ``~`` or ``~/`` still means the login user's home."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:]) if path[2:] else '"$HOME"/'
    return shlex.quote(path)


def _kill_script(pid: int) -> str:
    """Stop a remote process group: TERM, up to 3 s to exit, then KILL."""
    return (
        f"p={pid}; kill -TERM -$p 2>/dev/null || kill -TERM $p 2>/dev/null || exit 0; i=0; "
        "while [ $i -lt 30 ]; do "
        "kill -0 -$p 2>/dev/null || kill -0 $p 2>/dev/null || exit 0; sleep 0.1; i=$((i+1)); "
        "done; kill -KILL -$p 2>/dev/null; kill -KILL $p 2>/dev/null; exit 0"
    )


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


class SSHCommandRunner:
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
        self._uploaded: dict[str, _Uploaded] = {}
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
            self._transport = _open_transport(self.config)
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
        marker = _PidMarker(secrets.token_hex(8))
        command = build_command(words, cwd, env, marker=marker.prefix)
        job = _Job()
        started = time.monotonic()
        channel = self._open_channel()
        with self._jobs_lock:
            self._jobs.add(job)
        try:
            _start(channel, command, self.config)
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
        result = CommandResult(
            argv=tuple(words),
            returncode=returncode,
            stdout=out.text,
            stderr=err.text,
            duration_s=time.monotonic() - started,
        )
        if reason == "timeout":
            raise CommandTimeout(
                f"command {words[0]!r} ran longer than {timeout} s on {self.config.host} "
                "and was stopped"
            )
        if reason == "cancel":
            raise CommandCancelled(f"command {words[0]!r} on {self.config.host} was cancelled")
        if lost:
            raise SSHConnectionError(
                f"connection to {self.config.address} was lost while {words[0]!r} ran; "
                "check the network and the device"
            )
        if check and result.returncode != 0:
            raise CommandError(
                describe_failure(words, result),
                returncode=result.returncode,
                stdout=result.stdout,
                stderr=result.stderr,
            )
        return result

    def _pump(
        self,
        channel: Any,
        job: _Job,
        marker: _PidMarker,
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
            _start(channel, command, self.config)
            channel.settimeout(timeout)
            stdout = channel.makefile("rb").read()
            stderr = channel.makefile_stderr("rb").read()
            return int(channel.recv_exit_status()), stdout, stderr
        finally:
            channel.close()

    def _kill_remote(self, pid: int) -> None:
        try:
            self._exec(_kill_script(pid), timeout=STOP_GRACE_S)
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

    # -- files ------------------------------------------------------------------------------------

    def put(self, local: Path, remote: str | PurePath) -> None:
        """Upload a file or directory; an unchanged file is not sent again to the same path."""
        local = Path(local)
        if not local.exists():
            raise RunnerError(f"cannot upload {local}: no such file or directory")
        with self._xfer_lock:
            sftp = self._sftp_client()
            target = self._remote_path(remote)
            if local.is_dir():
                self._put_dir(local, target)
            else:
                self._put_file(sftp, local, target)

    def get(self, remote: str | PurePath, local: Path) -> None:
        """Download a file or directory (directories come as a tar stream, safely extracted)."""
        local = Path(local)
        with self._xfer_lock:
            sftp = self._sftp_client()
            source = self._remote_path(remote)
            info = self._remote_stat(sftp, source)
            if info is None:
                raise RunnerError(
                    f"cannot download {source} from {self.config.host}: no such file or directory"
                )
            if stat.S_ISDIR(info.st_mode or 0):
                self._get_dir(source, local)
            elif stat.S_ISREG(info.st_mode or 0):
                self._get_file(sftp, source, int(info.st_size or 0), local)
            else:
                raise RunnerError(f"cannot download {source}: not a regular file or directory")

    def _sftp_client(self) -> Any:
        import paramiko

        with self._lock:
            transport = self._ensure()
            if self._sftp is None or self._sftp.get_channel().closed:
                try:
                    self._sftp = paramiko.SFTPClient.from_transport(
                        transport, window_size=WINDOW_SIZE, max_packet_size=MAX_PACKET_SIZE
                    )
                    self._home = self._sftp.normalize(".")
                except (paramiko.SSHException, OSError) as error:
                    raise SSHConnectionError(
                        f"cannot start SFTP on {self.config.address}: {error}; "
                        "check that the device's sshd enables the sftp subsystem"
                    ) from error
            return self._sftp

    def _remote_path(self, remote: str | PurePath) -> str:
        path = str(remote)
        home = self._home or "/"
        if path == "~" or path.startswith("~/"):
            path = home + path[1:]
        elif not path.startswith("/"):
            path = posixpath.join(home, path)
        return posixpath.normpath(path)

    @staticmethod
    def _remote_stat(sftp: Any, path: str) -> Any:
        try:
            return sftp.stat(path)
        except FileNotFoundError:
            return None

    def _mkdirs(self, sftp: Any, path: str) -> None:
        missing: list[str] = []
        while path not in ("", "/"):
            info = self._remote_stat(sftp, path)
            if info is not None:
                if not stat.S_ISDIR(info.st_mode or 0):
                    raise RunnerError(f"{path} exists on {self.config.host} and is not a directory")
                break
            missing.append(path)
            path = posixpath.dirname(path)
        for directory in reversed(missing):
            try:
                sftp.mkdir(directory)
            except OSError as error:
                info = self._remote_stat(sftp, directory)
                if info is None or not stat.S_ISDIR(info.st_mode or 0):
                    raise RunnerError(
                        f"cannot create {directory} on {self.config.host}: {error}"
                    ) from error

    def _remote_sha256(self, path: str) -> str | None:
        try:
            status, stdout, _ = self._exec(f"sha256sum -- {shlex.quote(path)}")
        except Exception:  # no sha256sum on the device: just upload
            return None
        words = stdout.decode("ascii", "replace").split()
        return words[0].lower() if status == 0 and words else None

    def _put_file(self, sftp: Any, local: Path, target: str) -> None:
        before = local.stat()
        size = before.st_size
        info = self._remote_stat(sftp, target)
        if info is not None and stat.S_ISDIR(info.st_mode or 0):
            target = posixpath.join(target, local.name)
            info = self._remote_stat(sftp, target)
        digest = _remembered_sha256(local, before)
        if info is not None and info.st_size == size:
            digest = digest or _local_sha256(local)
            known = self._uploaded.get(target)
            same = known == _Uploaded(digest, size, int(info.st_mtime or 0))
            if not same and known is None and size >= REMOTE_HASH_MIN_BYTES:
                same = self._remote_sha256(target) == digest
            if same:
                self._uploaded[target] = _Uploaded(digest, size, int(info.st_mtime or 0))
                self.transfer_stats.cache_hits += 1
                return
        self._uploaded.pop(target, None)
        directory, name = posixpath.split(target)
        self._mkdirs(sftp, directory)
        partial = posixpath.join(directory, f".{name}.{secrets.token_hex(4)}.edgehub-part")
        hasher = hashlib.sha256()
        try:
            with local.open("rb") as source, sftp.open(partial, "wb") as sink:
                sink.MAX_REQUEST_SIZE = SFTP_REQUEST_SIZE
                sink.set_pipelined(True)
                for block in iter(lambda: source.read(SFTP_REQUEST_SIZE), b""):
                    if digest is None:
                        hasher.update(block)
                    sink.write(block)
            sftp.chmod(partial, stat.S_IMODE(local.stat().st_mode))
            try:
                sftp.posix_rename(partial, target)
            except OSError:
                if self._remote_stat(sftp, target) is not None:
                    sftp.remove(target)
                sftp.rename(partial, target)
        except OSError as error:
            try:
                sftp.remove(partial)
            except OSError:
                pass
            raise RunnerError(
                f"cannot upload {local} to {target} on {self.config.host}: {error}"
            ) from error
        info = sftp.stat(target)
        if info.st_size != size:
            raise RunnerError(f"upload of {local} to {target} is incomplete ({info.st_size} bytes)")
        self.transfer_stats.uploads += 1
        self.transfer_stats.upload_bytes += size
        if digest is None:
            digest = hasher.hexdigest()
            if not _remember_sha256(local, before, digest):
                return  # the file changed while it was sent: do not cache this upload
        self._uploaded[target] = _Uploaded(digest, size, int(info.st_mtime or 0))

    def _put_dir(self, local: Path, target: str) -> None:
        prefix = target.rstrip("/") + "/"
        for cached in [path for path in self._uploaded if path.startswith(prefix)]:
            del self._uploaded[cached]
        quoted = shlex.quote(target)
        channel = self._open_channel()
        try:
            channel.exec_command(f"mkdir -p -- {quoted} && tar -x -o -f - -C {quoted}")
            try:
                writer = cast(IO[bytes], _ChannelWriter(channel))
                with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                    tar.add(str(local), arcname=".")
            except _RemoteClosed:
                pass  # the remote side stopped reading; its exit status says why
            channel.shutdown_write()
            status = channel.recv_exit_status()
            errors = channel.makefile_stderr("rb").read().decode("utf-8", "replace")
        finally:
            channel.close()
        if status != 0:
            raise RunnerError(
                f"cannot unpack {local} into {target} on {self.config.host}: "
                f"{_last_line(errors) or f'exit code {status}'}"
            )
        self.transfer_stats.uploads += 1

    def _get_file(self, sftp: Any, source: str, size: int, local: Path) -> None:
        destination = local / posixpath.basename(source) if local.is_dir() else local
        destination.parent.mkdir(parents=True, exist_ok=True)
        partial = destination.with_name(f".{destination.name}.{secrets.token_hex(4)}.part")
        try:
            with sftp.open(source, "rb") as remote_file, partial.open("wb") as sink:
                remote_file.MAX_REQUEST_SIZE = SFTP_REQUEST_SIZE
                if size:
                    remote_file.prefetch(size, PREFETCH_REQUESTS)
                for block in iter(lambda: remote_file.read(SFTP_REQUEST_SIZE), b""):
                    sink.write(block)
            if partial.stat().st_size != size:
                raise RunnerError(f"download of {source} is incomplete; try again")
            os.replace(partial, destination)
        except OSError as error:
            raise RunnerError(
                f"cannot download {source} from {self.config.host} to {destination}: {error}"
            ) from error
        finally:
            partial.unlink(missing_ok=True)
        self.transfer_stats.downloads += 1
        self.transfer_stats.download_bytes += size

    def _get_dir(self, source: str, local: Path) -> None:
        if local.exists() and not local.is_dir():
            raise RunnerError(f"cannot download directory {source} onto file {local}")
        channel = self._open_channel()
        with tempfile.TemporaryFile() as spool:
            try:
                _start(channel, f"tar -c -f - -C {shlex.quote(source)} .", self.config)
                received = 0
                for block in iter(lambda: channel.recv(1024 * 1024), b""):
                    spool.write(block)
                    received += len(block)
                status = channel.recv_exit_status()
                errors = channel.makefile_stderr("rb").read().decode("utf-8", "replace")
            finally:
                channel.close()
            if status != 0:
                raise RunnerError(
                    f"cannot pack {source} on {self.config.host}: "
                    f"{_last_line(errors) or f'exit code {status}'}"
                )
            spool.seek(0)
            safe_extract(spool, local)
        self.transfer_stats.downloads += 1
        self.transfer_stats.download_bytes += received


def _start(channel: Any, command: str, config: SSHConfig) -> None:
    """Start a shell line on a fresh channel with stdin closed (commands read EOF)."""
    import paramiko

    try:
        channel.exec_command(command)
        channel.shutdown_write()
    except (paramiko.SSHException, OSError) as error:
        raise SSHConnectionError(
            f"cannot start a command on {config.address}: {error}; check the connection"
        ) from error


class _RemoteClosed(Exception):
    """The device stopped reading a stream we were sending."""


class _ChannelWriter:
    """The write side of a channel as the minimal file object `tarfile` streams into."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel

    def write(self, data: bytes) -> int:
        try:
            self._channel.sendall(data)
        except OSError as error:
            raise _RemoteClosed(str(error)) from error
        return len(data)

    def close(self) -> None:
        pass


_HASHES: dict[str, tuple[int, int, int, str]] = {}
_HASHES_LOCK = threading.Lock()


def _remembered_sha256(path: Path, info: os.stat_result) -> str | None:
    """The sha256 of a local file hashed before in this process, if it has not changed since."""
    with _HASHES_LOCK:
        known = _HASHES.get(str(path.resolve()))
    if known and known[:3] == (info.st_size, info.st_mtime_ns, info.st_ino):
        return known[3]
    return None


def _remember_sha256(path: Path, before: os.stat_result, digest: str) -> bool:
    """Remember a digest taken while reading the file; False if the file changed meanwhile."""
    after = path.stat()
    stamp = (before.st_size, before.st_mtime_ns, before.st_ino)
    if (after.st_size, after.st_mtime_ns, after.st_ino) != stamp:
        return False
    with _HASHES_LOCK:
        _HASHES[str(path.resolve())] = (*stamp, digest)
    return True


def _local_sha256(path: Path) -> str:
    before = path.stat()
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            hasher.update(block)
    digest = hasher.hexdigest()
    _remember_sha256(path, before, digest)
    return digest


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


# -- connecting -----------------------------------------------------------------------------------


def _open_transport(config: SSHConfig) -> Any:
    """Socket (TCP_NODELAY) -> SSH handshake -> host key check -> authentication."""
    import paramiko

    if config.private_key_path is not None and not config.private_key_path.is_file():
        raise SSHConnectionError(
            f"private key file {config.private_key_path} does not exist; "
            "fix private_key_path in hub.toml"
        )
    trusted, revoked = _load_known_hosts(config)
    sock = _open_socket(config)
    transport = paramiko.Transport(
        sock, default_window_size=WINDOW_SIZE, default_max_packet_size=MAX_PACKET_SIZE
    )
    try:
        transport.banner_timeout = config.connect_timeout + 1
        options = transport.get_security_options()
        options.key_types = _prefer_known_types(list(options.key_types), trusted)
        options.ciphers = [name for name in _CIPHERS if name in options.ciphers] or options.ciphers
        negotiated = threading.Event()
        transport.start_client(event=negotiated)
        if not negotiated.wait(config.connect_timeout):
            raise SSHConnectionError(
                f"SSH handshake with {config.host}:{config.port} timed out after "
                f"{config.connect_timeout:g} s; check that an SSH server (not another service) "
                "listens on that port"
            )
        if not transport.is_active():
            raise SSHConnectionError(
                f"SSH handshake with {config.host}:{config.port} failed "
                f"({transport.get_exception() or 'connection closed'}); check that an SSH server "
                "listens on that port and shares an algorithm with paramiko"
            )
        _verify_host_key(config, transport.get_remote_server_key(), trusted, revoked)
        _authenticate(transport, config)
        if config.keepalive_s > 0:
            transport.set_keepalive(max(1, round(config.keepalive_s)))
    except BaseException:
        transport.close()
        sock.close()
        raise
    return transport


def _open_socket(config: SSHConfig) -> socket.socket:
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
        # Notice a dead link in about three keepalive periods instead of TCP's hours.
        period = max(1, round(config.keepalive_s))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in (
            ("TCP_KEEPIDLE", period),
            ("TCP_KEEPINTVL", period),
            ("TCP_KEEPCNT", 3),
            ("TCP_USER_TIMEOUT", 3 * period * 1000),
        ):
            if hasattr(socket, option):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
    return sock


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


def _load_known_hosts(config: SSHConfig) -> tuple[list[paramiko.PKey], set[bytes]]:
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


def _prefer_known_types(offered: list[str], trusted: list[paramiko.PKey]) -> list[str]:
    """Ask for the host key algorithms we already trust first, as OpenSSH does."""
    wanted: list[str] = []
    for key in trusted:
        name = key.get_name()
        wanted.extend(_RSA_ALGORITHMS if name == "ssh-rsa" else (name,))
    first = [name for name in offered if name in wanted]
    return first + [name for name in offered if name not in first]


def _verify_host_key(
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
    scan = (
        f"ssh-keyscan -p {config.port} {config.host}"
        if config.port != 22
        else (f"ssh-keyscan {config.host}")
    )
    raise HostKeyError(
        f"unknown SSH host key for {name} ({described}); after checking the fingerprint on the "
        f"device, run `{scan} >> ~/.ssh/known_hosts`, or set known_hosts in hub.toml"
    )


def _candidate_keys(config: SSHConfig) -> tuple[list[tuple[str, Any]], Any]:
    """The keys to offer, labelled, and the agent connection to close afterwards."""
    import paramiko

    if config.private_key_path is not None:
        return [(str(config.private_key_path), _load_key(config.private_key_path))], None
    keys: list[tuple[str, Any]] = []
    agent = None
    if os.environ.get("SSH_AUTH_SOCK"):
        try:
            agent = paramiko.Agent()
            keys.extend((f"agent key {fingerprint(key)}", key) for key in agent.get_keys())
        except Exception:  # an unusable agent is the same as no agent
            agent = None
    for name in _DEFAULT_KEY_FILES:
        path = Path.home() / ".ssh" / name
        if path.is_file():
            try:
                keys.append((f"~/.ssh/{name}", paramiko.PKey.from_path(path)))
            except Exception:  # encrypted or unsupported default keys are skipped
                continue
    return keys, agent


def _load_key(path: Path) -> Any:
    import paramiko

    try:
        return paramiko.PKey.from_path(path)
    except paramiko.PasswordRequiredException as error:
        raise SSHConnectionError(
            f"private key {path} is encrypted; load it into ssh-agent (`ssh-add {path}`) and "
            "unset private_key_path, or use a key without a passphrase"
        ) from error
    except Exception as error:
        if "password" in str(error).lower():
            raise SSHConnectionError(
                f"private key {path} is encrypted; load it into ssh-agent (`ssh-add {path}`) "
                "and unset private_key_path, or use a key without a passphrase"
            ) from error
        raise SSHConnectionError(f"cannot load private key {path}: {error}") from error


def _authenticate(transport: Any, config: SSHConfig) -> None:
    """Key file, else agent keys, else default keys; then the password if one is set."""
    import paramiko

    keys, agent = _candidate_keys(config)
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
        "private_key_path in hub.toml"
    )


def _lost_during_auth(config: SSHConfig, error: BaseException) -> SSHConnectionError:
    return SSHConnectionError(
        f"connection to {config.address} dropped during authentication ({error}); "
        "check the device's sshd logs"
    )
