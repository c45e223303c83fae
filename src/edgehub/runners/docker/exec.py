"""Commands in a container through Docker's exec API, as `Process` objects for the runner base.

Every exec carries two markers in its environment: a random ``EDGEHUB_EXEC_ID`` so a second
exec can find and kill every process it started (with their process groups), and the owner
marker (``docker/owner.py``) so a later process can stop the jobs of a dead one. An exec may
keep its stdin attached for its whole life: when the process that asked for it dies, the
daemon closes that stdin and the job reads end of file.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence

from edgehub.ids import uuid4_hex
from edgehub.runners.docker.client import DockerAPIError, DockerClient, ExecSocket, ExecSpec
from edgehub.runners.docker.frames import output
from edgehub.runners.docker.owner import owner_marker

EXEC_MARKER = "EDGEHUB_EXEC_ID"
OCI_FAILURE = "OCI runtime exec failed:"
_KILL_WAIT_S = 10.0
KEPT_STDERR = 4096  # of a helper command's complaints, the last bytes are kept

# Kills every process whose environment holds one of the given lines ($@), with its process
# group. A second exec runs it as the container's user (root there may not read other users'
# environ), so it works on a remote daemon too.
KILL_SCRIPT = r"""
for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [ "$pid" = "$$" ] && continue
    for line in "$@"; do
        if grep -qzxF -- "$line" "$dir/environ" 2>/dev/null; then
            kill -KILL -- "-$pid" 2>/dev/null
            kill -KILL "$pid" 2>/dev/null
        fi
    done
done
exit 0
"""


def exit_code(client: DockerClient, exec_id: str) -> int:
    """An exec's exit code; the daemon may record it a moment after the stream ends."""
    for _ in range(100):
        info = client.exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        time.sleep(0.02)
    return -1


def send_stdin(sock: ExecSocket, data: bytes | None, *, close: bool = True) -> None:
    """Send ``data`` on an attached stdin, then (``close``) end it; a command that stops
    reading (e.g. tar is missing) is no error here: its exit status says why."""
    with contextlib.suppress(OSError):
        if data is not None:
            sock.sendall(data)
        if close:
            sock.close_write()


class AttachedProcess:
    """The `~edgehub.runners.base.Process` calls of a command on an attached stream."""

    _sock: ExecSocket

    def read(self) -> Iterator[tuple[str, bytes]]:
        return output(self._sock)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()


def exec_quiet(
    client: DockerClient,
    container: str,
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    on_stdout: Callable[[bytes], None] | None = None,
) -> tuple[int, str, str]:
    """Run a helper command to its end without streaming; (code, stdout, the last
    `KEPT_STDERR` bytes of stderr). ``on_stdout`` takes the stdout as it comes instead (its
    stdout is then "")."""
    exec_id = client.exec_create(container, ExecSpec(argv, stdin=stdin is not None))
    sock = client.exec_start(exec_id)
    out, err = bytearray(), b""
    try:
        if stdin is not None:
            send_stdin(sock, stdin)
        for kind, payload in output(sock):
            if kind == "stderr":
                err = (err + payload)[-KEPT_STDERR:]
            elif on_stdout is None:
                out += payload
            else:
                on_stdout(payload)
    finally:
        sock.close()
    return (
        exit_code(client, exec_id),
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
    )


class ExecProcess(AttachedProcess):
    """One command exec'd into ``container``.

    ``stdin`` is sent first; with ``hold_stdin`` the stdin stays open (and unwritten) until the
    command ends, so the command reads end of file only if this process goes away.
    """

    def __init__(
        self,
        client: DockerClient,
        container: str,
        argv: Sequence[str],
        *,
        env: Sequence[str] = (),
        workdir: str | None = None,
        stdin: bytes | None = None,
        hold_stdin: bool = False,
    ) -> None:
        self._client = client
        self._container = container
        self.marker = f"{EXEC_MARKER}={uuid4_hex()}"
        attach = stdin is not None or hold_stdin
        environment = [*env, self.marker, owner_marker()]
        self.exec_id = client.exec_create(container, ExecSpec(argv, attach, environment, workdir))
        self._sock = client.exec_start(self.exec_id)
        send_stdin(self._sock, stdin, close=attach and not hold_stdin)

    def kill(self) -> None:
        """Kill the exec's processes (found by their marker) until the exec has ended."""
        argv = ["sh", "-c", KILL_SCRIPT, "edgehub-kill", self.marker]
        deadline = time.monotonic() + _KILL_WAIT_S
        while time.monotonic() < deadline:
            try:
                exec_quiet(self._client, self._container, argv)
                if not self._client.exec_inspect(self.exec_id).get("Running"):
                    return
            except (DockerAPIError, OSError):  # the container may be going away
                return
            time.sleep(0.05)

    def wait(self) -> int:
        try:
            return exit_code(self._client, self.exec_id)
        except (DockerAPIError, OSError):
            return -1
