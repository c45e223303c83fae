"""The ORT trace parser (on real traces, whole and truncated) and the latency statistics."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import make_cnn, make_int64

from edgehub.agent import stats
from edgehub.agent.ort import trace as ort_trace
from edgehub.agent.protocol import Params, UsageError, load_result
from edgehub.agent.tensors import TensorSpec, check_arrays, random_inputs

RUNS = 4


@pytest.fixture(scope="module")
def trace_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("trace")
    model = make_cnn(root / "cnn.onnx")
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(root / "prof")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    image = np.zeros((1, 3, 16, 16), np.float32)
    for _ in range(RUNS):
        session.run(None, {"image": image})
    return Path(session.end_profiling()).read_text()


def test_whole_trace(trace_text: str) -> None:
    events, truncated = ort_trace.load_events(trace_text)
    assert not truncated
    summary = ort_trace.summarize(events, skip_runs=1)
    assert summary.model_runs == RUNS - 1 and summary.skipped_runs == 1
    names = [row["name"] for row in summary.layers]
    assert sorted(names) == ["conv1", "conv2", "fc", "flatten", "relu1", "relu2"]
    assert all(row["calls"] == RUNS - 1 for row in summary.layers)
    assert summary.model_run_mean_ms is not None and summary.model_run_mean_ms > 0
    all_runs = ort_trace.summarize(events)
    assert all(row["calls"] == RUNS for row in all_runs.layers)


def test_trailing_comma_is_not_damage(trace_text: str) -> None:
    body = trace_text.rstrip().rstrip("]").rstrip()
    events, truncated = ort_trace.load_events(body + ",\n]")
    assert not truncated
    assert len(events) == len(json.loads(trace_text))


@pytest.mark.parametrize("fraction", [0.35, 0.6, 0.9, 0.999])
def test_truncated_trace_keeps_complete_runs(trace_text: str, fraction: float) -> None:
    cut = trace_text[: int(len(trace_text) * fraction)]
    events, truncated = ort_trace.load_events(cut)
    assert truncated
    assert 0 < len(events) < len(json.loads(trace_text))
    summary = ort_trace.summarize(events, truncated=truncated)
    assert summary.truncated
    # every node counted belongs to a run whose model_run event survived: counts stay equal
    assert len({row["calls"] for row in summary.layers}) <= 1
    if summary.layers:
        assert summary.layers[0]["calls"] == summary.model_runs


def test_trace_file_helpers(tmp_path: Path, trace_text: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(trace_text[: len(trace_text) // 2])
    summary = ort_trace.parse_trace(path)
    assert summary.truncated and summary.events > 0
    assert ort_trace.load_events("garbage") == ([], True)


def test_unnamed_nodes_and_fences() -> None:
    events = [
        {"cat": "Session", "name": "model_run", "ts": 0, "dur": 100},
        {
            "cat": "Node",
            "name": "_kernel_time",
            "ts": 1,
            "dur": 10,
            "args": {"op_name": "Add", "provider": "CPUExecutionProvider"},
        },
        {"cat": "Node", "name": "mul_fence_before", "ts": 2, "dur": 1, "args": {}},
        {
            "cat": "Node",
            "name": "mul_kernel_time",
            "ts": 3,
            "dur": 30,
            "args": {"op_name": "Mul", "provider": "CPUExecutionProvider"},
        },
    ]
    rows = ort_trace.summarize(events).layers
    assert [r["name"] for r in rows] == ["mul", "(unnamed Add)"]
    assert rows[0]["share"] == pytest.approx(0.75)


def test_percentiles_match_numpy_linear() -> None:
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 100, 1001):
        values = sorted(rng.exponential(1.0, n).tolist())
        for q in (0, 50, 90, 95, 99, 100):
            assert stats.percentile(values, q) == pytest.approx(np.percentile(values, q))


def test_latency_stats() -> None:
    samples = [1_000_000, 2_000_000, 3_000_000, 4_000_000, 10_000_000]
    m = stats.latency_stats(samples)
    assert m["latency_mean_ms"] == 4.0
    assert m["latency_median_ms"] == 3.0
    assert m["latency_min_ms"] == 1.0 and m["latency_max_ms"] == 10.0
    assert m["latency_p90_ms"] == pytest.approx(np.percentile(samples, 90) / 1e6)
    assert m["latency_std_ms"] == pytest.approx(np.std(samples) / 1e6, abs=1e-3)
    assert m["fps"] == 250.0
    assert stats.latency_stats([1234])["latency_p99_ms"] == 0.001


def test_check_arrays_binds_symbols_and_lists_expected() -> None:
    specs = [TensorSpec("a", "float32", ["N", 4]), TensorSpec("b", "int64", [None, 2])]
    check_arrays({"a": np.zeros((3, 4), np.float32), "b": np.zeros((7, 2), np.int64)}, specs)
    with pytest.raises(Exception, match=r"Expected inputs: a: float32\[N,4\], b: int64\[\?,2\]"):
        check_arrays({"a": np.zeros((3, 4), np.float32)}, specs)
    feeds, defaulted = random_inputs(specs, shapes={"a": [2, 4]})
    assert feeds["a"].shape == (2, 4) and feeds["b"].shape == (1, 2)
    assert defaulted == ["b"]


def test_params_validation() -> None:
    params = Params({"runs": 5, "extra": 1}, "ort.profile")
    assert params.integer("runs", 100, minimum=1) == 5
    with pytest.raises(UsageError, match="unknown parameter"):
        params.finish()
    with pytest.raises(UsageError, match="must be an integer"):
        Params({"runs": "5"}, "x").integer("runs", 1)


def test_load_result(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"ok": False, "error": {"kind": "ModelError", "message": "m"}}))
    assert load_result(path)["error"]["user_error"] is True
    path.write_text("[]")
    with pytest.raises(ValueError, match="no boolean 'ok'"):
        load_result(path)


def test_inspect_without_onnx_falls_back_to_ort(tmp_path: Path) -> None:
    from edgehub.agent.ort.inspect import inspect_with_ort

    data = inspect_with_ort(make_int64(tmp_path / "m.onnx"))
    assert data["inputs"] == [{"name": "ids", "dtype": "int64", "shape": ["N", 5]}]
    assert data["outputs"][0]["name"] == "emb"
