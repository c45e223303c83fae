"""`DockerCommandRunner`: commands in one long-lived container of a pinned image.

The container runs ``sleep infinity`` under Docker's init; every `run` is an ``exec`` whose
stdout and stderr stream separately, line by line, to the current event sink. Files move with
the archive API only (``put_archive``/``get_archive``), so a remote daemon
(``DOCKER_HOST=ssh://...``) works as well as the local one. Containers carry labels naming the
process that owns them: they are removed on exit, at interpreter exit, and by `reap_orphans`
once their owner is gone.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from types import TracebackType
from typing import Any

from edgehub.core.device.runner import CommandResult
from edgehub.core.events import current_sink
from edgehub.errors import (
    ImageNotBuiltError,
    RunnerError,
)
from edgehub.runners.docker_cleanup import (
    MANAGED,
    OPEN_RUNNERS,
    OPEN_RUNNERS_LOCK,
    OWNER_HOST,
    OWNER_PID,
    OWNER_STARTED,
    reap_orphans,
    start_ticks,
)
from edgehub.runners.docker_cleanup import _owner_alive as _owner_alive  # for tests
from edgehub.runners.docker_exchange import DockerExchange
from edgehub.runners.docker_exec import (
    EXEC_MARKER,
    KILL_SCRIPT,
    OCI_FAILURE,
    Exec,
    exec_quiet,
    exit_code,
    explain,
    read_demuxed,
    wait_stream,
)
from edgehub.runners.docker_files import GID_LABEL, UID_LABEL, DockerFiles
from edgehub.runners.docker_warm import TOUCH_WRAPPER, WARM, WARM_KEY, WarmContainer
from edgehub.runners.outcome import command_result, raise_for_outcome
from edgehub.runners.streaming import LineCollector

__all__ = [
    "GID_LABEL",
    "MANAGED",
    "OWNER_HOST",
    "OWNER_PID",
    "OWNER_STARTED",
    "UID_LABEL",
    "WARM",
    "WARM_KEY",
    "DockerCommandRunner",
    "reap_orphans",
]


class DockerCommandRunner(WarmContainer, DockerFiles, DockerExchange):
    """Runs argv lists in a container of ``image``; ``put``/``get`` use the archive API.

    Nothing touches Docker until ``__enter__`` or the first use; the container is removed by
    `close` (and by ``__exit__``, on errors and Ctrl-C too).
    """

    device_name: str | None = None

    def __init__(
        self,
        image: str,
        *,
        cpus: float | None = None,
        memory: str | None = None,
        network: bool = False,
        user: str | None = None,
        workdir: str = "/work",
        labels: Mapping[str, str] | None = None,
        keep_warm: float | None = None,
    ) -> None:
        self._image = image
        self._keep_warm = keep_warm if keep_warm and keep_warm > 0 else None
        self._cpus = cpus
        self._memory = memory
        self._network = network
        self._user = user
        self._workdir = workdir
        self._labels = dict(labels or {})
        self._client: Any = None
        self._container_id: str | None = None
        self._image_attrs: dict[str, Any] = {}
        self._owner: tuple[int, int] | None = None
        self._pending_name: str | None = None
        self._lock = threading.RLock()
        self._execs: set[Exec] = set()
        self._execs_lock = threading.Lock()

    # -- identity -------------------------------------------------------------------------

    @property
    def image(self) -> str:
        return self._image

    @property
    def keep_warm(self) -> float | None:
        """Idle seconds the container outlives its runner (``None``: removed on close)."""
        return self._keep_warm

    @property
    def container_id(self) -> str | None:
        return self._container_id

    @property
    def image_id(self) -> str | None:
        return str(self._image_attrs["Id"]) if self._image_attrs else None

    @property
    def image_digest(self) -> str | None:
        """The image's first repo digest, or its id for a locally built image."""
        if not self._image_attrs:
            return None
        digests = self._image_attrs.get("RepoDigests") or []
        return str(digests[0]) if digests else str(self._image_attrs["Id"])

    def __repr__(self) -> str:
        state = self._container_id[:12] if self._container_id else "not started"
        return f"DockerCommandRunner({self._image!r}, {state})"

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> DockerCommandRunner:
        self._ensure_started()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _ensure_started(self) -> str:
        with self._lock:
            if self._container_id is not None:
                return self._container_id
            if self._keep_warm is not None and self._client is None:
                adopted = self._adopt_warm_lite()
                if adopted is not None:
                    return adopted
            from edgehub.images import docker_client

            self._client = self._client or docker_client()
            try:
                return self._start(self._client)
            except BaseException:
                self.close()  # removes a half-made container, closes the client
                raise

    def _start(self, client: Any) -> str:
        import docker.errors

        try:
            self._image_attrs = client.api.inspect_image(self._image)
        except docker.errors.ImageNotFound:
            raise ImageNotBuiltError(_missing_image_message(self._image)) from None
        if self._keep_warm is not None:
            return self._start_warm(client)  # warm containers expire by themselves
        try:
            reap_orphans(client)
        except docker.errors.APIError:
            pass  # tidying up after others must not stop this runner
        labels = {
            **self._labels,
            MANAGED: "1",
            OWNER_PID: str(os.getpid()),
            OWNER_HOST: socket.gethostname(),
        }
        started = start_ticks(os.getpid())
        if started:
            labels[OWNER_STARTED] = started
        options = self._container_options(labels)
        # Known by name before it exists, so close() and atexit can remove a container whose
        # creation was interrupted.
        self._pending_name = f"edgehub-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with OPEN_RUNNERS_LOCK:
            OPEN_RUNNERS.add(self)
        try:
            container = client.containers.create(
                self._image, ["sleep", "infinity"], name=self._pending_name, **options
            )
            self._container_id = str(container.id)
            container.start()
        except docker.errors.APIError as error:
            raise RunnerError(
                f"cannot start a container of {self._image}: {explain(error)}; "
                "check the runner's cpus/memory/user settings"
            ) from error
        self._pending_name = None
        return self._container_id

    def _container_options(self, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
        """Create options: no network unless asked, the CPU/memory limits, the user."""
        options: dict[str, Any] = {
            "init": True,
            "labels": labels,
            "working_dir": self._workdir,
            **extra,
        }
        if not self._network:
            options["network_mode"] = "none"
        if self._cpus is not None:
            options["nano_cpus"] = int(self._cpus * 1e9)
        if self._memory is not None:
            options["mem_limit"] = self._memory
        if self._user is not None:
            options["user"] = self._user
        return options

    def close(self) -> None:
        """Stop commands in flight and remove the container (idempotent); a warm container is
        left running for the next process."""
        self.cancel()
        if self._keep_warm is not None:
            with self._lock:
                self._container_id = None
                client, self._client = self._client, None
                self._owner = None
                if client is not None:
                    client.close()
            return
        with self._lock:
            container_id = self._container_id or self._pending_name
            self._container_id = self._pending_name = None
            client, self._client = self._client, None
            self._owner = None
            try:
                if container_id is not None and client is not None:
                    import docker.errors

                    try:
                        client.api.remove_container(container_id, force=True)
                    except docker.errors.NotFound:
                        pass
                    except docker.errors.APIError as error:
                        raise RunnerError(
                            f"cannot remove container {container_id[:12]}: {explain(error)}; "
                            f"remove it with: docker rm -f {container_id[:12]}"
                        ) from error
            finally:
                with OPEN_RUNNERS_LOCK:
                    OPEN_RUNNERS.discard(self)
                if client is not None:
                    client.close()

    # -- commands ---------------------------------------------------------------------------

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
        container_id = self._ensure_started()
        api = self._client.api
        marker = f"{EXEC_MARKER}={uuid.uuid4().hex}"
        environment = [f"{key}={value}" for key, value in (env or {}).items()] + [marker]
        started = time.monotonic()
        try:
            created = api.exec_create(
                container_id,
                ["sh", "-c", TOUCH_WRAPPER, "edgehub", *words] if self._keep_warm else words,
                stdout=True,
                stderr=True,
                environment=environment,
                workdir=None if cwd is None else self._remote(cwd),
            )
            handle = Exec(str(created["Id"]), marker)
            stream = api.exec_start(handle.exec_id, stream=True, demux=True)
        except Exception as error:
            raise RunnerError(
                f"cannot run {words[0]!r} in container {container_id[:12]}: {explain(error)}; "
                "check that the container is still running (docker ps)"
            ) from error
        with self._execs_lock:
            self._execs.add(handle)
        out, err = LineCollector("stdout", sink), LineCollector("stderr", sink)
        done = threading.Event()
        reader = threading.Thread(
            target=read_demuxed, args=(stream, out, err, done), daemon=True, name="edgehub-exec"
        )
        reader.start()
        try:
            if not done.wait(timeout):
                handle.stopped = handle.stopped or "timeout"
                self._kill(handle)
            wait_stream(done, stream, handle)
        except BaseException:
            handle.stopped = handle.stopped or "cancel"
            self._kill(handle)
            stream.close()
            raise
        finally:
            reader.join(timeout=5)
            with self._execs_lock:
                self._execs.discard(handle)
        returncode = exit_code(self._client, handle.exec_id)
        result = command_result(words, returncode, out, err, started)
        oci = returncode == 126 and result.stdout.startswith(OCI_FAILURE)
        if handle.stopped is None and oci:
            raise RunnerError(self._start_failure(words, cwd, result.stdout))
        return raise_for_outcome(result, stopped=handle.stopped, timeout=timeout, check=check)

    def cancel(self) -> None:
        """Stop every command this runner has in flight (callable from any thread)."""
        with self._execs_lock:
            handles = list(self._execs)
        for handle in handles:
            handle.stopped = handle.stopped or "cancel"
            self._kill(handle)

    def _start_failure(self, words: list[str], cwd: str | PurePath | None, output: str) -> str:
        """A one-line message for an exec the container runtime could not start."""
        if "executable file not found" in output:
            return (
                f"command {words[0]!r} not found in image {self._image}; "
                "install it in the image or fix the path"
            )
        if "chdir" in output and cwd is not None:
            return (
                f"working directory {self._remote(cwd)} does not exist in the container; "
                "create it first (put creates parents) or pick another cwd"
            )
        detail = " ".join(output.split()).removeprefix(OCI_FAILURE).strip()
        return f"cannot start {words[0]!r} in image {self._image}: {detail}"

    def _kill(self, handle: Exec) -> None:
        """Kill the exec's processes (found by their marker) until the exec has ended."""
        client, container_id = self._client, self._container_id
        if client is None or container_id is None:
            return
        argv = ["sh", "-c", KILL_SCRIPT, "edgehub-kill", handle.marker]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                exec_quiet(client, container_id, argv)
                if not client.api.exec_inspect(handle.exec_id).get("Running"):
                    return
            except Exception:  # the container may be going away
                return
            time.sleep(0.05)


def _missing_image_message(image: str) -> str:
    match = re.fullmatch(r"edgehub-([a-z0-9]+):[0-9a-f]+", image)
    if match:
        return f"image {image!r} is not built; run: hub images build {match.group(1)}"
    return f"image {image!r} is not present in the Docker daemon; build or load it first"
