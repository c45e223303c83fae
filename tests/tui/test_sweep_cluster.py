"""The Sweep screen's cluster field: prefilled from hub.toml's [cluster] address and passed to
the same `run_sweep` executor as `hub exec sweep --cluster` (an address out of reach ends the
sweep with that command's one line, and no run)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Label

from edgehub.tracking import RunStore
from edgehub.tui.app import EdgehubApp
from edgehub.tui.screens.sweep import SweepScreen

pytestmark = pytest.mark.asyncio


async def test_the_cluster_field_reaches_the_sweep(project: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    address = f"ray://127.0.0.1:{port}"
    toml = project / "hub.toml"
    toml.write_text(toml.read_text() + f'\n[cluster]\naddress = "{address}"\n')
    app = EdgehubApp(toml)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SweepScreen)
        assert screen.query_one("#cluster", Input).value == address
        screen.query_one("#models", Input).value = "model.onnx"
        screen.query_one("#devices", Input).value = "local"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert screen.query_one("#cells", DataTable).row_count == 1
        deadline = time.monotonic() + 30
        while screen.cancel is not None and time.monotonic() < deadline:
            await pilot.pause(0.1)
        status = str(screen.query_one("#sweep-status", Label).render())
        assert screen.cancel is None, "the sweep did not end"
        assert f"Ray cluster {address} is out of reach" in status, status
        assert status.startswith("sweep FAILED") and "\n" not in status
    store = RunStore(project / ".hub")
    try:
        assert not store.list_runs(limit=None)  # refused before the sweep's run
    finally:
        store.close()
