"""Jobs run as a container's own process: one fresh container per job, no ``sleep`` + ``exec``.

A cold runner (not warm, no long-lived container started) runs each
`~edgehub.runners.docker.runner.DockerCommandRunner.exchange` the way ``docker run --rm``
runs a command: the container is created with the job's command line (the exchange script
around it, ``runners/exchange.py``) and a stdin, attached before it starts so none of its
output is missed, sent the job's files on that stdin, and followed to its end; the exit status
is the daemon's wait. The files come back on its stdout and its log lines on stderr, as with
an exec; the daemon's log driver is off for it (the files would be logged too). Stopping the
job (timeout, cancel, Ctrl-C) kills the container's init, and with it every process inside.

Where the daemon shares this host's file system and this process is root or the container's
user, the job's directory is a bind mount of a folder of its own (`OneShots.job_folder`: in a
new 0700 folder of this user, given to the container's user), so its results are taken in place
(`~edgehub.runners.in_place.adopt_folder`) instead of coming back as a tar and being unpacked:
for an engine of a few MB that is a visible part of a cold run (`benchmarks/bench_ort_local.py`
(d) and `benchmarks/bench_tensorrt.py` keep the cold run's fixed cost). Nothing else of the
host is mounted, and a daemon that cannot use the folder (its user ids mapped elsewhere:
staging fails, exit 125) makes the runner send files the other way from then on.

Each container has the runner's hardened settings and its owner's labels, so the reaper removes
it after a hard kill; otherwise `OneShots` removes it once its job is over, in the background
while the caller goes on with the results, and all of them when the runner is released.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from edgehub.errors import RunnerError
from edgehub.ids import random_hex
from edgehub.runners.docker.client import DockerAPIError, DockerClient
from edgehub.runners.docker.container import Container, force_remove
from edgehub.runners.docker.exec import AttachedProcess, send_stdin
from edgehub.runners.docker.owner import owner_labels

_KILLED = 137  # 128 + SIGKILL: a kill, or the memory limit's OOM killer


class OneShotProcess(AttachedProcess):
    """One job as the main process of a new container ``name`` made from ``config``; the
    container is created, attached, started and sent ``stdin`` on construction."""

    def __init__(
        self, client: DockerClient, config: dict[str, Any], name: str, stdin: bytes
    ) -> None:
        self._client = client
        self.name = name
        self.oom_killed = False  # known once `wait` has returned
        self._status: int | None = None
        self.id = client.create_container(config, name)
        self._sock = client.attach_container(self.id)
        # The daemon's answer to a wait asked now comes as the job ends, not a round trip later.
        self._exit = threading.Thread(target=self._wait_for_exit, daemon=True)
        try:
            client.start_container(self.id)
            self._exit.start()
            send_stdin(self._sock, stdin)
        except BaseException:
            self._sock.close()
            raise

    def kill(self) -> None:
        with contextlib.suppress(DockerAPIError, OSError):  # it may have ended, or be gone
            self._client.kill_container(self.id)

    def _wait_for_exit(self) -> None:
        try:
            status = self._client.wait_container(self.id)
        except (DockerAPIError, OSError):
            return  # gone (removed while it ran): no status
        if status == _KILLED:
            try:
                state = self._client.inspect_container(self.id).get("State") or {}
            except (DockerAPIError, OSError):
                state = {}
            self.oom_killed = bool(state.get("OOMKilled"))
        self._status = status

    def wait(self) -> int:
        self._exit.join()
        return -1 if self._status is None else self._status


class OneShots:
    """The job containers of one runner, made from ``container``'s settings (and client):
    `start` makes one, `done` removes it in the background, `remove_all` removes every one
    left and waits for those being removed. ``oom_kills``: jobs the memory limit killed."""

    def __init__(self, container: Container) -> None:
        self._container = container
        self._lock = threading.Lock()
        self._names: set[str] = set()  # made (or being made) and not removed yet
        self._removals: list[threading.Thread] = []
        self.oom_kills = 0
        self.in_place = True  # job folders are mounted (until a daemon could not use one)

    def job_folder(self, near: Path) -> Path | None:
        """A new folder in a new private (0700) folder in ``near``, owned by the container's
        user, to mount as a job's directory; None where that cannot work (see the module)."""
        container = self._container
        container.inspect_image()
        if not self.in_place:
            return None

        def make() -> Path:
            near.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=".edgehub-job-", dir=near)) / "job"
            folder.mkdir(mode=0o700)
            return folder

        return container.shared_folder(make)

    def start(
        self, words: list[str], stdin: bytes, mount: tuple[Path, str] | None = None
    ) -> OneShotProcess:
        """A container running ``words`` (as its command line) with ``stdin`` on its stdin;
        ``mount``: a (`job_folder`, container path) to bind there."""
        container = self._container
        client = container.connect()
        settings = container.settings
        config = settings.config(words, container.inspect_image(), owner_labels())
        config.update(
            OpenStdin=True, StdinOnce=True, AttachStdin=True, AttachStdout=True, AttachStderr=True
        )
        config["HostConfig"]["LogConfig"] = {"Type": "none", "Config": {}}
        if mount is not None:
            source, target = mount
            bind = {"Type": "bind", "Source": str(source), "Target": target}
            config["HostConfig"]["Mounts"].append(bind)
        # Known by name before it exists, so a creation cut short is removed too.
        name = f"edgehub-{os.getpid()}-{random_hex(8)}"
        with self._lock:
            self._names.add(name)
        try:
            return OneShotProcess(client, config, name, stdin)
        except DockerAPIError as error:
            self._remove(name)
            raise RunnerError(
                f"cannot run a job in a container of {settings.image}: {error.explanation}; "
                "check the runner's cpus/memory/user settings"
            ) from error
        except BaseException:
            self._remove(name)
            raise

    def done(self, process: OneShotProcess) -> None:
        """The job is over: its container goes, in the background."""
        if process.oom_killed:
            self.oom_kills += 1
        with self._lock:
            if process.name not in self._names:
                return
            removal = threading.Thread(target=self._remove, args=(process.name, False), daemon=True)
            self._removals.append(removal)
        removal.start()

    def remove_all(self) -> None:
        """Remove every job container left (waiting for those being removed)."""
        with self._lock:
            removals, self._removals = self._removals, []
        for removal in removals:
            removal.join()
        with self._lock:
            names = sorted(self._names)
        for name in names:
            self._remove(name)

    def _remove(self, name: str, loud: bool = True) -> None:
        """Remove container ``name`` (gone already is fine); a failure is a `RunnerError`
        (``loud``) or leaves it to `remove_all`."""
        client = self._container.client
        if client is None:
            return
        try:
            force_remove(client, name)
        except RunnerError:
            if loud:
                raise
            return
        with self._lock:
            self._names.discard(name)
