"""The pause between two polls of a cloud job: a real HubContext, cancelled from another
thread as the TUI's cancel and ``hub exec --timeout`` do."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from edgehub.core import HubContext
from edgehub.toolchains.polling import pause


def test_pause_sleeps_its_time_when_nothing_cancels(tmp_path: Path) -> None:
    ctx = HubContext(project_name="poll", artifact_base_dir=tmp_path)
    started = time.monotonic()
    pause(ctx, 0.3)
    assert time.monotonic() - started >= 0.3


def test_a_cancel_from_another_thread_cuts_a_long_pause_short(tmp_path: Path) -> None:
    ctx = HubContext(project_name="poll", artifact_base_dir=tmp_path)
    threading.Timer(0.3, ctx.cancel).start()
    started = time.monotonic()
    pause(ctx, 600)
    assert ctx.cancelled and time.monotonic() - started < 60  # generous: a loaded machine
