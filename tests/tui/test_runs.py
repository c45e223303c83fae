"""The Runs screen over a real run store: newest first, filters, paging, a run's detail with
its latency histogram, and two runs compared."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.tui.conftest import FROZEN_AT
from tests.tui.fixed_runs import fill_store
from tests.tui.runs_screen import open_runs
from textual.widgets import DataTable, Label, Select

from edgehub.tui.app import EdgehubApp
from edgehub.tui.clock import frozen_clock
from edgehub.tui.screens.compare import CompareScreen
from edgehub.tui.screens.run_detail import RunDetailScreen
from edgehub.tui.screens.runs import PAGE

pytestmark = pytest.mark.asyncio


def _ids(app: EdgehubApp) -> list[str]:
    return [str(k.value) for k in app.screen.query_one("#runs", DataTable).rows]


async def _open_runs(pilot: object, app: EdgehubApp, rows: int = 1) -> None:
    await open_runs(pilot, rows=rows)


async def test_history_newest_first_filtered(project: Path, fixed_runs: list[str]) -> None:
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_runs(pilot, app)
        assert _ids(app) == fixed_runs
        app.screen.query_one("#filter-status", Select).value = "FAILED"
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _ids(app) == [r for r in fixed_runs if int(r[:4]) % 5 == 4]
        app.screen.query_one("#filter-status", Select).clear()
        app.screen.query_one("#filter-device", Select).value = "rpi"
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _ids(app) == [r for r in fixed_runs if int(r[:4]) % 2 == 1]


async def test_pages_load_as_the_cursor_nears_the_end(project: Path) -> None:
    ids = fill_store(project / ".hub", count=PAGE * 2 + 50, at=FROZEN_AT, samples=5)
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_runs(pilot, app)
        assert len(_ids(app)) == PAGE
        deadline = time.monotonic() + 60  # a busy machine: each page's worker takes its time
        while len(_ids(app)) < len(ids) and time.monotonic() < deadline:
            await pilot.press("ctrl+end")  # the cursor at the end asks for the next page
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
        assert _ids(app) == ids
        assert str(app.screen.query_one("#runs-count", Label).render()) == f"{len(ids)} runs"


async def test_open_a_run_and_see_its_latency_histogram(
    project: Path, fixed_runs: list[str]
) -> None:
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_runs(pilot, app)
        profile = next(i for i, r in enumerate(fixed_runs) if int(r[:4]) % 3 == 0)
        for _ in range(profile):
            await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunDetailScreen)
        plot = screen.query_one("#histogram")
        assert "latency of 200 runs" in str(plot.render())
        await pilot.press("l")
        await pilot.pause()
        assert "[log scale: l]" in str(plot.render())
        metrics = screen.query_one("#table-metrics", DataTable)
        assert [str(metrics.get_row_at(i)[0]) for i in range(metrics.row_count)] == [
            "fps",
            "latency_median_ms",
        ]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RunDetailScreen)


async def test_mark_two_runs_and_compare_them(project: Path, fixed_runs: list[str]) -> None:
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_runs(pilot, app)
        await pilot.press("space", "down", "space", "c")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        table = screen.query_one(DataTable)
        cells = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        rows = {row[0]: row for row in cells}
        a, b = int(fixed_runs[0][:4]), int(fixed_runs[1][:4])
        median_a, median_b = 1.0 + 0.25 * a, 1.0 + 0.25 * b
        assert rows["latency_median_ms"][3] == f"{median_b / median_a:.3f}"
        assert rows["device"][3] == "≠"  # alternating devices
        assert rows["runtime"][3] == ""  # same runtime: no mark
        await pilot.press("d")
        await pilot.pause()
        shown = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert "runtime" not in shown and "device" in shown


async def test_two_profile_runs_compare_with_the_latency_statistics(
    project: Path, fixed_runs: list[str]
) -> None:
    from edgehub.ops.project import open_project
    from edgehub.ops.runs import compare_runs, list_runs
    from edgehub.tracking.records import RunFilter
    from edgehub.tui.runs_data import comparison_sections

    hub = open_project(project / "hub.toml")
    profiles = list_runs(hub, RunFilter(run_type="PROFILE", limit=2))
    comparison = compare_runs(hub, profiles[1].run_id, profiles[0].run_id, strict=False)
    latency = {row[0]: row for row in comparison_sections(comparison)["latency"]}
    assert set(latency) == {"median ms", "p99 ms"}
    # the fixed runs' medians grow with their index: the newer run is slower, significantly
    assert float(latency["median ms"][2]) > float(latency["median ms"][1])
    assert latency["median ms"][3].endswith(" significant")
    assert "%" in latency["median ms"][3] and "[" in latency["median ms"][3]


async def test_compare_fits_80_columns_with_a_long_param_and_100k_samples(project: Path) -> None:
    from tests.tui.screen_text import screen_text
    from textual.widgets import Static

    from edgehub.tracking.store import RunStore

    newest, _, _, oldest = fill_store(project / ".hub", count=4, at=FROZEN_AT, samples=100_000)
    long_value = "".join(f"warning {i:03d}; " for i in range(15))[:200]
    store = RunStore(project / ".hub")
    try:
        for run_id in (newest, oldest):
            store.log_param(run_id, "warnings", long_value + run_id[:4], FROZEN_AT)
    finally:
        store.close()
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(80, 24)) as pilot:
        began = time.monotonic()
        app.push_screen(CompareScreen(app.state, oldest, newest))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        deadline = time.monotonic() + 60
        while screen.comparison is None and time.monotonic() < deadline:
            await pilot.pause(0.05)  # the UI stays responsive meanwhile
        took = time.monotonic() - began
        assert screen.comparison is not None
        assert took < 20, took  # ~0.5 s here; generous for a loaded machine
        await pilot.pause()
        text = screen_text(app)
        settled = time.monotonic() + 20  # the table's columns are laid out after a refresh or two
        while "warnin" not in text and time.monotonic() < settled:
            await pilot.pause(0.05)
            text = screen_text(app)
        title = text.splitlines()[1]
        assert "slower (median)" in title and "significant" in title  # the verdict first
        header = next(line for line in text.splitlines() if " b/a" in line)
        assert " a " in header and " b " in header
        assert "warnin" in text and "…" in text  # the long value elided, in its column
        table = screen.query_one(DataTable)
        table.move_cursor(row=table.get_row_index("params/warnings"))
        await pilot.pause()
        full = str(screen.query_one("#compare-full", Static).render())
        assert long_value + oldest[:4] in full.replace("\n", "")


async def test_histogram_with_1_percent_outliers_spreads_the_rest_over_its_bars() -> None:
    import random

    from edgehub.tui.widgets.latency_histogram import robust_bins

    rng = random.Random(3)
    samples = [rng.gauss(0.033, 0.002) for _ in range(99_000)]
    samples += [rng.uniform(0.1, 34.0) for _ in range(1_000)]  # 1 % outliers up to 34 ms
    binned = robust_bins(samples, 30)
    assert binned.counts[0] <= 0.10 * len(samples)
    assert max(binned.counts) <= 0.25 * len(samples)  # spread out, not one tall bar
    assert all(isinstance(c, int) for c in binned.counts)
    assert sum(binned.counts) + binned.below + binned.above == len(samples)
    assert binned.above >= 1_000 and binned.edges[-1] < 0.1


async def test_run_summary_shows_whole_numbers_and_tables_plainly() -> None:
    from edgehub.tui.run_summary import shown_value

    assert shown_value(200000.0) == "200000"
    assert shown_value(0.123456) == "0.1235"
    assert shown_value({"name": "top1", "value": 0.5}) == "name=top1, value=0.5"


async def test_the_status_column_shows_at_80_columns(project: Path, fixed_runs: list[str]) -> None:
    from tests.tui.screen_text import screen_text

    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_runs(pilot, app)
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if " run " in line and " started" in line)
        assert " status " in header, header
        assert any("FINISHED" in line or "FAILED" in line for line in lines), lines


async def test_runs_made_while_away_show_on_the_next_visit(project: Path) -> None:
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_runs(pilot, app, rows=0)
        assert _ids(app) == []
        await pilot.press("1")
        await pilot.pause()
        ids = fill_store(project / ".hub", count=3, at=FROZEN_AT)
        await _open_runs(pilot, app)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _ids(app) == ids


async def test_recorded_text_that_looks_like_markup_shows_as_written(
    project: Path, fixed_runs: list[str]
) -> None:
    """A run's name or param such as ``[/x]`` (any text a user or a model gave) is shown as
    written in the list and the detail, not read as markup (which ended the app)."""
    import sqlite3

    from edgehub.tracking import RunStore

    store = RunStore(project / ".hub")
    try:
        store.log_param(fixed_runs[0], "tag", "[/oops] [bold]loud", FROZEN_AT)
    finally:
        store.close()
    with sqlite3.connect(project / ".hub" / "runs.db") as db:  # a name the CLI could give
        db.execute("UPDATE runs SET name = ? WHERE id = ?", ("[red]x[/]", fixed_runs[0]))
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_runs(pilot, app)
        runs = app.screen.query_one("#runs", DataTable)
        assert "[red]x[/]" in [str(cell) for cell in runs.get_row_at(0)]
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        params = app.screen.query_one("#table-params", DataTable)
        cells = [params.get_row_at(i) for i in range(params.row_count)]
        rows = {str(row[0]): str(row[1]) for row in cells}
        assert rows["tag"] == "[/oops] [bold]loud"
        await pilot.press("right", "right")  # through the tabs: every cell rendered
        await pilot.pause()
        assert isinstance(app.screen, RunDetailScreen)


async def test_histogram_outliers_fill_a_red_overflow_bar_said_in_the_title() -> None:
    import random

    from tests.tui.screen_text import screen_text
    from textual.app import App, ComposeResult

    from edgehub.tui.widgets.latency_histogram import LatencyHistogram, overflow_bars, robust_bins

    rng = random.Random(3)
    samples_ms = [rng.gauss(0.033, 0.002) for _ in range(9_900)]
    samples_ms += [rng.uniform(0.1, 34.0) for _ in range(100)]  # 1 % outliers up to 34 ms
    binned = robust_bins(samples_ms, 30)
    ((x, count, label),) = overflow_bars(binned)  # none far below: no bar on the left
    assert binned.below == 0
    assert count == binned.above >= 100 and x > binned.edges[-1]
    assert label == f">{binned.edges[-1]:.4g}"

    class Plot(App[None]):
        def compose(self) -> ComposeResult:
            yield LatencyHistogram(id="plot")

    app = Plot()
    async with app.run_test(size=(100, 20)) as pilot:
        plot = app.query_one(LatencyHistogram)
        plot.show_samples([s * 1000 for s in samples_ms])
        await pilot.pause()
        text = screen_text(app)
        assert f"outliers in red bars: {binned.above} above" in text
        assert label in text  # the overflow bar's tick
        assert "99166.0" not in text and ".0 " not in text.split("ms")[0][-40:]


async def test_a_profile_shows_the_conditions_its_loop_ran_under(
    project: Path, fixed_runs: list[str]
) -> None:
    """Recorded conditions (``conditions.*`` of the environment) get their own tab, named
    plainly, with the comparability rules' verdict on this run; runs without them get none."""
    from edgehub.tracking import RunStore

    profile = next(r for r in fixed_runs if int(r[:4]) % 3 == 0)
    store = RunStore(project / ".hub")
    try:
        store.log_environment(
            profile,
            {
                "conditions.cpu_model": "Fixed CPU [/x] @ 2.0GHz",
                "conditions.governor": "performance",
                "conditions.other_cpu_share": "0.4",
                "conditions.throttled": "0",
                "conditions.future_field": "7",
            },
        )
    finally:
        store.close()
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(100, 30)) as pilot:
        await _open_runs(pilot, app)
        for _ in range(fixed_runs.index(profile)):
            await pilot.press("down")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunDetailScreen)
        table = screen.query_one("#table-conditions", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert rows == [
            ["CPU model", "Fixed CPU [/x] @ 2.0GHz"],
            ["frequency governor", "performance"],
            ["other processes' CPU share", "40.0%"],
            ["throttled", "0"],
            ["future_field", "7"],
        ]
        verdict = str(screen.query_one("#conditions-verdict").render())
        assert verdict.startswith("disturbed: other processes took 40% of the CPUs during this run")
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+home", "enter")  # the newest run recorded no conditions
        await app.workers.wait_for_complete()
        await pilot.pause()
        other = app.screen
        assert isinstance(other, RunDetailScreen) and other.run_id == fixed_runs[0]
        assert not other.query("#tab-conditions")


async def test_run_summary_shows_the_recorded_conditions() -> None:
    from edgehub.ops.reports import RunReport
    from edgehub.tui.run_summary import summary_lines

    report = RunReport(
        run_id="abcdef123456", name="p", type="PROFILE", status="FINISHED", device="local",
        environment={"conditions.other_cpu_share": "0.31", "conditions.cpuset": "0",
                     "conditions.loop_s": "1.2"},
    )  # fmt: skip
    assert summary_lines(report, None)[-1] == "   conditions: other_cpu_share 0.31, cpuset 0"
