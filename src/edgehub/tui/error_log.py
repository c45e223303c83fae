"""The TUI's log of unexpected errors: each one's traceback, appended to ``tui.log`` in the
project's store, so an error shown in one line can be reported in full."""

from __future__ import annotations

import time
import traceback
from pathlib import Path

LOG_NAME = "tui.log"


def record_error(store_dir: Path, where: str, error: BaseException) -> Path | None:
    """Append ``error``'s traceback to ``store_dir/tui.log``; the log's path, or None when it
    cannot be written (the error is still shown)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    path = store_dir / LOG_NAME
    try:
        store_dir.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            log.write(f"--- {stamp} {where}\n{''.join(lines)}")
    except OSError:
        return None
    return path
