"""`LocalCommandRunner`: commands as subprocesses on this host."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from types import TracebackType

from edgehub.core.device.runner import CommandResult
from edgehub.errors import RunnerError
from edgehub.events import current_sink
from edgehub.runners.outcome import command_result, raise_for_outcome
from edgehub.runners.streaming import LineCollector, pump

__all__ = ["LocalCommandRunner"]


class LocalCommandRunner:
    """Runs argv lists with `subprocess` (no shell); ``put``/``get`` are file copies."""

    device_name: str | None = None

    def __init__(self) -> None:
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._cancelled: set[int] = set()

    def __enter__(self) -> LocalCommandRunner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cancel()

    def run(
        self,
        argv: Sequence[str],
        cwd: str | PurePath | None = None,
        *,
        hide: bool = False,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult:
        words = [str(word) for word in argv]
        if not words:
            raise ValueError("argv must name a command")
        sink = None if hide else current_sink()
        full_env = None if env is None else {**os.environ, **env}
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                words,
                cwd=None if cwd is None else str(cwd),
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError as error:
            raise RunnerError(
                f"command {words[0]!r} not found on this host; install it or fix the path"
            ) from error
        with self._lock:
            self._procs.add(proc)
        assert proc.stdout is not None and proc.stderr is not None
        out, err = LineCollector("stdout", sink), LineCollector("stderr", sink)
        readers = [pump(proc.stdout, out), pump(proc.stderr, err)]
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            proc.wait()
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        finally:
            for reader in readers:
                reader.join(timeout=5)
            with self._lock:
                self._procs.discard(proc)
                cancelled = proc.pid in self._cancelled
                self._cancelled.discard(proc.pid)
        result = command_result(words, proc.returncode, out, err, started)
        stopped = "timeout" if timed_out else "cancel" if cancelled else None
        return raise_for_outcome(result, stopped=stopped, timeout=timeout, check=check)

    def put(self, local: Path, remote: str | PurePath) -> None:
        _copy(Path(local), Path(str(remote)))

    def get(self, remote: str | PurePath, local: Path) -> None:
        _copy(Path(str(remote)), Path(local))

    def cancel(self) -> None:
        """Stop every command this runner has in flight (callable from any thread)."""
        with self._lock:
            procs = list(self._procs)
            self._cancelled.update(proc.pid for proc in procs)
        for proc in procs:
            _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _copy(source: Path, destination: Path) -> None:
    if not source.exists():
        raise RunnerError(f"cannot copy {source}: no such file or directory")
    if source.resolve() == destination.resolve():
        return
    destination.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, destination, dirs_exist_ok=True, symlinks=True)
    else:
        shutil.copy2(source, destination)
