"""Measuring until stable: timed windows until the last three window medians agree.

:func:`measure_until_stable` runs windows of timed runs (each window one call of ``measure``)
until the medians of the last `WINDOWS` windows lie within ``tolerance`` of each other (their
spread, max less min over min, at most ``tolerance``) or ``max_s`` seconds have passed, or
`MAX_WINDOWS` windows were run. The samples it keeps are those of the last three windows; it
says whether it converged, how many windows it ran and the last spread, and never fails the
measurement for not converging. Standard library only.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

WINDOWS = 3
MAX_WINDOWS = 1000


@dataclass(frozen=True)
class StableResult:
    """The kept samples (ns), whether the last three window medians agreed, and how many
    windows ran; ``spread`` is the last three medians' (max - min) / min (None: fewer than
    three windows ran)."""

    samples: list[int]
    converged: bool
    windows: int
    spread: float | None
    medians_ns: list[float]


def _spread(medians: list[float]) -> float:
    low = min(medians)
    return float("inf") if low <= 0 else (max(medians) - low) / low


def measure_until_stable(
    measure: Callable[[], list[int]],
    *,
    tolerance: float,
    max_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> StableResult:
    """Call ``measure`` (one window of samples, ns) until stable or out of time (see above)."""
    start = clock()
    windows: list[list[int]] = []
    medians: list[float] = []
    spread: float | None = None
    while True:
        window = measure()
        windows.append(window)
        medians.append(float(statistics.median(window)))
        if len(medians) >= WINDOWS:
            spread = _spread(medians[-WINDOWS:])
            if spread <= tolerance:
                break
        if clock() - start >= max_s or len(windows) >= MAX_WINDOWS:
            break
    converged = spread is not None and spread <= tolerance
    kept = [s for window in windows[-WINDOWS:] for s in window]
    return StableResult(kept, converged, len(windows), spread, medians)


def stable_metrics(result: StableResult) -> dict[str, Any]:
    """The metrics a profile records about its windows: ``stable_converged`` (1/0),
    ``stable_windows`` and (from three windows on) ``stable_spread_pct``."""
    metrics: dict[str, Any] = {
        "stable_converged": int(result.converged),
        "stable_windows": result.windows,
    }
    if result.spread is not None:
        metrics["stable_spread_pct"] = round(100.0 * result.spread, 3)
    return metrics


def stable_line(metrics: dict[str, Any], tolerance: float, max_s: float) -> tuple[bool, str]:
    """Whether the windows converged, and the line that says how (a warning when not: the run
    still finishes, on the last three windows' samples)."""
    how = (
        f"{metrics['stable_windows']} windows, last three medians "
        f"{metrics.get('stable_spread_pct')}% apart"
    )
    if metrics["stable_converged"]:
        return True, f"stable after {how}"
    return False, (
        f"not stable within {max_s:g} s ({how}; tolerance {100 * tolerance:g}%): "
        "the samples are the last three windows'"
    )
