"""Is latency sample B different from A? A paired-free bootstrap of quantile deltas and the
Mann-Whitney U test (normal approximation with tie correction), in numpy alone.

numpy is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]


def quantile(values: FloatArray, q: float) -> float:
    """The ``q`` quantile with linear interpolation between closest ranks."""
    import numpy as np

    return float(np.quantile(values, q))


@dataclass(frozen=True)
class BootstrapDeltas:
    """Bootstrap replicates of ``quantile(B) - quantile(A)`` and ``quantile(B)/quantile(A) - 1``
    for each quantile asked for (keyed by the quantile)."""

    absolute: dict[float, FloatArray]
    relative: dict[float, FloatArray]


def _resampled_quantiles(
    values: FloatArray, qs: tuple[float, ...], resamples: int, rng: np.random.Generator
) -> dict[float, FloatArray]:
    """The ``q`` quantile of each of ``resamples`` bootstrap resamples of ``values``, drawn
    exactly without building the resamples: the k-th smallest of n draws from the sample is
    the sample's value at the k-th smallest of n uniforms, which is Beta(k, n-k+1); the next
    smallest is the least of the n-k uniforms above it. Cost: one sort, not resamples x n."""
    import numpy as np

    ordered = np.sort(values)
    n = len(ordered)

    def at(uniforms: FloatArray) -> FloatArray:  # the sample's quantile function
        index = np.clip(np.ceil(uniforms * n).astype(np.int64) - 1, 0, n - 1)
        return ordered[index]

    out: dict[float, FloatArray] = {}
    for q in qs:
        position = q * (n - 1)
        low = math.floor(position)
        frac = position - low
        rank = low + 1  # 1-based rank of the lower of the two order statistics used
        u_low = rng.beta(rank, n - rank + 1, size=resamples)
        u_high = (
            u_low + (1.0 - u_low) * rng.beta(1, n - rank, size=resamples) if rank < n else u_low
        )
        out[q] = at(u_low) * (1.0 - frac) + at(u_high) * frac
    return out


def bootstrap_quantile_deltas(
    a: FloatArray,
    b: FloatArray,
    qs: tuple[float, ...] = (0.5, 0.99),
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> BootstrapDeltas:
    """Resample A and B independently ``resamples`` times (each quantile drawn directly)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    qa = _resampled_quantiles(np.asarray(a, dtype=np.float64), qs, resamples, rng)
    qb = _resampled_quantiles(np.asarray(b, dtype=np.float64), qs, resamples, rng)
    absolute = {q: qb[q] - qa[q] for q in qs}
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = {q: qb[q] / qa[q] - 1.0 for q in qs}
    return BootstrapDeltas(absolute=absolute, relative=relative)


def mann_whitney_u(a: FloatArray, b: FloatArray) -> tuple[float, float]:
    """(U of A, two-sided p) by the normal approximation with tie and continuity correction."""
    import numpy as np

    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    n1, n2 = len(x), len(y)
    n = n1 + n2
    combined = np.concatenate([x, y])
    _, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
    # the average rank of each distinct value: ranks before it, plus the middle of its run
    before = np.concatenate([[0], np.cumsum(counts)[:-1]])
    average_rank = before + (counts + 1) / 2.0
    rank_sum_a = float(average_rank[inverse[:n1]].sum())
    u_a = rank_sum_a - n1 * (n1 + 1) / 2.0
    mean = n1 * n2 / 2.0
    ties = float(((counts.astype(np.float64) ** 3) - counts).sum())
    variance = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0:
        return u_a, 1.0
    z = (abs(u_a - mean) - 0.5) / math.sqrt(variance)
    return u_a, float(math.erfc(max(z, 0.0) / math.sqrt(2.0)))
