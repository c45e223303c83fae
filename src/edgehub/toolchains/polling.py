"""`pause`: the sleep between two polls of a cloud job (AWS Device Farm, Qualcomm AI Hub),
cut short once the run is cancelled (the TUI's cancel, ``hub exec --timeout``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


STEP_S = 0.2


def pause(ctx: HubContext, seconds: float) -> None:
    """Sleep ``seconds``, in steps of at most `STEP_S` that end early once ``ctx`` is
    cancelled; the caller's loop sees ``ctx.cancelled`` and stops."""
    end = time.monotonic() + seconds
    while not ctx.cancelled and (left := end - time.monotonic()) > 0:
        time.sleep(min(left, STEP_S))
