"""`LiteClient`: the Docker Engine API over the local unix socket, with the standard library.

Importing the docker SDK (requests, urllib3), and even `http.client` (ssl, email), costs more
than most edgehub commands' handful of calls (`benchmarks/bench_docker_remote.py` (a): a fresh
interpreter importing each client and making its first call); this client makes every call of
the `DockerClient` protocol with its own small HTTP/1.1 exchange (one connection per call,
``Connection: close``; bodies by length, in chunks or up to the close), and attaches to execs by
taking over the connection (HTTP upgrade), as the Docker CLI does. It serves only a plain local
daemon (`local_socket`); `connect` hands anything else to the SDK.
"""

from __future__ import annotations

import base64
import json
import os
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlencode

from edgehub.runners.docker.client import (
    DockerAPIError,
    DockerNotFound,
    ExecSocket,
    ExecSpec,
    SocketStream,
    Strings,
    build_context,
    docker_host,
    json_messages,
)

_TIMEOUT = 60.0


def local_socket(address: str | None = None) -> str | None:
    """The socket path of the daemon at ``address`` (default: ``$DOCKER_HOST``'s), or ``None``
    when the SDK must decide (remote hosts, contexts, TLS) or there is no socket."""
    host = address or docker_host() or ""
    if not address and (os.environ.get("DOCKER_CONTEXT") or os.environ.get("DOCKER_TLS_VERIFY")):
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


class _Response:
    """The response to one request on its own connection: ``status``, ``headers`` (lower-case
    names), and the body through `read`."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""
        while b"\r\n\r\n" not in self._buffer:
            if not self._fill():
                raise DockerAPIError(0, "the Docker daemon closed the connection without answering")
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise DockerAPIError(0, f"not an HTTP answer from the Docker daemon: {lines[0][:80]!r}")
        self.status = int(parts[1])
        self.headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        length = self.headers.get("content-length")
        self._left: int | None = None if self._chunked or length is None else int(length)
        self._chunk_left = 0
        self._done = self.status in (204, 304)

    def _fill(self) -> bool:
        data = self._sock.recv(65536)
        self._buffer += data
        return bool(data)

    def _take(self, limit: int, *, until_close: bool = False) -> bytes:
        if not self._buffer and not self._fill():
            if until_close:
                return b""
            raise DockerAPIError(0, "the Docker daemon closed the connection mid-answer")
        data, self._buffer = self._buffer[:limit], self._buffer[limit:]
        return data

    def _line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            if not self._fill():
                raise DockerAPIError(0, "the Docker daemon closed the connection mid-answer")
        line, _, self._buffer = self._buffer.partition(b"\r\n")
        return line

    def _some(self, limit: int) -> bytes:
        """Up to ``limit`` bytes of the body (at least one), or b"" at its end."""
        if self._done:
            return b""
        if self._chunked:
            if self._chunk_left == 0:
                size = int(self._line().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self._line():  # trailers, up to the empty line
                        pass
                    self._done = True
                    return b""
                self._chunk_left = size
            data = self._take(min(limit, self._chunk_left))
            self._chunk_left -= len(data)
            if self._chunk_left == 0:
                self._line()  # the CRLF closing the chunk
            return data
        if self._left is not None:
            if self._left == 0:
                self._done = True
                return b""
            data = self._take(min(limit, self._left))
            self._left -= len(data)
            return data
        data = self._take(limit, until_close=True)
        self._done = not data
        return data

    def read(self, size: int = -1) -> bytes:
        """The rest of the body, or (``size`` >= 0) up to ``size`` bytes of it; b"" at its end."""
        if size >= 0:
            return self._some(size) if size else b""
        parts = []
        while chunk := self._some(1 << 20):
            parts.append(chunk)
        return b"".join(parts)

    def take_over(self) -> tuple[socket.socket, bytes]:
        """The connection itself, and what was read past the head (an upgraded stream)."""
        pending, self._buffer = self._buffer, b""
        return self._sock, pending

    def close(self) -> None:
        self._sock.close()


class LiteClient:
    """A `DockerClient` for the daemon listening on the unix socket ``path``."""

    local = True

    def __init__(self, path: str, timeout: float = _TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout
        # what a socket nobody answers on is raised as, for a client not pinged first
        # (`client.connect` without ``ping``); None: the OSError itself
        self.unreachable: Callable[[OSError], Exception] | None = None

    def _connect(self, timeout: float) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(self.path)
        except BaseException:
            sock.close()
            raise
        return sock

    def _open(
        self,
        method: str,
        url: str,
        body: bytes | IO[bytes] | None,
        content_type: str,
        timeout: float | None = None,
        *,
        upgrade: bool = False,
        forever: bool = False,
    ) -> _Response:
        """Send a request (a body in memory, or a file sent from where it stands to its end);
        the caller reads the response and closes it (or, ``upgrade``: takes the connection
        over as the exec's raw stream). ``forever``: no time limit at all."""
        try:
            sock = self._connect(self.timeout if timeout is None else timeout)
        except OSError as error:
            if self.unreachable is None:
                raise
            raise self.unreachable(error) from error
        try:
            connection = "Upgrade\r\nUpgrade: tcp" if upgrade else "close"
            head = f"{method} {url} HTTP/1.1\r\nHost: docker\r\nConnection: {connection}\r\n"
            if body is not None:
                size = len(body) if isinstance(body, bytes) else _left_in(body)
                head += f"Content-Type: {content_type}\r\nContent-Length: {size}\r\n"
            elif method in ("POST", "PUT"):
                head += "Content-Length: 0\r\n"
            sock.sendall((head + "\r\n").encode("latin-1"))
            if isinstance(body, bytes):
                sock.sendall(body)
            elif body is not None:
                while block := body.read(1 << 20):
                    sock.sendall(block)
            if forever:
                sock.settimeout(None)
            response = _Response(sock)
            if response.status >= 300:
                raise _error(response.status, response.read())
        except BaseException:
            sock.close()
            raise
        return response

    def _call(self, method: str, url: str, body: Any = None, *, forever: bool = False) -> Any:
        payload = None if body is None else json.dumps(body).encode()
        response = self._open(method, url, payload, "application/json", forever=forever)
        with closing(response):
            data = response.read()
        return json.loads(data) if data else {}

    def ping(self) -> bool:
        response = self._open("GET", "/_ping", None, "", timeout=min(self.timeout, 5.0))
        with closing(response):
            if response.status != 200:
                raise _error(response.status, response.read())
            return True

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

    def attach_container(self, container: str) -> ExecSocket:
        url = f"/containers/{quote(container, safe='')}/attach?stream=1&stdin=1&stdout=1&stderr=1"
        return self._upgrade(url, None)

    def wait_container(self, container: str) -> int:
        url = f"/containers/{quote(container, safe='')}/wait"
        return int(self._call("POST", url, forever=True)["StatusCode"])

    def kill_container(self, container: str) -> None:
        self._call("POST", f"/containers/{quote(container, safe='')}/kill")

    def exec_create(self, container: str, spec: ExecSpec) -> str:
        body: dict[str, Any] = {
            "AttachStdin": spec.stdin,
            "AttachStdout": True,
            "AttachStderr": True,
            "Tty": False,
            "Cmd": list(spec.cmd),
            "Env": list(spec.environment),
        }
        if spec.workdir:
            body["WorkingDir"] = spec.workdir
        url = f"/containers/{quote(container, safe='')}/exec"
        return str(self._call("POST", url, body)["Id"])

    def exec_start(self, exec_id: str) -> ExecSocket:
        return self._upgrade(f"/exec/{exec_id}/start", b'{"Detach": false, "Tty": false}')

    def _upgrade(self, url: str, body: bytes | None) -> ExecSocket:
        """POST ``url`` and take the connection over as a raw stream."""
        response = self._open("POST", url, body, "application/json", upgrade=True)
        return SocketStream(*response.take_over())

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/exec/{exec_id}/json")
        return result

    def put_archive(self, container: str, path: str, data: bytes) -> None:
        query = urlencode({"path": path})
        url = f"/containers/{quote(container, safe='')}/archive?{query}"
        response = self._open("PUT", url, data, "application/x-tar")
        with closing(response):
            response.read()

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        query = urlencode({"path": path})
        url = f"/containers/{quote(container, safe='')}/archive?{query}"
        response = self._open("GET", url, None, "")
        header = response.headers.get("x-docker-container-path-stat", "")
        stat: dict[str, Any] = json.loads(base64.b64decode(header)) if header else {}

        def chunks() -> Iterator[bytes]:
            with closing(response):
                while block := response.read(1 << 20):
                    yield block

        return chunks(), stat

    def build(
        self, context: Path, tag: str, *, buildargs: Strings = None, labels: Strings = None
    ) -> Iterator[dict[str, Any]]:
        params = {"t": tag, "rm": "1", "forcerm": "1", "pull": "0"}
        if buildargs:
            params["buildargs"] = json.dumps(dict(buildargs))
        if labels:
            params["labels"] = json.dumps(dict(labels))
        with build_context(context) as tar:
            response = self._open(
                "POST", f"/build?{urlencode(params)}", tar, "application/x-tar", forever=True
            )
        with closing(response):
            yield from json_messages(iter(lambda: response.read(1 << 16), b""))

    def close(self) -> None:
        return None


def _left_in(body: IO[bytes]) -> int:
    """The bytes of a file from where it stands to its end."""
    here = body.tell()
    end = body.seek(0, os.SEEK_END)
    body.seek(here)
    return end - here
