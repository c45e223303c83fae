"""The Images screen against the real Docker daemon: a build that fails (TensorRT's, whose
NVIDIA base image is not on this machine) says why and leaves no progress bar animating; no
bar animates while nothing builds either."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Label, ProgressBar
from textual.widgets._progress_bar import Bar

from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.images import ImagesScreen

pytestmark = [pytest.mark.asyncio, pytest.mark.docker]


def _animating(screen: ImagesScreen) -> bool:
    bar = screen.query_one("#build-progress", ProgressBar)
    return bar.query_one(Bar).auto_refresh is not None  # an indeterminate bar's frame timer


async def test_a_failed_build_says_why_and_stops_its_progress_bar(
    project: Path, docker_daemon: object
) -> None:
    from edgehub import images

    base = images.default_base("tensorrt")
    if base is not None and images.image_attrs(base) is not None:
        pytest.skip(f"{base} is on this machine: TensorRT's image would build, not fail")
    app = EdgehubApp(project / "hub.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ImagesScreen)
        assert not _animating(screen)  # nothing builds: no timer ticking
        table = screen.query_one(DataTable)
        rows = [str(key.value) for key in table.rows]
        table.move_cursor(row=rows.index("tensorrt"))
        await pilot.press("b")
        await pilot.pause()
        deadline = time.monotonic() + 120
        while screen.building and time.monotonic() < deadline:
            await pilot.pause(0.2)
        await pilot.pause()
        status = str(screen.query_one("#build-status", Label).render())
        assert status.startswith("build failed:") and "tensorrt" in status, status
        assert not screen.query_one("#build-progress").display
        assert not _animating(screen)
        assert app.is_running
