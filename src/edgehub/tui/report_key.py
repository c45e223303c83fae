"""``o`` on the Runs, Compare and Sweep screens: write the HTML report of the runs shown
(`ops.html_report`) in a thread worker named ``report`` to the store's ``reports/`` folder, and
say where it went. A failure is the worker's error (the screen's notification)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from edgehub.tui.screens.base import HubScreen


REPORT_WORKER = "report"


def write_report_of(screen: HubScreen, runs: Sequence[str], sweeps: Sequence[str] = ()) -> None:
    """Start writing the report of ``runs`` (any reported type) and ``sweeps`` (SWEEP runs)."""
    from edgehub.ops.html_report import report_path, write_report

    project = screen.state.project
    output = report_path(project, [*runs, *sweeps])
    screen.notify("writing the report…", markup=False)
    screen.in_thread(
        REPORT_WORKER,
        lambda: str(write_report(project, runs, output, sweeps=sweeps)),
        group="report",
    )


def report_written(screen: HubScreen, path: str) -> None:
    """Say where the report went (a long notification: the path is to be copied)."""
    screen.notify(f"report written to {path}", timeout=15, markup=False)
