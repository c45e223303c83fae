"""`LatencyHistogram`: the distribution of a profile run's raw latency samples (plotext).

The axis spans a robust range: the samples' own range, narrowed to 3 interquartile ranges
beyond the quartiles (Tukey's fences for far-out values), so a few outliers (even 1 %) do not
squeeze every sample into the first bar, and a distribution without such outliers is shown
whole. The samples outside it are counted in overflow bars (red, one bin apart beyond each end
of the axis, labelled ``<low`` and ``>high``) and in the title. Counts are whole numbers, on a
linear or a log scale (`log_scale`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from textual_plotext import PlotextPlot

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
    q1, q3 = np.percentile(values, [25, 75])
    spread = FENCE * float(q3 - q1)
    low = max(float(values.min()), float(q1) - spread)
    high = min(float(values.max()), float(q3) + spread)
    if high <= low:  # all (nearly) equal: a narrow range around them
        high = low + max(abs(low) * 1e-3, 1e-9)
    counts, edges = np.histogram(values, bins=bins, range=(low, high))
    return Bins(
        edges=[float(e) for e in edges],
        counts=[int(c) for c in counts],
        below=int((values < low).sum()),
        above=int((values > high).sum()),
    )


def overflow_bars(binned: Bins) -> list[tuple[float, int, str]]:
    """The bars of the samples outside the axis: (x, count, tick label), one bin-width gap
    beyond each end, only where there are such samples."""
    low, high = binned.edges[0], binned.edges[-1]
    width = binned.edges[1] - binned.edges[0]
    bars = []
    if binned.below:
        bars.append((low - 1.5 * width, binned.below, f"<{low:.4g}"))
    if binned.above:
        bars.append((high + 1.5 * width, binned.above, f">{high:.4g}"))
    return bars


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

        def height(count: int) -> float:
            return math.log10(count + 1) if self.log_scale else float(count)

        outside = overflow_bars(binned)
        # one x axis for both series (plotext sizes bars by their series' spacing): the bins
        # with the overflow bars at zero, then the overflow bars in red with the bins at zero
        xs_all = sorted([*centers, *(x for x, _, _ in outside)])
        inside = dict(zip(centers, binned.counts, strict=True))
        plt.bar(xs_all, [height(inside.get(x, 0)) for x in xs_all], width=1.0)
        if outside:
            red = {x: count for x, count, _ in outside}
            plt.bar(xs_all, [height(red.get(x, 0)) for x in xs_all], width=1.0, color="red")
        highest = max([*binned.counts, *(count for _, count, _ in outside)])
        plt.yticks(*_count_ticks(highest, self.log_scale))
        low, high = binned.edges[0], binned.edges[-1]
        xs = [low + (high - low) * i / 4 for i in range(5)]
        labels = [f"{x:.4g}" for x in xs]
        for x, _, label in outside:  # the overflow bars' own labels replace the end ticks
            end = 0 if x < low else -1
            xs[end], labels[end] = x, label
        plt.xticks(xs, labels)
        title = f"latency of {len(samples_us)} runs"
        if outside:
            told = [f"{c} {'below' if x < low else 'above'}" for x, c, _ in outside]
            title += f"; outliers in red bars: {', '.join(told)}"
        plt.title(title + ("  [log scale: l]" if self.log_scale else "  [l: log scale]"))
        plt.xlabel("ms")
        self.refresh()
