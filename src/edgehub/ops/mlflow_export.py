"""`hub runs export RUN... --to mlflow`: runs written to an MLflow tracking server or store.

Each run becomes one MLflow run in the experiment asked for (default: the project's name): its
params, its metrics (latency percentiles, accuracy figures, ...), tags for its device, runtime,
image digest, type and status, and as artifacts the raw latency samples of a profile
(``latency_samples_us.csv``) and its tables as CSV (``tables/stats.csv``, ``tables/layers.csv``).
The MLflow run carries the tag ``edgehub.run_id``; exporting a run again finds it by that tag
and updates it (metrics whose value changed, tags, artifacts) instead of adding another.

MLflow is an optional extra (``pip install 'edgehub[mlflow]'``), imported only here, when an
export runs. Names MLflow refuses (``$latency``) are written with the odd characters replaced.
A server out of reach fails in bounded time (MLflow's retries capped unless set in the
environment) as an `EnvironmentProblem` (exit 3).
"""

from __future__ import annotations

import csv
import json
import os
import re
import tempfile
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import EnvironmentProblem, UsageError

if TYPE_CHECKING:
    from edgehub.ops.project import Project
    from edgehub.tracking.records import RunRecord


RUN_ID_TAG = "edgehub.run_id"
_BAD = re.compile(r"[^0-9A-Za-z_\-. /]")
_MAX_PARAM = 6000  # characters MLflow keeps of a param value
_STATUS = {"FINISHED": "FINISHED", "FAILED": "FAILED", "KILLED": "KILLED"}
_BOUNDED = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}


@dataclass
class MlflowExport:
    """What an export did: each edgehub run id with its MLflow run id, created or updated."""

    tracking_uri: str
    experiment: str
    created: dict[str, str] = field(default_factory=dict)
    updated: dict[str, str] = field(default_factory=dict)


def _client(tracking_uri: str) -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise UsageError(
            "exporting to MLflow needs the mlflow extra: pip install 'edgehub[mlflow]'"
        ) from None
    if tracking_uri.startswith("file:") or "://" not in tracking_uri:  # a local folder
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    for name, value in _BOUNDED.items():  # a server out of reach fails in seconds, not minutes
        os.environ.setdefault(name, value)
    return MlflowClient(tracking_uri=tracking_uri)


def _key(name: str) -> str:
    return _BAD.sub("_", name.lstrip("$")) or "_"


def export_to_mlflow(
    project: Project,
    refs: list[str],
    *,
    tracking_uri: str | None = None,
    experiment: str | None = None,
) -> MlflowExport:
    """Write the runs ``refs`` name to MLflow at ``tracking_uri`` (default: MLflow's own,
    ``$MLFLOW_TRACKING_URI``, else ``./mlruns``) under ``experiment``."""
    with closing(project.store()) as store:
        records = [store.get_run(store.resolve_id(ref)) for ref in refs]
    for record in records:
        if record.status == "RUNNING":
            raise UsageError(f"run {record.run_id[:8]} is still running; export it once it ended")
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "file:./mlruns"
    client = _client(uri)
    name = experiment or project.config.project.name
    try:
        found = client.get_experiment_by_name(name)
        experiment_id = found.experiment_id if found else client.create_experiment(name)
        result = MlflowExport(uri, name)
        for record in records:
            run_id, created = _write(client, experiment_id, record)
            (result.created if created else result.updated)[record.run_id] = run_id
    except UsageError:
        raise
    except Exception as error:  # MLflow's own errors: a bad URI, an unreachable server
        raise EnvironmentProblem(
            f"MLflow at {uri} failed the export ({_first_line(error)}); check --tracking-uri "
            "and that the server is up"
        ) from error
    return result


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    line = f"{type(error).__name__}: {text[0] if text else ''}"
    return line if len(line) <= 240 else line[:237] + "..."


def _write(client: Any, experiment_id: str, record: RunRecord) -> tuple[str, bool]:
    from mlflow.entities import Metric, Param, RunTag

    query = f"tags.`{RUN_ID_TAG}` = '{record.run_id}'"
    existing = client.search_runs([experiment_id], query, max_results=1)
    created, started = not existing, int(record.started_at * 1000)
    run = (
        existing[0] if existing else client.create_run(experiment_id, started, run_name=record.name)
    )
    mlflow_id = str(run.info.run_id)
    old_metrics = dict(run.data.metrics)
    old_params = dict(run.data.params)
    when = int((record.ended_at or record.started_at) * 1000)
    values = _by_key(record.metrics)
    metrics = [Metric(k, float(v), when, 0) for k, v in values.items() if old_metrics.get(k) != v]
    params = [
        Param(k, text)
        for k, v in _by_key(record.params).items()
        if (text := _param_text(v)) is not None and k not in old_params
    ]
    tags = [RunTag(k, v) for k, v in _tags(record).items()]
    for start in range(0, max(len(metrics), len(params), len(tags)), 100):  # MLflow's batch cap
        client.log_batch(
            mlflow_id,
            metrics=metrics[start : start + 100],
            params=params[start : start + 100],
            tags=tags[start : start + 100],
        )
    _log_tables(client, mlflow_id, record)
    client.set_terminated(mlflow_id, _STATUS.get(record.status, "FAILED"), end_time=when)
    return mlflow_id, created


def _by_key(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` under names MLflow takes; of two that become one name, the first kept."""
    found: dict[str, Any] = {}
    for name, value in sorted(values.items(), key=lambda item: item[0].startswith("$")):
        found.setdefault(_key(name), value)
    return found


def _param_text(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:_MAX_PARAM]


def _tags(record: RunRecord) -> dict[str, str]:
    env = record.environment
    tags = {
        RUN_ID_TAG: record.run_id,
        "edgehub.run_type": record.run_type,
        "edgehub.status": record.status,
        "mlflow.runName": record.name,
        "device": record.device or "",
        "runtime": record.runtime or env.get("runtime", ""),
        "image": env.get("image", ""),
        "image_digest": env.get("image_digest", ""),
    }
    if record.parent_run_id:
        tags["edgehub.parent_run_id"] = record.parent_run_id
    for name, value in record.tags.items():
        tags[f"edgehub.tag.{_key(name)}"] = value
    return {k: v for k, v in tags.items() if v}


def _log_tables(client: Any, mlflow_id: str, record: RunRecord) -> None:
    """The raw latency samples and the profile's tables as CSV files, where the run has them."""
    document = _profile_document(record)
    if document is None:
        return
    with tempfile.TemporaryDirectory(prefix="edgehub-mlflow-") as folder:
        root = Path(folder)
        samples = document.get("samples_us")
        if isinstance(samples, list) and samples:
            _csv(root / "latency_samples_us.csv", ["run", "latency_us"], enumerate(samples))
            client.log_artifact(mlflow_id, str(root / "latency_samples_us.csv"))
        tables = root / "tables"
        tables.mkdir()
        stats = document.get("stats")
        if isinstance(stats, dict):
            _csv(tables / "stats.csv", ["name", "value"], sorted(stats.items()))
        layers = document.get("layers")
        if isinstance(layers, list) and layers and all(isinstance(r, dict) for r in layers):
            columns = list(dict.fromkeys(k for row in layers for k in row))
            rows = ([row.get(c, "") for c in columns] for row in layers)
            _csv(tables / "layers.csv", columns, rows)
        if any(tables.iterdir()):
            client.log_artifacts(mlflow_id, str(tables), "tables")


def _csv(path: Path, header: list[str], rows: Any) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _profile_document(record: RunRecord) -> dict[str, Any] | None:
    artifact = record.artifacts.get("output_file")
    if record.run_type != "PROFILE" or artifact is None or not artifact.is_stored:
        return None
    from edgehub.ops.reports import read_json

    path = Path(artifact.file_path)
    document = read_json(path) if path.suffix == ".json" else None
    return document if isinstance(document, dict) else None
