"""The percentile CIs against binomial bounds summed here from the pmf (`math.comb`), and the
report's Pareto front (`ops.html_report.pareto_front`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgehub.ops.html_report import pareto_front
from edgehub.tracking.percentiles import early_stopping_samples, percentile_ci, ranks


def _cdf(k: int, n: int, q: float) -> float:
    """P(B <= k), B ~ Binomial(n, q), by direct summation of the pmf."""
    return sum(math.comb(n, i) * q**i * (1.0 - q) ** (n - i) for i in range(k + 1))


@pytest.mark.parametrize(("n", "q"), [(20, 0.5), (100, 0.5), (100, 0.9), (60, 0.9), (500, 0.99)])
def test_the_ranks_are_the_tightest_with_each_tail_at_most_2_5_percent(n: int, q: float) -> None:
    found = ranks(n, q)
    assert found is not None
    low, high = found
    assert _cdf(low - 1, n, q) <= 0.025 < _cdf(low, n, q)  # P(B < l) <= 2.5 %, l the largest
    assert _cdf(high - 2, n, q) < 0.975 <= _cdf(high - 1, n, q)  # P(B >= u) <= 2.5 %, u least
    assert _cdf(high - 1, n, q) - _cdf(low - 1, n, q) >= 0.95  # P(l <= B < u)


def test_the_classic_median_interval_of_100_samples() -> None:
    assert ranks(100, 0.5) == (40, 61)  # the textbook order statistics x(40), x(61)
    ci = percentile_ci(np.arange(1.0, 101.0), 0.5)
    assert (ci.low, ci.high) == (40.0, 61.0)


def test_too_few_samples_for_a_rank_on_either_side() -> None:
    for q in (0.9, 0.99):
        n = next(n for n in range(1, 2000) if ranks(n, q) is not None)
        assert q**n <= 0.025 < q ** (n - 1)  # the largest sample first bounds it at 97.5 %


def test_early_stopping_matches_mlperfs_minimum_query_counts() -> None:
    """MLPerf: 99 % that the percentile lies below the second-largest sample."""
    for q in (0.9, 0.99):
        n = early_stopping_samples(q)
        assert _cdf(1, n, 1.0 - q) <= 0.01 < _cdf(1, n - 1, 1.0 - q)
    assert [early_stopping_samples(q) for q in (0.9, 0.99, 0.999)] == [64, 662, 6636]


def test_a_percentile_with_an_interval_but_too_few_samples_is_flagged() -> None:
    samples = np.random.default_rng(3).exponential(size=50)
    p90 = percentile_ci(samples, 0.9)
    assert p90.low is not None and p90.note is not None and "fewer than the 64" in p90.note
    assert percentile_ci(np.random.default_rng(3).exponential(size=64), 0.9).note is None


def test_the_pareto_front_keeps_what_nothing_beats_on_both() -> None:
    points = [(1.0, 0.5), (2.0, 0.9), (1.5, 0.4), (3.0, 0.95), (2.5, 0.9), (0.5, 0.1)]
    assert pareto_front(points) == [5, 0, 1, 3]
    assert pareto_front([]) == []
