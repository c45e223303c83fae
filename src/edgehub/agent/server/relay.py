"""``edgehub-agent relay --socket PATH [--preload NS]``: jobs for the agent server, over stdin.

A client that reaches the device only through a byte stream (an SSH channel) keeps one relay
running and sends it, one job after the other, the bytes a job's connection carries
(:mod:`.wire`: the request line, then the ``stage.size`` bytes of its files). For each job the
relay connects to the server at PATH, sends the job and copies the answer to stdout in frames (a
kind byte, a 4-byte big-endian length, that many bytes):

- ``D``: bytes of the server's answer, unchanged;
- ``E``: the job is over (the server closed the connection);
- ``N``: no server answered (nothing ran); the relay starts one for the next jobs.

Bytes on stdin while a job runs go to its connection (``signal N`` lines). When stdin ends (the
client is gone) the relay closes the job's connection, so the server kills the job, and exits.
Standard library only: the relay starts once per connection.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import struct
import time

from ..argv import ArgvProblem, read_options
from .client import connect
from .wire import MAX_REQUEST_BYTES, MAX_STAGE_BYTES, write_all

RELAY_USAGE = "usage: edgehub-agent relay --socket PATH [--preload NAMESPACE]"
SERVER_START_S = 30.0  # a server this relay started may take that long to answer
HEADER = struct.Struct(">cI")
DATA, END, NOT_TAKEN = b"D", b"E", b"N"


class Gone(Exception):
    """stdin ended: the client is gone."""


class Input:
    """stdin read with ``os.read`` (so that select on it tells the truth), with a buffer."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
        self.buffer = b""

    def fill(self) -> None:
        data = os.read(self.fd, 65536)
        if not data:
            raise Gone
        self.buffer += data

    def line(self, limit: int) -> bytes:
        while b"\n" not in self.buffer:
            if len(self.buffer) > limit:
                raise ValueError("request line too long")
            self.fill()
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"

    def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self.fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


def write_frame(kind: bytes, payload: bytes = b"") -> None:
    write_all(1, HEADER.pack(kind, len(payload)) + payload)


def stage_size(line: bytes) -> int:
    request = json.loads(line.decode("utf-8"))
    stage = request.get("stage") if isinstance(request, dict) else None
    size = stage.get("size", 0) if isinstance(stage, dict) else 0
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_STAGE_BYTES:
        raise ValueError("'stage.size' must be a size in bytes")
    return size


class Relay:
    def __init__(self, path: str, namespace: str | None) -> None:
        self.path = path
        self.namespace = namespace
        self.spawned: float | None = None  # when this relay last started a server

    def server(self) -> socket.socket | None:
        """A connection to the server; None when none answers (one is then started for the
        next job, at most once per ``SERVER_START_S``: a second server refuses to run)."""
        conn = connect(self.path)
        now = time.monotonic()
        if conn is None and (self.spawned is None or now - self.spawned >= SERVER_START_S):
            from .spawn import start_server

            self.spawned = now
            start_server(self.path, self.namespace)
        return conn

    def job(self, stdin: Input) -> None:
        line = stdin.line(MAX_REQUEST_BYTES)
        try:
            files = stdin.exactly(stage_size(line))
        except ValueError as exc:
            write_frame(NOT_TAKEN, str(exc).encode())
            raise Gone from exc  # the stream cannot be followed any more
        conn = self.server()
        if conn is None:
            write_frame(NOT_TAKEN, f"no agent server answers on {self.path}".encode())
            return
        try:
            conn.settimeout(None)
            conn.sendall(line + files)
            self.pump(conn, stdin)
        except OSError:
            pass  # the server went away: the answer ends here
        finally:
            conn.close()  # before anything else: a job whose client is gone is killed
        write_frame(END)

    @staticmethod
    def pump(conn: socket.socket, stdin: Input) -> None:
        """Copy the server's answer to stdout until it closes; stdin's bytes go to the job."""
        with selectors.DefaultSelector() as selector:
            selector.register(conn, selectors.EVENT_READ, "server")
            selector.register(stdin.fd, selectors.EVENT_READ, "client")
            while True:
                for key, _ in selector.select():
                    if key.data == "client":
                        stdin.fill()  # Gone when the client closed the channel
                        conn.sendall(stdin.buffer)
                        stdin.buffer = b""
                        continue
                    data = conn.recv(65536)
                    if not data:
                        return
                    write_frame(DATA, data)


def relay_main(argv: list[str]) -> int:
    """``relay --socket PATH [--preload NS]``; returns when stdin ends."""
    try:
        words, values = read_options(argv, ("--socket", "--preload"))
    except ArgvProblem:
        words, values = [], {}
    if words or not values.get("--socket"):
        os.write(2, (RELAY_USAGE + "\n").encode())
        return 2
    relay = Relay(os.path.abspath(values["--socket"]), values.get("--preload") or None)
    stdin = Input()
    try:
        while True:
            relay.job(stdin)
    except (Gone, BrokenPipeError):
        return 0
