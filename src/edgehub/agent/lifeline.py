"""Tying a job's life to the process that asked for it, and telling its machine it is busy.

Two opt-in behaviours of an agent process that runs a command (here or on a resident server),
set by whoever starts it (e.g. the Docker runner for a job in a warm container), each in a
daemon thread:

``EDGEHUB_AGENT_WATCH_STDIN=1``
    The caller holds stdin open as long as it wants the job. At end of file the job stops: on a
    resident server its connection is shut down (the server kills the job, and stays up); here
    it ends as cancelled (SIGTERM, then exit 130 :data:`GRACE_S` seconds later).

``EDGEHUB_AGENT_HEARTBEAT_FILE=PATH``
    While the command runs, PATH is touched every :data:`HEARTBEAT_S` seconds, so that an idle
    timer counting from that file (a warm container's) sees the running job.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import TYPE_CHECKING

from .exit_codes import EXIT_CANCELLED

if TYPE_CHECKING:  # a job started here has no connection: socket is not imported for it
    import socket

WATCH_STDIN_ENV = "EDGEHUB_AGENT_WATCH_STDIN"
HEARTBEAT_ENV = "EDGEHUB_AGENT_HEARTBEAT_FILE"
LIFELINE_ENV = (WATCH_STDIN_ENV, HEARTBEAT_ENV)
HEARTBEAT_S = 1.0
GRACE_S = 2.0

_lock = threading.Lock()
_connection: socket.socket | None = None
_lost = threading.Event()


def start_from_env() -> None:
    """Start what the environment asks for (nothing when it asks for nothing)."""
    if os.environ.get(WATCH_STDIN_ENV) == "1":
        threading.Thread(target=_watch_stdin, name="edgehub-stdin", daemon=True).start()
    path = os.environ.get(HEARTBEAT_ENV)
    if path:
        touch(path)
        threading.Thread(target=_beat, args=(path,), name="edgehub-heartbeat", daemon=True).start()


def attach(conn: socket.socket | None) -> None:
    """The connection of the job on a resident server (None: the job runs here)."""
    global _connection
    with _lock:
        _connection = conn
    if conn is not None and _lost.is_set():
        _drop(conn)


def lost() -> bool:
    """Whether the caller has gone (stdin reached end of file)."""
    return _lost.is_set()


def touch(path: str) -> None:
    try:
        with open(path, "a"):
            pass
        os.utime(path, None)
    except OSError:
        pass


def _beat(path: str) -> None:
    while True:
        time.sleep(HEARTBEAT_S)
        touch(path)


def _watch_stdin() -> None:
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    _lost.set()
    with _lock:
        conn = _connection
    if conn is not None:
        _drop(conn)
        return
    try:
        os.kill(os.getpid(), signal.SIGTERM)
    except OSError:
        pass
    time.sleep(GRACE_S)
    os._exit(EXIT_CANCELLED)


def _drop(conn: socket.socket) -> None:
    """End the server's job: shut the connection, which the server takes as 'kill it'."""
    import socket  # loaded already: the connection is one

    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
