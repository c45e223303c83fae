"""The TUI shows terminal escapes from outside (a run's name, error, params and log, as an
imported bundle or a device can carry them) as visible escapes: what its widgets render holds
no ESC, BEL or C1 CSI for the terminal to obey, and no markup is read from them."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from tests.tui.conftest import FROZEN_AT
from textual.widgets import DataTable, Label, Log

from edgehub.text import visible
from edgehub.tracking import RunStore
from edgehub.tui.app import EdgehubApp
from edgehub.tui.clock import frozen_clock
from edgehub.tui.screens.run_detail import RunDetailScreen

HOSTILE = "x\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4K\x07\x9b31m[bold]y"
RAW = ("\x1b", "\x07", "\x9b")

pytestmark = pytest.mark.asyncio


def _rendered(widget: Label | Log | DataTable[Any]) -> str:
    """The text the widget's lines render to (what reaches the terminal, less styles)."""
    return "\n".join(
        "".join(segment.text for segment in widget.render_line(y))
        for y in range(widget.size.height)
    )


async def test_run_detail_shows_escapes(project: Path, fixed_runs: list[str]) -> None:
    run_id = fixed_runs[0]
    log = project / ".hub" / "runs" / run_id / "run.log"
    log.write_text(f"compiling\n{HOSTILE}\n")
    store = RunStore(project / ".hub")
    try:
        store.log_param(run_id, "note", HOSTILE, FROZEN_AT)
        store.log_artifact(
            artifact_id=f"{run_id}-log", run_id=run_id, name="log", file_name="run.log",
            sha256=hashlib.sha256(log.read_bytes()).hexdigest(), size=log.stat().st_size,
            path=str(log), device=None, logged_at=FROZEN_AT,
        )  # fmt: skip
    finally:
        store.close()
    with sqlite3.connect(project / ".hub" / "runs.db") as db:  # as an imported bundle has them
        db.execute("UPDATE runs SET name = ?, error = ? WHERE id = ?", (HOSTILE, HOSTILE, run_id))
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("3")
        # the list is filled by a worker: slow on a busy machine, and other workers (the
        # screens built ahead, the images' status) may take longer still, so poll the table
        # itself rather than wait for every worker
        settled = time.monotonic() + 60
        while True:
            await pilot.pause(0.1)
            listed = _rendered(app.screen.query_one("#runs", DataTable))
            if "pwned" in listed or time.monotonic() > settled:
                break
        assert "x\\x1b]0;pwned" in listed and not any(raw in listed for raw in RAW)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunDetailScreen)
        title = _rendered(screen.query_one("#run-title", Label))
        assert "x\\x1b]0;pwned\\x07\\x1b[2J" in title and "\\x9b31m[bold]y" in title
        params = screen.query_one("#table-params", DataTable)
        rows = {str(params.get_row_at(i)[0]): str(params.get_row_at(i)[1])
                for i in range(params.row_count)}  # fmt: skip
        assert rows["note"] == visible(HOSTILE)
        assert rows["note"].startswith("x\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;")
        shown = screen.query_one("#run-log", Log)
        assert shown.lines[-1].startswith("x\\x1b]0;pwned")
        for text in (title, *shown.lines):
            assert not any(raw in text for raw in RAW), text
