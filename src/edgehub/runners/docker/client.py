"""The Docker Engine API as edgehub uses it: one typed protocol, two implementations.

`LiteClient` (``docker/lite.py``) speaks HTTP over the local unix socket with the standard
library: no import cost, used whenever the daemon is local. `SDKClient` (``docker/sdk.py``)
wraps the docker SDK for everything else (``DOCKER_HOST=ssh://`` or ``tcp://``, TLS, contexts);
one such connection is shared by the whole process (one SSH connection per job).
Both raise `DockerAPIError` (`DockerNotFound` for 404) and satisfy `DockerClient` completely;
`connect` picks one, and nothing else in edgehub makes a client.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from edgehub.runners.docker.lite import LiteClient


Strings = Mapping[str, str] | None  # build arguments, labels


class DockerAPIError(Exception):
    """A failed Docker API call; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, status: int, explanation: str) -> None:
        super().__init__(" ".join(explanation.split()))
        self.status = status
        self.explanation = str(self)


class DockerNotFound(DockerAPIError):
    """The image, container, exec or path does not exist (HTTP 404)."""


@dataclass(frozen=True)
class ExecSpec:
    """An exec to create: its command, whether it reads stdin, its ``KEY=value`` environment
    and working directory."""

    cmd: Sequence[str]
    stdin: bool = False
    environment: Sequence[str] = ()
    workdir: str | None = None


class ExecSocket(Protocol):
    """The raw, multiplexed stream of an attached exec (see ``docker/frames.py``)."""

    def recv(self, size: int) -> bytes: ...

    def sendall(self, data: bytes) -> None: ...

    def close_write(self) -> None:
        """Half-close: the exec's stdin reaches end of file."""
        ...

    def close(self) -> None: ...


class SocketStream:
    """An `ExecSocket` over an attached socket (or a channel offering the same calls), set to
    no time limit (a quiet command may print nothing for a long time); ``pending``: bytes read
    from it already (with an HTTP head), handed out first."""

    def __init__(self, raw: Any, pending: bytes = b"") -> None:
        self._raw = raw
        self._pending = pending
        if hasattr(raw, "settimeout"):
            raw.settimeout(None)

    def recv(self, size: int) -> bytes:
        if self._pending:
            chunk, self._pending = self._pending[:size], self._pending[size:]
            return chunk
        data: bytes = self._raw.recv(size)
        return data

    def sendall(self, data: bytes) -> None:
        self._raw.sendall(data)

    def close_write(self) -> None:
        self._raw.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._raw.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in recv
        self._raw.close()


class DockerClient(Protocol):
    """Every Engine API call edgehub makes; ids and names are interchangeable.

    ``local``: the daemon shares this machine's file system, so a host folder can be
    bind-mounted (the warm channel); files otherwise travel through the API only."""

    local: bool

    def ping(self) -> bool: ...

    def inspect_image(self, name: str) -> dict[str, Any]: ...

    def inspect_container(self, name: str) -> dict[str, Any]: ...

    def containers(self, labels: Sequence[str]) -> list[dict[str, Any]]:
        """Summaries of all containers (running or not) carrying every ``key=value`` label."""
        ...

    def create_container(self, config: Mapping[str, Any], name: str) -> str:
        """Create from an Engine API ``ContainerConfig`` (``HostConfig`` inside); its id.
        ``OpenStdin`` true gives it a stdin that one `attach_container` may write, then close."""
        ...

    def start_container(self, container: str) -> None: ...

    def attach_container(self, container: str) -> ExecSocket:
        """The multiplexed stdout and stderr of a created container (attach before it
        starts to miss nothing), and its stdin where it has one; the stream ends when the
        container stops."""
        ...

    def wait_container(self, container: str) -> int:
        """Wait until the container has stopped; its exit status."""
        ...

    def kill_container(self, container: str) -> None:
        """SIGKILL the container's main process (and so everything in it)."""
        ...

    def remove_container(self, container: str) -> None:
        """Force-remove a container and its anonymous volumes."""
        ...

    def exec_create(self, container: str, spec: ExecSpec) -> str:
        """An exec (stdout and stderr attached, no TTY); its id."""
        ...

    def exec_start(self, exec_id: str) -> ExecSocket: ...

    def exec_inspect(self, exec_id: str) -> dict[str, Any]: ...

    def put_archive(self, container: str, path: str, data: bytes) -> None:
        """Extract a tar into directory ``path`` of the container (it must exist)."""
        ...

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        """A tar of ``path`` in chunks, and its stat (``name``, ``size``, ``mode``...)."""
        ...

    def build(
        self, context: Path, tag: str, *, buildargs: Strings = None, labels: Strings = None
    ) -> Iterator[dict[str, Any]]:
        """Build the directory ``context`` (its ``Dockerfile``) as ``tag``, never pulling; the
        daemon's messages (``stream``, ``status`` or ``error``) as they come, no time limit."""
        ...

    def close(self) -> None: ...


def build_context(context: Path) -> IO[bytes]:
    """The directory ``context`` as a tar in a temporary file (read from its start)."""
    import tarfile
    import tempfile

    spool = tempfile.TemporaryFile()  # noqa: SIM115 - the caller closes it
    with tarfile.open(fileobj=spool, mode="w") as tar:
        for child in sorted(context.iterdir()):
            tar.add(child, arcname=child.name)
    spool.seek(0)
    return spool


def json_messages(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a streamed answer (one after another, split anywhere)."""
    decoder = json.JSONDecoder()
    text = ""
    for chunk in chunks:
        text += chunk.decode("utf-8", "replace")
        while True:
            text = text.lstrip()
            try:
                message, end = decoder.raw_decode(text)
            except ValueError:
                break
            text = text[end:]
            if isinstance(message, dict):
                yield message
    if text.strip():
        raise DockerAPIError(0, f"the Docker daemon sent a broken message: {text[:200]!r}")


_SCHEMES = ("unix", "tcp", "ssh", "http", "https", "npipe", "fd")


def docker_host() -> str | None:
    """``$DOCKER_HOST``, checked: None when it is unset or empty (the default socket, or
    ``DOCKER_CONTEXT``). A value that names no daemon (``unix://`` without an absolute socket
    path, a scheme Docker does not know, no address) is refused in one line naming the
    variable (`~edgehub.errors.UsageError`), never replaced by the default socket."""
    value = os.environ.get("DOCKER_HOST")
    if not value:
        return None
    scheme, sep, address = value.partition("://")
    if not sep:
        scheme, address = "tcp", value  # host:port, as Docker reads it
    problem = None
    if scheme not in _SCHEMES:
        problem = f"has the scheme {scheme!r}, which Docker does not know ({', '.join(_SCHEMES)})"
    elif scheme == "unix" and not address.startswith("/"):
        problem = "names no absolute socket path"
    elif not address.strip("/") or any(c.isspace() for c in address):
        problem = "names no address"
    if problem is not None:
        from edgehub.errors import UsageError

        raise UsageError(
            f"DOCKER_HOST={value!r} {problem}; set it to a daemon's address "
            "(unix:///var/run/docker.sock, tcp://HOST:PORT, ssh://USER@HOST) or unset it for "
            "the default socket"
        )
    return value


def local_client(timeout: float = 60.0, host: str | None = None) -> LiteClient | None:
    """The light client of a local daemon's socket, or None (a remote daemon, or no socket);
    for the reaper, which must never pay for a connection. ``host``: a daemon address other
    than ``$DOCKER_HOST``'s."""
    from edgehub.runners.docker.lite import LiteClient, local_socket

    path = local_socket(host)
    return None if path is None else LiteClient(path, timeout=timeout)


def connect(timeout: int = 120, *, host: str | None = None, ping: bool = True) -> DockerClient:
    """A client of the daemon at ``host`` (default: the configured one, ``$DOCKER_HOST``): the
    light one for a local socket, else the SDK's connection shared by this process.

    Raises `~edgehub.errors.DockerUnavailableError` when no daemon answers, and
    `~edgehub.errors.UsageError` for a malformed ``$DOCKER_HOST`` (`docker_host`). Without
    ``ping``, a local daemon is not asked first (one round trip less for a caller whose next
    request asks it anyway): a socket nobody answers on raises that error at each request.
    """
    if host is None:
        docker_host()
    client = local_client(host=host)
    if client is None:
        from edgehub.runners.docker.sdk import SDKClient

        return SDKClient(timeout, shared=True, host=host)
    if not ping:
        client.unreachable = functools.partial(_unavailable, host=host)
        return client
    try:
        client.ping()
    except (OSError, DockerAPIError) as error:
        raise _unavailable(error, host) from error
    return client


def _unavailable(error: BaseException, host: str | None) -> Exception:
    from edgehub.runners.docker.sdk import unavailable

    return unavailable(error, host)
