"""The docker SDK: `SDKClient`, the `DockerClient` protocol over it for daemons the light client
cannot reach (``DOCKER_HOST=ssh://`` or ``tcp://``, TLS, contexts); `docker_client` is the raw,
connected ``docker.DockerClient`` underneath (tests use it as an independent witness). The SDK
is imported on first use only.

Over ``ssh://`` the SDK opens one SSH connection (paramiko) per ``docker.DockerClient`` and one
channel running ``docker system dial-stdio`` on the host per HTTP connection: the handshake
costs far more than a call, so `connect` hands out one shared client per daemon for the whole
process (`SDKClient` with ``shared``), closed at exit. The SDK checks the host key against
``~/.ssh/known_hosts`` and refuses an unknown one (paramiko's ``RejectPolicy``); it reads the
key, port, user and ``ProxyCommand`` for the host from ``~/.ssh/config``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from edgehub.errors import DockerUnavailableError
from edgehub.runners.docker.client import (
    DockerAPIError,
    DockerNotFound,
    ExecSpec,
    SocketStream,
    Strings,
    build_context,
    docker_host,
)

_T = TypeVar("_T")


def _docker_host(host: str | None = None) -> str:
    return host or docker_host() or "unix:///var/run/docker.sock (the default socket)"


def _defer_paramiko(host: str | None) -> None:
    """The docker SDK imports its SSH transport (and paramiko, slow to import) even for a local
    daemon. Unless the daemon is at ``ssh://``, mark that optional module absent, which the SDK
    allows (so a process that first used a local daemon cannot reach an ``ssh://`` one)."""
    if "docker" in sys.modules or _docker_host(host).startswith("ssh://"):
        return
    sys.modules.setdefault("docker.transport.sshconn", None)  # type: ignore[arg-type]


def unavailable(error: BaseException, host: str | None = None) -> DockerUnavailableError:
    """The one-line error for a daemon (at ``host``, or ``$DOCKER_HOST``'s) that does not
    answer."""
    reason = " ".join(str(error).split())
    if len(reason) > 160:
        reason = reason[:157] + "..."
    if _docker_host(host).startswith("ssh://"):
        fix = (
            "check that ssh to that host works with your key, that its key is in "
            "~/.ssh/known_hosts (never added here: verify it and add it with ssh), and that "
            "its user may run docker there"
        )
    else:
        fix = (
            "start it (sudo systemctl start docker, or sudo dockerd &, or "
            "scripts/ci-docker.sh start) or point DOCKER_HOST at a running one"
        )
    return DockerUnavailableError(
        f"cannot reach the Docker daemon at {_docker_host(host)}: {reason}; {fix}"
    )


def docker_client(timeout: int = 120, host: str | None = None) -> Any:
    """A connected ``docker.DockerClient`` of the daemon at ``host`` (default: the
    environment's); `DockerUnavailableError` if there is no daemon."""
    _defer_paramiko(host)  # refuses a malformed $DOCKER_HOST before the SDK reads it
    try:
        import docker
    except ImportError as error:  # pragma: no cover - docker is a dependency
        raise DockerUnavailableError(
            "the 'docker' Python package is not installed; run: pip install docker"
        ) from error
    try:
        if host:
            client = docker.DockerClient(base_url=host, timeout=timeout)
        else:
            client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as error:  # any failure here means "no daemon"
        raise unavailable(error, host) from error
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


class _SDKExecSocket(SocketStream):
    """An attached exec's stream as the SDK hands it out (a socket, or a paramiko channel)."""

    def __init__(self, handle: Any) -> None:
        super().__init__(getattr(handle, "_sock", handle))
        self._handle = handle

    def close_write(self) -> None:
        try:
            super().close_write()
        except (AttributeError, TypeError):
            self._raw.shutdown_write()  # a paramiko channel (DOCKER_HOST=ssh://...)

    def close(self) -> None:
        super().close()
        self._handle.close()


_SHARED: dict[tuple[str, ...], Any] = {}
_SHARED_LOCK = threading.Lock()
_ENVIRONMENT = ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH")


def _shared_client(timeout: int, host: str | None) -> Any:
    """The process's one connected ``docker.DockerClient`` for the daemon at ``host``
    (default: the environment's)."""
    key = (host,) if host else tuple(os.environ.get(name, "") for name in _ENVIRONMENT)
    with _SHARED_LOCK:
        client = _SHARED.get(key)
        if client is None:
            client = _SHARED[key] = docker_client(timeout, host)
            if len(_SHARED) == 1:
                atexit.register(_close_shared)
        return client


def _close_shared() -> None:
    with _SHARED_LOCK:
        clients = list(_SHARED.values())
        _SHARED.clear()
    for client in clients:
        with contextlib.suppress(Exception):  # leaving anyway
            client.close()


class SDKClient:
    """A `DockerClient` over ``docker.APIClient``; connects (and pings) on construction.

    ``shared``: use (or make) the process's one connection to the daemon, which `close` leaves
    open for the next user; ``host``: the daemon's address (default: the environment's)."""

    local = False  # the SDK may reach any host: no bind mounts of this machine's folders

    def __init__(
        self, timeout: int = 120, *, shared: bool = False, host: str | None = None
    ) -> None:
        self._shared = shared
        self._client = _shared_client(timeout, host) if shared else docker_client(timeout, host)
        self._api = self._client.api

    def ping(self) -> bool:
        return bool(_translated(self._api.ping))

    def inspect_image(self, name: str) -> dict[str, Any]:
        return _translated(lambda: self._api.inspect_image(name))

    def inspect_container(self, name: str) -> dict[str, Any]:
        return _translated(lambda: self._api.inspect_container(name))

    def containers(self, labels: Sequence[str]) -> list[dict[str, Any]]:
        return _translated(lambda: self._api.containers(all=True, filters={"label": list(labels)}))

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
                stdin_open=bool(body.pop("OpenStdin", False)),
            )
        )
        return str(created["Id"])

    def start_container(self, container: str) -> None:
        _translated(lambda: self._api.start(container))

    def remove_container(self, container: str) -> None:
        _translated(lambda: self._api.remove_container(container, force=True, v=True))

    def attach_container(self, container: str) -> _SDKExecSocket:
        params = {"stream": 1, "stdin": 1, "stdout": 1, "stderr": 1}
        return _SDKExecSocket(
            _translated(lambda: self._api.attach_socket(container, params=params))
        )

    def wait_container(self, container: str) -> int:
        # timeout None: no limit (the SDK's default would be the client's timeout)
        result = _translated(lambda: self._api.wait(container, timeout=None))
        return int(result["StatusCode"])

    def kill_container(self, container: str) -> None:
        _translated(lambda: self._api.kill(container))

    def exec_create(self, container: str, spec: ExecSpec) -> str:
        created = _translated(
            lambda: self._api.exec_create(
                container,
                list(spec.cmd),
                stdin=spec.stdin,
                stdout=True,
                stderr=True,
                environment=list(spec.environment),
                workdir=spec.workdir,
            )
        )
        return str(created["Id"])

    def exec_start(self, exec_id: str) -> _SDKExecSocket:
        return _SDKExecSocket(_translated(lambda: self._api.exec_start(exec_id, socket=True)))

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        return _translated(lambda: self._api.exec_inspect(exec_id))

    def put_archive(self, container: str, path: str, data: bytes) -> None:
        _translated(lambda: self._api.put_archive(container, path, data))

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        chunks, stat = _translated(lambda: self._api.get_archive(container, path))
        return iter(chunks), dict(stat)

    def build(
        self, context: Path, tag: str, *, buildargs: Strings = None, labels: Strings = None
    ) -> Iterator[dict[str, Any]]:
        with build_context(context) as tar:
            stream = _translated(
                lambda: self._api.build(
                    fileobj=tar,
                    custom_context=True,
                    tag=tag,
                    buildargs=dict(buildargs or {}) or None,
                    labels=dict(labels or {}) or None,
                    rm=True,
                    forcerm=True,
                    pull=False,
                    decode=True,
                    timeout=None,
                )
            )
            while True:
                message = _translated(lambda: next(stream, None))
                if message is None:
                    return
                yield dict(message)

    def close(self) -> None:
        if not self._shared:
            self._client.close()
