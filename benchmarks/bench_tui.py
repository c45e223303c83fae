"""Benchmark hub-tui's responsiveness (run on demand, not in CI).

    .venv/bin/python benchmarks/bench_tui.py [--runs 10000] [--lines 100000]

(a) Time to first paint: a fresh interpreter imports the app, builds it and runs it headless
    until the Devices screen has been laid out and rendered (goal < 0.5 s), and the same from
    "app built" only.
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
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FIRST_PAINT = r"""
import time
start = time.perf_counter()
import asyncio, sys
from pathlib import Path
from edgehub.tui.app import EdgehubApp
imported = time.perf_counter()
app = EdgehubApp(Path(sys.argv[1]))
built = time.perf_counter()
async def main():
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        painted = time.perf_counter()
        print(f"{painted - start:.4f} {painted - built:.4f} {imported - start:.4f}")
asyncio.run(main())
"""


def first_paint(project: Path, repeat: int) -> dict[str, float]:
    totals, paints, imports = [], [], []
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
    return {
        "import_and_first_paint_s": min(totals),
        "first_paint_after_build_s": min(paints),
        "import_s": min(imports),
    }


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
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from tests.tui.conftest import HUB_TOML
    from tests.tui.fixed_runs import fill_store

    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "hub.toml").write_text(HUB_TOML)
        results: dict[str, object] = {"first_paint": first_paint(project, args.repeat)}
        began = time.perf_counter()
        fill_store(project / ".hub", count=args.runs, at=time.time(), samples=5)
        results["store_filled_s"] = time.perf_counter() - began
        results["runs_screen"] = asyncio.run(runs_screen(project))
        results["log_stream"] = asyncio.run(log_stream(project, args.lines))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
