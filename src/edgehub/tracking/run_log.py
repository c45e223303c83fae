"""What a run logged, as typed values: params, metrics and artifacts.

These are records: a logged artifact's ``to_local`` / ``to_remote`` ask the context they are
given (`MovesArtifacts`, which `HubContext` is) to move its file through the device's runner;
nothing here reaches a transport."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from edgehub.paths import LocalPath, RemotePath, is_remote


class MovesArtifacts(Protocol):
    """What moves a logged artifact's file between this machine and a device: the context
    that holds the devices' runners (`HubContext`)."""

    def fetch_artifact(
        self, artifact: LoggedArtifact, target_dir: LocalPath | None
    ) -> LocalPath: ...

    def push_artifact(
        self, artifact: LoggedArtifact, device_name: str | None, target_dir: RemotePath | None
    ) -> tuple[RemotePath, str]: ...


@dataclass(frozen=True)
class LoggedParam:
    name: str
    value: Any
    logged_at: float = 0.0


@dataclass(frozen=True)
class LoggedMetric:
    name: str
    value: float
    step: int | None = None
    logged_at: float = 0.0


@dataclass(frozen=True)
class LoggedArtifact:
    """A file or directory a run logged, local (a `Path`) or on a device (a `RemotePath`)."""

    id: str
    file_name: str
    file_size: int
    logged_at: float
    file_path: LocalPath | RemotePath
    name: str | None = None
    device: str | None = None
    artifact_dir: LocalPath | None = None
    sha256: str | None = None

    @property
    def is_remote(self) -> bool:
        return is_remote(self.file_path)

    @property
    def is_local(self) -> bool:
        return isinstance(self.file_path, Path)

    @property
    def is_stored(self) -> bool:
        """A copy of the content is in the run store (else only its path was recorded)."""
        return self.sha256 is not None and self.device is None

    def local(self) -> LocalPath:
        if not isinstance(self.file_path, Path):
            raise RuntimeError(
                f"artifact {self.file_name!r} lives on device {self.device!r}; "
                "call .to_local(ctx) first"
            )
        return self.file_path

    def remote(self) -> RemotePath:
        if isinstance(self.file_path, Path):
            raise RuntimeError(
                f"artifact {self.file_name!r} is local; call .to_remote(ctx, device_name) first"
            )
        return PurePosixPath(self.file_path)

    def to_local(self, ctx: MovesArtifacts, target_dir: LocalPath | None = None) -> LoggedArtifact:
        """This artifact on the local machine, fetched through its device's runner if needed."""
        if self.is_local:
            if target_dir is not None:
                raise RuntimeError("artifact is already local; target_dir does not apply")
            return self
        local = ctx.fetch_artifact(self, target_dir)
        return replace(self, file_path=local, device=None, artifact_dir=local.parent)

    def to_remote(
        self,
        ctx: MovesArtifacts,
        device_name: str | None = None,
        target_dir: RemotePath | None = None,
    ) -> LoggedArtifact:
        """This artifact on device ``device_name``, uploaded through its runner if needed."""
        if self.is_remote:
            if target_dir is not None:
                raise RuntimeError("artifact is already remote; target_dir does not apply")
            return self
        remote, device = ctx.push_artifact(self, device_name, target_dir)
        return replace(self, file_path=remote, device=device)


@dataclass
class RunLog:
    """Everything one run logged, kept in memory while it runs and rebuilt from the store."""

    run_id: str
    name: str
    run_type: str
    status: str = "RUNNING"
    project: str = ""
    component: str | None = None
    parent_run_id: str | None = None
    started_at: float = 0.0
    ended_at: float | None = None
    artifact_dir: LocalPath | None = None
    output_type: str | None = None
    error: str | None = None
    params: dict[str, LoggedParam] = field(default_factory=dict)
    metrics: dict[str, LoggedMetric] = field(default_factory=dict)
    metric_history: dict[str, list[LoggedMetric]] = field(default_factory=dict)
    artifacts: dict[str, LoggedArtifact] = field(default_factory=dict)
    unnamed_artifacts: list[LoggedArtifact] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.run_id

    @property
    def named_artifacts(self) -> dict[str, LoggedArtifact]:
        return self.artifacts
