"""`hub-tui --serve --port 0` started through its real entry point, with the port and token read
from the URL it prints; requests over plain sockets, so every header is exactly what a hostile
client would send."""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.tui.polling import wait_for

HUB_TUI = str(Path(sys.executable).with_name("hub-tui"))


@dataclass
class Served:
    process: subprocess.Popen[str]
    port: int = 0
    token: str = ""
    stderr: list[str] = field(default_factory=list)

    def children(self) -> list[int]:
        """The processes the server started (one per TUI session)."""
        found: list[int] = []
        for task in Path(f"/proc/{self.process.pid}/task").glob("*"):
            try:
                found += [int(pid) for pid in (task / "children").read_text().split()]
            except OSError:
                pass
        return found

    def send(self, path: str, headers: dict[str, str]) -> tuple[int, bytes, socket.socket]:
        """Send ``GET path`` with exactly ``headers``; the status, what came after the head, and
        the open connection."""
        connection = socket.create_connection(("127.0.0.1", self.port), timeout=20)
        head = [f"GET {path} HTTP/1.1", *(f"{name}: {value}" for name, value in headers.items())]
        connection.sendall(("\r\n".join(head) + "\r\n\r\n").encode("utf-8"))
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            if not chunk:
                break
            received += chunk
        status_line, _, rest = received.partition(b"\r\n")
        return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2], connection

    def get(self, path: str, **headers: str) -> tuple[int, str]:
        """A plain GET (``Host`` defaults to the printed one); the status and the body."""
        headers = {"Host": f"127.0.0.1:{self.port}", "Connection": "close", **headers}
        status, body, connection = self.send(path, headers)
        with connection:
            while chunk := connection.recv(65536):
                body += chunk
        return status, body.decode("utf-8", "replace")

    def upgrade(
        self, path: str, host: str | None = None, origin: str | None = None
    ) -> tuple[int, socket.socket]:
        """A WebSocket upgrade of ``path``; the status and the open connection."""
        headers = {
            "Host": host or f"127.0.0.1:{self.port}",
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
            "Sec-WebSocket-Version": "13",
        }
        if origin is not None:
            headers["Origin"] = origin
        status, _, connection = self.send(path, headers)
        return status, connection


def serve(project: Path) -> Iterator[Served]:
    """``hub-tui --serve --port 0`` in the project; its port and token read from the URL it
    prints. Stopped afterwards; no TUI process may outlive it."""
    process = subprocess.Popen(
        [HUB_TUI, "--serve", "--port", "0"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = Served(process)
    assert process.stderr is not None
    stream = process.stderr
    reader = threading.Thread(target=lambda: server.stderr.extend(stream), daemon=True)
    reader.start()

    def url_printed() -> bool:
        for line in server.stderr:
            if found := re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", line):
                server.port, server.token = int(found[1]), found[2]
                return True
        return False

    try:
        assert wait_for(url_printed, 60), server.stderr
        assert len(server.token) >= 40  # token_urlsafe(32)
        yield server
    finally:
        children = server.children()
        process.terminate()
        process.wait(timeout=30)
        reader.join(timeout=10)
    assert wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in children), 30)
