"""Local run tracking: a SQLite store, content-addressed artifacts and the logging client."""

from edgehub.tracking.client import Client
from edgehub.tracking.compare import MetricDelta, RunComparison, ValueDiff, compare_runs
from edgehub.tracking.records import RunFilter, RunRecord
from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric, LoggedParam, RunLog
from edgehub.tracking.run_type import RunType
from edgehub.tracking.store import RunStore

__all__ = [
    "Client",
    "LoggedArtifact",
    "LoggedMetric",
    "LoggedParam",
    "MetricDelta",
    "RunComparison",
    "RunFilter",
    "RunLog",
    "RunRecord",
    "RunStore",
    "RunType",
    "ValueDiff",
    "compare_runs",
]
