"""The runner base: `run`, timeouts, `cancel`, line streaming and outcome, for every transport.

A transport (a subprocess, a container exec, an SSH channel, a test fake) supplies one thing:
`start`, which launches a command and returns a `Process` — its output as it arrives, a way to
kill it, its exit status. `BaseRunner` does the rest the same way for all of them: it tracks the
commands in flight, streams their lines to the current event sink, stops them on timeout, on
`cancel` (from any thread) or on any exception (Ctrl-C included), and turns the outcome into a
`CommandResult` or the matching error. `cancel_all` closes every open runner, for signal handlers
and interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Protocol, TypeVar

from edgehub.errors import CommandTimeout
from edgehub.events import current_sink
from edgehub.runners.outcome import raise_for_outcome
from edgehub.runners.protocol import CommandResult
from edgehub.runners.streaming import LineCollector

STOP_GRACE_S = 10.0  # how long a killed command's output may take to end
_Self = TypeVar("_Self", bound="BaseRunner")


class Process(Protocol):
    """One started command, as its transport sees it."""

    def read(self) -> Iterator[tuple[str, bytes]]:
        """``("stdout" | "stderr", chunk)`` in arrival order, until both streams end."""
        ...

    def kill(self) -> None:
        """Stop the command and everything it started; idempotent, callable from any thread."""
        ...

    def wait(self) -> int:
        """The exit status, once `read` has ended (-1 when the transport cannot tell)."""
        ...

    def close(self) -> None:
        """Release the transport's handles (ends a `read` that still blocks)."""
        ...


class _Job:
    """One command in flight: its process and why it was stopped (if it was)."""

    def __init__(self) -> None:
        self.process: Process | None = None
        self.stopped: str | None = None  # "timeout" or "cancel"
        self._lock = threading.RLock()

    def stop(self, reason: str) -> None:
        with self._lock:
            self.stopped = self.stopped or reason
            process = self.process
        if process is not None:
            process.kill()

    def attach(self, process: Process) -> None:
        with self._lock:
            self.process = process
            stopped = self.stopped
        if stopped is not None:
            process.kill()  # cancelled while it was starting


_OPEN: weakref.WeakSet[BaseRunner] = weakref.WeakSet()
_OPEN_LOCK = threading.RLock()


def open_runners() -> list[BaseRunner]:
    """The runners of this process that are not closed."""
    with _OPEN_LOCK:
        return list(_OPEN)


def cancel_all() -> None:
    """Close every open runner: commands in flight are stopped, containers that are not warm
    are removed. Safe from a signal handler on the main thread, and from any other thread."""
    for runner in open_runners():
        with contextlib.suppress(Exception):  # one failing runner must not keep others alive
            runner.close()


atexit.register(cancel_all)


class BaseRunner(ABC):
    """A `CommandRunner` built on a transport's `start`; subclasses add ``put``/``get``."""

    device_name: str | None = None
    #: Appended to messages to name the machine (" on HOST").
    where: str = ""

    def __init__(self) -> None:
        self._jobs: set[_Job] = set()
        self._jobs_lock = threading.RLock()
        with _OPEN_LOCK:
            _OPEN.add(self)

    # -- what a transport provides --------------------------------------------------------------

    @abstractmethod
    def start(
        self, argv: list[str], cwd: str | PurePath | None, env: Mapping[str, str] | None
    ) -> Process:
        """Launch ``argv``; raise `~edgehub.errors.RunnerError` when it cannot start."""

    def check_result(  # noqa: B027 - optional hook
        self, argv: list[str], cwd: str | PurePath | None, result: CommandResult
    ) -> None:
        """Raise a transport-specific error for a command that ended by itself (a command the
        container could not start, a lost connection); the default accepts every result."""

    def limit(self, timeout: float | None) -> float | None:
        """The time limit of a command whose caller gave ``timeout`` (None: no limit); a
        transport may set one of its own where the caller gives none."""
        return timeout

    def timed_out(self, error: CommandTimeout, timeout: float | None) -> CommandTimeout:
        """``error``, raised for a command whose caller gave ``timeout``; a transport may say
        where its own limit comes from."""
        return error

    def release(self) -> None:  # noqa: B027 - optional hook
        """Free what the transport holds (a connection, a container); called by `close`."""

    @abstractmethod
    def put(self, local: Path, remote: str | PurePath) -> None: ...

    @abstractmethod
    def get(self, remote: str | PurePath, local: Path) -> None: ...

    # -- the protocol ---------------------------------------------------------------------------

    def __enter__(self: _Self) -> _Self:
        with _OPEN_LOCK:
            _OPEN.add(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the commands in flight and release the transport (idempotent)."""
        self.cancel()
        with _OPEN_LOCK:
            _OPEN.discard(self)
        self.release()

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
        with _OPEN_LOCK:
            _OPEN.add(self)
        out = LineCollector("stdout", None if hide else current_sink())
        err = LineCollector("stderr", out.sink)
        started = time.monotonic()
        limit = self.limit(timeout)
        returncode, stopped = self.execute(
            lambda: self.start(words, cwd, env), out.feed_bytes, err.feed_bytes, limit
        )
        out.close()
        err.close()
        result = CommandResult(
            tuple(words), returncode, out.text, err.text, time.monotonic() - started
        )
        if stopped is None:
            self.check_result(words, cwd, result)
        try:
            return raise_for_outcome(
                result, stopped=stopped, timeout=limit, check=check, where=self.where
            )
        except CommandTimeout as error:
            raise self.timed_out(error, timeout) from None

    def cancel(self) -> None:
        """Stop every command this runner has in flight (callable from any thread); each `run`
        then raises `~edgehub.errors.CommandCancelled`."""
        with self._jobs_lock:
            jobs = list(self._jobs)
        for job in jobs:
            job.stop("cancel")

    # -- the one loop every command goes through --------------------------------------------------

    def execute(
        self,
        start: Callable[[], Process],
        on_stdout: Callable[[bytes], None],
        on_stderr: Callable[[bytes], None],
        timeout: float | None,
    ) -> tuple[int, str | None]:
        """Start a process, feed its output to the callbacks until it ends, stop it on timeout,
        `cancel` or an exception. Returns (exit status, ``None`` | "timeout" | "cancel")."""
        job = _Job()
        with self._jobs_lock:
            self._jobs.add(job)
        try:
            process = start()
            job.attach(process)
            try:
                self._follow(job, process, on_stdout, on_stderr, timeout)
            except BaseException:
                job.stop("cancel")
                raise
            finally:
                if job.stopped is not None:
                    process.close()
            returncode = process.wait()
            process.close()
        finally:
            with self._jobs_lock:
                self._jobs.discard(job)
        return returncode, job.stopped

    @staticmethod
    def _follow(
        job: _Job,
        process: Process,
        on_stdout: Callable[[bytes], None],
        on_stderr: Callable[[bytes], None],
        timeout: float | None,
    ) -> None:
        done = threading.Event()
        failure: list[BaseException] = []

        def pump() -> None:
            try:
                for kind, chunk in process.read():
                    (on_stdout if kind == "stdout" else on_stderr)(chunk)
            except Exception as error:
                if job.stopped is None:
                    failure.append(error)
            finally:
                done.set()

        reader = threading.Thread(target=pump, daemon=True, name="edgehub-output")
        reader.start()
        if not done.wait(timeout):
            job.stop("timeout")
        while not done.wait(0.25):
            if job.stopped is not None:
                if not done.wait(STOP_GRACE_S):
                    process.close()  # output still open after the kill: give up on it
                    done.wait(STOP_GRACE_S)
                break
        if failure:
            raise failure[0]
