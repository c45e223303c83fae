"""Files over SSH: SFTP for single files, tar over a channel for directories.

An upload is skipped when the remote file is known to match (same sha256, size and mtime as
when this connection sent it, or a matching ``sha256sum`` on the device; for a path named by
its content, a ``sha256sum`` on the device equal to the local file's, checked once per
connection, and touched when it is older than a day, so the device's caches prune by last use:
a copy changed on the device, whatever its size and times, is sent again, and the log says so);
files are written to a temporary name and renamed into place. A local file's sha256 is
remembered in this process by its stamp, change time included (`_stamp`). Directories come back
as a tar stream (sparse where the device's tar can make one), spooled to disk and safely
extracted; what comes back is held to `~edgehub.limits.FetchLimits` and written with holes where
it is zeros.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import secrets
import select
import shlex
import stat
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import IO, Any, cast

from edgehub.errors import DeviceOutputError, RunnerError
from edgehub.events import current_sink
from edgehub.fsutil import sha256_file
from edgehub.limits import FetchLimits
from edgehub.runners.archive import SPARSE_FLAG, SparseWriter, human_size
from edgehub.runners.spool import ArchiveSpool
from edgehub.runners.ssh.session import SSHSession
from edgehub.runners.streaming import last_line

SFTP_REQUEST_SIZE = 128 * 1024
PREFETCH_REQUESTS = 64
REMOTE_HASH_MIN_BYTES = 256 * 1024
TOUCH_AFTER_S = 86_400.0  # a content-named file found older than this is marked as used
_TAR_OUT = SPARSE_FLAG + "exec tar -c $S -f - -C {} ."
_KEPT_STDERR = 4096  # of a tar's complaints, the last bytes are kept for the message


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


class RemoteFiles:
    """``put`` and ``get`` over one `SSHSession`; ``stats`` counts what moved on the current
    connection."""

    def __init__(self, session: SSHSession) -> None:
        self._session = session
        self.config = session.config
        self._lock = threading.Lock()
        self._generation = -1
        self._uploaded: dict[str, _Uploaded] = {}
        self._stats = TransferStats()

    @property
    def stats(self) -> TransferStats:
        self._sync()
        return self._stats

    def _sync(self) -> None:
        """Forget what was sent on an earlier connection."""
        if self._generation != self._session.generation:
            self._generation = self._session.generation
            self._uploaded.clear()
            self._stats = TransferStats()

    def put(self, local: Path, remote: str | PurePath, *, content_named: bool = False) -> None:
        """Upload a file or directory; an unchanged file is not sent again to the same path.

        ``content_named``: the remote path names the content (it holds its hash): a file
        there whose ``sha256sum`` on the device is the local file's is taken as it (checked once
        per connection, even where another process sent it)."""
        local = Path(local)
        if not local.exists():
            raise RunnerError(f"cannot upload {local}: no such file or directory")
        with self._lock:
            sftp = self._session.sftp()
            self._sync()
            target = self._session.remote_path(str(remote))
            if local.is_dir():
                self._put_dir(local, target)
            else:
                self._put_file(sftp, local, target, content_named)

    def get(self, remote: str | PurePath, local: Path) -> None:
        """Download a file or directory (directories come as a tar stream, safely extracted)."""
        local = Path(local)
        with self._lock:
            sftp = self._session.sftp()
            self._sync()
            source = self._session.remote_path(str(remote))
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
            status, stdout, _ = self._session.capture(f"sha256sum -- {shlex.quote(path)}")
        except Exception:  # no sha256sum on the device: just upload
            return None
        words = stdout.decode("ascii", "replace").split()
        return words[0].lower() if status == 0 and words else None

    @staticmethod
    def _touch_if_stale(sftp: Any, target: str, info: Any) -> None:
        """Mark a content-named file found on the device as used (its mtime, at most once a
        day), so the device's caches prune by last use (`runners.ssh.janitor`)."""
        now = time.time()
        if now - float(info.st_mtime or 0) > TOUCH_AFTER_S:
            # not ours to touch (another user's cache): it is pruned by upload time
            with contextlib.suppress(OSError):
                sftp.utime(target, (now, now))

    def _put_file(self, sftp: Any, local: Path, target: str, content_named: bool = False) -> None:
        before = local.stat()
        size = before.st_size
        known = self._uploaded.get(target)
        if content_named and known is not None and known.size == size:
            self._stats.cache_hits += 1  # seen there on this connection: no round trip
            return
        info = self._remote_stat(sftp, target)
        if info is not None and stat.S_ISDIR(info.st_mode or 0):
            target = posixpath.join(target, local.name)
            info = self._remote_stat(sftp, target)
        digest = _remembered_sha256(local, before)
        if info is not None and info.st_size == size:
            digest = digest or _local_sha256(local)
            there = _Uploaded(digest, size, int(info.st_mtime or 0))
            if content_named:
                found = self._remote_sha256(target)
                same = found == digest
                if same:
                    self._touch_if_stale(sftp, target, info)
                elif found is not None:  # None: the device cannot hash it; sent again all the same
                    current_sink().warning(
                        f"{target} on {self.config.host} was changed there (its sha256 is not "
                        f"{local.name}'s, {digest[:12]}…): sent again"
                    )
            else:
                known = self._uploaded.get(target)
                same = known == there or (
                    known is None
                    and size >= REMOTE_HASH_MIN_BYTES
                    and self._remote_sha256(target) == digest
                )
            if same:
                self._uploaded[target] = there
                self._stats.cache_hits += 1
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
            with contextlib.suppress(OSError):
                sftp.remove(partial)
            raise RunnerError(
                f"cannot upload {local} to {target} on {self.config.host}: {error}"
            ) from error
        info = sftp.stat(target)
        if info.st_size != size:
            raise RunnerError(f"upload of {local} to {target} is incomplete ({info.st_size} bytes)")
        self._stats.uploads += 1
        self._stats.upload_bytes += size
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
        channel = self._session.start(
            f"mkdir -p -- {quoted} && tar -x -o -f - -C {quoted}", keep_stdin=True
        )
        try:
            sink = _ChannelWriter(channel)
            # the remote side may stop reading (_RemoteClosed); its exit status says why
            with contextlib.suppress(_RemoteClosed):
                writer = cast(IO[bytes], sink)
                with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                    tar.add(str(local), arcname=".")
            channel.shutdown_write()
            self._tar_done(channel, lambda _: None, f"cannot unpack {local} into {target}")
        finally:
            channel.close()
        self._stats.uploads += 1
        self._stats.upload_bytes += sink.sent

    def _get_file(self, sftp: Any, source: str, size: int, local: Path) -> None:
        limit = FetchLimits.from_env().max_member_bytes
        if size > limit:
            raise DeviceOutputError(
                f"{source} on {self.config.host} is {human_size(size)}, over the limit of "
                f"{human_size(limit)} a file; raise EDGEHUB_FETCH_MAX_MEMBER_BYTES to accept it"
            )
        destination = local / posixpath.basename(source) if local.is_dir() else local
        destination.parent.mkdir(parents=True, exist_ok=True)
        partial = destination.with_name(f".{destination.name}.{secrets.token_hex(4)}.part")
        try:
            with sftp.open(source, "rb") as remote_file, partial.open("wb") as sink:
                remote_file.MAX_REQUEST_SIZE = SFTP_REQUEST_SIZE
                if size:
                    remote_file.prefetch(size, PREFETCH_REQUESTS)
                writer = SparseWriter(sink)
                for block in iter(lambda: remote_file.read(SFTP_REQUEST_SIZE), b""):
                    writer.write(block)
                    if writer.size > size:
                        break  # the file grew while it was read: the check below says so
                writer.finish()
            if partial.stat().st_size != size:
                raise RunnerError(f"download of {source} is incomplete; try again")
            os.replace(partial, destination)
        except OSError as error:
            raise RunnerError(
                f"cannot download {source} from {self.config.host} to {destination}: {error}"
            ) from error
        finally:
            partial.unlink(missing_ok=True)
        self._stats.downloads += 1
        self._stats.download_bytes += size

    def _get_dir(self, source: str, local: Path) -> None:
        if local.exists() and not local.is_dir():
            raise RunnerError(f"cannot download directory {source} onto file {local}")
        with ArchiveSpool(local.parent) as spool:
            channel = self._session.start(_TAR_OUT.format(shlex.quote(source)))
            try:
                self._tar_done(channel, spool.write, f"cannot pack {source}")
            finally:
                channel.close()
            spool.extract(local)
        self._stats.downloads += 1
        self._stats.download_bytes += spool.received

    def _tar_done(self, channel: Any, on_stdout: Callable[[bytes], None], failed: str) -> None:
        """Pass a tar's stdout to ``on_stdout`` as it comes, reading its stderr alongside (a
        device that floods it cannot stall the transfer), to its end; a `RunnerError`
        (``failed`` then the last of the stderr) where it did not exit 0."""
        errors = b""
        while True:
            got = False
            while channel.recv_ready():
                on_stdout(channel.recv(1 << 20))
                got = True
            while channel.recv_stderr_ready():
                errors = (errors + channel.recv_stderr(1 << 16))[-_KEPT_STDERR:]
                got = True
            if got:
                continue
            if channel.closed or (channel.eof_received and channel.exit_status_ready()):
                break
            select.select([channel], [], [], 0.1)
        status = channel.recv_exit_status()
        if status != 0:
            why = last_line(errors.decode("utf-8", "replace")) or f"exit code {status}"
            raise RunnerError(f"{failed} on {self.config.host}: {why}")


class _RemoteClosed(Exception):
    """The device stopped reading a stream we were sending."""


class _ChannelWriter:
    """The write side of a channel as the minimal file object `tarfile` streams into."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self.sent = 0

    def write(self, data: bytes) -> int:
        try:
            self._channel.sendall(data)
        except OSError as error:
            raise _RemoteClosed(str(error)) from error
        self.sent += len(data)
        return len(data)

    def close(self) -> None:
        pass


_HASHES: dict[str, tuple[tuple[int, ...], str]] = {}
_HASHES_LOCK = threading.Lock()


def _stamp(info: os.stat_result) -> tuple[int, ...]:
    """A local file's version: device, inode, size, modification and change time (the change
    time moves with every write, even one whose modification time was then set back)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _remembered_sha256(path: Path, info: os.stat_result) -> str | None:
    """The sha256 of a local file hashed before in this process, if it has not changed since."""
    with _HASHES_LOCK:
        known = _HASHES.get(str(path.resolve()))
    if known and known[0] == _stamp(info):
        return known[1]
    return None


def _remember_sha256(path: Path, before: os.stat_result, digest: str) -> bool:
    """Remember a digest taken while reading the file; False if the file changed meanwhile."""
    stamp = _stamp(before)
    if _stamp(path.stat()) != stamp:
        return False
    with _HASHES_LOCK:
        _HASHES[str(path.resolve())] = (stamp, digest)
    return True


def _local_sha256(path: Path) -> str:
    before = path.stat()
    digest = sha256_file(path)
    _remember_sha256(path, before, digest)
    return digest
