"""`HubContext`: the devices, the run store and the event sink that components run in."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, cast

from edgehub.core.device.spec import Device, DeviceSpec
from edgehub.errors import DeviceError, OperationCancelled
from edgehub.events import EventSink, use_sink
from edgehub.ids import random_hex
from edgehub.runners.protocol import CommandRunner, SupportsWorkFolder
from edgehub.tracking.client import Client
from edgehub.tracking.run_log import LoggedArtifact, RunLog
from edgehub.tracking.run_type import RunType
from edgehub.tracking.store import RunStore

if TYPE_CHECKING:
    from edgehub.runners.docker import DockerCommandRunner

__all__ = ["HubContext", "default_store_dir", "host_description"]

_WORK_FOLDER: dict[type, bool] = {}


def _holds_work_folder(runner: object) -> bool:
    """``isinstance(runner, SupportsWorkFolder)``, found once per runner class (the check of a
    runtime protocol reads each of its members: per call of a warm invoke, that adds up)."""
    kind = type(runner)
    known = _WORK_FOLDER.get(kind)
    if known is None:
        known = _WORK_FOLDER[kind] = isinstance(runner, SupportsWorkFolder)
    return known


def default_store_dir(start: Path | None = None) -> Path:
    """``$EDGEHUB_STORE``, else ``.hub`` beside the nearest hub.toml, else ``./.hub``."""
    env = os.environ.get("EDGEHUB_STORE")
    if env:
        return Path(env).expanduser()
    here = (start or Path.cwd()).resolve()
    project = next((f for f in (here, *here.parents) if (f / "hub.toml").is_file()), here)
    return project / ".hub"


def host_description() -> str:
    """The host as ``platform.node()``, ``system()`` and ``machine()`` name it on Unix, read
    where those read it (`os.uname`): the `platform` module takes ms to import."""
    host = os.uname()
    return f"{host.nodename} ({host.sysname} {host.machine}, {os.cpu_count()} CPUs)"


def python_version() -> str:
    """``platform.python_version()``: the first word of `sys.version` ("3.11.7")."""
    return sys.version.split()[0]


def _local_device() -> Device:
    from edgehub.runners.local import LocalCommandRunner

    return Device(
        name="local",
        runner=LocalCommandRunner(),
        spec=DeviceSpec(device_name=host_description()),
        provider_type="local",
    )


class HubContext:
    """Where components run: devices by name, the local run store, and a live event sink.

    Use it as a context manager. Runs are recorded under ``artifact_base_dir`` (default:
    ``.hub`` beside hub.toml, see `default_store_dir`); no account and no network are needed.
    A ``local`` device (this host) is always available after the given devices.
    """

    def __init__(
        self,
        project_name: str = "default",
        artifact_base_dir: Path | str | None = None,
        devices: Sequence[Device] | None = None,
        download_artifacts: bool = False,
        auto_connect: bool = True,
        log_remote_artifacts: bool = True,
        *,
        tags: dict[str, str] | None = None,
        events: EventSink | None = None,
        device_source: str = "the HubContext",
        image_tags: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(project_name, str) or not project_name.strip():
            raise ValueError("project_name must be a non-empty string")
        self.project_name = project_name
        self.download_artifacts = download_artifacts
        self.auto_connect = auto_connect
        self.log_remote_artifacts = log_remote_artifacts
        self.device_source = device_source
        self.image_tags = dict(image_tags or {})  # runtime -> image tag ([images] in hub.toml)
        # the CPUs ("0-1,3") measurements run on: a Docker cpuset, `taskset -c` over SSH
        self.pin_cpus: str | None = None
        self.events = events or EventSink()
        self._base_dir = Path(artifact_base_dir).expanduser() if artifact_base_dir else None
        self._devices: dict[str, Device] = {}
        for device in devices or ():
            if not isinstance(device, Device):
                raise TypeError(f"devices must be Device objects, got {type(device).__name__}")
            if device.name in self._devices:
                raise ValueError(f"duplicate device name {device.name!r} in HubContext")
            self._devices[device.name] = device
        if "local" not in self._devices:
            self._devices["local"] = _local_device()
        self._tags = dict(tags or {})
        self._active = False
        self._id = random_hex(10)
        self._group: str | None = None
        self._stack: ExitStack | None = None
        self._store: RunStore | None = None
        self._client: Client | None = None
        self._docker: dict[tuple[Any, ...], DockerCommandRunner] = {}
        self._workspaces: dict[str, PurePosixPath] = {}
        self._connected_before: set[int] = set()  # ids of runners connected before __enter__
        self._lock = threading.Lock()
        self._local = threading.local()
        self._cancelled = False
        self._cancel_reason: BaseException | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> HubContext:
        if self._active:
            raise RuntimeError("this HubContext is already active")
        stack = ExitStack()
        self._connected_before = {
            id(d.runner) for d in self._devices.values()
            if isinstance(d.runner, SupportsWorkFolder) and d.runner.is_active
        }  # fmt: skip
        try:
            self._store = RunStore(self._base_dir or default_store_dir())
            stack.callback(self._store.close)
            self._client = Client(self._store, self.project_name, self.events)
            stack.enter_context(use_sink(self.events))
            stack.callback(self._close_resources)
            if self.auto_connect:
                for device in self._devices.values():
                    if device.runner is not None and device.name != "local":
                        stack.enter_context(device.runner)
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        self._active = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._active = False
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()

    def _close_resources(self) -> None:
        """Remove containers and device workspaces this context created, and close the device
        connections it opened (their work folders go with them)."""
        with self._lock:
            runners, self._docker = list(self._docker.values()), {}
            workspaces, self._workspaces = dict(self._workspaces), {}
        for runner in runners:
            try:
                runner.__exit__(None, None, None)
            except Exception:
                self.events.warning(f"could not remove container of {runner.image}")
        opened: list[SupportsWorkFolder] = []
        for held in self._devices.values():
            held_runner = held.runner
            if isinstance(held_runner, SupportsWorkFolder) and (
                id(held_runner) not in self._connected_before
            ):
                opened.append(held_runner)
        closing = {id(item) for item in opened}
        for name, path in workspaces.items():
            device = self._devices.get(name)
            if device is not None and device.runner is not None:
                if id(device.runner) in closing:
                    continue  # closing the connection removes its work folder
                try:
                    device.runner.run(["rm", "-rf", str(path)], hide=True, check=False)
                except Exception:
                    self.events.warning(f"could not remove {path} on device {name!r}")
        for connection in opened:
            try:
                connection.close()
            except Exception:
                self.events.warning("could not close a device connection")

    def cancel(self, reason: BaseException | None = None) -> None:
        """Stop every command this context's runners are running (from any thread).

        The component running now fails with a cancellation, and its run ends KILLED; with a
        ``reason`` (a timeout) its run ends FAILED and ``reason`` is raised instead. The
        context stays usable for clean-up.
        """
        with self._lock:
            self._cancelled = True
            self._cancel_reason = self._cancel_reason or reason
            runners: list[CommandRunner] = list(self._docker.values())
        runners += [d.runner for d in self._devices.values() if d.runner is not None]
        for runner in runners:
            try:
                runner.cancel()
            except Exception as error:  # cancelling must never raise into the canceller
                self.events.warning(f"could not cancel a command: {error}")

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    # -- properties --------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        return self._active

    @property
    def devices(self) -> dict[str, Device]:
        return self._devices

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("HubContext is not active: use `with HubContext(...) as ctx:`")
        return self._client

    @property
    def store(self) -> RunStore:
        if self._store is None:
            raise RuntimeError("HubContext is not active: use `with HubContext(...) as ctx:`")
        return self._store

    @property
    def run_log(self) -> RunLog | None:
        return self._client.current_run_log if self._client is not None else None

    @property
    def artifact_dir(self) -> Path:
        """The current run's own directory (only while a component or @hub_run runs)."""
        run = self.run_log
        if run is None or run.artifact_dir is None:
            raise RuntimeError("ctx.artifact_dir exists only while a component run is active")
        return run.artifact_dir

    @property
    def project_dir(self) -> Path:
        return self.store.root

    @property
    def tags(self) -> dict[str, str]:
        return dict(self._tags)

    def set_tags(self, **tags: str) -> None:
        for key, value in tags.items():
            if not isinstance(value, str):
                raise TypeError(f"tag {key!r} must be a string, got {type(value).__name__}")
        self._tags = dict(tags)

    def device(self, name: str) -> Device:
        try:
            return self._devices[name]
        except KeyError:
            raise DeviceError(
                f"device {name!r} not in {self.device_source}; known: {', '.join(self._devices)}"
            ) from None

    def fetch_artifact(self, artifact: LoggedArtifact, target_dir: Path | None) -> Path:
        """Download a remote artifact through its device's runner (`LoggedArtifact.to_local`)."""
        from edgehub.core.transfer import fetch_artifact

        return fetch_artifact(self, artifact, target_dir)

    def push_artifact(
        self,
        artifact: LoggedArtifact,
        device_name: str | None,
        target_dir: PurePosixPath | None,
    ) -> tuple[PurePosixPath, str]:
        """Upload a local artifact through a device's runner (`LoggedArtifact.to_remote`)."""
        from edgehub.core.transfer import push_artifact

        return push_artifact(self, artifact, device_name, target_dir)

    @contextmanager
    def holding(self, held: Device) -> Iterator[Device]:
        """``held`` stands for the device of its name while the block runs (a board held at an
        address known only then, as a labgrid place's: a copy of the device with a runner to
        it): `device` and `devices` give it; the device as configured comes back after. The
        configured device is left as it is; ``held``'s runner is its holder's to close."""
        own = self.device(held.name)
        self._devices[held.name] = held
        try:
            yield held
        finally:
            self._devices[held.name] = own

    # -- runs --------------------------------------------------------------------------------
    @contextmanager
    def children_of(self, run_id: str) -> Iterator[None]:
        """Every run opened in this context meanwhile (components' runs too) is a child of
        ``run_id``, whatever its inputs would make its parent: one operation's runs, linked."""
        previous, self._group = self._group, run_id
        try:
            yield
        finally:
            self._group = previous

    @contextmanager
    def open_run(
        self,
        run_type: RunType | str,
        name: str,
        *,
        component: str | None = None,
        parent_run_id: str | None = None,
        devices: Sequence[Device] = (),
    ) -> Iterator[RunLog]:
        """Open a tracked run; it ends FINISHED, FAILED (exception) or KILLED (Ctrl-C)."""
        if not self._active:
            raise RuntimeError("HubContext is not active: use `with HubContext(...) as ctx:`")
        from edgehub import __version__

        env = {"host": host_description(), "python": python_version(), "edgehub": __version__}
        for device in devices:
            env[f"device.{device.name}"] = device.spec.device_name or device.name
        with self.client.start_run(
            run_type,
            name,
            component=component,
            parent_run_id=self._group or parent_run_id,
            tags=self._tags,
            device=devices[0].name if devices else None,
            environment=env,  # recorded with the run, in its first transaction
        ) as run:
            for device in devices:
                run.devices[device.name] = {
                    "provider_type": device.provider_type,
                    "device_name": device.spec.device_name,
                }
            try:
                yield run
            except OperationCancelled:
                if self._cancel_reason is None:
                    raise
                raise self._cancel_reason from None  # the run ends FAILED, not KILLED
            if self._cancel_reason is not None:  # timed out while none of its commands ran
                raise self._cancel_reason

    # -- shared resources for providers -------------------------------------------------------
    def docker_runner(
        self,
        image: str,
        *,
        cpus: float | None = None,
        memory: str | None = None,
        keep_warm: float | None = None,
        gpus: str | None = None,
        host: str | None = None,
    ) -> DockerCommandRunner:
        """The context's runner for ``image``: with ``keep_warm`` its container is adopted or
        started now and left running for the next process; without, each agent job runs in a
        container of its own, and every container is removed on exit; ``gpus`` ("all")
        passes NVIDIA GPUs through; ``host``: the daemon (default: ``$DOCKER_HOST``'s); with
        `pin_cpus` set, the container is pinned to those CPUs (a Docker cpuset)."""
        from edgehub.runners.docker import DockerCommandRunner

        key = (image, cpus, memory, keep_warm, gpus, host, self.pin_cpus)
        with self._lock:
            runner = self._docker.get(key)
            if runner is None:
                runner = DockerCommandRunner(
                    image,
                    cpus=cpus,
                    memory=memory,
                    keep_warm=keep_warm,
                    gpus=gpus,
                    host=host,
                    cpuset=self.pin_cpus,
                )
                runner.prepare()  # a cold one starts a container per job only
                self._docker[key] = runner
        return runner

    def device_workspace(self, device_name: str) -> PurePosixPath:
        """This context's scratch directory on a device (removed when the context exits); in
        the connection's work folder where the runner has one (so it also goes when the
        connection ends, however this process ends)."""
        device = self.device(device_name)
        if device.runner is None:
            raise DeviceError(f"device {device_name!r} has no runner to hold files")
        runner = device.runner
        with self._lock:
            path = self._workspaces.get(device_name)
        if _holds_work_folder(runner):
            # this connection's (a new one after a reconnection)
            base = cast(SupportsWorkFolder, runner).work_folder()
            wanted = path if path is not None and path.parent == base else base / self._id
        else:
            wanted = path or PurePosixPath(f"/tmp/edgehub-{self._id}")
        if wanted != path:
            runner.run(["mkdir", "-p", str(wanted)], hide=True)
            with self._lock:
                self._workspaces[device_name] = wanted
        return wanted

    def device_run_dir(self, device_name: str) -> PurePosixPath:
        """The current run's directory on a device (created on first use)."""
        base = self.device_workspace(device_name)
        path = base / self.artifact_dir.name
        runner = self.device(device_name).runner
        assert runner is not None
        runner.run(["mkdir", "-p", str(path)], hide=True)
        return path
