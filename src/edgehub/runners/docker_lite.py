"""A small Docker Engine API client over the local unix socket, for jobs in warm containers.

Importing the docker SDK costs ~0.2 s (requests, urllib3); a job in an already-running warm
container needs only a handful of calls (inspect the image and the container, create, start
and inspect execs). This client makes those with `http.client`, offering the same method
names and return shapes as the SDK's ``APIClient`` for them. Anything it cannot do falls back
to the SDK: it is used only to adopt a running warm container on a local daemon.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

from edgehub.runners.docker_frames import frames

__all__ = ["LiteClient", "LiteError", "local_socket"]

_TIMEOUT = 60.0


class LiteError(Exception):
    """A non-success answer from the daemon."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"{status}: {body[:200].decode('utf-8', 'replace').strip()}")
        self.status = status


def local_socket() -> str | None:
    """The local daemon's socket path, or ``None`` when the SDK must decide (remote hosts,
    contexts, TLS)."""
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


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=_TIMEOUT)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class _Hijacked:
    """The raw stream of an attached exec; bytes read with the HTTP head come first."""

    def __init__(self, sock: socket.socket, pending: bytes) -> None:
        self._sock = self
        self._raw = sock
        self._pending = pending

    def recv(self, size: int) -> bytes:
        if self._pending:
            chunk, self._pending = self._pending[:size], self._pending[size:]
            return chunk
        return self._raw.recv(size)

    def sendall(self, data: bytes) -> None:
        self._raw.sendall(data)

    def shutdown(self, how: int) -> None:
        self._raw.shutdown(how)

    def close(self) -> None:
        self._raw.close()


class LiteAPI:
    """The subset of the SDK's ``APIClient`` that runs commands in an existing container."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _call(self, method: str, url: str, body: Any = None) -> Any:
        connection = _UnixConnection(self.path)
        try:
            payload = None if body is None else json.dumps(body).encode()
            headers = {"Content-Type": "application/json"} if payload is not None else {}
            connection.request(method, url, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        if response.status >= 300:
            raise LiteError(response.status, data)
        return json.loads(data) if data else {}

    def ping(self) -> bool:
        connection = _UnixConnection(self.path)
        try:
            connection.request("GET", "/_ping")
            return connection.getresponse().status == 200
        finally:
            connection.close()

    def inspect_image(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/images/{quote(name, safe=':@')}/json")
        return result

    def inspect_container(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/containers/{quote(name, safe='')}/json")
        return result

    def exec_create(
        self,
        container: str,
        cmd: Sequence[str],
        stdout: bool = True,
        stderr: bool = True,
        stdin: bool = False,
        environment: Sequence[str] | None = None,
        workdir: str | None = None,
        user: str = "",
    ) -> dict[str, Any]:
        body = {
            "AttachStdin": stdin,
            "AttachStdout": stdout,
            "AttachStderr": stderr,
            "Tty": False,
            "Cmd": list(cmd),
            "Env": list(environment or []),
            "User": user,
        }
        if workdir:
            body["WorkingDir"] = workdir
        result: dict[str, Any] = self._call("POST", f"/containers/{container}/exec", body)
        return result

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/exec/{exec_id}/json")
        return result

    def _hijack(self, exec_id: str) -> _Hijacked:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.path)
        body = b'{"Detach": false, "Tty": false}'
        head = (
            f"POST /exec/{exec_id}/start HTTP/1.1\r\nHost: docker\r\n"
            "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(4096)
            if not chunk:
                sock.close()
                raise LiteError(0, b"the daemon closed the exec stream")
            received += chunk
        status_line, _, rest = received.partition(b"\r\n\r\n")
        status = int(status_line.split(b" ", 2)[1])
        if status not in (101, 200):
            sock.close()
            raise LiteError(status, rest)
        return _Hijacked(sock, rest)

    def exec_start(
        self, exec_id: str, socket: bool = False, stream: bool = False, demux: bool = False
    ) -> Any:
        hijacked = self._hijack(exec_id)
        if socket:
            return hijacked
        if stream:
            return self._stream(hijacked)
        out, err = bytearray(), bytearray()
        try:
            for kind, payload in frames(hijacked):
                (out if kind == 1 else err).extend(payload)
        finally:
            hijacked.close()
        return (bytes(out) or None, bytes(err) or None)

    @staticmethod
    def _stream(hijacked: _Hijacked) -> Iterator[tuple[bytes | None, bytes | None]]:
        try:
            for kind, payload in frames(hijacked):
                yield (payload, None) if kind == 1 else (None, payload)
        finally:
            hijacked.close()


class LiteClient:
    """Stands in for ``docker.DockerClient`` where only ``.api`` and ``close`` are used."""

    def __init__(self, path: str) -> None:
        self.api = LiteAPI(path)

    def close(self) -> None:
        return None
