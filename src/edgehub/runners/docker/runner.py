"""`DockerCommandRunner`: commands in one long-lived, hardened container of a pinned image.

Every `run` is an ``exec`` (``docker/exec.py``) driven by the runner base, so output streams
line by line and timeouts and `cancel` stop the exec's processes. Files move as tar streams
through ``exec`` (or the archive API for images without ``tar``, ``docker/files.py``), and
`exchange` does upload + run + download in one exec; `agent_exchange` does the same for an
agent job without any exec, over a warm container's direct channel (``docker/channel.py``).
Until a cold runner has started that container (`prepare` starts none), each `exchange` runs
as a container of its own (``docker/oneshot.py``), as ``docker run --rm`` would.
With ``keep_warm`` the container is shared with later processes (``docker/warm.py``); its jobs
keep their stdin open (unwritten) so they read end of file when this process dies
(``EDGEHUB_AGENT_WATCH_STDIN=1`` tells the agent to watch it), and a command that reads its
stdin there waits instead of seeing end of file.
Otherwise the container is removed by `close`, at interpreter exit, by
`~edgehub.runners.base.cancel_all`, and, after a hard kill, by the next process's
`~edgehub.runners.docker.reaper.reap`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path, PurePath, PurePosixPath

from edgehub.errors import RunnerError
from edgehub.runners.base import BaseRunner, Process
from edgehub.runners.docker.channel import (
    CHANNEL_MOUNT,
    OUTBOX,
    AgentJob,
    collect_file,
    discard_outbox,
    share_file,
)
from edgehub.runners.docker.client import DockerAPIError, DockerClient
from edgehub.runners.docker.container import (
    DEFAULT_MEMORY,
    DEFAULT_PIDS,
    Container,
    ContainerSettings,
)
from edgehub.runners.docker.exec import OCI_FAILURE, ExecProcess
from edgehub.runners.docker.files import ContainerFiles
from edgehub.runners.docker.oneshot import OneShotProcess, OneShots
from edgehub.runners.docker.owner import owner_marker
from edgehub.runners.docker.warm import BUSY_DIR, JOB_WRAPPER, start_warm
from edgehub.runners.exchange import agent_exchange, exchange
from edgehub.runners.protocol import FOUND, SENT, CommandResult, Exchange

WATCH_STDIN_ENV = "EDGEHUB_AGENT_WATCH_STDIN"
BUSY_DIR_ENV = "EDGEHUB_AGENT_BUSY_DIR"  # where a resident agent marks its running jobs


class DockerCommandRunner(BaseRunner):
    """Runs argv lists in a container of ``image``; nothing touches Docker until ``__enter__``
    or the first use. ``memory`` defaults to `DEFAULT_MEMORY`, ``pids`` to `DEFAULT_PIDS`;
    ``client`` (a `DockerClient`, kept open) overrides the one `connect` picks for ``host``
    (a daemon address; default: ``$DOCKER_HOST``'s); ``cpuset`` (``"0-1"``) pins the container
    to those host CPUs."""

    def __init__(
        self,
        image: str,
        *,
        cpus: float | None = None,
        memory: str | None = None,
        pids: int | None = DEFAULT_PIDS,
        network: bool = False,
        user: str | None = None,
        workdir: str = "/work",
        labels: Mapping[str, str] | None = None,
        keep_warm: float | None = None,
        gpus: str | None = None,
        cpuset: str | None = None,
        client: DockerClient | None = None,
        host: str | None = None,
    ) -> None:
        super().__init__()
        settings = ContainerSettings(
            image,
            cpus=cpus,
            memory=memory or DEFAULT_MEMORY,
            pids=pids,
            network=network,
            user=user,
            workdir=workdir,
            labels=dict(labels or {}),
            gpus=gpus,
            cpuset=cpuset,
        )
        self._keep_warm = keep_warm if keep_warm and keep_warm > 0 else None
        self._container = Container(settings, client, host)
        self._oom_kills_seen = 0
        self._files = ContainerFiles(self._container, self._ensure_started)
        self._oneshots = OneShots(self._container)

    # -- identity -------------------------------------------------------------------------------

    @property
    def image(self) -> str:
        return self._container.settings.image

    @property
    def keep_warm(self) -> float | None:
        """Idle seconds the container outlives its runner (``None``: removed on close)."""
        return self._keep_warm

    @property
    def client(self) -> DockerClient | None:
        """The Docker client in use (``None`` before the first use)."""
        return self._container.client

    @property
    def container_id(self) -> str | None:
        return self._container.id

    @property
    def image_id(self) -> str | None:
        attrs = self._container.image_attrs
        return str(attrs["Id"]) if attrs else None

    @property
    def image_digest(self) -> str | None:
        """The image's first repo digest, or its id for a locally built image."""
        attrs = self._container.image_attrs
        if not attrs:
            return None
        digests = attrs.get("RepoDigests") or []
        return str(digests[0]) if digests else str(attrs["Id"])

    @property
    def memory(self) -> str | None:
        """The container's memory limit as configured ("4g")."""
        return self._container.settings.memory

    def out_of_memory(self) -> bool:
        """Whether the memory limit killed a process in the container since the last ask."""
        from edgehub.runners.docker.memory import oom_kills

        count, seen = oom_kills(self) + self._oneshots.oom_kills, self._oom_kills_seen
        self._oom_kills_seen = max(count, seen)
        return count > seen

    def __repr__(self) -> str:
        state = self.container_id[:12] if self.container_id else "not started"
        return f"DockerCommandRunner({self.image!r}, {state})"

    # -- lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> DockerCommandRunner:
        super().__enter__()
        self._ensure_started()
        return self

    def prepare(self) -> DockerCommandRunner:
        """Get ready for work without starting more than needed: a warm runner adopts (or
        starts) its container, as `__enter__` does; a cold one checks the daemon and the
        image and tidies up after dead processes, then runs each `exchange` as a container
        of its own (a `run`, `put` or `get` starts the long-lived container first)."""
        if self._keep_warm is not None:
            return self.__enter__()
        super().__enter__()
        from edgehub.runners.docker.reaper import reap

        container = self._container
        try:
            with container.lock:
                container.inspect_image()
                reap(container.connect(), jobs=False)  # never fails
        except BaseException:
            self.release()
            raise
        return self

    def _ensure_started(self) -> str:
        container = self._container
        with container.lock:
            if container.id is not None:
                return container.id
            try:
                if self._keep_warm is not None:
                    return start_warm(container, self._keep_warm)
                return container.start()
            except BaseException:
                self.release()  # removes a half-made container, closes the client
                raise

    def release(self) -> None:
        """Remove the container (a warm one is left for the next process), the job
        containers, and the client."""
        try:
            try:
                self._oneshots.remove_all()
            finally:
                if self._keep_warm is None:
                    self._container.remove()
                else:
                    self._container.forget()
        finally:
            self._container.close_client()

    # -- the transport ----------------------------------------------------------------------------

    def _exec(
        self,
        argv: list[str],
        cwd: str | PurePath | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> Process:
        container_id = self._ensure_started()
        client = self._container.client
        assert client is not None
        environment = [f"{key}={value}" for key, value in (env or {}).items()]
        warm = self._keep_warm is not None
        if warm:  # see docker/warm.py; the job ends when this process does
            argv = ["sh", "-c", JOB_WRAPPER, owner_marker().partition("=")[2], *argv]
            environment += [f"{WATCH_STDIN_ENV}=1", f"{BUSY_DIR_ENV}={BUSY_DIR}"]
        try:
            return ExecProcess(
                client,
                container_id,
                argv,
                env=environment,
                workdir=None if cwd is None else self._files.remote(cwd),
                stdin=stdin,
                hold_stdin=warm,
            )
        except (DockerAPIError, OSError) as error:
            explanation = getattr(error, "explanation", None) or error
            raise RunnerError(
                f"cannot run {argv[0]!r} in container {container_id[:12]}: {explanation}; "
                "check that the container is still running (docker ps)"
            ) from error

    def start(
        self, argv: list[str], cwd: str | PurePath | None, env: Mapping[str, str] | None
    ) -> Process:
        return self._exec(argv, cwd, env)

    def check_result(
        self, argv: list[str], cwd: str | PurePath | None, result: CommandResult
    ) -> None:
        """A command the container runtime could not start is a `RunnerError`."""
        output = result.stdout
        if result.returncode != 126 or not output.startswith(OCI_FAILURE):
            return
        if "executable file not found" in output:
            raise RunnerError(
                f"command {argv[0]!r} not found in image {self.image}; "
                "install it in the image or fix the path"
            )
        if "chdir" in output and cwd is not None:
            raise RunnerError(
                f"working directory {self._files.remote(cwd)} does not exist in the container; "
                "create it first (put creates parents) or pick another cwd"
            )
        detail = " ".join(output.split()).removeprefix(OCI_FAILURE).strip()
        raise RunnerError(f"cannot start {argv[0]!r} in image {self.image}: {detail}")

    # -- files ------------------------------------------------------------------------------------

    def put(self, local: Path, remote: str | PurePath) -> None:
        """Copy a file or directory into the container at ``remote`` (parents are created)."""
        self._files.put(local, remote)

    def get(self, remote: str | PurePath, local: Path) -> None:
        """Copy ``remote`` (file or directory) out of the container to exactly ``local``."""
        self._files.get(remote, local)

    def exchange(self, job: Exchange) -> CommandResult:
        """`SupportsExchange.exchange` in one exec (or, before a cold runner has started its
        container, in a container of its own)."""
        target = PurePosixPath(self._files.remote(job.remote))
        jobs: list[OneShotProcess] = []
        oneshot = self._keep_warm is None and self._container.id is None
        folder = self._oneshots.job_folder(job.local.parent) if oneshot else None

        def start(words: list[str], stdin: bytes) -> Process:
            if not oneshot:
                return self._exec(words, stdin=stdin)
            mount = None if folder is None else (folder, str(target))
            jobs.append(self._oneshots.start(words, stdin, mount))
            return jobs[-1]

        try:
            result = exchange(self.execute, start, job, target, folder=folder)
        except RunnerError as error:
            if folder is None or not str(error).startswith("cannot stage files"):
                raise
            # A daemon whose containers cannot write in the folder (user ids mapped elsewhere):
            # nothing ran; files go as tars from now on.
            self._oneshots.in_place = False
        else:
            return result
        finally:
            for process in jobs:
                self._oneshots.done(process)
            if folder is not None:
                shutil.rmtree(folder.parent, ignore_errors=True)
        return self.exchange(job)

    # -- the direct channel to a resident agent (docker/channel.py) ------------------------------

    def agent_socket(self, name: str) -> str | None:
        """The container path of a socket ``name`` that this process can also reach from the
        host (a warm container with the agent channel mounted); None otherwise."""
        if self._container.channel is None:
            return None
        return f"{CHANNEL_MOUNT}/{name}"

    def share_input(self, local: Path, digest: Callable[[], str]) -> tuple[str, str] | None:
        """`SupportsSharedInput.share_input`: a file through a warm container's mounted
        channel (`channel.share_file`); None without one, and for a directory."""
        channel = self._container.channel
        if channel is None or not local.is_file():
            return None
        try:
            where, sent = share_file(channel, local, digest())
        except OSError:
            return None  # a channel this process cannot write in: the file goes with the call
        return where, SENT if sent else FOUND

    def outbox(self, box: str) -> str | None:
        """`SupportsSharedFolder.outbox`: ``OUTBOX/box`` of a warm container's channel."""
        if self._container.channel is None:
            return None
        return f"{CHANNEL_MOUNT}/{OUTBOX}/{box}"

    def collect(self, box: str, name: str, local: Path) -> None:
        """`SupportsSharedFolder.collect` (`channel.collect_file`)."""
        from edgehub.limits import FetchLimits

        channel = self._container.channel
        if channel is None:
            raise RunnerError("the container shares no folder with this host")
        collect_file(channel, box, name, local, FetchLimits.from_env().max_member_bytes)

    def discard(self, box: str) -> None:
        """`SupportsSharedFolder.discard` (`channel.discard_outbox`)."""
        if self._container.channel is not None:
            discard_outbox(self._container.channel, box)

    def agent_exchange(self, job: Exchange, socket: str) -> CommandResult | None:
        """`exchange` through the resident agent on ``socket`` (from `agent_socket`), whose
        command line ``job.argv`` is (``[command, options...]``): no ``docker exec``, no agent
        start-up. None when no server took the job (nothing ran): use `exchange` then."""
        channel = self._container.channel
        if channel is None or not socket.startswith(CHANNEL_MOUNT + "/"):
            return None
        host_socket = channel / socket[len(CHANNEL_MOUNT) + 1 :]
        target = PurePosixPath(self._files.remote(job.remote))
        return agent_exchange(
            lambda start, data: exchange(self.execute, start, job, target, packed=data),
            job,
            target,
            lambda request: AgentJob(host_socket, request),
        )
