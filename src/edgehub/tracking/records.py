"""`RunRecord`: a stored run as the store returns it, and `RunFilter`: which runs to list.

Field names are `RunLog`'s (``run_id``, ``run_type``, ``parent_run_id``, ...). A record holds plain
values where a `RunLog` holds logged entries: ``params`` maps names to values and ``metrics``
to their last value; the logged entries with their times are in ``metric_history``.
"""

from __future__ import annotations

from copy import copy
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric, LoggedParam, RunLog

RUN_STATUSES = ("RUNNING", "FINISHED", "FAILED", "KILLED")
# the tag `hub runs import` sets on each run it adds ("<bundle file name>, <time>"): a run made
# elsewhere, never a compile-cache hit nor a --from-run model
IMPORTED_TAG = "imported_from"


@dataclass
class RunRecord:
    """One run read from the store, with its params, metrics, artifacts, tags, environment."""

    run_id: str
    name: str
    run_type: str
    status: str
    project: str
    component: str | None
    parent_run_id: str | None
    started_at: float
    ended_at: float | None
    artifact_dir: Path | None
    output_type: str | None
    error: str | None
    host: str | None
    pid: int | None
    device: str | None
    runtime: str | None
    model_sha256: str | None
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    metric_history: dict[str, list[LoggedMetric]] = field(default_factory=dict)
    artifacts: dict[str, LoggedArtifact] = field(default_factory=dict)
    unnamed_artifacts: list[LoggedArtifact] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.run_id

    @property
    def duration_s(self) -> float | None:
        return None if self.ended_at is None else self.ended_at - self.started_at

    @property
    def all_artifacts(self) -> list[LoggedArtifact]:
        """Named and unnamed artifacts in the order they were logged."""
        found = [*self.artifacts.values(), *self.unnamed_artifacts]
        return sorted(found, key=lambda a: a.logged_at)

    def to_run_log(self) -> RunLog:
        """This record as a `RunLog`, from which component outputs are rebuilt: the fields
        both have are copied by name, the plain values become logged entries."""
        shared = {
            f.name: copy(getattr(self, f.name)) for f in fields(RunLog) if hasattr(self, f.name)
        }
        log = RunLog(
            **{
                **shared,
                "params": {k: LoggedParam(k, v) for k, v in self.params.items()},
                "metrics": {k: v[-1] for k, v in self.metric_history.items() if v},
                "metric_history": {k: list(v) for k, v in self.metric_history.items()},
            }
        )
        if self.device:
            log.devices[self.device] = {}
        return log

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: plain values, paths as strings, artifacts as a list in logged order."""
        plain = {f.name: copy(getattr(self, f.name)) for f in fields(self)}
        del plain["unnamed_artifacts"]
        return {
            **plain,
            "duration_s": self.duration_s,
            "artifact_dir": str(self.artifact_dir) if self.artifact_dir else None,
            "metric_history": {
                k: [{"value": m.value, "step": m.step, "logged_at": m.logged_at} for m in v]
                for k, v in self.metric_history.items()
            },
            "artifacts": [_artifact_dict(a) for a in self.all_artifacts],
        }


def _artifact_dict(artifact: LoggedArtifact) -> dict[str, Any]:
    return {
        "name": artifact.name,
        "file_name": artifact.file_name,
        "file_size": artifact.file_size,
        "path": str(artifact.file_path),
        "sha256": artifact.sha256,
        "device": artifact.device,
        "stored": artifact.is_stored,
        "logged_at": artifact.logged_at,
    }


@dataclass(frozen=True)
class RunFilter:
    """Which runs `RunStore.query_runs` returns, newest first. ``None`` means any.

    ``status`` is the effective status (a ``RUNNING`` run whose process died reads ``KILLED``);
    ``model_sha256`` and ``name`` match literally, ``model_sha256`` also by a prefix;
    ``runtime`` is the runtime a run recorded (``onnxruntime``, ...); ``cached`` keeps only
    compiles that reused a stored compile (tagged ``cached_from``); ``limit=None`` is all."""

    run_type: str | None = None
    status: str | None = None
    device: str | None = None
    runtime: str | None = None
    model_sha256: str | None = None
    name: str | None = None
    project: str | None = None
    parent_run_id: str | None = None
    started_after: float | None = None
    started_before: float | None = None
    cached: bool = False
    limit: int | None = 50
    offset: int = 0
