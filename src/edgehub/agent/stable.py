"""Measuring until stable: timed windows until the last three windows agree.

:func:`measure_until_stable` runs windows of timed runs until the last `WINDOWS` windows agree:
their medians, and their means (of the fastest 99 %: one rare pause moves a fast model's mean by
several percent), lie within ``tolerance`` of each other (max less min over min). It stops
there, after ``max_s`` seconds or after `MAX_WINDOWS` windows, keeps the last three windows'
samples, says whether it converged, how many windows ran and the last spread, and never fails
the measurement for not converging.

Given ``other_share`` (other processes' share of the CPUs since its last call:
:class:`..conditions.OtherCpuMeter`), a window counts only when that share was at most
``max_other_share`` (default `MAX_OTHER_CPU_SHARE`, the limit `hub runs compare` calls not
comparable; 1 turns the check off): windows that agree beside a busy neighbour are not stable.

The caller warms up for `WARMUP_S` first (:func:`warm_up`). A window is one call of ``measure``,
repeated until it has lasted `MIN_WINDOW_S`: three windows of milliseconds agree even while a
neighbour's bursts of load change the latency from one second to the next. A window keeps every
k-th sample (at most `MAX_KEPT_PER_WINDOW`); its median and mean use all of them. The means
matter: bursts slow a minority of runs, moving the mean but not always the median (a bursty
neighbour on 2 cores: medians within 3 %, means 20 % apart). Standard library only.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .conditions import ConditionsProbe, OtherCpuMeter, conditions_lines
from .env import collect_env
from .protocol import Params, write_json_atomic
from .stats import latency_stats

if TYPE_CHECKING:
    from .report import Report

WINDOWS = 3
PERCENTILES = "linear interpolation between closest ranks (numpy 'linear')"
MAX_WINDOWS = 1000
MIN_WINDOW_S = 1.0
MAX_KEPT_PER_WINDOW = 10_000
MAX_OTHER_CPU_SHARE = 0.25  # the same limit as edgehub.tracking.comparability's
WARMUP_S = 0.5  # untimed runs before the first window, beyond the ``warmup`` count


@dataclass(frozen=True)
class StableResult:
    """The kept samples (ns), whether the last three windows agreed, and how many windows ran;
    ``spread`` is the larger of the last three medians' and means' (max - min) / min (None:
    fewer than three windows ran); ``other_shares`` the share of the CPUs other processes took
    in each window (None: not measured)."""

    samples: list[int]
    converged: bool
    windows: int
    spread: float | None
    medians_ns: list[float]
    means_ns: list[float]
    other_shares: list[float | None]
    max_other_share: float = MAX_OTHER_CPU_SHARE

    def busy_windows(self) -> int:
        """How many of the last three windows other processes held above the limit."""
        recent = self.other_shares[-WINDOWS:]
        return sum(share is not None and share > self.max_other_share for share in recent)


def _spread(medians: list[float]) -> float:
    low = min(medians)
    return float("inf") if low <= 0 else (max(medians) - low) / low


def warm_up(run: Callable[[int], object], seconds: float = WARMUP_S) -> int:
    """Call ``run(i)`` (untimed) until ``seconds`` have passed; how many calls. A fast model's
    ``warmup`` runs last a millisecond, and its first window then ran up to 7 % slower in mean
    than the next (measured on a quiet 2-core machine): caches, allocator and thread pool still
    settling."""
    end = time.monotonic() + seconds
    count = 0
    while time.monotonic() < end:
        run(count)
        count += 1
    return count


def timed_runs(call: Callable[[], object], runs: int) -> list[int]:
    """``runs`` samples in ns, perf_counter_ns tightly around each ``call()``."""
    clock = time.perf_counter_ns
    samples = [0] * runs
    for i in range(runs):
        start = clock()
        call()
        samples[i] = clock() - start
    return samples


def _thinned(window: list[int]) -> list[int]:
    """Every k-th sample of ``window``, at most `MAX_KEPT_PER_WINDOW` (the median is taken
    before thinning)."""
    step = -(-len(window) // MAX_KEPT_PER_WINDOW)
    return window if step <= 1 else window[::step]


def measure_until_stable(
    measure: Callable[[], list[int]],
    *,
    tolerance: float,
    max_s: float,
    clock: Callable[[], float] = time.monotonic,
    min_window_s: float = MIN_WINDOW_S,
    other_share: Callable[[], float | None] | None = None,
    max_other_share: float = MAX_OTHER_CPU_SHARE,
) -> StableResult:
    """Call ``measure`` (one window of samples, ns) until stable or out of time (see above)."""
    start = clock()
    windows: list[list[int]] = []
    medians: list[float] = []
    means: list[float] = []
    shares: list[float | None] = []
    spread: float | None = None
    converged = False
    if other_share is not None:
        other_share()  # the first window's share counts from here
    while True:
        opened = clock() if min_window_s > 0 else 0.0
        window = measure()
        while min_window_s > 0 and clock() - opened < min_window_s and clock() - start < max_s:
            window = window + measure()
        ordered = sorted(window)
        medians.append(float(statistics.median(ordered)))
        fastest = ordered[: len(ordered) - len(ordered) // 100]  # the slowest 1 % left out
        means.append(sum(fastest) / len(fastest))
        windows.append(_thinned(window))
        shares.append(other_share() if other_share is not None else None)
        if len(medians) >= WINDOWS:
            spread = max(_spread(medians[-WINDOWS:]), _spread(means[-WINDOWS:]))
            quiet = all(s is None or s <= max_other_share for s in shares[-WINDOWS:])
            converged = spread <= tolerance and quiet
            if converged:
                break
        if clock() - start >= max_s or len(windows) >= MAX_WINDOWS:
            break
    kept = [s for window in windows[-WINDOWS:] for s in window]
    return StableResult(
        kept, converged, len(windows), spread, medians, means, shares, max_other_share
    )


def stable_metrics(result: StableResult) -> dict[str, Any]:
    """The metrics a profile records about its windows: ``stable_converged`` (1/0),
    ``stable_windows``, (from three windows on) ``stable_spread_pct`` and, where measured,
    ``stable_busy_windows`` (how many of the last three other processes held above the limit)."""
    metrics: dict[str, Any] = {
        "stable_converged": int(result.converged),
        "stable_windows": result.windows,
    }
    if result.spread is not None:
        metrics["stable_spread_pct"] = round(100.0 * result.spread, 3)
    if any(share is not None for share in result.other_shares):
        metrics["stable_busy_windows"] = result.busy_windows()
    return metrics


def window_rows(result: StableResult) -> list[dict[str, Any]]:
    """One row per window, in order: its median and mean (ms; the mean of the fastest 99 %)
    and, where measured, the share of the CPUs other processes took during it (a profile's
    ``windows``)."""
    rows = []
    # the three lists are as long as each other (one entry per window); zip's strict= is 3.10
    for median, mean, share in zip(result.medians_ns, result.means_ns, result.other_shares):
        row: dict[str, Any] = {"median_ms": round(median / 1e6, 4), "mean_ms": round(mean / 1e6, 4)}
        if share is not None:
            row["other_cpu_share"] = round(share, 3)
        rows.append(row)
    return rows


def stable_line(
    metrics: dict[str, Any],
    tolerance: float,
    max_s: float,
    max_other_share: float = MAX_OTHER_CPU_SHARE,
) -> tuple[bool, str]:
    """Whether the windows converged, and the line that says how (a warning when not: the run
    still finishes, on the last three windows' samples)."""
    how = (
        f"{metrics['stable_windows']} windows, last three medians and means "
        f"{metrics.get('stable_spread_pct')}% apart"
    )
    if metrics["stable_converged"]:
        return True, f"stable after {how}"
    busy = metrics.get("stable_busy_windows") or 0
    if busy:
        how += (
            f"; other processes took over {100 * max_other_share:g}% of the CPUs in {busy} of them"
        )
    return False, (
        f"not stable within {max_s:g} s ({how}; tolerance {100 * tolerance:g}%): "
        "the samples are the last three windows'"
    )


# a profile warns of unstable timings when p90 is this much above the median (robust to rare
# outliers, which on a tiny model would make the coefficient of variation alone alarm every time)
UNSTABLE_P90_RATIO = 1.25


def timed_loop(
    stability: Stability | None, window: Callable[[], list[int]], report: Report
) -> tuple[list[int], dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """A profile's timed runs: one ``window()``, or with ``stability`` windows until stable,
    and what they ran under (:mod:`.conditions`, said on ``report``). Returns the samples (ns),
    the ``stable_*`` metrics, the windows' rows and the conditions."""
    probe = ConditionsProbe()
    stable: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    if stability:
        found = stability.measure(window)
        samples, stable, rows = found.samples, stable_metrics(found), window_rows(found)
    else:
        samples = window()
    conditions = probe.finish()
    for line in conditions_lines(conditions):
        report.info(line)
    if stability:
        stability.tell(stable, report)
    return samples, stable, rows, conditions


def latency_metrics(
    samples: list[int], stable: dict[str, Any], runs: int, fix: str, report: Report
) -> dict[str, Any]:
    """The latency statistics of ``samples`` (:mod:`.stats`) and the ``stable`` metrics, said on
    ``report``, with a warning where ``runs`` >= 20 and p90 is far above the median (``fix``:
    the thread setting to pin)."""
    metrics: dict[str, Any] = {**latency_stats(samples), **stable}
    median, p90 = metrics["latency_median_ms"], metrics["latency_p90_ms"]
    report.info(
        f"latency: mean {metrics['latency_mean_ms']:.3f} ms, median {median:.3f} ms, "
        f"p99 {metrics['latency_p99_ms']:.3f} ms"
    )
    if runs >= 20 and median > 0 and p90 > UNSTABLE_P90_RATIO * median:
        report.warn(
            f"latency is unstable: p90 {p90:.3f} ms vs median {median:.3f} ms (CoV "
            f"{metrics['latency_cv_pct']:.1f}%): close other workloads, fix {fix}, or raise "
            "warmup/runs"
        )
    return metrics


def write_profile(
    target: str,
    samples: list[int],
    cold: list[dict[str, float]],
    metrics: dict[str, Any],
    settings: dict[str, Any],
    conditions: dict[str, Any],
    windows: list[dict[str, Any]],
    report: Report,
    **extra: Any,
) -> None:
    """Write a profile's ``profile_json`` document at ``target``: ``samples_us``,
    ``cold_starts``, ``stats``, ``env``, ``settings`` (with how percentiles are taken),
    ``conditions``, ``windows`` (when until stable) and ``extra``."""
    document = {
        "samples_us": [round(s / 1000.0, 3) for s in samples],
        "cold_starts": cold,
        "stats": metrics,
        "env": collect_env(),
        "settings": {**settings, "percentiles": PERCENTILES},
        "conditions": conditions,
        **({"windows": windows} if windows else {}),
        **extra,
    }
    write_json_atomic(target, document)
    report.info(f"profile written to {target}")


@dataclass(frozen=True)
class Stability:
    """A profile command's ``until_stable`` request: its ``stable_*`` parameters."""

    tolerance: float
    max_s: float
    window_s: float = MIN_WINDOW_S
    max_other_share: float = MAX_OTHER_CPU_SHARE

    @classmethod
    def read(cls, params: Params, *, windows: bool = True) -> Stability | None:
        """The request in ``params``, None without ``until_stable`` (the settings are read
        either way); ``windows``: the command takes ``stable_window_s`` and
        ``stable_max_other_share`` too."""
        asked = params.boolean("until_stable", False)
        tolerance = params.number("stable_tolerance", 0.05)
        max_s = params.number("stable_max_s", 60.0)
        if not windows:
            return cls(tolerance, max_s) if asked else None
        window_s = params.number("stable_window_s", MIN_WINDOW_S)
        max_other = params.number("stable_max_other_share", MAX_OTHER_CPU_SHARE)
        return cls(tolerance, max_s, window_s, max_other) if asked else None

    def warm(self, run: Callable[[int], object], report: Report) -> None:
        """The warm-up before the first window (`warm_up`), said on ``report``."""
        more = warm_up(run)
        report.info(f"warmup before the windows: {more} more runs ({WARMUP_S:g} s)")

    def measure(self, window: Callable[[], list[int]]) -> StableResult:
        """`measure_until_stable` with these settings, other processes' CPU share metered."""
        return measure_until_stable(
            window,
            tolerance=self.tolerance,
            max_s=self.max_s,
            min_window_s=self.window_s,
            other_share=OtherCpuMeter(),
            max_other_share=self.max_other_share,
        )

    def tell(self, metrics: dict[str, Any], report: Report) -> None:
        """Say on ``report`` how the windows went (`stable_line`; a warning when unstable)."""
        converged, line = stable_line(metrics, self.tolerance, self.max_s, self.max_other_share)
        (report.info if converged else report.warn)(line)
