"""`LocalCommandRunner`: commands as subprocesses on this host, ``put``/``get`` as copies."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePath

from edgehub.errors import RunnerError
from edgehub.runners.base import BaseRunner, Process


class LocalCommandRunner(BaseRunner):
    """Runs argv lists with `subprocess` (no shell, stdin closed, own process group)."""

    def start(
        self, argv: list[str], cwd: str | PurePath | None, env: Mapping[str, str] | None
    ) -> Process:
        try:
            popen = subprocess.Popen(
                argv,
                cwd=None if cwd is None else str(cwd),
                env=None if env is None else {**os.environ, **env},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError as error:
            raise RunnerError(
                f"command {argv[0]!r} not found on this host; install it or fix the path"
            ) from error
        return _Subprocess(popen)

    def put(self, local: Path, remote: str | PurePath) -> None:
        _copy(Path(local), Path(str(remote)))

    def get(self, remote: str | PurePath, local: Path) -> None:
        _copy(Path(str(remote)), Path(local))


class _Subprocess:
    """A `Process` over `subprocess.Popen`; both pipes are read by one selector, in order."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen

    def read(self) -> Iterator[tuple[str, bytes]]:
        assert self._popen.stdout is not None and self._popen.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._popen.stdout, selectors.EVENT_READ, "stdout")
            selector.register(self._popen.stderr, selectors.EVENT_READ, "stderr")
            while selector.get_map():
                for key, _ in selector.select():
                    try:
                        chunk = os.read(key.fd, 65536)
                    except OSError:  # closed by `close` while we waited
                        chunk = b""
                    if chunk:
                        yield str(key.data), chunk
                    else:
                        selector.unregister(key.fileobj)

    def kill(self) -> None:
        if self._popen.poll() is not None:
            return
        try:
            os.killpg(self._popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self._popen.kill()

    def wait(self) -> int:
        return self._popen.wait()

    def close(self) -> None:
        self.kill()
        self._popen.wait()
        for stream in (self._popen.stdout, self._popen.stderr):
            if stream is not None:
                stream.close()


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
