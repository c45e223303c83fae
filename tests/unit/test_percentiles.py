"""Percentile confidence intervals from order statistics (`edgehub.tracking.percentiles`)."""

from __future__ import annotations

import numpy as np
import pytest

from edgehub.tracking.percentiles import min_samples, percentile_ci, percentile_cis, ranks


def test_the_minimum_sample_counts_at_95_percent() -> None:
    assert [min_samples(q) for q in (0.5, 0.9, 0.99)] == [6, 36, 368]
    for q in (0.5, 0.9, 0.99):  # the count is exactly where both ranks first exist
        needed = min_samples(q)
        assert ranks(needed - 1, q) is None and ranks(needed, q) is not None
    assert min_samples(0.99, 0.99) > min_samples(0.99)


def test_too_few_runs_for_a_p99_says_how_many_it_needs() -> None:
    p50, p90, p99 = percentile_cis(np.arange(1.0, 101.0))
    assert p50.low is not None and p50.high is not None and p50.low <= p50.value <= p50.high
    assert p90.note is None and p99.low is None and p99.high is None
    assert p99.note == "p99 needs >= 368 runs for a 95 % CI; got 100"
    assert p99.to_dict()["label"] == "p99" and p99.value == pytest.approx(99.01)


def test_the_intervals_cover_the_true_percentile_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    for q, n in ((0.5, 25), (0.9, 120), (0.99, 400)):
        truth = -np.log(1.0 - q)  # the exponential distribution's quantile
        trials = 600
        hits = sum(
            int(ci.low is not None and ci.high is not None and ci.low <= truth <= ci.high)
            for ci in (percentile_ci(rng.exponential(size=n), q) for _ in range(trials))
        )
        assert 0.92 <= hits / trials <= 0.995, (q, n, hits / trials)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile_ci(np.array([]), 0.5)
    with pytest.raises(ValueError, match="must lie in"):
        min_samples(1.0)
    assert ranks(0, 0.5) is None
