"""Warm containers: one per settings, shared by processes, gone after ``keep_warm`` idle seconds.

The container's main process exits (and auto-remove deletes the container) once no command has
started or ended for that long; every command touches a file to say it did.
"""

from __future__ import annotations

import os
import time
from typing import Any

from edgehub.errors import RunnerError
from edgehub.runners.docker_cleanup import MANAGED
from edgehub.runners.docker_exec import explain

__all__ = ["TOUCH_WRAPPER", "WARM", "WARM_KEY", "WarmContainer"]

WARM = "org.edgehub.warm"
WARM_KEY = "org.edgehub.warm-key"
_ALIVE = "/tmp/.edgehub-alive"
# A warm container's main process: exit (and so, with auto-remove, vanish) once no command has
# started or ended for IDLE seconds.
_IDLE_LOOP = (
    f"touch {_ALIVE}; while [ $(( $(date +%s) - $(stat -c %Y {_ALIVE}) )) -lt $0 ]; "
    "do sleep 1; done"
)
TOUCH_WRAPPER = f'touch {_ALIVE} 2>/dev/null; "$@"; rc=$?; touch {_ALIVE} 2>/dev/null; exit $rc'


class WarmContainer:
    """Starts or adopts the warm container of a `DockerCommandRunner` with ``keep_warm``."""

    _image: str
    _image_attrs: dict[str, Any]
    _cpus: float | None
    _memory: str | None
    _network: bool
    _user: str | None
    _workdir: str
    _labels: dict[str, str]
    _keep_warm: float | None
    _container_id: str | None
    _client: Any

    def _container_options(self, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
        raise NotImplementedError  # provided by DockerCommandRunner

    def _warm_key(self) -> str:
        import hashlib

        settings = [
            self._image_attrs.get("Id"),
            self._cpus,
            self._memory,
            self._network,
            self._user,
            self._workdir,
            sorted(self._labels.items()),
            os.getuid(),
        ]
        return hashlib.sha256(repr(settings).encode()).hexdigest()[:16]

    def _adopt_warm_lite(self) -> str | None:
        """Adopt the running warm container through `LiteClient` (no docker SDK import);
        ``None`` when there is none, or anything else than a plain local daemon."""
        from edgehub.runners.docker_lite import LiteClient, LiteError, local_socket

        path = local_socket()
        if path is None:
            return None
        client = LiteClient(path)
        try:
            self._image_attrs = client.api.inspect_image(self._image)
            info = client.api.inspect_container(f"edgehub-warm-{self._warm_key()}")
        except (LiteError, OSError, ValueError):
            self._image_attrs = {}
            return None
        if not (info.get("State") or {}).get("Running"):
            self._image_attrs = {}
            return None
        self._client = client
        self._container_id = str(info["Id"])
        return self._container_id

    def _start_warm(self, client: Any) -> str:
        """Reuse the running warm container with these settings, or start one that removes
        itself after ``keep_warm`` idle seconds."""
        import docker.errors

        key = self._warm_key()
        name = f"edgehub-warm-{key}"
        for _ in range(3):
            try:
                info = client.api.inspect_container(name)
                if info["State"]["Running"]:
                    self._container_id = str(info["Id"])
                    return self._container_id
                client.api.remove_container(name, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                time.sleep(0.2)  # being removed by its idle exit, or by a racing process
                continue
            labels = {**self._labels, MANAGED: "1", WARM: "1", WARM_KEY: key}
            options = self._container_options(labels, auto_remove=True)
            try:
                container = client.containers.create(
                    self._image,
                    ["sh", "-c", _IDLE_LOOP, str(int(self._keep_warm or 0))],
                    name=name,
                    **options,
                )
                container.start()
                self._container_id = str(container.id)
                return self._container_id
            except docker.errors.APIError as error:
                if getattr(error, "status_code", None) == 409:
                    continue  # another process created it first: adopt it
                raise RunnerError(
                    f"cannot start a warm container of {self._image}: {explain(error)}"
                ) from error
        raise RunnerError(f"cannot start or reuse the warm container {name}; try again")
