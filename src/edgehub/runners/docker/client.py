"""The Docker Engine API as the runner uses it: one typed protocol, two implementations.

`LiteClient` (``docker/lite.py``) speaks HTTP over the local unix socket with the standard
library: no import cost, used whenever the daemon is local. `SDKClient` (``docker/sdk.py``)
wraps the docker SDK for everything else (``DOCKER_HOST=ssh://`` or ``tcp://``, TLS, contexts).
Both raise `DockerAPIError` (`DockerNotFound` for 404) and satisfy `DockerClient` completely;
`connect` picks one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["DockerAPIError", "DockerClient", "DockerNotFound", "ExecSocket", "connect"]


class DockerAPIError(Exception):
    """A failed Docker API call; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, status: int, explanation: str) -> None:
        super().__init__(" ".join(explanation.split()))
        self.status = status
        self.explanation = str(self)


class DockerNotFound(DockerAPIError):
    """The image, container, exec or path does not exist (HTTP 404)."""


class ExecSocket(Protocol):
    """The raw, multiplexed stream of an attached exec (see ``docker/frames.py``)."""

    def recv(self, size: int) -> bytes: ...

    def sendall(self, data: bytes) -> None: ...

    def close_write(self) -> None:
        """Half-close: the exec's stdin reaches end of file."""
        ...

    def close(self) -> None: ...


class DockerClient(Protocol):
    """Every Engine API call edgehub's runner makes; ids and names are interchangeable."""

    def ping(self) -> bool: ...

    def inspect_image(self, name: str) -> dict[str, Any]: ...

    def inspect_container(self, name: str) -> dict[str, Any]: ...

    def containers(self, labels: Sequence[str]) -> list[dict[str, Any]]:
        """Summaries of all containers (running or not) carrying every ``key=value`` label."""
        ...

    def create_container(self, config: Mapping[str, Any], name: str) -> str:
        """Create from an Engine API ``ContainerConfig`` (``HostConfig`` inside); its id."""
        ...

    def start_container(self, container: str) -> None: ...

    def remove_container(self, container: str) -> None:
        """Force-remove a container and its anonymous volumes."""
        ...

    def exec_create(
        self,
        container: str,
        cmd: Sequence[str],
        *,
        stdin: bool = False,
        environment: Sequence[str] = (),
        workdir: str | None = None,
        user: str = "",
    ) -> str:
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

    def close(self) -> None: ...


def connect(timeout: int = 120) -> DockerClient:
    """A client of the configured daemon: the light one for a local socket, else the SDK.

    Raises `~edgehub.errors.DockerUnavailableError` when no daemon answers.
    """
    from edgehub.runners.docker.lite import LiteClient, local_socket

    path = local_socket()
    if path is None:
        from edgehub.runners.docker.sdk import SDKClient

        return SDKClient(timeout)
    client = LiteClient(path)
    try:
        client.ping()
    except (OSError, DockerAPIError) as error:
        from edgehub.runners.docker.sdk import unavailable

        raise unavailable(error) from error
    return client
