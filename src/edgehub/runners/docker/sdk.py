"""The docker SDK: `docker_client` (a connected ``docker.DockerClient``, for image builds) and
`SDKClient`, the `DockerClient` protocol over it for daemons the light client cannot reach
(``DOCKER_HOST=ssh://`` or ``tcp://``, TLS, contexts). The SDK is imported on first use only.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from edgehub.errors import DockerUnavailableError
from edgehub.runners.docker.client import DockerAPIError, DockerNotFound

__all__ = ["SDKClient", "docker_client", "unavailable"]

_T = TypeVar("_T")


def _docker_host() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock (the default socket)"


def _defer_paramiko() -> None:
    """The docker SDK imports its SSH transport (and paramiko, ~0.3 s) even for local daemons.
    Unless DOCKER_HOST is ``ssh://``, mark that optional module absent, which the SDK allows."""
    if "docker" in sys.modules or os.environ.get("DOCKER_HOST", "").startswith("ssh://"):
        return
    sys.modules.setdefault("docker.transport.sshconn", None)  # type: ignore[arg-type]


def unavailable(error: BaseException) -> DockerUnavailableError:
    """The one-line error for a daemon that does not answer."""
    reason = " ".join(str(error).split())
    if len(reason) > 160:
        reason = reason[:157] + "..."
    return DockerUnavailableError(
        f"cannot reach the Docker daemon at {_docker_host()}: {reason}; start it "
        "(sudo systemctl start docker, or sudo dockerd &, or scripts/ci-docker.sh start) "
        "or point DOCKER_HOST at a running one"
    )


def docker_client(timeout: int = 120) -> Any:
    """A connected ``docker.DockerClient``; `DockerUnavailableError` if there is no daemon."""
    _defer_paramiko()
    try:
        import docker
    except ImportError as error:  # pragma: no cover - docker is a dependency
        raise DockerUnavailableError(
            "the 'docker' Python package is not installed; run: pip install docker"
        ) from error
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as error:  # any failure here means "no daemon"
        raise unavailable(error) from error
    return client


def _translated(call: Callable[[], _T]) -> _T:
    """Run an SDK call; its errors become `DockerAPIError` / `DockerNotFound`."""
    import docker.errors
    import requests.exceptions

    try:
        return call()
    except docker.errors.NotFound as error:
        raise DockerNotFound(404, str(error.explanation or error)) from error
    except docker.errors.APIError as error:
        raise DockerAPIError(
            int(error.status_code or 0), str(error.explanation or error)
        ) from error
    except requests.exceptions.RequestException as error:
        raise DockerAPIError(0, str(error)) from error


class _SDKExecSocket:
    """An attached exec's stream as the SDK hands it out (a socket, or a paramiko channel)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._raw = getattr(handle, "_sock", handle)
        if hasattr(self._raw, "settimeout"):
            self._raw.settimeout(None)  # a quiet command may print nothing for a long time

    def recv(self, size: int) -> bytes:
        data: bytes = self._raw.recv(size)
        return data

    def sendall(self, data: bytes) -> None:
        self._raw.sendall(data)

    def close_write(self) -> None:
        try:
            self._raw.shutdown(socket.SHUT_WR)
        except (AttributeError, TypeError):
            self._raw.shutdown_write()  # a paramiko channel (DOCKER_HOST=ssh://...)

    def close(self) -> None:
        try:
            self._raw.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in recv
        except Exception:
            pass
        self._raw.close()
        self._handle.close()


class SDKClient:
    """A `DockerClient` over ``docker.APIClient``; connects (and pings) on construction."""

    def __init__(self, timeout: int = 120) -> None:
        self._client = docker_client(timeout)
        self._api = self._client.api

    def ping(self) -> bool:
        return bool(_translated(self._api.ping))

    def inspect_image(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = _translated(lambda: self._api.inspect_image(name))
        return result

    def inspect_container(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = _translated(lambda: self._api.inspect_container(name))
        return result

    def containers(self, labels: Sequence[str]) -> list[dict[str, Any]]:
        filters = {"label": list(labels)}
        result: list[dict[str, Any]] = _translated(
            lambda: self._api.containers(all=True, filters=filters)
        )
        return result

    def create_container(self, config: Mapping[str, Any], name: str) -> str:
        body = dict(config)
        created = _translated(
            lambda: self._api.create_container(
                body.pop("Image"),
                command=body.pop("Cmd", None),
                name=name,
                labels=body.pop("Labels", None),
                working_dir=body.pop("WorkingDir", None),
                user=body.pop("User", None),
                environment=body.pop("Env", None),
                host_config=body.pop("HostConfig", None),
            )
        )
        return str(created["Id"])

    def start_container(self, container: str) -> None:
        _translated(lambda: self._api.start(container))

    def remove_container(self, container: str) -> None:
        _translated(lambda: self._api.remove_container(container, force=True, v=True))

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
        created = _translated(
            lambda: self._api.exec_create(
                container,
                list(cmd),
                stdin=stdin,
                stdout=True,
                stderr=True,
                environment=list(environment),
                workdir=workdir,
                user=user,
            )
        )
        return str(created["Id"])

    def exec_start(self, exec_id: str) -> _SDKExecSocket:
        return _SDKExecSocket(_translated(lambda: self._api.exec_start(exec_id, socket=True)))

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        result: dict[str, Any] = _translated(lambda: self._api.exec_inspect(exec_id))
        return result

    def put_archive(self, container: str, path: str, data: bytes) -> None:
        _translated(lambda: self._api.put_archive(container, path, data))

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        chunks, stat = _translated(lambda: self._api.get_archive(container, path))
        return iter(chunks), dict(stat)

    def close(self) -> None:
        self._client.close()
