"""Local run tracking: a SQLite store, content-addressed artifacts and the logging client.

The names below load with their module on first use (a warm invoke needs the client and the
store, not the comparison of runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgehub.lazy import names_from

if TYPE_CHECKING:
    from edgehub.tracking.client import Client
    from edgehub.tracking.compare import MetricDelta, RunComparison, ValueDiff, compare_runs
    from edgehub.tracking.records import RunFilter, RunRecord
    from edgehub.tracking.run_log import LoggedArtifact, LoggedMetric, LoggedParam, RunLog
    from edgehub.tracking.run_type import RunType
    from edgehub.tracking.store import RunStore

_HOMES = {
    "Client": "client",
    "LoggedArtifact": "run_log",
    "LoggedMetric": "run_log",
    "LoggedParam": "run_log",
    "MetricDelta": "compare",
    "RunComparison": "compare",
    "RunFilter": "records",
    "RunLog": "run_log",
    "RunRecord": "records",
    "RunStore": "store",
    "RunType": "run_type",
    "ValueDiff": "compare",
    "compare_runs": "compare",
}
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


__getattr__ = names_from(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
