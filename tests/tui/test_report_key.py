"""`o` on the Compare screen writes the HTML report of its two runs and tells its path; the run
detail shows each latency percentile with its 95 % CI and says when the samples are too few
(the Sweep screen's `o`: tests/tui/test_sweep.py, after a real sweep)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.tui.conftest import FROZEN_AT
from tests.tui.runs_screen import open_newest_run, open_runs
from tests.tui.test_compare_verdict import CALM, _profile
from textual.widgets import Label

from edgehub.tui.app import EdgehubApp
from edgehub.tui.clock import frozen_clock
from edgehub.tui.screens.compare import CompareScreen
from edgehub.tui.screens.run_detail import RunDetailScreen

pytestmark = pytest.mark.asyncio


async def _settle(app: EdgehubApp, pilot: object) -> None:
    await pilot.pause()  # type: ignore[attr-defined]
    await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]


async def test_o_on_compare_writes_the_report_of_both_runs(project: Path) -> None:
    pytest.importorskip("bokeh", reason="needs the report extra (pip install -e '.[report]')")
    a, b = _profile(project, 3, CALM), _profile(project, 4, CALM)
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_runs(pilot)
        await pilot.press("down", "space", "up", "space", "c")
        await _settle(app, pilot)
        assert isinstance(app.screen, CompareScreen)
        await pilot.press("o")
        await _settle(app, pilot)
        told = [n.message for n in app._notifications if "report written to " in n.message]
    assert len(told) == 1, [n.message for n in app._notifications]
    written = Path(told[0].removeprefix("report written to "))
    page = written.read_text(encoding="utf-8")
    assert written.suffix == ".html" and a[:8] in page and b[:8] in page
    assert "A/B verdicts" in page  # both runs in one report, the second judged against the first


async def test_the_run_detail_shows_percentiles_with_their_intervals(project: Path) -> None:
    run = _profile(project, 3, CALM)  # 200 samples: enough for p90's CI, too few for p99's
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_newest_run(pilot)
        assert isinstance(screen, RunDetailScreen) and screen.run_id == run
        lines = str(screen.query_one("#percentiles", Label).render()).splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["p50", "p90", "p99"]
    assert "95 % CI" in lines[0] and "(200 runs)" in lines[0]
    assert lines[2].startswith("p99 ") and "CI -" in lines[2]  # no interval from 200 runs
    assert "! p99 needs >= 368 runs for a 95 % CI; got 200" in lines
