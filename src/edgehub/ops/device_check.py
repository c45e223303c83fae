"""`check_device`: can edgehub reach a device of hub.toml right now?

Local devices need the Docker daemon; devices with an ``ssh`` table are connected to (host key
checked against known_hosts) and asked ``uname -srm``; cloud devices are not contacted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.errors import EdgehubError
from edgehub.ops.doctor import Check

if TYPE_CHECKING:
    from edgehub.ops.project import Project

__all__ = ["check_device"]

CLOUD = ("qai_hub", "aws")


def check_device(project: Project, name: str, *, timeout: float = 20.0) -> Check:
    """One `Check` for device ``name``: ``ok``, ``FAIL`` or ``warn`` (not checkable here)."""
    from edgehub.config.devices import to_device

    config = project.config
    device = to_device(config, name)
    section = config.devices[name]
    if section.provider in CLOUD:
        return Check(name, "warn", f"{section.provider} device: not contacted from here")
    if section.provider == "local":
        return _docker(name)
    if device.runner is None:
        return Check(name, "warn", "no runner: nothing to check")
    try:
        with device.runner as runner:
            result = runner.run(["uname", "-srm"], hide=True, timeout=timeout, check=False)
    except EdgehubError as error:
        return Check(name, "FAIL", str(error))
    if not result.ok:
        return Check(name, "FAIL", (result.stderr or result.stdout).strip()[:200])
    return Check(name, "ok", result.stdout.strip())


def _docker(name: str) -> Check:
    from edgehub import images

    try:
        images.docker_client().close()
    except EdgehubError as error:
        return Check(name, "FAIL", str(error))
    return Check(name, "ok", "Docker daemon reachable")
