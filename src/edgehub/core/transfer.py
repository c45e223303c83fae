"""Moving logged artifacts between the local machine and devices through their runners."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from edgehub.errors import DeviceError

if TYPE_CHECKING:
    from edgehub.core.context import HubContext
    from edgehub.tracking.run_log import LoggedArtifact

__all__ = ["fetch_artifact", "push_artifact"]


def fetch_artifact(ctx: HubContext, artifact: LoggedArtifact, target_dir: Path | None) -> Path:
    """Download a remote artifact (file or directory) and return its local path."""
    if artifact.device is None:
        raise DeviceError(
            f"remote artifact {artifact.file_name!r} does not say which device holds it"
        )
    device = ctx.device(artifact.device)
    if device.runner is None:
        raise DeviceError(f"device {artifact.device!r} has no runner to fetch files with")
    if target_dir is None:
        try:
            base = ctx.artifact_dir
        except RuntimeError:
            base = ctx.store.root / "downloads"
        target_dir = base / f"remote_{artifact.device}"
    target_dir.mkdir(parents=True, exist_ok=True)
    local = target_dir / artifact.file_name
    device.runner.get(artifact.remote(), local)
    return local


def push_artifact(
    ctx: HubContext,
    artifact: LoggedArtifact,
    device_name: str | None,
    target_dir: PurePosixPath | None,
) -> tuple[PurePosixPath, str]:
    """Upload a local artifact (file or directory) to a device; returns (remote path, device)."""
    if device_name is None:
        candidates = [name for name, dev in ctx.devices.items() if dev.name != "local"]
        if len(candidates) != 1:
            raise DeviceError(
                "to_remote needs device_name: the context has "
                f"{', '.join(candidates) or 'no remote devices'}"
            )
        device_name = candidates[0]
    device = ctx.device(device_name)
    if device.runner is None:
        raise DeviceError(f"device {device_name!r} has no runner to upload files with")
    if target_dir is None:
        try:
            target_dir = ctx.device_run_dir(device_name)
        except RuntimeError:
            target_dir = ctx.device_workspace(device_name)
    else:
        device.runner.run(["mkdir", "-p", str(target_dir)], hide=True)
    remote = PurePosixPath(target_dir) / artifact.file_name
    device.runner.put(artifact.local(), remote)
    return remote, device_name
