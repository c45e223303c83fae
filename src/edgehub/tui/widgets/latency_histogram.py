"""`LatencyHistogram`: the distribution of a profile run's raw latency samples (plotext).

The axis spans a robust range: p0.5-p99.5, narrowed to 3 interquartile ranges beyond the
quartiles, so a few outliers (even 1 %) do not squeeze every sample into the first bar; the
samples outside it are counted in the title. Counts are whole numbers, on a
linear or a log scale (`log_scale`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from textual_plotext import PlotextPlot

__all__ = ["Bins", "LatencyHistogram", "robust_bins"]

LOW_PCT, HIGH_PCT = 0.5, 99.5
FENCE = 3.0  # interquartile ranges beyond the quartiles


@dataclass(frozen=True)
class Bins:
    """Counts of the samples in ``len(counts)`` equal bins between ``edges[0]`` and
    ``edges[-1]``; ``below`` and ``above`` those outside."""

    edges: list[float]
    counts: list[int]
    below: int
    above: int


def robust_bins(samples: Sequence[float], bins: int) -> Bins:
    """Bin ``samples`` over their robust range (see the module)."""
    import numpy as np

    values = np.asarray(samples, dtype=np.float64)
    p_low, q1, q3, p_high = np.percentile(values, [LOW_PCT, 25, 75, HIGH_PCT])
    spread = FENCE * float(q3 - q1)
    low, high = max(float(p_low), float(q1) - spread), min(float(p_high), float(q3) + spread)
    if high <= low:  # all (nearly) equal: a narrow range around them
        high = low + max(abs(low) * 1e-3, 1e-9)
    counts, edges = np.histogram(values, bins=bins, range=(low, high))
    return Bins(
        edges=[float(e) for e in edges],
        counts=[int(c) for c in counts],
        below=int((values < low).sum()),
        above=int((values > high).sum()),
    )


def _count_ticks(highest: int, log: bool) -> tuple[list[float], list[str]]:
    """Whole-number ticks up to ``highest``: evenly spaced, or powers of ten on the log scale
    (heights there are log10(count + 1))."""
    if log:
        powers = [10**k for k in range(0, int(math.log10(max(highest, 1))) + 1)]
        return [math.log10(p + 1) for p in powers], [str(p) for p in powers]
    ticks = sorted({round(highest * i / 4) for i in range(5)})
    return [float(t) for t in ticks], [str(t) for t in ticks]


class LatencyHistogram(PlotextPlot):
    DEFAULT_CSS = """
    LatencyHistogram { height: 14; min-height: 8; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.log_scale = False
        self._samples_us: list[float] = []

    def toggle_log(self) -> None:
        self.log_scale = not self.log_scale
        self.show_samples(self._samples_us)

    def show_samples(self, samples_us: list[float], bins: int = 30) -> None:
        """Plot ``samples_us`` (µs) as milliseconds; an empty list clears the plot."""
        self._samples_us = samples_us
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if not samples_us:
            plt.title("no raw latency samples (profile runs keep them)")
            self.refresh()
            return
        binned = robust_bins([s / 1000.0 for s in samples_us], bins)
        width = binned.edges[1] - binned.edges[0]
        centers = [edge + width / 2 for edge in binned.edges[:-1]]
        heights = [math.log10(c + 1) if self.log_scale else float(c) for c in binned.counts]
        plt.bar(centers, heights, width=1.0)
        plt.yticks(*_count_ticks(max(binned.counts), self.log_scale))
        low, high = binned.edges[0], binned.edges[-1]
        xs = [low + (high - low) * i / 4 for i in range(5)]
        plt.xticks(xs, [f"{x:.4g}" for x in xs])
        title = f"latency of {len(samples_us)} runs"
        if binned.below or binned.above:
            title += f"; not shown: {binned.below} below, {binned.above} above"
        plt.title(title + ("  [log scale: l]" if self.log_scale else "  [l: log scale]"))
        plt.xlabel("ms")
        self.refresh()
