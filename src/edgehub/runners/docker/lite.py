"""`LiteClient`: the Docker Engine API over the local unix socket, with the standard library.

Importing the docker SDK costs ~0.2 s (requests, urllib3) and most edgehub commands need a
handful of calls; this client makes every call of the `DockerClient` protocol with
`http.client`, and attaches to execs by taking over the connection (HTTP upgrade), as the
Docker CLI does. It serves only a plain local daemon (`local_socket`); `connect` hands anything
else to the SDK.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from edgehub.runners.docker.client import DockerAPIError, DockerNotFound, ExecSocket

__all__ = ["LiteClient", "local_socket"]

_TIMEOUT = 60.0


def local_socket() -> str | None:
    """The local daemon's socket path, or ``None`` when the SDK must decide (remote hosts,
    contexts, TLS) or there is no socket."""
    host = os.environ.get("DOCKER_HOST", "")
    if os.environ.get("DOCKER_CONTEXT") or os.environ.get("DOCKER_TLS_VERIFY"):
        return None
    if not host:
        path = "/var/run/docker.sock"
    elif host.startswith("unix://"):
        path = host[len("unix://") :]
    else:
        return None
    return path if os.path.exists(path) else None


def _error(status: int, body: bytes) -> DockerAPIError:
    try:
        message = str(json.loads(body).get("message") or "")
    except (ValueError, AttributeError):
        message = body[:300].decode("utf-8", "replace")
    cls = DockerNotFound if status == 404 else DockerAPIError
    return cls(status, message.strip() or f"HTTP {status}")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class _Hijacked:
    """The raw stream of an attached exec; bytes read with the HTTP head come first."""

    def __init__(self, sock: socket.socket, pending: bytes) -> None:
        self._raw = sock
        self._pending = pending

    def recv(self, size: int) -> bytes:
        if self._pending:
            chunk, self._pending = self._pending[:size], self._pending[size:]
            return chunk
        return self._raw.recv(size)

    def sendall(self, data: bytes) -> None:
        self._raw.sendall(data)

    def close_write(self) -> None:
        self._raw.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        try:
            self._raw.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in recv
        except OSError:
            pass
        self._raw.close()


class LiteClient:
    """A `DockerClient` for the daemon listening on the unix socket ``path``."""

    def __init__(self, path: str, timeout: float = _TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout

    def _open(
        self, method: str, url: str, body: bytes | None, content_type: str
    ) -> tuple[_UnixConnection, http.client.HTTPResponse]:
        """Send a request; the caller reads the response and closes the connection."""
        connection = _UnixConnection(self.path, self.timeout)
        try:
            headers = {"Content-Type": content_type} if body is not None else {}
            connection.request(method, url, body=body, headers=headers)
            response = connection.getresponse()
            if response.status >= 300:
                raise _error(response.status, response.read())
        except BaseException:
            connection.close()
            raise
        return connection, response

    def _call(self, method: str, url: str, body: Any = None) -> Any:
        payload = None if body is None else json.dumps(body).encode()
        connection, response = self._open(method, url, payload, "application/json")
        try:
            data = response.read()
        finally:
            connection.close()
        return json.loads(data) if data else {}

    def ping(self) -> bool:
        connection = _UnixConnection(self.path, min(self.timeout, 5.0))
        try:
            connection.request("GET", "/_ping")
            response = connection.getresponse()
            if response.status != 200:
                raise _error(response.status, response.read())
            return True
        finally:
            connection.close()

    def inspect_image(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/images/{quote(name, safe=':@')}/json")
        return result

    def inspect_container(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/containers/{quote(name, safe='')}/json")
        return result

    def containers(self, labels: Sequence[str]) -> list[dict[str, Any]]:
        query = urlencode({"all": "1", "filters": json.dumps({"label": list(labels)})})
        result: list[dict[str, Any]] = self._call("GET", f"/containers/json?{query}")
        return result

    def create_container(self, config: Mapping[str, Any], name: str) -> str:
        query = urlencode({"name": name})
        return str(self._call("POST", f"/containers/create?{query}", dict(config))["Id"])

    def start_container(self, container: str) -> None:
        self._call("POST", f"/containers/{quote(container, safe='')}/start")

    def remove_container(self, container: str) -> None:
        self._call("DELETE", f"/containers/{quote(container, safe='')}?force=1&v=1")

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
        body: dict[str, Any] = {
            "AttachStdin": stdin,
            "AttachStdout": True,
            "AttachStderr": True,
            "Tty": False,
            "Cmd": list(cmd),
            "Env": list(environment),
            "User": user,
        }
        if workdir:
            body["WorkingDir"] = workdir
        url = f"/containers/{quote(container, safe='')}/exec"
        return str(self._call("POST", url, body)["Id"])

    def exec_start(self, exec_id: str) -> ExecSocket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.path)
        body = b'{"Detach": false, "Tty": false}'
        head = (
            f"POST /exec/{exec_id}/start HTTP/1.1\r\nHost: docker\r\n"
            "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        received = b""
        try:
            sock.sendall(head.encode() + body)
            while b"\r\n\r\n" not in received:
                chunk = sock.recv(4096)
                if not chunk:
                    raise DockerAPIError(0, "the daemon closed the exec stream")
                received += chunk
        except BaseException:
            sock.close()
            raise
        status_line, _, rest = received.partition(b"\r\n\r\n")
        status = int(status_line.split(b" ", 2)[1])
        if status not in (101, 200):
            sock.close()
            raise _error(status, rest)
        sock.settimeout(None)  # a quiet command may print nothing for a long time
        return _Hijacked(sock, rest)

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/exec/{exec_id}/json")
        return result

    def put_archive(self, container: str, path: str, data: bytes) -> None:
        query = urlencode({"path": path})
        url = f"/containers/{quote(container, safe='')}/archive?{query}"
        connection, response = self._open("PUT", url, data, "application/x-tar")
        response.read()
        connection.close()

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        query = urlencode({"path": path})
        url = f"/containers/{quote(container, safe='')}/archive?{query}"
        connection, response = self._open("GET", url, None, "")
        header = response.getheader("X-Docker-Container-Path-Stat") or ""
        stat: dict[str, Any] = json.loads(base64.b64decode(header)) if header else {}

        def chunks() -> Iterator[bytes]:
            try:
                while block := response.read(1 << 20):
                    yield block
            finally:
                response.close()
                connection.close()

        return chunks(), stat

    def close(self) -> None:
        return None
