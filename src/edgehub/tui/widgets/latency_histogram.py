"""`LatencyHistogram`: the distribution of a profile run's raw latency samples (plotext)."""

from __future__ import annotations

from textual_plotext import PlotextPlot

__all__ = ["LatencyHistogram"]


class LatencyHistogram(PlotextPlot):
    DEFAULT_CSS = """
    LatencyHistogram { height: 14; min-height: 8; }
    """

    def show_samples(self, samples_us: list[float], bins: int = 30) -> None:
        """Plot ``samples_us`` (µs) as milliseconds; an empty list clears the plot."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if samples_us:
            plt.hist([s / 1000.0 for s in samples_us], bins=bins)
            plt.title(f"latency of {len(samples_us)} runs")
            plt.xlabel("ms")
        else:
            plt.title("no raw latency samples (profile runs keep them)")
        self.refresh()
