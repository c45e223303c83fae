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
    found = measure_until_stable(lambda: next(windows), tolerance=0.05, max_s=1e9)
    assert found.converged and found.windows == 4
    assert found.samples == [99, 100, 101, 102, 103, 104, 100, 101, 102]
    assert found.spread == pytest.approx(0.03)


def test_it_gives_up_at_the_time_limit_without_failing() -> None:
    ticks = iter(range(100))
    windows = _windows([100, 200, 100, 200, 100, 200, 100])
    found = measure_until_stable(
        lambda: next(windows), tolerance=0.05, max_s=5, clock=lambda: float(next(ticks))
    )
    assert not found.converged and found.windows == 5  # the clock passed 5 s after 5 windows
    assert found.spread == pytest.approx(1.0) and len(found.samples) == 9
    short = _windows([100, 100])
    found = measure_until_stable(lambda: next(short), tolerance=0.05, max_s=0)
    assert not found.converged and found.windows == 1 and found.spread is None


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


def test_ort_profile_until_stable_records_convergence(pyz: Path, tmp_path: Path) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    request = {"model": str(model), "runs": 20, "warmup": 3, "until_stable": True,
               "profile_json": str(tmp_path / "profile.json")}  # fmt: skip
    loose = run_agent(pyz, "ort.profile", {**request, "stable_tolerance": 9.0}, tmp_path / "a")
    assert loose.returncode == 0, loose.stderr
    assert loose.metrics["stable_converged"] == 1 and loose.metrics["stable_windows"] == 3
    assert loose.result["params"]["until_stable"] is True
    assert len(json.loads((tmp_path / "profile.json").read_text())["samples_us"]) == 60
    # no time for a second window: one window, no spread, not converged (the run still finishes)
    strict = {**request, "stable_tolerance": 0, "stable_max_s": 0}
    run = run_agent(pyz, "ort.profile", strict, tmp_path / "b")
    assert run.returncode == 0, run.stderr
    assert run.metrics["stable_converged"] == 0 and run.metrics["stable_windows"] == 1
    assert any("not stable within 0 s" in w for w in run.result["warnings"]), run.result["warnings"]
    bad = run_agent(pyz, "ort.profile", {**request, "stable_tolerance": "x"}, tmp_path / "c")
    assert bad.returncode == 2 and "'stable_tolerance' must be a number >= 0" in bad.message
