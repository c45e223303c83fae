"""The shell lines an SSH runner sends: quoted commands, a pid prologue, process-group kill."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from edgehub.errors import SSHConnectionError
from edgehub.runners.ssh.config import SSHConfig

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class PidMarker:
    """Picks the prologue's ``edgehub-pid-<token>=<pid>`` line out of the stderr stream."""

    def __init__(self, token: str) -> None:
        self.prefix = f"edgehub-pid-{token}="
        self.pid: int | None = None
        self._pending = ""

    def filter(self, text: str) -> str:
        if self.pid is not None:
            return text
        self._pending += text
        kept: list[str] = []
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            value = line[len(self.prefix) :].strip()
            if line.startswith(self.prefix) and value.isdigit():
                self.pid = int(value)
                rest, self._pending = self._pending, ""
                return "".join(kept) + rest
            kept.append(line + "\n")
        return "".join(kept)

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return rest


# The lifeline: a watcher reads the channel's stdin (kept open by the client; nothing is sent on
# it) with the shell's own ``read``, no process of its own; when it ends — the client went away,
# sshd was killed, the link broke and sshd gave up — the watcher stops the whole process group.
# The command itself reads /dev/null. After the command the watcher is stopped and the shell
# exits with the command's status.
_WATCHED = (
    "exec 3<&0 </dev/null; (while read -r _ <&3; do :; done; kill -TERM -$$ 2>/dev/null) "
    ">/dev/null 2>&1 & w=$!; exec 3<&-; "
)
_UNWATCH = "kill $w 2>/dev/null; exit $s"  # $s: the command's status


def build_command(
    argv: Sequence[str],
    cwd: str | PurePath | None,
    env: Mapping[str, str] | None,
    marker: str | None = None,
    *,
    watched: bool = False,
    setup: str | None = None,
    finish: str | None = None,
) -> str:
    """The remote shell line for ``argv``: every word quoted, ``cd`` and ``env`` in front.

    ``watched``: the command runs under the stdin lifeline (see ``_WATCHED``); the channel's
    stdin must then stay open while it runs. ``setup``: a shell line of ours run first, which
    may read the start of stdin (to its exact size: the lifeline watches the rest); ``finish``:
    one run after a watched command, still watched (the command's status is kept)."""
    parts: list[str] = []
    if marker is not None:
        parts.append(f"printf '%s%s\\n' {shlex.quote(marker)} \"$$\" >&2; ")
    if setup is not None:
        parts.append(setup)
    if watched:
        parts.append(_WATCHED)
    if cwd is not None:
        parts.append(f"cd -- {_quote_path(str(cwd))} && ")
    parts.append("{ " if watched else "exec ")
    if env:
        for name in env:
            if not _ENV_NAME.match(name):
                raise ValueError(f"invalid environment variable name {name!r}")
        parts.append("env -- ")
        parts.extend(shlex.quote(f"{name}={value}") + " " for name, value in env.items())
    parts.append(" ".join(shlex.quote(str(word)) for word in argv))
    if watched:
        after = f"{finish}; " if finish else ""
        parts.append(" & c=$!; wait $c; }; s=$?; " + after + _UNWATCH)
    return "".join(parts)


def _quote_path(path: str) -> str:
    """Quote a remote path; a leading ``~`` or ``~/`` still means the login user's home."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:]) if path[2:] else '"$HOME"/'
    return shlex.quote(path)


def kill_script(pid: int) -> str:
    """Stop a remote process group: TERM, up to 3 s to exit, then KILL."""
    return (
        f"p={pid}; kill -TERM -$p 2>/dev/null || kill -TERM $p 2>/dev/null || exit 0; i=0; "
        "while [ $i -lt 30 ]; do "
        "kill -0 -$p 2>/dev/null || kill -0 $p 2>/dev/null || exit 0; sleep 0.1; i=$((i+1)); "
        "done; kill -KILL -$p 2>/dev/null; kill -KILL $p 2>/dev/null; exit 0"
    )


def start_command(
    channel: Any, command: str, config: SSHConfig, *, keep_stdin: bool = False
) -> None:
    """Start a shell line on a fresh channel with stdin closed (commands read EOF), or kept
    open (``keep_stdin``, for a watched command's lifeline)."""
    import paramiko

    try:
        channel.exec_command(command)
        if not keep_stdin:
            channel.shutdown_write()
    except (paramiko.SSHException, OSError, EOFError) as error:
        raise SSHConnectionError(
            f"cannot start a command on {config.address}: {error}; check the connection"
        ) from error
