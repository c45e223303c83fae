"""One exec that uploads a staged directory, runs a command in it, and brings back a folder.

The tar goes in on stdin, the command's output streams on stderr, and the tar of the folder
comes back on stdout: one round trip instead of put + run + get, which matters for short jobs.
"""

from __future__ import annotations

import io
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any

from edgehub.core.device.runner import CommandResult
from edgehub.errors import RunnerError
from edgehub.events import current_sink
from edgehub.runners.archive import pack, safe_extract
from edgehub.runners.docker_exec import EXEC_MARKER, Exec, exit_code
from edgehub.runners.docker_frames import frames, send_and_close_write
from edgehub.runners.docker_warm import TOUCH_WRAPPER
from edgehub.runners.outcome import raise_for_outcome
from edgehub.runners.streaming import LineCollector

__all__ = ["DockerExchange"]

STAGING_FAILED = 125
# $1 parent, $2 name of the staged directory, $3 folder to send back; the rest is the command.
_SCRIPT = (
    'p=$1; n=$2; f=$3; shift 3; mkdir -p -- "$p" && tar -x -f - -C "$p" && cd -- "$p/$n" '
    f'|| exit {STAGING_FAILED}; "$@" 1>&2; rc=$?; tar -c -f - -- "$f"; exit $rc'
)


def _collect(raw: Any, stdout: io.BytesIO, err: LineCollector, done: threading.Event) -> None:
    """Stdout bytes to a buffer, stderr lines to ``err`` (streamed), until the exec ends."""
    try:
        for kind, payload in frames(raw):
            if kind == 1:
                stdout.write(payload)
            else:
                err.feed_text(payload.decode("utf-8", "replace"))
    except OSError:
        return
    finally:
        err.close()
        done.set()


class DockerExchange:
    """``exchange`` of `DockerCommandRunner`, which provides the container and ``_kill``."""

    _client: Any
    _keep_warm: float | None
    _execs: set[Exec]
    _execs_lock: threading.Lock

    if TYPE_CHECKING:

        def _ensure_started(self) -> str: ...

        def _kill(self, handle: Exec) -> None: ...

        def _remote(self, path: str | PurePath) -> str: ...

    def exchange(
        self,
        stage: Path,
        remote: str | PurePath,
        argv: Sequence[str],
        *,
        fetch: str,
        local: Path,
        timeout: float | None = None,
        hide: bool = False,
    ) -> CommandResult:
        """Upload ``stage`` as ``remote``, run ``argv`` there, download ``remote/fetch`` to
        ``local``. Returns the command's result (its exit code is not checked)."""
        words = [str(w) for w in argv]
        target = PurePosixPath(self._remote(remote))
        container_id = self._ensure_started()
        api = self._client.api
        command = ["sh", "-c", TOUCH_WRAPPER, "edgehub", *words] if self._keep_warm else words
        script = ["sh", "-c", _SCRIPT, "edgehub", str(target.parent), target.name, fetch]
        marker = f"{EXEC_MARKER}={uuid.uuid4().hex}"
        started = time.monotonic()
        created = api.exec_create(
            container_id, [*script, *command], stdin=True, environment=[marker]
        )
        handle = Exec(str(created["Id"]), marker)
        sock = api.exec_start(handle.exec_id, socket=True)
        raw = getattr(sock, "_sock", sock)
        stdout, err = io.BytesIO(), LineCollector("stderr", None if hide else current_sink())
        done = threading.Event()
        reader = threading.Thread(target=_collect, args=(raw, stdout, err, done), daemon=True)
        reader.start()
        with self._execs_lock:
            self._execs.add(handle)
        try:
            send_and_close_write(raw, pack(stage, arcname=target.name))
            if not done.wait(timeout):
                handle.stopped = handle.stopped or "timeout"
                self._kill(handle)
                done.wait(10)
        except BaseException:
            handle.stopped = handle.stopped or "cancel"
            self._kill(handle)
            raise
        finally:
            sock.close()
            reader.join(timeout=5)
            with self._execs_lock:
                self._execs.discard(handle)
        code = exit_code(self._client, handle.exec_id)
        result = CommandResult(tuple(words), code, "", err.text, time.monotonic() - started)
        raise_for_outcome(result, stopped=handle.stopped, timeout=timeout, check=False)
        if code == STAGING_FAILED:
            raise RunnerError(f"cannot stage files in {target}: {err.text.strip() or 'no tar?'}")
        self._unpack(stdout.getvalue(), fetch, local)
        return result

    @staticmethod
    def _unpack(data: bytes, fetch: str, local: Path) -> None:
        if not data:
            return  # nothing came back (e.g. the command made no such folder)
        local.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".edgehub-fetch-", dir=local.parent))
        try:
            safe_extract(data, scratch)
            if local.exists():
                shutil.rmtree(local)
            (scratch / fetch).replace(local)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
