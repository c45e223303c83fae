"""Benchmark hub-tui's responsiveness (run on demand, not in CI).

    .venv/bin/python benchmarks/bench_tui.py [--runs 10000] [--lines 100000] [--burners 1]

Every figure is taken beside a noisy neighbour: ``--burners`` processes (default 1) started by
the bench that burn CPU for the whole run, as other work on a 2-core machine does. Unset
PYTHONDONTWRITEBYTECODE before timing (without cached bytecode every start compiles).

(a) Time to first paint: a fresh interpreter imports the app, builds it and runs it headless
    until the Devices screen's first frame is drawn (goal < 0.5 s), and the same from "app
    built" only; the slowest start's steps (import, build, paint) are reported too.
(a2) Screen switches: each of the five screens by its key, first visit and again (goal
    < 150 ms), from the key press until the new screen's first frame is drawn, and the CPU
    seconds the process spent meanwhile (every thread), and for Runs until its rows (read in a
    worker) are drawn too. The first visits come once the other screens have been built in the
    background after the first paint (how long that took, and the longest the UI loop stalled
    meanwhile, are reported); a visit to Run right after the first paint (nothing built yet)
    is timed on its own, and until its options form (built after its first frame) is drawn
    too. And reloading hub.toml after an outside edit (read on a worker thread): the longest
    the UI loop stalled meanwhile.
    A frame counts when Textual hands it to the terminal (`App._display`; a headless app
    draws each frame and writes none), not held by a batch, and of the screen in view.
(a3) Compare of two profile runs with 100,000 raw samples each: the statistics alone
    (`edgehub.ops.runs.compare_runs`, as the Compare screen calls it), and from the ``c`` key
    until the Compare screen shows them.
(b) The Runs screen over a store of N runs (fixed runs written into a temporary store): time
    from the key press to the first page shown (goal < 1 s), then the slowest of 300 cursor
    moves (each key press until the screen has handled it), and loading every page.
(c) 100,000 log lines pushed from a worker thread into a run pane as fast as possible: the
    largest gap between ticks of a 60 Hz timer on the UI loop (goal < 100 ms: the UI never
    stalls longer than that), the time until all lines are drained, the lines the pane keeps
    (its limit) and the growth of the process's peak memory.

Headless: Textual lays out and renders every frame but writes no terminal output, so terminal
throughput is not part of these figures. On a shared machine the numbers are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# burns one CPU until the bench ends, however it ends (its parent gone, it stops)
BURN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"

FIRST_PAINT = r"""
import time
start = time.perf_counter()
import asyncio, sys
from pathlib import Path
from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.devices import DevicesScreen
imported = time.perf_counter()
app = EdgehubApp(Path(sys.argv[1]))
built = time.perf_counter()
painted = []  # (when, CPU seconds) of the Devices screen's first frame
display = app._display
def watch(screen, frame):
    if frame is not None and not app._batch_count and isinstance(screen, DevicesScreen):
        painted.append((time.perf_counter(), time.process_time()))  # start-up CPU included
    display(screen, frame)
app._display = watch
async def main():
    async with app.run_test(size=(100, 30)):
        while not painted:
            await asyncio.sleep(0.001)
    at, cpu = painted[0]
    print(f"{at - start:.4f} {at - built:.4f} {imported - start:.4f} {cpu:.4f}")
asyncio.run(main())
"""


def first_paint(project: Path, repeat: int) -> dict[str, float]:
    totals, paints, imports, cpus = [], [], [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", FIRST_PAINT, str(project / "hub.toml")],
            capture_output=True,
            text=True,
            check=True,
            cwd=project,
        ).stdout.split()
        totals.append(float(out[0]))
        paints.append(float(out[1]))
        imports.append(float(out[2]))
        cpus.append(float(out[3]))
    slowest = max(range(repeat), key=lambda i: totals[i])
    return {
        "import_and_first_paint_s": min(totals),
        "import_and_first_paint_median_s": sorted(totals)[repeat // 2],
        "import_and_first_paint_max_s": totals[slowest],
        "first_paint_after_build_s": min(paints),
        "import_s": min(imports),
        "slowest_start_import_s": imports[slowest],
        "slowest_start_paint_after_build_s": paints[slowest],
        "cpu_s_to_first_paint_min": min(cpus),
        "cpu_s_to_first_paint_median": sorted(cpus)[repeat // 2],
    }


async def _painted(pilot: Any, screen_type: type) -> None:
    """Until ``screen_type`` is in view and its first frame has been drawn."""
    app = pilot.app
    while not isinstance(app.screen, screen_type):
        await asyncio.sleep(0.001)
    await pilot.pause()  # laid out, rendered, the message queue idle


class Frames:
    """The frames Textual hands to the terminal (`App._display`, wrapped: a headless app draws
    every frame and writes none): when, the process's CPU seconds then, and of which screen."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.shown: list[tuple[float, float, type]] = []
        display = app._display

        def watch(screen: Any, frame: Any) -> None:
            if frame is not None and not app._batch_count and screen is app.screen:
                self.shown.append((time.perf_counter(), time.process_time(), type(screen)))
            display(screen, frame)

        app._display = watch

    async def first(self, screen_type: type, after: float) -> tuple[float, float]:
        """The first frame of ``screen_type`` drawn after ``after``: when, and CPU then."""
        while True:
            for at, cpu, shown in self.shown:
                if at > after and shown is screen_type:
                    return at, cpu
            await asyncio.sleep(0.001)

    async def switch(self, key: str, screen_type: type) -> tuple[float, float]:
        """Press ``key`` (as a terminal sends it); the seconds until the first frame of
        ``screen_type``, and the CPU seconds meanwhile."""
        from textual import events

        self.shown.clear()
        began, cpu = time.perf_counter(), time.process_time()
        self.app._driver.send_message(events.Key(key, None))
        at, cpu_then = await self.first(screen_type, began)
        return at - began, cpu_then - cpu


async def _settled(pilot: Any) -> None:
    """Until the app has finished what the last key started (workers, trailing paints)."""
    await pilot.pause()
    await asyncio.sleep(0.2)


def _ticking(app: Any, ticks: list[float]) -> None:
    """A 60 Hz timer on the UI loop: the gaps between its ticks are the loop's stalls."""
    app.set_interval(1 / 60, lambda: ticks.append(time.perf_counter()))


def _largest_gap_ms(ticks: list[float]) -> float:
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    return 1000 * max(gaps) if gaps else float("nan")


async def screen_switches(project: Path, rounds: int) -> dict[str, float]:
    from edgehub.tui.app import SCREENS, EdgehubApp
    from edgehub.tui.screens.devices import DevicesScreen

    # F2..F5 work from a text field too; Devices has only "1" (F1 is help), pressed with no
    # field focused
    keys = {name: f"f{i}" for i, name in enumerate(SCREENS, start=1)}
    keys["devices"] = "1"
    others = list(SCREENS)[1:]
    results: dict[str, float] = {}

    # Run right after the first paint, before any screen is built ahead
    app = EdgehubApp(project / "hub.toml")
    frames = Frames(app)
    async with app.run_test(size=(100, 30)):
        await frames.first(DevicesScreen, 0.0)
        began = time.perf_counter()
        took, cpu = await frames.switch(keys["run"], SCREENS["run"])
        results["run_right_after_first_paint_ms"] = 1000 * took
        results["run_right_after_first_paint_cpu_ms"] = 1000 * cpu
        while not app.screen.query("#options FieldForm"):  # its options form comes next
            await asyncio.sleep(0.001)
        at, _ = await frames.first(SCREENS["run"], time.perf_counter())
        results["run_right_after_first_paint_form_drawn_ms"] = 1000 * (at - began)

    app = EdgehubApp(project / "hub.toml")
    frames = Frames(app)
    first: dict[str, float] = {}
    again: list[float] = []
    again_cpu: list[float] = []
    ticks: list[float] = []
    async with app.run_test(size=(100, 30)) as pilot:
        painted, _ = await frames.first(DevicesScreen, 0.0)
        _ticking(app, ticks)
        while not all(app.screens_ahead.ready(name) for name in others):
            await asyncio.sleep(0.005)
        results["build_ahead_s"] = time.perf_counter() - painted
        results["build_ahead_largest_frame_gap_ms"] = _largest_gap_ms(ticks)
        await _settled(pilot)
        for index in range(rounds):
            for name in [*others, "devices"]:
                if name == "devices":
                    app.set_focus(None)
                    await pilot.pause()
                began = time.perf_counter()
                took, cpu = await frames.switch(keys[name], SCREENS[name])
                if index == 0 and name == "runs":  # and until its rows are drawn
                    while app.screen._pending is not None:  # the first page is read
                        await asyncio.sleep(0.001)
                    at, _ = await frames.first(SCREENS[name], time.perf_counter())
                    results["first_visit_runs_rows_drawn_ms"] = 1000 * (at - began)
                if index == 0 and name != "devices":
                    first[name] = 1000 * took
                    first[f"{name}_cpu"] = 1000 * cpu
                else:
                    again.append(took)
                    again_cpu.append(cpu)
                await _settled(pilot)
        # an outside edit of hub.toml: the watcher reads it off the UI thread
        ticks.clear()
        hub_toml = project / "hub.toml"
        text = hub_toml.read_text()
        await pilot.pause(0.3)
        generation = app.state.generation
        devices = "".join(f'[devices.d{i}]\nprovider = "local"\n' for i in range(200))
        hub_toml.write_text(text + "\n# edited outside\n" + devices)
        while app.state.generation == generation:
            await asyncio.sleep(0.01)
        await pilot.pause(0.2)
        hub_toml.write_text(text)
    again.sort()
    again_cpu.sort()
    return {
        **results,
        **{f"first_visit_{name}_ms": took for name, took in first.items()},
        "switch_median_ms": 1000 * again[len(again) // 2],
        "switch_max_ms": 1000 * again[-1],
        "switch_cpu_median_ms": 1000 * again_cpu[len(again_cpu) // 2],
        "switch_cpu_max_ms": 1000 * again_cpu[-1],
        "switches": len(again),
        "outside_edit_largest_frame_gap_ms": _largest_gap_ms(ticks),
    }


async def compare_100k(project: Path, samples: int) -> dict[str, float]:
    from tests.tui.fixed_runs import fill_store

    from edgehub.ops.runs import compare_runs
    from edgehub.tui.app import EdgehubApp
    from edgehub.tui.screens.compare import CompareScreen

    store_dir = project / ".hub-compare"
    fill_store(store_dir, count=4, at=time.time(), samples=samples)  # runs 0 and 3: profiles
    config = project / "compare" / "hub.toml"
    config.parent.mkdir()
    config.write_text(f'[project]\nname = "bench"\nstore = "{store_dir}"\n')
    app = EdgehubApp(config)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("3")
        await app.workers.wait_for_complete()
        await pilot.pause()
        store = app.state.store()
        profiles = [r.run_id for r in store.list_runs(limit=None) if r.run_type == "PROFILE"]
        began = time.perf_counter()
        comparison = compare_runs(app.state.project, profiles[0], profiles[1], strict=False)
        computed = time.perf_counter() - began
        assert comparison.latency is not None
        table = app.screen.query_one("#runs")
        rows = [str(key.value) for key in table.rows]  # type: ignore[attr-defined]
        for run_id in profiles[:2]:
            table.move_cursor(row=rows.index(run_id))  # type: ignore[attr-defined]
            await pilot.press("space")
        began = time.perf_counter()
        await pilot.press("c")
        await _painted(pilot, CompareScreen)
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        while compare.comparison is None:
            await asyncio.sleep(0.005)
        await pilot.pause()
        shown = time.perf_counter() - began
    return {"samples_per_side": samples, "statistics_s": computed, "key_to_shown_s": shown}


async def runs_screen(project: Path) -> dict[str, float]:
    from edgehub.tui.app import EdgehubApp
    from edgehub.tui.screens.runs import RunsScreen

    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        began = time.perf_counter()
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        while screen._loaded == 0:
            await asyncio.sleep(0.005)
        opened = time.perf_counter() - began
        moves = []
        for _ in range(300):
            t = time.perf_counter()
            await pilot.press("down")
            moves.append(time.perf_counter() - t)
        moves.sort()
        began = time.perf_counter()
        while not screen._exhausted:
            await pilot.press("ctrl+end")
            await app.workers.wait_for_complete()
            await pilot.pause()
        all_loaded = time.perf_counter() - began
        rows = screen._loaded
    return {
        "runs_open_s": opened,
        "median_cursor_move_s": moves[len(moves) // 2],
        "slowest_cursor_move_s": moves[-1],
        "load_all_pages_s": all_loaded,
        "rows": rows,
    }


async def log_stream(project: Path, lines: int) -> dict[str, float]:
    from textual.app import App, ComposeResult

    from edgehub.events import LogEvent
    from edgehub.tui.clock import Clock
    from edgehub.tui.line_buffer import LineBuffer
    from edgehub.tui.messages import LinesReady
    from edgehub.tui.widgets.run_pane import LOG_LIMIT, RunPane

    class StreamApp(App[None]):
        def compose(self) -> ComposeResult:
            self.buffer = LineBuffer(lambda: self.post_message(LinesReady("pane")), LOG_LIMIT)
            yield RunPane("bench", Clock(), id="pane", buffer=self.buffer)

        def on_lines_ready(self, _: LinesReady) -> None:
            self.query_one(RunPane).drain()

    gc.collect()  # the previous measurement's garbage is not this one's pause
    app = StreamApp()
    ticks: list[float] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.set_interval(1 / 60, lambda: ticks.append(time.perf_counter()))
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        pane = app.query_one(RunPane)

        def produce() -> None:  # as fast as it can, yielding the GIL every 1000 lines
            for index in range(lines):
                app.buffer.push(LogEvent("stdout", f"line {index} " + "x" * 60, time=1.0))
                if index % 1000 == 999:
                    time.sleep(0)

        began = time.perf_counter()
        producer = threading.Thread(target=produce)
        producer.start()
        while producer.is_alive() or pane.lines_shown + pane.lines_dropped < lines:
            await asyncio.sleep(0.01)
        drained = time.perf_counter() - began
        await pilot.pause(0.2)
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        kept = pane.query_one("Log").line_count  # type: ignore[attr-defined]
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    return {
        "lines": lines,
        "drained_s": drained,
        "largest_frame_gap_ms": 1000 * max(gaps) if gaps else float("nan"),
        "lines_shown": pane.lines_shown,
        "lines_dropped_unseen": pane.lines_dropped,
        "lines_kept_in_pane": kept,
        "peak_rss_growth_mb": (rss_after - rss_before) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--burners", type=int, default=1, help="CPU-burning neighbours")
    args = parser.parse_args()
    from tests.tui.conftest import HUB_TOML
    from tests.tui.fixed_runs import fill_store

    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)]
    try:
        with tempfile.TemporaryDirectory() as folder:
            project = Path(folder)
            (project / "hub.toml").write_text(HUB_TOML)
            results: dict[str, object] = {
                "cpus": os.cpu_count(),
                "burners": args.burners,
                "first_paint": first_paint(project, args.repeat),
                "screen_switch": asyncio.run(screen_switches(project, rounds=4)),
                "compare": asyncio.run(compare_100k(project, args.samples)),
            }
            began = time.perf_counter()
            fill_store(project / ".hub", count=args.runs, at=time.time(), samples=5)
            results["store_filled_s"] = time.perf_counter() - began
            results["runs_screen"] = asyncio.run(runs_screen(project))
            results["log_stream"] = asyncio.run(log_stream(project, args.lines))
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
