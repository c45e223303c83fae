"""SVG snapshots of each screen at 100x30, and of every screen at 80x24, with a frozen clock
and fixed data (the run store is filled with fixed runs; the Images screen gets fixed image
rows instead of asking Docker, so the picture does not depend on this machine's images)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.tui.conftest import FROZEN_AT
from tests.tui.runs_screen import open_newest_run, open_runs
from textual.pilot import Pilot

from edgehub.images import ImageStatus
from edgehub.tui.app import EdgehubApp
from edgehub.tui.clock import frozen_clock

SIZE = (100, 30)


def _app(project: Path) -> EdgehubApp:
    return EdgehubApp(Path("hub.toml"), clock=frozen_clock(FROZEN_AT))


async def _settle(pilot: Pilot[Any]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_devices_screen(project: Path, snap_compare: Any) -> None:
    assert snap_compare(_app(project), terminal_size=SIZE, run_before=_settle)


def test_run_screen(project: Path, snap_compare: Any) -> None:
    assert snap_compare(_app(project), press=["2"], terminal_size=SIZE, run_before=_settle)


def test_runs_screen(project: Path, fixed_runs: list[str], snap_compare: Any) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await open_runs(pilot)
        await pilot.press("space", "down", "space")

    assert snap_compare(_app(project), terminal_size=SIZE, run_before=before)


def test_run_detail_screen(project: Path, fixed_runs: list[str], snap_compare: Any) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await pilot.press("3")
        await _settle(pilot)
        await pilot.press("down", "enter")
        await _settle(pilot)

    assert snap_compare(_app(project), terminal_size=SIZE, run_before=before)


def test_compare_screen(project: Path, fixed_runs: list[str], snap_compare: Any) -> None:
    async def before(pilot: Pilot[Any]) -> None:
        await open_runs(pilot)
        await pilot.press("space", "down", "space", "c")
        await _settle(pilot)

    assert snap_compare(_app(project), terminal_size=SIZE, run_before=before)


IMAGE_ROWS: list[Any] = [
    ImageStatus(
        "onnxruntime",
        "edgehub-onnxruntime:0123456789ab",
        True,
        image_id="sha256:" + "1" * 64,
        digest="sha256:" + "2" * 64,
        size_bytes=378_000_000,
        created="2024-05-01T12:00:00",
    ),
    "tflite",
    "tensorrt",
]


def test_images_screen(project: Path, snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("edgehub.tui.screens.images._image_rows", lambda: IMAGE_ROWS)
    assert snap_compare(_app(project), press=["4"], terminal_size=SIZE, run_before=_settle)


def test_broken_hub_toml_banner_at_80x24(project: Path, snap_compare: Any) -> None:
    """The banner over the Run screen, as a small terminal shows it."""

    async def before(pilot: Pilot[Any]) -> None:
        from edgehub.tui.widgets.config_banner import ConfigBanner

        await pilot.press("2")
        await _settle(pilot)
        hub_toml = project / "hub.toml"
        hub_toml.write_text(hub_toml.read_text() + "\n[devices.broken\n")
        for _ in range(50):  # the watcher looks once a second
            if pilot.app.screen.query(ConfigBanner):
                break
            await pilot.pause(0.2)
        await pilot.pause()

    assert snap_compare(_app(project), terminal_size=(80, 24), run_before=before)


async def _open_newest_run(pilot: Pilot[Any]) -> None:
    await open_newest_run(pilot)


def test_eval_run_accuracy_tab(project: Path, eval_run: str, snap_compare: Any) -> None:
    """An EVAL run's detail opens on its accuracy tab: goals, task metrics, figures, worst
    samples, the layer table with the first divergent layer highlighted."""
    assert snap_compare(_app(project), terminal_size=SIZE, run_before=_open_newest_run)


async def _press_and_settle(pilot: Pilot[Any], *keys: str) -> None:
    await pilot.press(*keys)
    await _settle(pilot)


def _keys(*keys: str) -> Any:
    async def before(pilot: Pilot[Any]) -> None:
        await _press_and_settle(pilot, *keys)

    return before


async def _runs_marked(pilot: Pilot[Any]) -> None:
    await _press_and_settle(pilot, "3")
    await pilot.press("space", "down", "space")


async def _detail(pilot: Pilot[Any]) -> None:
    await _press_and_settle(pilot, "3")
    await _press_and_settle(pilot, "down", "enter")


async def _compare(pilot: Pilot[Any]) -> None:
    await _press_and_settle(pilot, "3")
    await _press_and_settle(pilot, "space", "down", "space", "c")


SMALL = {  # screen -> (the fixture with its data, how to get there)
    "devices": (None, _settle),
    "run": (None, _keys("2")),
    "runs": ("fixed_runs", _runs_marked),
    "run_detail": ("fixed_runs", _detail),
    "compare": ("fixed_runs", _compare),
    "images": (None, _keys("4")),
    "sweep": (None, _keys("5")),
    "accuracy": ("eval_run", _open_newest_run),
}


@pytest.mark.parametrize("screen", list(SMALL))
def test_every_screen_at_80x24(
    screen: str,
    project: Path,
    snap_compare: Any,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each screen as an 80x24 terminal shows it (the screens above are 100x30)."""
    fixture, before = SMALL[screen]
    if fixture is not None:
        request.getfixturevalue(fixture)
    monkeypatch.setattr("edgehub.tui.screens.images._image_rows", lambda: IMAGE_ROWS)
    assert snap_compare(_app(project), terminal_size=(80, 24), run_before=before)
