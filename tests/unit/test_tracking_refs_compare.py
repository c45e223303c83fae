"""Run references match literally; `latest:<kind>`; profile comparisons (bootstrap CI, Mann-Whitney)
and the regression verdict."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from edgehub.errors import RunNotFoundError, UsageError
from edgehub.tracking import RunStore
from edgehub.tracking.profile_compare import compare_samples
from edgehub.tracking.significance import mann_whitney_u


def _add_run(store: RunStore, run_id: str, run_type: str, started: float) -> None:
    store.create_run(
        run_id=run_id,
        project="p",
        name=f"run {run_id}",
        run_type=run_type,
        component=None,
        parent_run_id=None,
        artifact_dir=store.root / "runs" / run_id,
        started_at=started,
    )
    store.end_run(run_id, "FINISHED", ended_at=started + 1)


def test_ids_and_prefixes_match_literally(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    _add_run(store, "ab%d", "COMPILE", 1.0)
    _add_run(store, "ab_c", "PROFILE", 2.0)
    _add_run(store, "abxc", "PROFILE", 3.0)
    assert store.resolve_id("ab%") == "ab%d"
    assert store.resolve_id("ab_") == "ab_c"
    with pytest.raises(RunNotFoundError, match="no run matches '%'"):
        store.resolve_id("%")
    with pytest.raises(RunNotFoundError, match="no run matches '_'"):
        store.resolve_id("_")
    with pytest.raises(RunNotFoundError, match=r"ambiguous: abxc .*ab_c .*ab%d"):
        store.resolve_id("ab")
    assert store.resolve_id("ab_c") == "ab_c"


def test_latest_is_the_latest_of_the_kind_asked_for(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    _add_run(store, "c1", "COMPILE", 1.0)
    _add_run(store, "p1", "PROFILE", 2.0)
    _add_run(store, "i1", "INFERENCE", 3.0)
    assert store.resolve_id("latest") == "i1"
    assert store.resolve_id("latest", run_type="COMPILE") == "c1"
    assert store.resolve_id("latest:profile") == "p1"
    assert store.resolve_id("latest:invoke") == "i1"
    assert store.resolve_id("LATEST:Compile", run_type="PROFILE") == "c1"
    assert store.run_log("latest", run_type="compile").run_id == "c1"
    with pytest.raises(RunNotFoundError, match="no run of type EVAL"):
        store.resolve_id("latest:eval")
    with pytest.raises(RunNotFoundError) as info:
        store.resolve_id("latest:banana")
    assert str(info.value) == (
        "no run of type BANANA in the run store; the store holds latest:compile, "
        "latest:inference, latest:profile"
    )
    with pytest.raises(RunNotFoundError, match=r"run `hub exec \.\.\.` first"):
        RunStore(tmp_path / "empty").resolve_id("latest")


def test_unknown_status_filter_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown run status 'done'"):
        RunStore(tmp_path).list_runs(status="done")


def test_started_before_and_after(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    for i in range(5):
        _add_run(store, f"r{i}", "CUSTOM", float(i))
    found = store.list_runs(started_after=1.0, started_before=4.0)
    assert [r.run_id for r in found] == ["r3", "r2", "r1"]


def _latencies(rng: np.random.Generator, n: int, scale: float = 1.0) -> np.ndarray:
    return scale * (2.0 + rng.gamma(2.0, 0.05, size=n))


def test_same_distribution_is_not_significant() -> None:
    rng = np.random.default_rng(4)
    result = compare_samples(_latencies(rng, 2000), _latencies(rng, 2000), max_regression=0.05)
    assert not result.significant and not result.regressed
    assert result.median.ci_pct[0] < 0 < result.median.ci_pct[1]
    assert result.mann_whitney_p > 0.05
    assert "not significant" in result.verdict


def test_same_distribution_false_alarms_stay_near_five_percent() -> None:
    rng = np.random.default_rng(100)
    results = [
        compare_samples(_latencies(rng, 1000), _latencies(rng, 1000), max_regression=0.05)
        for _ in range(20)
    ]
    assert sum(r.significant for r in results) <= 4  # 1 expected; more than 4: p < 0.003
    assert not any(r.regressed for r in results)


def test_a_twenty_percent_slower_b_is_significant_and_flagged_at_five_percent() -> None:
    rng = np.random.default_rng(8)
    result = compare_samples(
        _latencies(rng, 1000), _latencies(rng, 1000, scale=1.2), max_regression=0.05
    )
    assert result.significant and result.regressed
    assert result.median.delta_pct == pytest.approx(20.0, abs=1.0)
    assert result.median.ci_pct[0] > 5.0 and result.mann_whitney_p < 1e-6
    assert "REGRESSION beyond 5%" in result.verdict
    data = result.to_dict()
    assert data["regressed"] is True and data["median"]["significant"] is True


def test_a_two_percent_slower_b_is_not_flagged_at_five_percent() -> None:
    rng = np.random.default_rng(9)
    result = compare_samples(
        _latencies(rng, 5000), _latencies(rng, 5000, scale=1.02), max_regression=0.05
    )
    assert result.statistically_significant  # real, but small:
    assert not result.significant  # within the run-to-run noise floor
    median = result.to_dict()["median"]
    assert median["significant"] is False and median["statistically_significant"] is True
    assert "within the 5% run-to-run noise" in result.verdict
    assert not result.regressed and "within 5%" in result.verdict
    finer = compare_samples(
        _latencies(rng, 5000), _latencies(rng, 5000, scale=1.02), min_effect=0.01
    )
    assert finer.significant and finer.to_dict()["significant"] is True


def test_faster_b_is_never_a_regression() -> None:
    rng = np.random.default_rng(10)
    result = compare_samples(
        _latencies(rng, 500), _latencies(rng, 500, scale=0.7), max_regression=0.0
    )
    assert result.significant and not result.regressed and result.median.delta_ms < 0


def test_ten_thousand_samples_compare_quickly() -> None:
    rng = np.random.default_rng(11)
    a, b = _latencies(rng, 10_000), _latencies(rng, 10_000)
    started = time.perf_counter()
    result = compare_samples(a, b)
    elapsed = time.perf_counter() - started
    assert result.resamples == 2000
    assert elapsed < 20, elapsed  # ~1-2 s on a quiet core; loose on a shared machine


def test_bootstrap_is_reproducible_with_its_seed() -> None:
    rng = np.random.default_rng(12)
    a, b = _latencies(rng, 300), _latencies(rng, 300)
    assert compare_samples(a, b).median.ci_ms == compare_samples(a, b).median.ci_ms
    assert compare_samples(a, b, seed=1).median.ci_ms != compare_samples(a, b).median.ci_ms


def test_mann_whitney_matches_hand_computed_values() -> None:
    u, p = mann_whitney_u(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    assert u == 0.0
    # mean 4.5, variance 3*3/12*7 = 5.25, z = (4.5 - 0.5) / sqrt(5.25)
    assert p == pytest.approx(0.0808556, rel=1e-5)
    u, p = mann_whitney_u(np.array([1.0, 2.0, 2.0]), np.array([2.0, 3.0, 3.0]))
    assert u == 1.0  # ties share the average rank: 0 + 0.5 + 0.5
    assert 0 < p < 1


def test_too_few_samples_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="too few latency samples"):
        compare_samples(np.ones(3), np.ones(50))
