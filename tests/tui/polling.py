"""Waiting for something a separate process does, with a deadline (no fixed sleeps)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def wait_for(check: Callable[[], bool], seconds: float) -> bool:
    """Whether ``check`` holds within ``seconds`` (polled five times a second)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def run_statuses(project: Path) -> list[str]:
    """The status of every run in ``project``'s store, newest first."""
    from edgehub.tracking import RunStore

    store = RunStore(project / ".hub")
    try:
        return [run.status for run in store.list_runs(limit=None)]
    finally:
        store.close()
