"""Confidence intervals of latency percentiles from the raw samples (order statistics).

For the ``q`` quantile of ``n`` independent samples, the count of samples below the true
quantile is Binomial(n, q), so the sorted samples ``x(l) <= x(u)`` bracket it with probability
``P(l <= B < u)``. `percentile_ci` picks the ranks whose tails hold at most ``(1 - confidence)
/ 2`` each (distribution-free; at least the asked confidence). Too few samples leave no such
rank: then it says how many are needed (`min_samples`; at 95 %, p50 needs 6, p90 36 and p99
368). Past that the interval exists but may still rest on the largest sample: below
`early_stopping_samples` (MLPerf's early-stopping rule: 99 % that the true percentile lies below
the second-largest sample; p90 64, p99 662) a percentile is flagged as resting on too few
samples. The estimate itself is numpy's linear interpolation, as the profilers report it.

numpy is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from edgehub.tracking.significance import FloatArray


CONFIDENCE = 0.95
EARLY_STOPPING_CONFIDENCE = 0.99
QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class PercentileCI:
    """One percentile (ms) of ``samples`` samples and its CI; ``low``/``high`` are None when
    there are fewer samples than ``needed`` for one."""

    quantile: float
    value: float
    low: float | None
    high: float | None
    samples: int
    needed: int
    confidence: float = CONFIDENCE
    enough: int = 0  # `early_stopping_samples`: fewer is flagged as too few (0: not checked)

    @property
    def label(self) -> str:
        return f"p{100 * self.quantile:g}"

    @property
    def note(self) -> str | None:
        """What is missing for an interval, or what makes it rest on too few samples, in one
        line (None: neither)."""
        if self.low is None:
            return (
                f"{self.label} needs >= {self.needed} runs for a {100 * self.confidence:g} % CI; "
                f"got {self.samples}"
            )
        if self.samples < self.enough:
            return (
                f"{self.label} from {self.samples} runs: fewer than the {self.enough} MLPerf's "
                "early stopping asks, its CI rests on the slowest runs"
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label, "note": self.note}


def min_samples(q: float, confidence: float = CONFIDENCE) -> int:
    """The fewest samples with order statistics on both sides of the ``q`` quantile's CI:
    ``(1 - q)^n`` and ``q^n`` both at most ``(1 - confidence) / 2``."""
    _check(q, confidence)
    tail = (1.0 - confidence) / 2.0
    return max(1, math.ceil(math.log(tail) / math.log(max(q, 1.0 - q)) - 1e-9))


def early_stopping_samples(q: float, confidence: float = EARLY_STOPPING_CONFIDENCE) -> int:
    """The fewest samples for which the ``q`` quantile lies below the second-largest sample
    with ``confidence``: ``P(Binomial(n, 1 - q) <= 1) <= 1 - confidence`` (MLPerf's early
    stopping with no run over the bound; at 99 %: p90 64, p99 662, p99.9 6636)."""
    _check(q, confidence)
    n = 2
    while q**n + n * (1.0 - q) * q ** (n - 1) > 1.0 - confidence:
        n += 1
    return n


def _check(q: float, confidence: float) -> None:
    if not (0.0 < q < 1.0 and 0.0 < confidence < 1.0):
        raise ValueError(f"quantile and confidence must lie in (0, 1), got {q}, {confidence}")


def _binomial_cdf(n: int, q: float) -> FloatArray:
    """``P(B <= k)`` for ``k = 0..n``, B ~ Binomial(n, q), from log-space terms."""
    import numpy as np

    k = np.arange(n + 1, dtype=np.float64)
    steps = np.log(n - k[1:] + 1.0) - np.log(k[1:])
    log_comb = np.concatenate(([0.0], np.cumsum(steps)))
    log_pmf = log_comb + k * math.log(q) + (n - k) * math.log1p(-q)
    pmf = np.exp(log_pmf - log_pmf.max())
    cdf: FloatArray = np.cumsum(pmf / pmf.sum())
    return cdf


def ranks(n: int, q: float, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """The 1-based ranks ``(l, u)`` of the sorted samples that bracket the ``q`` quantile with
    at least ``confidence``; None when ``n`` is too small for either side."""
    import numpy as np

    _check(q, confidence)
    if n < 1:
        return None
    tail = (1.0 - confidence) / 2.0
    cdf = _binomial_cdf(n, q)
    low = int(np.count_nonzero(cdf[:n] <= tail))  # P(B <= l - 1) <= tail
    high = int(np.searchsorted(cdf, 1.0 - tail)) + 1  # P(B <= u - 1) >= 1 - tail
    if low < 1 or high > n:
        return None
    return low, high


def percentile_ci(samples: FloatArray, q: float, confidence: float = CONFIDENCE) -> PercentileCI:
    """The ``q`` percentile of ``samples`` with its order-statistic CI (see the module)."""
    import numpy as np

    values = np.sort(np.asarray(samples, dtype=np.float64))
    if values.size == 0:
        raise ValueError("no samples")
    found = ranks(int(values.size), q, confidence)
    low, high = (None, None) if found is None else (values[found[0] - 1], values[found[1] - 1])
    return PercentileCI(
        quantile=q,
        value=float(np.quantile(values, q)),
        low=None if low is None else float(low),
        high=None if high is None else float(high),
        samples=int(values.size),
        needed=min_samples(q, confidence),
        confidence=confidence,
        enough=early_stopping_samples(q),
    )


def percentile_cis(
    samples: FloatArray, quantiles: Sequence[float] = QUANTILES, confidence: float = CONFIDENCE
) -> list[PercentileCI]:
    """`percentile_ci` for each of ``quantiles`` (p50, p90, p99 by default)."""
    return [percentile_ci(samples, q, confidence) for q in quantiles]
