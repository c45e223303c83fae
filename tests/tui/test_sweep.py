"""The Sweep screen against the real core: a sweep of the example model over two option values
on the local device fills its grid in live (real Docker daemon, real image)."""

from __future__ import annotations

import time
from importlib.util import find_spec
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input

from edgehub.tracking import RunStore
from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.sweep import COLUMNS, SweepScreen

pytestmark = [pytest.mark.asyncio, pytest.mark.docker]


def _column(table: DataTable[object], name: str) -> list[str]:
    key = list(table.columns)[COLUMNS.index(name)]
    return [str(table.get_cell(row, key)) for row in table.rows]


async def test_a_sweep_fills_its_grid_live(project: Path, ort_image: str) -> None:
    app = EdgehubApp(project / "hub.toml")
    seen: set[str] = set()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SweepScreen)
        screen.query_one("#models", Input).value = "model.onnx"
        screen.query_one("#devices", Input).value = "local"
        screen.query_one("#vary", Input).value = "profile.runs=20,30"
        await pilot.press("ctrl+r")
        await pilot.pause()
        table = screen.query_one("#cells", DataTable)
        assert table.row_count == 2
        deadline = time.monotonic() + 240
        while screen.cancel is not None and time.monotonic() < deadline:
            seen.update(_column(table, "status"))
            await pilot.pause(0.1)
        await pilot.pause()
        assert _column(table, "status") == ["FINISHED", "FINISHED"]
        assert "RUNNING" in seen, "the grid did not show a cell running"
        assert all(float(v) > 0 for v in _column(table, "median ms"))
        assert all(float(v) > 0.95 for v in _column(table, "cosine"))
        if find_spec("bokeh") is not None:  # o: the sweep's HTML report, its path told
            await pilot.press("o")
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            told = [n.message for n in app._notifications if "report written to " in n.message]
            assert len(told) == 1, [n.message for n in app._notifications]
            written = Path(told[0].removeprefix("report written to "))
            assert written.is_file() and screen.sweep_run is not None
            assert "sweep-median_ms" in written.read_text(encoding="utf-8")
    store = RunStore(project / ".hub")
    try:
        types = sorted(r.run_type for r in store.list_runs(limit=None))
        assert types.count("SWEEP") == 1 and types.count("SWEEP_CELL") == 2
    finally:
        store.close()


async def test_a_bad_grid_is_a_notification(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SweepScreen)
        screen.query_one("#models", Input).value = "missing.onnx"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert screen.cancel is None
        assert screen.query_one("#cells", DataTable).row_count == 0
        assert any("missing.onnx not found" in n.message for n in app._notifications)
