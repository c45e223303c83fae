"""Measuring until stable: the window logic (`edgehub.agent.stable`) on given window samples,
and `ort.profile` with ``until_stable`` through the built agent zipapp and real ONNX Runtime."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import make_cnn, run_agent

from edgehub.agent.bundle import build_agent_zipapp
from edgehub.agent.stable import measure_until_stable


def _windows(medians: list[int]) -> Iterator[list[int]]:
    for median in medians:
        yield [median - 1, median, median + 1]


def test_it_stops_once_the_last_three_medians_agree() -> None:
    windows = _windows([200, 100, 103, 101, 102, 500])
    found = measure_until_stable(lambda: next(windows), tolerance=0.05, max_s=1e9, min_window_s=0)
    assert found.converged and found.windows == 4
    assert found.samples == [99, 100, 101, 102, 103, 104, 100, 101, 102]
    assert found.spread == pytest.approx(0.03)


def test_it_gives_up_at_the_time_limit_without_failing() -> None:
    ticks = iter(range(100))
    windows = _windows([100, 200, 100, 200, 100, 200, 100])
    found = measure_until_stable(
        lambda: next(windows),
        tolerance=0.05,
        max_s=5,
        clock=lambda: float(next(ticks)),
        min_window_s=0,
    )
    assert not found.converged and found.windows == 5  # the clock passed 5 s after 5 windows
    assert found.spread == pytest.approx(1.0) and len(found.samples) == 9
    short = _windows([100, 100])
    found = measure_until_stable(lambda: next(short), tolerance=0.05, max_s=0)
    assert not found.converged and found.windows == 1 and found.spread is None


def test_a_window_lasts_at_least_the_minimum_window_time() -> None:
    """A fast model's ``runs`` last milliseconds: the window repeats them until it has lasted
    ``min_window_s``, so three windows span seconds, not one burst of a neighbour's load."""
    now = [0.0]

    def clock() -> float:
        return now[0]

    def measure() -> list[int]:  # one call of ``runs`` takes 0.25 s of the fake clock
        now[0] += 0.25
        return [100, 100]

    found = measure_until_stable(measure, tolerance=0.05, max_s=100, clock=clock, min_window_s=1)
    assert found.converged and found.windows == 3
    assert len(found.samples) == 3 * 4 * 2  # four calls of two runs in each of three windows
    assert now[0] == pytest.approx(3.0)
    # a fast model's long window keeps every k-th sample, its median from all of them
    from edgehub.agent import stable

    big = iter([[1] * 30_000 + [5] * 25_001] * 3)
    found = measure_until_stable(lambda: next(big), tolerance=0.05, max_s=100, min_window_s=0)
    assert found.medians_ns == [1.0] * 3 and len(found.samples) <= 3 * stable.MAX_KEPT_PER_WINDOW
    # the time limit also ends a window that has not lasted its minimum
    now[0] = 0.0
    found = measure_until_stable(measure, tolerance=0.05, max_s=0.5, clock=clock, min_window_s=1)
    assert found.windows == 1 and len(found.samples) == 2 * 2 and not found.converged


def test_windows_that_agree_while_other_processes_hold_the_cpus_are_not_stable() -> None:
    """Windows count only when other processes took at most 25 % of the CPUs during them."""
    from edgehub.agent import stable

    shares = iter([0.4, 0.5, 0.45, 0.05, 0.3, 0.1, 0.02, 0.0, 0.01])
    windows = _windows([100] * 9)
    found = measure_until_stable(
        lambda: next(windows),
        tolerance=0.05,
        max_s=1e9,
        min_window_s=0,
        other_share=lambda: next(shares, 0.0),
    )
    # the first call starts the count; window 4 (0.3) kept it from stable until window 7
    assert found.converged and found.windows == 7 and found.spread == 0.0
    assert found.other_shares[:3] == [0.5, 0.45, 0.05]
    busy = iter([0.9] * 20)
    windows = _windows([100] * 20)
    ticks = iter(range(100))
    found = measure_until_stable(
        lambda: next(windows),
        tolerance=0.05,
        max_s=6,
        clock=lambda: float(next(ticks)),
        min_window_s=0,
        other_share=lambda: next(busy),
    )
    assert not found.converged and found.spread == 0.0
    metrics = stable.stable_metrics(found)
    assert metrics["stable_busy_windows"] == 3 and metrics["stable_converged"] == 0
    converged, line = stable.stable_line(metrics, 0.05, 6)
    assert not converged
    assert "other processes took over 25% of the CPUs in 3 of them" in line
    assert (
        stable.MAX_OTHER_CPU_SHARE
        == __import__(
            "edgehub.tracking.comparability", fromlist=["MAX_OTHER_CPU_SHARE"]
        ).MAX_OTHER_CPU_SHARE
    )  # the limit `hub runs compare` calls not comparable


def test_the_other_cpu_meter_sees_a_process_burning_a_cpu() -> None:
    """A real second process that spins for a second shows up as other processes' CPU share
    (one CPU of this machine's, less whatever else ran: at least a fifth of one CPU's share)."""
    import os
    import subprocess

    from edgehub.agent.conditions import OtherCpuMeter

    meter = OtherCpuMeter()
    burner = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time\nend = time.monotonic() + 1\nwhile time.monotonic() < end: pass",
        ],
        check=True,
    )
    assert burner.returncode == 0
    share = meter()
    assert share is not None and share >= 0.2 / (os.cpu_count() or 1), share


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


def test_ort_profile_until_stable_records_convergence(pyz: Path, tmp_path: Path) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    request = {"model": str(model), "runs": 20, "warmup": 3, "until_stable": True,
               "stable_window_s": 0, "profile_json": str(tmp_path / "profile.json")}  # fmt: skip
    # loose: any spread up to 900 % agrees, whatever else the (busy CI) machine runs meanwhile.
    # How many windows that takes is the machine's (a preempted run moves the mean of 20 runs of
    # 15 us several-fold): what is promised is convergence within the limit, with the count of
    # windows, a row per window and the last three windows' samples recorded, agreeing.
    loose_request = {**request, "stable_tolerance": 9.0, "stable_max_other_share": 1}
    loose = run_agent(pyz, "ort.profile", loose_request, tmp_path / "a")
    assert loose.returncode == 0, loose.stderr
    params, metrics = loose.result["params"], loose.metrics
    assert params["until_stable"] is True and params["stable_tolerance"] == 9.0
    assert metrics["stable_converged"] == 1 and metrics["stable_windows"] >= 3, metrics
    assert metrics["stable_spread_pct"] <= 100 * params["stable_tolerance"], metrics
    windows = loose.result["data"]["windows"]  # each window's median, mean and others' CPU share
    assert len(windows) == metrics["stable_windows"], (windows, metrics)
    assert all(w["median_ms"] > 0 and w["mean_ms"] > 0 for w in windows), windows
    assert all(0 <= w["other_cpu_share"] <= 1 for w in windows), windows
    samples = json.loads((tmp_path / "profile.json").read_text())["samples_us"]
    assert len(samples) == 3 * params["runs"]  # stable_window_s 0: a window is one call of runs
    # no time for a second window: one window, no spread, not converged (the run still finishes)
    strict = {**request, "stable_tolerance": 0, "stable_max_s": 0}
    run = run_agent(pyz, "ort.profile", strict, tmp_path / "b")
    assert run.returncode == 0, run.stderr
    assert run.metrics["stable_converged"] == 0 and run.metrics["stable_windows"] == 1
    assert any("not stable within 0 s" in w for w in run.result["warnings"]), run.result["warnings"]
    # by default a window lasts a second: 20 runs of this model are repeated until it has (5 s at
    # most: at the default 5 % a busy machine need not converge, and this is about the windows)
    long_request = {**request, "stable_window_s": 0.2, "stable_max_s": 5}
    long = run_agent(pyz, "ort.profile", long_request, tmp_path / "d")
    assert long.returncode == 0, long.stderr
    assert long.metrics["stable_windows"] >= 3
    samples = json.loads((tmp_path / "profile.json").read_text())["samples_us"]
    assert 3 * 20 < len(samples) <= 3 * 10_000  # thinned to at most 10,000 a window
    bad = run_agent(pyz, "ort.profile", {**request, "stable_tolerance": "x"}, tmp_path / "c")
    assert bad.returncode == 2 and "'stable_tolerance' must be a number >= 0" in bad.message


def _trt_window(latency_ms: float, count: int = 4) -> str:
    """A trtexec ``--exportTimes`` file of ``count`` queries around ``latency_ms``."""
    queries = [{"startEnqMs": i, "endEnqMs": i + 0.1, "latencyMs": latency_ms + 0.001 * i,
                "computeMs": latency_ms / 2} for i in range(count)]  # fmt: skip
    return json.dumps([{"ignored": "no latency"}, *queries])


def test_trt_windows_keep_the_last_three_windows_queries() -> None:
    """The TensorRT profiler's windows (no GPU here: trtexec's exports are given as text)."""
    from edgehub.agent.trt.profile import latencies_ns, window_queries, windowed_times

    assert latencies_ns(window_queries(_trt_window(1.5, 2))) == [1_500_000, 1_501_000]
    texts = iter([_trt_window(m) for m in (3.0, 1.0, 1.02, 1.01, 9.0)])
    queries, metrics = windowed_times(lambda: window_queries(next(texts)), 0.05, 1e9)
    assert metrics["stable_converged"] == 1 and metrics["stable_windows"] == 4
    assert len(queries) == 12 and {round(q["computeMs"], 3) for q in queries} == {
        0.5,
        0.51,
        0.505,
    }
    noisy = iter([_trt_window(m) for m in (1.0, 2.0) * 50])  # a source that never settles
    ticks = iter(range(1000))
    from edgehub.agent import stable

    found = stable.measure_until_stable(
        lambda: latencies_ns(window_queries(next(noisy))),
        tolerance=0.05,
        max_s=6,
        clock=lambda: float(next(ticks)),
        min_window_s=0,  # as windowed_times asks: one trtexec run is one window
    )
    assert not found.converged and found.windows == 6
    metrics = stable.stable_metrics(found)
    converged, line = stable.stable_line(metrics, 0.05, 6)
    assert not converged and line.startswith("not stable within 6 s (6 windows")


def test_trt_window_exports_that_are_not_queries_are_refused() -> None:
    from edgehub.agent.protocol import RuntimeFailure
    from edgehub.agent.trt.profile import window_queries, windowed_times

    with pytest.raises(RuntimeFailure, match="not JSON"):
        window_queries("[{")
    with pytest.raises(RuntimeFailure, match="JSON list"):
        window_queries('{"latencyMs": 1}')
    with pytest.raises(RuntimeFailure, match="no timed queries"):
        windowed_times(lambda: window_queries("[]"), 0.05, 10)
