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

import json
import os
import shutil
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

from edgehub.agent.server.wire import socket_address
from edgehub.runners.agent_reply import Refused, Reply, check_start

__all__ = [
    "CHANNEL_MOUNT",
    "AgentJob",
    "channel_dir",
    "channels_base",
    "open_agent_job",
    "share_file",
]

CHANNEL_MOUNT = "/run/edgehub"
# Bigger jobs go through `docker exec`, which streams their files to disk: the server holds a
# job's files in memory until the job starts.
MAX_CHANNEL_STAGE_BYTES = 256 << 20
SHARED = "shared"  # the channel's folder of files placed by content (`share_file`)
CONNECT_TIMEOUT_S = 2.0
START_TIMEOUT_S = 10.0


def channels_base() -> Path:
    """Where the warm containers' channel folders are (one per warm key)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edgehub" / "warm"


def channel_dir(key: str) -> Path:
    """The host folder mounted into the warm container ``key`` (made, with a private parent).

    The parent is ``~/.cache/edgehub/warm`` (mode 0700), so only this user reaches the socket;
    the folder itself belongs to the container's user when this process may give it away."""
    base = channels_base()
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)
    folder = base / key
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


class AgentJob:
    """One job on the resident agent at ``host_socket``: ``argv`` in ``cwd`` (a path in the
    container), the directory's files from ``stage`` (a tar whose root is ``cwd``'s last part),
    ``fetch`` the folder of ``cwd`` sent back. Raises `Refused` when nothing ran."""

    def __init__(self, host_socket: Path, argv: list[str], cwd: str, stage: bytes, fetch: str):
        request = {"argv": argv, "cwd": cwd, "stage": {"size": len(stage), "fetch": fetch}}
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._code: int | None = None
        self._killed = False
        try:
            # The container may write in its folder: connect only to a socket it made there,
            # never through a link it may have put in its place.
            if not stat.S_ISSOCK(os.lstat(host_socket).st_mode):
                raise Refused(f"{host_socket} is not a socket")
            self._sock.settimeout(CONNECT_TIMEOUT_S)
            with socket_address(str(host_socket)) as address:
                self._sock.connect(address)
            self._sock.settimeout(START_TIMEOUT_S)
            self._sock.sendall(json.dumps(request).encode() + b"\n" + stage)
            self._pending = self._first_line()
        except (OSError, Refused) as error:
            self._sock.close()
            raise Refused(str(error)) from error
        self._sock.settimeout(None)

    def _first_line(self) -> bytes:
        data = b""
        while b"\n" not in data:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise Refused("the server closed the connection")
            data += chunk
        line, _, rest = data.partition(b"\n")
        check_start(line)
        return rest

    def _chunks(self) -> Iterator[bytes]:
        if self._pending:
            yield self._pending
        while True:
            try:
                chunk = self._sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            yield chunk

    def read(self) -> Iterator[tuple[str, bytes]]:
        """The job's output (``stderr``), then the returned tar (``stdout``)."""
        reply = Reply()
        yield from reply.read(self._chunks())
        self._code = reply.code

    def kill(self) -> None:
        """End the job: the server kills it when the connection closes."""
        self._killed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def wait(self) -> int:
        return -1 if self._code is None else self._code

    def close(self) -> None:
        self.kill()
        self._sock.close()


def open_agent_job(
    host_socket: Path, argv: list[str], cwd: str, stage: bytes, fetch: str
) -> AgentJob | None:
    """The job started on the resident agent at ``host_socket``; None when none took it (or
    its files are too big for the channel)."""
    if len(stage) > MAX_CHANNEL_STAGE_BYTES:
        return None
    try:
        return AgentJob(host_socket, argv, cwd, stage, fetch)
    except Refused:
        return None


def share_file(channel: Path, source: Path, digest: str) -> tuple[str, bool]:
    """The container path of a copy of ``source`` (content hash ``digest``) in the channel's
    `SHARED` folder, and whether it was copied now (False: a file of that name and size was
    there already, from an earlier call). The container may write in the channel: every step
    goes through folder descriptors opened without following links, and the copy is made
    under a new name and renamed into place, so nothing is ever written outside the channel
    (a file the container put there in its place only spoils its own results)."""
    name = f"{digest[:32]}{source.suffix}"
    size = source.stat().st_size
    directory = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    base = os.open(channel, directory)
    try:
        try:
            os.mkdir(SHARED, 0o755, dir_fd=base)
        except FileExistsError:
            pass
        folder = os.open(SHARED, directory, dir_fd=base)
    finally:
        os.close(base)
    try:
        try:
            found = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if stat.S_ISREG(found.st_mode) and found.st_size == size:
                return f"{CHANNEL_MOUNT}/{SHARED}/{name}", False
        except FileNotFoundError:
            pass
        part = f".{name}.{os.getpid()}.part"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        handle = os.open(part, flags, 0o644, dir_fd=folder)
        try:
            with os.fdopen(handle, "wb") as target, source.open("rb") as origin:
                shutil.copyfileobj(origin, target, 1 << 20)
            os.replace(part, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(part, dir_fd=folder)
            except OSError:
                pass
            raise
    finally:
        os.close(folder)
    return f"{CHANNEL_MOUNT}/{SHARED}/{name}", True
