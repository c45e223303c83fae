"""The container a `DockerCommandRunner` works in: its settings, hardening, start and removal.

Every container runs under Docker's init with no network (unless asked), all capabilities
dropped, ``no-new-privileges``, a read-only root filesystem with a writable work directory (an
anonymous volume, removed with the container) and ``/tmp`` (tmpfs, also its
``XDG_CACHE_HOME``), and limits on memory (default `DEFAULT_MEMORY`), processes
(`DEFAULT_PIDS`) and, if set, CPUs. A plain container runs ``sleep infinity`` and belongs to
this process (labels name it); a warm one is shared (``docker/warm.py``).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgehub.errors import ImageNotBuiltError, RunnerError
from edgehub.ids import random_hex
from edgehub.runners.docker.client import DockerAPIError, DockerClient, DockerNotFound, connect
from edgehub.runners.docker.owner import owner_labels

DEFAULT_MEMORY = "4g"
DEFAULT_PIDS = 1024  # threads count too: a runtime may start one per core and per session
UID_LABEL = "org.edgehub.uid"  # the image's user, so uploads need not ask the container
GID_LABEL = "org.edgehub.gid"
_SCRATCH = "rw,exec,nosuid,nodev"
# Caches of what runs inside (ONNX Runtime keeps its telemetry device ID there and, finding no
# writable ~/.cache on the read-only root, warns on every start): the tmpfs, gone with the
# container, from which nothing leaves (no network).
CACHE_HOME = "/tmp/.cache"
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(size: str) -> int:
    """``"512m"``, ``"4g"``, ``"1073741824"`` as a byte count."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*", size.lower())
    if match is None:
        raise RunnerError(f"invalid memory limit {size!r}; write it like 512m or 4g")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


@dataclass(frozen=True)
class ContainerSettings:
    """What a container is made of; equal settings may share one warm container."""

    image: str
    cpus: float | None = None
    memory: str | None = DEFAULT_MEMORY
    pids: int | None = DEFAULT_PIDS
    network: bool = False
    user: str | None = None
    workdir: str = "/work"
    labels: Mapping[str, str] = field(default_factory=dict)
    gpus: str | None = None  # "all", or a count ("1"): NVIDIA GPUs passed through
    cpuset: str | None = None  # the host CPUs the container may use ("0-1,3"): --pin-cpus

    def config(
        self, command: list[str], image_attrs: Mapping[str, Any], labels: Mapping[str, str]
    ) -> dict[str, Any]:
        """The Engine API create body: hardened host config, the limits, the labels."""
        host: dict[str, Any] = {
            "Init": True,
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "ReadonlyRootfs": True,
            "Tmpfs": {"/tmp": f"{_SCRATCH},mode=1777"},
            # An anonymous volume, removed with the container: filled from the image's own
            # directory, so it keeps that directory's owner (a tmpfs would belong to root).
            "Mounts": [{"Type": "volume", "Target": self.workdir}],
        }
        if not self.network:
            host["NetworkMode"] = "none"
        if self.cpus is not None:
            host["NanoCpus"] = int(self.cpus * 1e9)
        if self.cpuset is not None:
            host["CpusetCpus"] = self.cpuset
        if self.memory is not None:
            host["Memory"] = parse_bytes(self.memory)
        if self.pids is not None:
            host["PidsLimit"] = self.pids
        if self.gpus is not None:
            count = -1 if self.gpus == "all" else int(self.gpus)
            host["DeviceRequests"] = [
                {"Driver": "nvidia", "Count": count, "Capabilities": [["gpu"]]}
            ]
        config: dict[str, Any] = {
            "Image": self.image,
            "Cmd": command,
            "Labels": {**self.labels, **labels},
            "WorkingDir": self.workdir,
            "Env": [f"XDG_CACHE_HOME={CACHE_HOME}"],
            "HostConfig": host,
        }
        if self.user is not None:
            config["User"] = self.user
        return config


def image_owner(image_attrs: Mapping[str, Any]) -> tuple[int, int] | None:
    """The (uid, gid) an image declares in its labels, if it does."""
    labels = (image_attrs.get("Config") or {}).get("Labels") or {}
    uid = str(labels.get(UID_LABEL, ""))
    if not uid.isdigit():
        return None
    gid = str(labels.get(GID_LABEL, uid))
    return int(uid), int(gid) if gid.isdigit() else int(uid)


class Container:
    """One running container of ``settings`` (started on first `ensure`)."""

    def __init__(
        self,
        settings: ContainerSettings,
        client: DockerClient | None = None,
        host: str | None = None,
    ) -> None:
        self.settings = settings
        self.host = host
        self.client: DockerClient | None = client
        self._own_client = client is None
        self.id: str | None = None
        self.image_attrs: dict[str, Any] = {}
        self.pending_name: str | None = None
        self.channel: Path | None = None  # the host folder of a warm container's agent channel
        self.lock = threading.RLock()

    def connect(self) -> DockerClient:
        with self.lock:
            if self.client is None:
                self.client = connect(host=self.host, ping=False)  # its first request asks
            return self.client

    def inspect_image(self) -> dict[str, Any]:
        client = self.connect()
        if not self.image_attrs:
            try:
                self.image_attrs = client.inspect_image(self.settings.image)
            except DockerNotFound:
                message = _missing_image_message(self.settings.image, self.host)
                raise ImageNotBuiltError(message) from None
        return self.image_attrs

    def uid(self) -> int | None:
        """The user id its processes run as (from the settings, else the image's label)."""
        user = self.settings.user
        if user is None:
            owner = image_owner(self.image_attrs)
            return None if owner is None else owner[0]
        uid = user.partition(":")[0]
        return int(uid) if uid.isdigit() else None

    def shared_folder(self, make: Callable[[], Path]) -> Path | None:
        """The host folder ``make()`` makes, given to the user the container runs as, to mount
        there; None where that cannot work: a daemon on another machine, a container user that
        this process can neither be nor give the folder to, or no folder made (OSError)."""
        uid = self.uid()
        client = self.client
        if client is None or not client.local or uid is None or os.geteuid() not in (0, uid):
            return None
        try:
            folder = make()
            if os.geteuid() != uid:
                os.chown(folder, uid, -1, follow_symlinks=False)
        except OSError:
            return None
        return folder

    def start(self) -> str:
        """Create and start a container owned by this process; its id."""
        from edgehub.runners.docker.reaper import reap

        client = self.connect()
        attrs = self.inspect_image()
        reap(client, jobs=False)  # tidy up after dead processes; never fails
        config = self.settings.config(["sleep", "infinity"], attrs, owner_labels())
        # Known by name before it exists, so `remove` can delete a container whose creation
        # was interrupted.
        self.pending_name = f"edgehub-{os.getpid()}-{random_hex(8)}"
        try:
            self.id = client.create_container(config, self.pending_name)
            client.start_container(self.id)
        except DockerAPIError as error:
            raise RunnerError(
                f"cannot start a container of {self.settings.image}: {error.explanation}; "
                "check the runner's cpus/memory/user settings"
            ) from error
        self.pending_name = None
        return self.id

    def remove(self) -> None:
        """Remove the container (or the one being created); idempotent."""
        with self.lock:
            target = self.id or self.pending_name
            self.id = self.pending_name = self.channel = None
            client = self.client
        if target is not None and client is not None:
            force_remove(client, target, target[:12])

    def forget(self) -> None:
        """Let go of the container without removing it (a warm one lives on)."""
        with self.lock:
            self.id = self.pending_name = self.channel = None

    def close_client(self) -> None:
        with self.lock:
            client, self.client = self.client, None
        if client is not None and self._own_client:
            client.close()
        elif client is not None:
            self.client = client  # a client handed in stays with its owner


def force_remove(client: DockerClient, name: str, shown: str | None = None) -> None:
    """Remove container ``name`` (gone already is fine); else a `RunnerError` saying how to
    remove it by hand (naming it ``shown``, default ``name``)."""
    try:
        client.remove_container(name)
    except DockerNotFound:
        pass
    except (DockerAPIError, OSError) as error:
        shown = shown or name
        explanation = getattr(error, "explanation", None) or error
        raise RunnerError(
            f"cannot remove container {shown}: {explanation}; remove it with: docker rm -f {shown}"
        ) from error


def _missing_image_message(image: str, host: str | None) -> str:
    match = re.fullmatch(r"edgehub-([a-z0-9]+):[0-9a-f]+", image)
    where = f" on {host}" if host else ""
    if match:
        run = f"DOCKER_HOST={host} hub images build" if host else "hub images build"
        return f"image {image!r} is not built{where}; run: {run} {match.group(1)}"
    return f"image {image!r} is not present in the Docker daemon{where}; build or load it first"
