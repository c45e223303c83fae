"""What the agent server and its clients say to each other over the Unix socket. Standard library.

The client connects and sends one JSON line::

    {"argv": ["ort.profile", "--request", "r.json", "--result", "o.json"], "cwd": "/abs/dir",
     "env": {...}, "umask": 18, "python": {"version": "...", "prefix": "..."}}

(``argv`` and ``cwd`` required; ``env`` replaces the job's environment; ``python`` lets the
server refuse another interpreter's client). A client on another file system adds ``"stage":
{"size": N, "fetch": "out"}`` (and ``"links": FOLDER``, its store of shared files the tar's
symbolic links may point into) and sends N bytes after the line: the tar of the job's working
directory (:mod:`.stage`). The client keeps the connection open: closing it, or dying, kills the
job; ``signal N`` lines (SIGINT or SIGTERM) pass a signal on to it.

The server answers ``\\0EDGEHUB-START <pid>\\n`` (written by the job's process first) or
``\\0EDGEHUB-REFUSED <reason>\\n`` (nothing ran: the client runs the command itself), then
everything the job writes to stdout and stderr as it comes (with a stage, then
``\\0EDGEHUB-FILES <size>\\n`` and the tar of the folder asked for), and last
``\\0EDGEHUB-EXIT <code>\\n`` once the job's process has exited. A connection that closes
before a start line means that nothing ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from typing import Any, Callable, Iterator, List

# the command line's main(argv) -> exit code, which a job runs
CliMain = Callable[[List[str]], int]

START = b"\0EDGEHUB-START "
REFUSED = b"\0EDGEHUB-REFUSED "
EXIT = b"\0EDGEHUB-EXIT "
FILES = b"\0EDGEHUB-FILES "

MAX_REQUEST_BYTES = 4 << 20
MAX_STAGE_BYTES = 1 << 30  # held in the server's memory until the job starts
MAX_LINE_BYTES = 4096
FORWARDED_SIGNALS = (int(signal.SIGINT), int(signal.SIGTERM))

# sun_path holds 108 bytes on Linux (104 on BSDs) including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 100


def marker(prefix: bytes, value: object) -> bytes:
    """One framing line: ``prefix`` + ``value`` (newlines and NULs removed) + newline."""
    text = str(value).replace("\n", " ").replace("\0", " ")
    return prefix + text.encode("utf-8", "replace") + b"\n"


def encode_request(argv: list[str]) -> bytes:
    """The request line to run ``argv`` as this process would: its cwd, environment, umask."""
    umask = os.umask(0)
    os.umask(umask)
    env = dict(os.environ)
    request = {"argv": argv, "cwd": os.getcwd(), "python": python_identity(), "env": env}
    return json.dumps({**request, "umask": umask}).encode("utf-8") + b"\n"


def decode_request(line: bytes) -> dict[str, Any]:
    """Parse and check one request line; raises ValueError saying what is wrong."""
    request = json.loads(line.decode("utf-8"))
    if not isinstance(request, dict):
        raise ValueError("the request must be a JSON object")
    argv = request.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError("'argv' must be a list of strings")
    cwd = request.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise ValueError("'cwd' must be an absolute path")
    env = request.get("env")
    if env is not None and (
        not isinstance(env, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise ValueError("'env' must map strings to strings")
    umask = request.get("umask")
    if umask is not None and (isinstance(umask, bool) or not isinstance(umask, int)):
        raise ValueError("'umask' must be an integer")
    stage = request.get("stage")
    if stage is not None:
        size = stage.get("size") if isinstance(stage, dict) else None
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_STAGE_BYTES:
            raise ValueError("'stage' must hold a 'size' in bytes (at most 1 GiB)")
        if not isinstance(stage.get("fetch", "out"), str):
            raise ValueError("'stage.fetch' must be a folder name")
        links = stage.get("links")
        if links is not None and (not isinstance(links, str) or not os.path.isabs(links)):
            raise ValueError("'stage.links' must be an absolute path")
    return request


def python_identity() -> dict[str, str]:
    """What makes two interpreters interchangeable for a job: version and installation."""
    import sys

    return {"version": sys.version, "prefix": sys.prefix}


@contextlib.contextmanager
def socket_address(path: str) -> Iterator[str]:
    """An address to bind or connect ``path`` with, also when the path is too long for sun_path.

    A long path is reached through its open directory (``/proc/self/fd/N/NAME``, Linux only).
    """
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH_BYTES:
        yield path
        return
    directory, name = os.path.split(path)
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        dir_fd = os.open(directory or ".", flags)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot open the socket's directory: {exc.strerror}") from exc
    try:
        address = f"/proc/self/fd/{dir_fd}/{name}"
        if len(os.fsencode(address)) > MAX_SOCKET_PATH_BYTES or not os.path.isdir(
            f"/proc/self/fd/{dir_fd}"
        ):
            raise OSError(f"socket path too long for a Unix socket: {path}")
        yield address
    finally:
        os.close(dir_fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to file descriptor ``fd`` (a pipe or socket may take it in parts)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[written:]
