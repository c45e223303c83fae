"""The paired verdict of an interleaved A/B: exact sign test, bootstrap CI of the median ratio,
the minimum effect and the regression gate, on ratios made here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgehub.errors import UsageError
from edgehub.tracking.paired import paired_verdict, sign_test


def test_sign_test_is_exact() -> None:
    # 10 of 10 one way: 2 / 2**10
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    # 8 vs 2: 2 * (1 + 10 + 45) / 1024
    assert sign_test(8, 2) == pytest.approx(2 * 56 / 1024)
    assert sign_test(5, 5) == 1.0
    assert sign_test(0, 0) == 1.0
    assert sign_test(2, 8) == sign_test(8, 2)


def test_identical_models_are_not_significant() -> None:
    rng = np.random.default_rng(1)
    ratios = list(np.exp(rng.normal(0.0, 0.03, size=30)))
    verdict = paired_verdict(ratios, max_regression=0.05, seed=3)
    assert verdict.ci[0] < 1.0 < verdict.ci[1]
    assert not verdict.significant and not verdict.regressed
    assert "not significant" in verdict.verdict and "within 5 %" in verdict.verdict


def test_a_clear_slowdown_is_significant_and_regressed() -> None:
    rng = np.random.default_rng(2)
    ratios = list(1.3 * np.exp(rng.normal(0.0, 0.03, size=20)))
    verdict = paired_verdict(ratios, max_regression=0.05)
    assert verdict.significant and verdict.regressed
    assert verdict.slower == 20 and verdict.faster == 0
    assert verdict.ci[0] > 1.2 and math.isclose(verdict.median_ratio, np.median(ratios))
    assert "REGRESSION beyond 5 %" in verdict.verdict
    # a faster B is significant but never a regression
    faster = paired_verdict([1 / r for r in ratios], max_regression=0.05)
    assert faster.significant and not faster.regressed and "faster" in faster.verdict


def test_tiny_consistent_effects_stay_below_the_minimum_effect() -> None:
    ratios = [1.005 + 0.0001 * i for i in range(30)]  # every round slower, by ~0.6 %
    verdict = paired_verdict(ratios, max_regression=0.0)
    assert verdict.ci[0] > 1.0 and verdict.sign_p < 1e-6
    assert not verdict.significant and not verdict.regressed
    assert paired_verdict(ratios, min_effect=0.001).significant


def test_a_regression_needs_the_ci_beyond_the_limit() -> None:
    ratios = [1.04 + 0.001 * (i % 5) for i in range(30)]  # ~4-4.4 % slower
    verdict = paired_verdict(ratios, max_regression=0.05)
    assert verdict.significant and not verdict.regressed


def test_too_few_rounds_or_bad_ratios_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="at least 6 rounds"):
        paired_verdict([1.0, 1.1, 1.2])
    with pytest.raises(UsageError, match="positive"):
        paired_verdict([1.0] * 9 + [0.0])
    with pytest.raises(UsageError, match=r"non-finite round ratios B/A \(NaN; 1 of 10\)"):
        paired_verdict([1.0] * 9 + [float("nan")])


def test_the_bootstrap_is_reproducible_from_its_seed() -> None:
    ratios = list(np.linspace(0.95, 1.08, 25))
    assert paired_verdict(ratios, seed=7).ci == paired_verdict(ratios, seed=7).ci
