"""Start an agent server in the background, for the next ``--server PATH`` call. Best effort.

The running zipapp is copied next to the socket (``PATH.pyz``, unless it holds the same bytes)
and started as ``python PATH.pyz serve --socket PATH [--preload NS]`` in a new session, stdin
from /dev/null and messages appended to ``PATH.log``, so that it outlives this process; not
where the folder above the socket's is gone (its owner ended), nor when run from sources. Of two
servers started at once, one refuses to run (:mod:`.serve`).
"""

from __future__ import annotations

import os
import sys

from ..atomic import atomic_write
from ..lifeline import LIFELINE_ENV

MAX_LOG_BYTES = 1 << 20
# The markers of the job that starts the server (its kill marker, its owner, its lifeline):
# the server outlives that job and its owner, so neither a kill of the job, nor the reaping of a
# dead owner's jobs, nor the job's stdin closing may reach it.
SPAWN_DROPPED_ENV = ("EDGEHUB_EXEC_ID", "EDGEHUB_OWNER", *LIFELINE_ENV)


def running_archive() -> str | None:
    """The zipapp this module was loaded from (``.../agent.pyz/edgehub_agent/...``), if any."""
    here = os.path.abspath(__file__)
    parent = os.path.dirname(here)
    while parent and parent != os.path.dirname(parent):
        if os.path.isfile(parent):
            return parent
        parent = os.path.dirname(parent)
    return None


def copy_archive(source: str, target: str) -> None:
    with open(source, "rb") as fh:
        data = fh.read()
    try:
        with open(target, "rb") as fh:
            if fh.read() == data:
                return
    except OSError:
        pass
    atomic_write(target, data, new_mode=0o600, durable=False)  # beside its socket: scratch


def open_log(path: str) -> int:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        if os.path.getsize(path) > MAX_LOG_BYTES:
            flags |= os.O_TRUNC
    except OSError:
        pass
    return os.open(path, flags, 0o600)


def start_server(socket_path: str, namespace: str | None = None) -> bool:
    """Start a detached server for ``socket_path`` preloading the runtime ``namespace`` (none
    when None); whether one was launched."""
    archive = running_archive()
    if archive is None or not sys.executable:
        return False
    socket_path = os.path.abspath(socket_path)
    target = socket_path + ".pyz"
    preload = ["--preload", namespace] if namespace else []
    try:
        import subprocess

        folder = os.path.dirname(socket_path)
        if not os.path.isdir(folder):
            # the socket's folder is made, not the ones above it: where those are gone (an SSH
            # connection's work folder, removed when it ended) nobody is left to serve
            os.mkdir(folder, 0o700)
        if os.path.abspath(archive) != target:
            copy_archive(archive, target)
        log = open_log(socket_path + ".log")
        try:
            subprocess.Popen(
                [sys.executable, target, "serve", "--socket", socket_path, *preload],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd="/",
                # neither the spawning command's kill marker (stopping that job must spare us)
                # nor its lifeline (our stdin is /dev/null; jobs bring their own)
                env={k: v for k, v in os.environ.items() if k not in SPAWN_DROPPED_ENV},
                close_fds=True,
                start_new_session=True,
            )
        finally:
            os.close(log)
    except (OSError, ValueError):
        return False
    return True
