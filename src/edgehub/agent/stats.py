"""Latency statistics over raw samples (pure Python, so the numbers are easy to audit).

- Percentiles use linear interpolation between closest ranks (Hyndman & Fan type 7, numpy's
  default ``method="linear"``): for sorted samples x[0..n-1] and q in [0, 100],
  h = (n - 1) * q / 100 and p = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]).
  The median is p50, so min <= median <= p90 <= p95 <= p99 <= max always holds.
- ``std`` is the population standard deviation (divides by n, as numpy.std does by default).
- Values are reported in milliseconds rounded to the microsecond (3 decimals).
"""

from __future__ import annotations

import math
from typing import Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Type-7 percentile of already sorted values; ``q`` in [0, 100]."""
    if not sorted_values:
        raise ValueError("percentile of no samples")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} outside [0, 100]")
    h = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo]))


def ms(value_ns: float) -> float:
    """Nanoseconds to milliseconds, rounded to the microsecond."""
    return round(value_ns / 1e6, 3)


def latency_stats(samples_ns: Sequence[int]) -> dict[str, float]:
    """The latency metrics for timed runs given in nanoseconds."""
    if not samples_ns:
        raise ValueError("no latency samples")
    values: list[float] = sorted(float(v) for v in samples_ns)
    n = len(values)
    mean = math.fsum(values) / n
    variance = math.fsum((v - mean) ** 2 for v in values) / n
    std = math.sqrt(variance)
    return {
        "latency_mean_ms": ms(mean),
        "latency_median_ms": ms(percentile(values, 50)),
        "latency_min_ms": ms(values[0]),
        "latency_max_ms": ms(values[-1]),
        "latency_p90_ms": ms(percentile(values, 90)),
        "latency_p95_ms": ms(percentile(values, 95)),
        "latency_p99_ms": ms(percentile(values, 99)),
        "latency_std_ms": ms(std),
        "latency_cv_pct": round(100.0 * std / mean, 2) if mean > 0 else 0.0,
        "fps": round(1e9 / mean, 3) if mean > 0 else 0.0,
    }


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0
