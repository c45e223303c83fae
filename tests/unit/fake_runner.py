"""`FakeRunner`: a runner whose transport is a function, for tests that need no real machine.

In the spirit of httpx's ``MockTransport``: the test passes a handler that receives each command
(`FakeCommand`) and answers with a `Reply` saying what the "process" prints, on which stream,
how long it takes and how it exits. Everything else — timeouts, `cancel` from another thread,
line streaming, the outcome and its errors — is the real `BaseRunner`. ``put``/``get`` move
bytes in and out of `FakeRunner.files`, a dict of remote path -> content the handler can read
and write, and are recorded in ``puts``/``gets``.

Use it where the transport is not what the test is about (providers, ops); the transports
themselves are tested against real subprocesses, containers and an SSH server.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from edgehub.errors import RunnerError
from edgehub.runners.base import BaseRunner, Process

__all__ = ["KILLED", "FakeCommand", "FakeRunner", "Reply", "Step"]

KILLED = -9  # the exit status a killed fake process reports

Step = tuple[str, "str | bytes"] | float
"""``("stdout" | "stderr", text)`` prints; a number sleeps that many seconds."""


@dataclass(frozen=True)
class Reply:
    """What one fake command does: ``output`` steps in order, then exit with ``returncode``."""

    output: Sequence[Step] = ()
    returncode: int = 0

    @classmethod
    def of(
        cls, stdout: str = "", stderr: str = "", returncode: int = 0, seconds: float = 0.0
    ) -> Reply:
        """Print ``stdout`` then ``stderr``, take ``seconds``, exit with ``returncode``."""
        steps: list[Step] = []
        if stdout:
            steps.append(("stdout", stdout))
        if stderr:
            steps.append(("stderr", stderr))
        if seconds:
            steps.append(seconds)
        return cls(tuple(steps), returncode)


@dataclass(frozen=True)
class FakeCommand:
    """A command as the handler sees it; ``files`` is the runner's remote file dict."""

    argv: tuple[str, ...]
    cwd: str | None
    env: Mapping[str, str]
    files: dict[str, bytes] = field(repr=False, compare=False)


Handler = Callable[[FakeCommand], Reply]


class FakeRunner(BaseRunner):
    """A `CommandRunner` whose commands are answered by ``handler`` (default: exit 0, silent).

    ``commands``, ``puts`` and ``gets`` record what was asked, in order; ``killed`` counts the
    processes that were stopped (timeout, cancel, an exception).
    """

    def __init__(self, handler: Handler | None = None, *, device_name: str | None = None) -> None:
        super().__init__()
        self.handler: Handler = handler or (lambda command: Reply())
        self.device_name = device_name
        self.files: dict[str, bytes] = {}
        self.commands: list[FakeCommand] = []
        self.puts: list[tuple[Path, str]] = []
        self.gets: list[tuple[str, Path]] = []
        self.killed = 0
        self._lock = threading.Lock()

    def start(
        self, argv: list[str], cwd: str | PurePath | None, env: Mapping[str, str] | None
    ) -> Process:
        command = FakeCommand(
            tuple(argv), None if cwd is None else str(cwd), dict(env or {}), self.files
        )
        with self._lock:
            self.commands.append(command)
        return _FakeProcess(self.handler(command), self)

    def put(self, local: Path, remote: str | PurePath) -> None:
        local = Path(local)
        if not local.exists():
            raise RunnerError(f"cannot copy {local}: no such file or directory")
        target = str(remote)
        with self._lock:
            self.puts.append((local, target))
            if local.is_dir():
                for path in sorted(p for p in local.rglob("*") if p.is_file()):
                    name = posixpath.join(target, path.relative_to(local).as_posix())
                    self.files[name] = path.read_bytes()
            else:
                self.files[target] = local.read_bytes()

    def get(self, remote: str | PurePath, local: Path) -> None:
        source, local = str(remote).rstrip("/"), Path(local)
        with self._lock:
            self.gets.append((source, local))
            if source in self.files:
                local.parent.mkdir(parents=True, exist_ok=True)
                local.write_bytes(self.files[source])
                return
            inside = {k: v for k, v in self.files.items() if k.startswith(source + "/")}
        if not inside:
            raise RunnerError(f"cannot copy {source}: no such file or directory")
        for name, data in inside.items():
            path = local / name[len(source) + 1 :]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


class _FakeProcess:
    """Plays a `Reply`; a kill ends it at once with `KILLED`."""

    def __init__(self, reply: Reply, runner: FakeRunner) -> None:
        self._reply = reply
        self._runner = runner
        self._ended = threading.Event()  # set by kill or close: stop playing
        self._killed = False

    def read(self) -> Iterator[tuple[str, bytes]]:
        for step in self._reply.output:
            if self._ended.is_set():
                return
            if isinstance(step, (int, float)):
                if self._ended.wait(step):
                    return
                continue
            kind, text = step
            yield kind, text.encode() if isinstance(text, str) else text

    def kill(self) -> None:
        with self._runner._lock:
            if self._killed:
                return
            self._killed = True
            self._runner.killed += 1
        self._ended.set()

    def wait(self) -> int:
        return KILLED if self._killed else self._reply.returncode

    def close(self) -> None:
        self._ended.set()
