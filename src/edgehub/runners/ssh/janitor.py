"""The lifeline of a connection's files on the device: a work folder that ends with it.

On first use each connection starts a janitor on the device: a small ``sh`` script on a channel
of its own whose stdin stays open as long as the connection. It makes the connection's work
folder ``~/.cache/edgehub/work/<pid>-<start>-<token>`` (mode 0700; ``pid`` and ``start``: the
janitor's process id and start time, so anyone can tell whether its owner still lives), prints
its path (and whether the device's tar makes sparse archives, so that commands need not ask
each time), and waits for the end of stdin — which comes however ``hub`` ended: the connection
closed, the process was killed, sshd was killed, or the link broke and sshd gave up. Then it
stops the agent servers whose socket is in the folder (they also leave by themselves once their
socket is gone) and removes the folder. A new janitor first removes the folders (and stops the
servers) of janitors that are gone, never those of a live one, and prunes the device's caches
of content named by its hash (``~/.cache/edgehub/datasets``, ``~/.cache/edgehub/agent``): what no
run has used for `CACHE_KEEP_DAYS` days goes (a run that uses a cached dataset touches it), and
partial uploads left by a run that died go after a day. Without these a shared board's disk
fills a dataset and an agent version at a time.
"""

from __future__ import annotations

import contextlib
import secrets
from pathlib import PurePosixPath
from typing import Any

from edgehub.errors import SSHConnectionError
from edgehub.runners.archive import SPARSE_FLAG
from edgehub.runners.ssh.session import SSHSession
from edgehub.runners.ssh.shell import build_command

WORK_BASE = ".cache/edgehub/work"  # under the device user's home
CLOSE_WAIT_S = 10.0  # how long `close` waits for the folder to be gone
CACHE_KEEP_DAYS = 30  # a cached dataset or agent unused this long is removed
# $1: the token. st PID: the process's start time (field 22 of /proc/PID/stat; empty when it is
# gone, 0 without /proc). stop DIR: TERM to the processes serving a socket in DIR, up to 3 s
# for the sockets to go (servers remove theirs), then the folder goes.
_SCRIPT = r"""
trap '' HUP PIPE; umask 077
b="$HOME/.cache/edgehub/work"
mkdir -p "$b" && chmod 700 "$b" || exit 1
st() {
  if [ -r /proc/self/stat ]; then
    l=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    set -- ${l##*") "}; shift 19; echo "$1"
  else echo 0; fi
}
alive() {
  if [ -r /proc/self/stat ]; then [ "$(st "$1")" = "$2" ]; else kill -0 "$1" 2>/dev/null; fi
}
stop() {
  for q in /proc/[0-9]*; do
    if tr '\0' ' ' <"$q/cmdline" 2>/dev/null | grep -qF -- "--socket $1/"; then
      kill -TERM "${q#/proc/}" 2>/dev/null
    fi
  done
  i=0
  while [ $i -lt 30 ] && [ -n "$(find "$1" -type s 2>/dev/null)" ]; do
    sleep 0.1; i=$((i+1))
  done
  rm -rf -- "$1" 2>/dev/null || { sleep 0.5; rm -rf -- "$1"; }
}
d="$b/$$-$(st $$)-$1"
mkdir "$d" || exit 1
@SPARSE_FLAG@t=plain; [ -n "$S" ] && t=sparse
printf '%s\n%s\n' "$d" "$t"
exec >/dev/null 2>&1
for o in "$b"/*; do
  [ -d "$o" ] && [ "$o" != "$d" ] || continue
  n=${o##*/}; p=${n%%-*}; r=${n#*-}; s=${r%%-*}
  case "$p:$s" in *[!0-9:]*|:*|*:) continue;; esac
  alive "$p" "$s" || stop "$o"
done
for c in datasets agent; do
  [ -d "$HOME/.cache/edgehub/$c" ] || continue
  find "$HOME/.cache/edgehub/$c" -mindepth 1 -maxdepth 2 -name '*.edgehub-part' -mtime +0 \
    -exec rm -rf -- {} + 2>/dev/null
  find "$HOME/.cache/edgehub/$c" -mindepth 1 -maxdepth 1 -mtime +"$2" \
    -exec rm -rf -- {} + 2>/dev/null
done
cat >/dev/null
stop "$d"
""".replace("@SPARSE_FLAG@", SPARSE_FLAG)


class Janitor:
    """The janitor of one connection of ``session``; ``folder`` is its work folder."""

    def __init__(self, session: SSHSession) -> None:
        self.generation = session.generation
        argv = ["sh", "-c", _SCRIPT, "edgehub-janitor", secrets.token_hex(6), str(CACHE_KEEP_DAYS)]
        self._channel: Any = session.start(build_command(argv, None, None), keep_stdin=True)
        try:
            self._channel.settimeout(max(session.config.connect_timeout, 10.0))
            text = b""
            while text.count(b"\n") < 2 and len(text) < 4096:
                chunk = self._channel.recv(4096)
                if not chunk:
                    break
                text += chunk
        except BaseException as error:
            self._channel.close()
            if isinstance(error, (OSError, EOFError)):
                raise SSHConnectionError(
                    f"{session.label} did not set up a work folder ({error}); check the connection"
                ) from error
            raise
        path, _, tar = text.decode("utf-8", "replace").partition("\n")
        if not path.startswith("/") or tar.strip() not in ("sparse", "plain"):
            self._channel.close()
            raise SSHConnectionError(
                f"{session.label} could not make a work folder under ~/{WORK_BASE}; check that "
                "the home directory is writable and the login shell runs sh scripts"
            )
        self.folder = PurePosixPath(path)
        self.sparse_tar = tar.strip() == "sparse"  # the device's tar makes sparse archives

    @property
    def closed(self) -> bool:
        channel = self._channel
        return bool(channel.closed or channel.exit_status_ready())

    def close(self, wait: float = CLOSE_WAIT_S) -> None:
        """End the lifeline; wait up to ``wait`` seconds for the folder to be removed."""
        channel = self._channel
        try:
            with contextlib.suppress(Exception):  # a lost connection: the janitor cleans up alone
                if not channel.closed:
                    channel.shutdown_write()
                    if wait > 0:
                        channel.status_event.wait(wait)
        finally:
            channel.close()
