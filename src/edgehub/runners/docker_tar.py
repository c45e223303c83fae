"""Tar streams through ``docker exec`` (stdin in, stdout out): the fast way to move files.

Docker's archive API re-executes the daemon for every call (~0.2 s each); an exec of ``tar``
costs a few tens of milliseconds, extracts as the container's own user, and, being plain API
calls, works on a remote daemon too. Callers fall back to the archive API when the image has
no ``tar`` (exit 126/127).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Any

from edgehub.runners.docker_exec import exit_code
from edgehub.runners.docker_frames import frames, send_and_close_write

__all__ = ["NO_TAR", "exec_read", "exec_write"]

NO_TAR = (126, 127)  # exit codes of a shell that cannot find or run the command
_PUT_SCRIPT = 'mkdir -p -- "$1" && exec tar -x -f - -C "$1"'


def exec_write(client: Any, container_id: str, directory: str, data: bytes) -> tuple[int, str]:
    """Extract the tar ``data`` into ``directory`` (created if missing); returns (code, stderr)."""
    argv = ["sh", "-c", _PUT_SCRIPT, "edgehub-put", directory]
    created = client.api.exec_create(container_id, argv, stdin=True, stdout=True, stderr=True)
    exec_id = str(created["Id"])
    sock = client.api.exec_start(exec_id, socket=True)
    raw = getattr(sock, "_sock", sock)
    errors = bytearray()
    try:
        send_and_close_write(raw, data)
        for kind, payload in frames(raw):
            if kind == 2:
                errors += payload
    finally:
        sock.close()
    return exit_code(client, exec_id), errors.decode("utf-8", "replace")


def exec_read(
    client: Any, container_id: str, parent: str, names: Sequence[str], target: IO[bytes]
) -> tuple[int, str]:
    """Write a tar of ``parent/<names>`` to ``target``; returns (code, stderr)."""
    argv = ["tar", "-c", "-f", "-", "-C", parent, "--", *names]
    created = client.api.exec_create(container_id, argv, stdout=True, stderr=True)
    exec_id = str(created["Id"])
    errors = bytearray()
    for stdout, stderr in client.api.exec_start(exec_id, stream=True, demux=True):
        if stdout:
            target.write(stdout)
        if stderr:
            errors += stderr
    return exit_code(client, exec_id), errors.decode("utf-8", "replace")
