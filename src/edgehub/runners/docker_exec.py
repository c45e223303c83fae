"""Commands in a container through Docker's exec API: output, exit codes, and stopping them.

Each exec carries a marker in its environment, so a second exec can find and kill every
process it started, with their process groups.
"""

from __future__ import annotations

import codecs
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from edgehub.runners.streaming import LineCollector

__all__ = [
    "EXEC_MARKER",
    "KILL_SCRIPT",
    "OCI_FAILURE",
    "Exec",
    "exec_quiet",
    "exit_code",
    "explain",
    "read_demuxed",
    "wait_stream",
]

EXEC_MARKER = "EDGEHUB_EXEC_ID"

# Kills every process whose environment carries the exec's marker, with its process group. A
# second exec runs it as the container's user (root there may not read other users' environ),
# so it works on a remote daemon too.
KILL_SCRIPT = r"""
for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [ "$pid" = "$$" ] && continue
    if grep -qzxF "$1" "$dir/environ" 2>/dev/null; then
        kill -KILL -- "-$pid" 2>/dev/null
        kill -KILL "$pid" 2>/dev/null
    fi
done
exit 0
"""

OCI_FAILURE = "OCI runtime exec failed:"


class Exec:
    """One command in flight: its exec id, marker, and why it was stopped (if it was)."""

    def __init__(self, exec_id: str, marker: str) -> None:
        self.exec_id = exec_id
        self.marker = marker
        self.stopped: str | None = None  # "timeout" or "cancel"


def exit_code(client: Any, exec_id: str) -> int:
    """An exec's exit code; the daemon may record it a moment after the stream ends."""
    for _ in range(100):
        info = client.api.exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        time.sleep(0.02)
    return -1


def exec_quiet(
    client: Any, container_id: str, argv: Sequence[str], user: str = ""
) -> tuple[int, str, str]:
    """Run a short helper command without streaming; returns (code, stdout, stderr)."""
    created = client.api.exec_create(container_id, list(argv), user=user)
    output = client.api.exec_start(created["Id"], demux=True)
    stdout, stderr = output if isinstance(output, tuple) else (output, None)
    return (
        exit_code(client, str(created["Id"])),
        (stdout or b"").decode("utf-8", "replace"),
        (stderr or b"").decode("utf-8", "replace"),
    )


def read_demuxed(
    stream: Iterable[tuple[bytes | None, bytes | None]],
    out: LineCollector,
    err: LineCollector,
    done: threading.Event,
) -> None:
    decoders = {
        "out": codecs.getincrementaldecoder("utf-8")("replace"),
        "err": codecs.getincrementaldecoder("utf-8")("replace"),
    }
    try:
        for stdout, stderr in stream:
            if stdout:
                out.feed_text(decoders["out"].decode(stdout))
            if stderr:
                err.feed_text(decoders["err"].decode(stderr))
    except Exception:  # a closed stream ends the command's output
        pass
    finally:
        out.feed_text(decoders["out"].decode(b"", final=True))
        err.feed_text(decoders["err"].decode(b"", final=True))
        out.close()
        err.close()
        done.set()


def wait_stream(done: threading.Event, stream: Any, handle: Exec) -> None:
    """Wait for the output to end; a stopped command's stream is closed if it lingers."""
    while not done.wait(0.5):
        if handle.stopped is not None:
            if done.wait(5):
                return
            stream.close()
            done.wait(5)
            return


def explain(error: BaseException) -> str:
    text = str(getattr(error, "explanation", None) or error)
    return " ".join(text.split())
