"""Waiting for something a separate process does, with a deadline (no fixed sleeps)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(check: Callable[[], bool], seconds: float) -> bool:
    """Whether ``check`` holds within ``seconds`` (polled five times a second)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()
