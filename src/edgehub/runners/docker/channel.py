"""The host's direct line to the resident agent of a warm container, without a ``docker exec``.

A warm container bind-mounts a folder of the host (`channel_dir`: private to this user, under
a 0700 parent) at `CHANNEL_MOUNT`; the agent server in the container listens on a Unix socket
there, so this process connects to it straight from the host. A job goes over that connection
as the server's job protocol (``edgehub.agent.server.wire``) with its files: the request line,
the tar of the job's directory, then the job's output as it is written, the tar of the folder
asked back and the exit code. The connection is the job's lifeline: when this process closes
it, or dies, the server kills the job with its process group.

`AgentJob` is the runner base's `~edgehub.runners.base.Process` for such a job: the output
comes as ``stderr``, the returned tar as ``stdout`` (as the exec path of ``runners/exchange.py``
delivers them), and `kill` closes the connection.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

from edgehub.agent.server.wire import socket_address
from edgehub.errors import EnvironmentProblem
from edgehub.fsutil import copy_range
from edgehub.paths import cache_dir, cache_subdir
from edgehub.runners.agent_reply import Refused, ReplyJob, read_start, staged_request

CHANNEL_MOUNT = "/run/edgehub"
SHARED = "shared"  # the channel's folder of files placed by content (`share_file`)
SHARED_MAX_BYTES = 4 << 30  # beyond this the oldest shared files go (`share_file`)
OUTBOX = "outbox"  # the channel's folder of jobs' files for the host (`collect_file`)
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
CONNECT_TIMEOUT_S = 2.0
START_TIMEOUT_S = 10.0


def channels_base() -> Path:
    """Where the warm containers' channel folders are: ``warm`` in the cache folder (only the
    place; `channel_dir` and the reaper check it as `edgehub.paths.cache_subdir` does)."""
    return cache_dir() / "warm"


def channel_dir(key: str) -> Path:
    """The host folder mounted into the warm container ``key`` (made, with a private parent).

    The parent is ``warm`` in the cache folder (a real folder of this user, mode 0700, checked
    without following links), so only this user reaches the socket; the folder itself belongs
    to the container's user when this process may give it away. A link or anything but a
    folder at ``key`` is refused (`EnvironmentProblem`), never followed."""
    folder = cache_subdir("warm") / key
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        raise EnvironmentProblem(
            f"cache folder {folder} is a symbolic link or not a folder; edgehub will not use "
            "it: remove it"
        )
    return folder


class AgentJob(ReplyJob):
    """One job on the resident agent at ``host_socket``, sent as ``request`` (`staged_request`).
    Raises `Refused` when nothing ran."""

    def __init__(self, host_socket: Path, request: bytes) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # The container may write in its folder: connect only to a socket it made there,
            # never through a link it may have put in its place.
            if not stat.S_ISSOCK(os.lstat(host_socket).st_mode):
                raise Refused(f"{host_socket} is not a socket")
            self._sock.settimeout(CONNECT_TIMEOUT_S)
            with socket_address(str(host_socket)) as address:
                self._sock.connect(address)
            self._sock.settimeout(START_TIMEOUT_S)
            self._sock.sendall(request)
            self._pending = read_start(iter(lambda: self._sock.recv(65536), b""))
        except (OSError, Refused) as error:
            self._sock.close()
            raise Refused(str(error)) from error
        self._sock.settimeout(None)

    def _chunks(self) -> Iterator[bytes]:
        if self._pending:
            yield self._pending
        with contextlib.suppress(OSError):  # a closed connection ends the answer
            while chunk := self._sock.recv(65536):
                yield chunk

    def kill(self) -> None:
        """End the job: the server kills it when the connection closes."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.kill()
        self._sock.close()


def open_agent_job(
    host_socket: Path, argv: list[str], cwd: str, stage: bytes, fetch: str
) -> AgentJob | None:
    """The job ``argv`` in ``cwd`` (a path in the container) started on the resident agent at
    ``host_socket``, the directory's files from ``stage`` (a tar whose root is ``cwd``'s last
    part), ``fetch`` the folder of ``cwd`` sent back; None when none took it (or its files are
    too big for the channel)."""
    try:
        return AgentJob(host_socket, staged_request(argv, cwd, stage, fetch))
    except Refused:
        return None


def _hashes_to(folder: int, name: str, digest: str) -> bool:
    """Whether the file ``name`` in ``folder`` (not through a link) hashes to ``digest``."""
    import hashlib

    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return False
    hasher = hashlib.sha256()
    with os.fdopen(handle, "rb") as opened:
        for block in iter(lambda: opened.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest() == digest


def share_file(channel: Path, source: Path, digest: str) -> tuple[str, bool]:
    """The container path of a copy of ``source`` (content hash ``digest``) in the channel's
    `SHARED` folder, and whether it was copied now (False: a file of that name was there
    already, from an earlier call, and its bytes hash to ``digest`` now: one the container
    changed, whatever its size and times, is copied again). The container may write in the
    channel: every step goes through folder descriptors opened without following links, and
    the copy is made under a new name and renamed into place, so nothing is ever written
    outside the channel (a file the container put there in its place only spoils its own
    results). Files shared earlier go, oldest first, once they hold more than
    `SHARED_MAX_BYTES`."""
    name = f"{digest[:32]}{source.suffix}"
    size = source.stat().st_size
    base = os.open(channel, _DIRECTORY)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(SHARED, 0o755, dir_fd=base)
        folder = os.open(SHARED, _DIRECTORY, dir_fd=base)
    finally:
        os.close(base)
    try:
        with contextlib.suppress(FileNotFoundError):
            found = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if (
                stat.S_ISREG(found.st_mode)
                and found.st_size == size
                and _hashes_to(folder, name, digest)
            ):
                return f"{CHANNEL_MOUNT}/{SHARED}/{name}", False
        part = f".{name}.{os.getpid()}.part"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        handle = os.open(part, flags, 0o644, dir_fd=folder)
        try:
            with os.fdopen(handle, "wb") as target, source.open("rb") as origin:
                shutil.copyfileobj(origin, target, 1 << 20)
            os.replace(part, name, src_dir_fd=folder, dst_dir_fd=folder)
            _prune(folder, keep=name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(part, dir_fd=folder)
            raise
    finally:
        os.close(folder)
    return f"{CHANNEL_MOUNT}/{SHARED}/{name}", True


def _prune(folder: int, keep: str) -> None:
    """Remove the oldest shared files beyond `SHARED_MAX_BYTES` in all (never ``keep``)."""
    with os.scandir(folder) as entries:
        files = [(e.stat(follow_symlinks=False), e.name) for e in entries]
    total = sum(found.st_size for found, _ in files)
    for found, name in sorted(files, key=lambda pair: pair[0].st_mtime):
        if name == keep:
            continue
        if total <= SHARED_MAX_BYTES:
            return
        try:
            os.unlink(name, dir_fd=folder)
        except OSError:
            continue
        total -= found.st_size


def _open_folder(channel: Path, *names: str) -> int:
    """A descriptor of ``channel/names...``, each step opened without following a link (so a
    link the container put there ends it, OSError)."""
    handle = os.open(channel, _DIRECTORY)
    try:
        for name in names:
            inner = os.open(name, _DIRECTORY, dir_fd=handle)
            os.close(handle)
            handle = inner
    except BaseException:
        os.close(handle)
        raise
    return handle


def collect_file(channel: Path, box: str, name: str, local: Path, max_bytes: int) -> None:
    """Copy ``OUTBOX/box/name`` of the channel (a file a job wrote there, for the host) to
    ``local``, taking it out of the outbox (its name goes once it is open, its memory once it
    is copied, before the next file's copy needs some). The container may have put anything
    there: only a regular file reached without links, of at most ``max_bytes``, is copied
    (in the kernel where it can be; its bytes as they are read: a file growing meanwhile is
    cut at its size when opened); else `DeviceOutputError`."""
    from edgehub.errors import DeviceOutputError

    try:
        folder = _open_folder(channel, OUTBOX, box)
    except OSError as error:
        raise DeviceOutputError(f"the job left no folder {box} for the host ({error})") from None
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # no FIFO waits
        handle = os.open(name, flags, dir_fd=folder)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=folder)
    except OSError as error:
        raise DeviceOutputError(f"the job left no {name} for the host ({error})") from None
    finally:
        os.close(folder)
    with os.fdopen(handle, "rb") as origin:
        found = os.fstat(origin.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise DeviceOutputError(f"the job's {name} is not a regular file")
        if found.st_size > max_bytes:
            raise DeviceOutputError(
                f"the job's {name} is {found.st_size} bytes, over the {max_bytes} accepted; "
                "raise EDGEHUB_FETCH_MAX_MEMBER_BYTES to accept more"
            )
        local.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(local, flags, 0o600), "wb") as target:
            if copy_range(origin.fileno(), target.fileno(), found.st_size):
                return
            origin.seek(0)
            target.seek(0)
            target.truncate()
            left = found.st_size
            while left > 0 and (chunk := origin.read(min(left, 1 << 20))):
                target.write(chunk)
                left -= len(chunk)


def discard_outbox(channel: Path, box: str) -> None:
    """Remove ``OUTBOX/box`` of the channel and what is in it (never through a link)."""
    with contextlib.suppress(OSError):  # else the reaper removes it with its container
        folder = _open_folder(channel, OUTBOX)
        try:
            _remove(folder, box)
        finally:
            os.close(folder)


def _remove(parent: int, name: str, depth: int = 8) -> None:
    """Remove ``name`` of the folder ``parent`` (a descriptor) with what it holds, through
    descriptors only (a link is removed, never followed)."""
    try:
        folder = os.open(name, _DIRECTORY, dir_fd=parent)
    except OSError as error:
        if error.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        os.unlink(name, dir_fd=parent)  # a file, or a link
        return
    try:
        with os.scandir(folder) as entries:
            for entry in list(entries):
                if entry.is_dir(follow_symlinks=False) and depth > 0:
                    _remove(folder, entry.name, depth - 1)
                else:
                    os.unlink(entry.name, dir_fd=folder)
    finally:
        os.close(folder)
    os.rmdir(name, dir_fd=parent)
