"""ort.profile through the built zipapp: statistics, cold starts, layerwise and model traces."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import (
    make_cnn,
    make_dynamic_conv,
    make_int64,
    make_reflect_pad,
    make_two_input,
    run_agent,
)

from edgehub.agent.bundle import build_agent_zipapp
from edgehub.agent.protocol import load_result

STAT_KEYS = (
    "latency_mean_ms",
    "latency_median_ms",
    "latency_min_ms",
    "latency_max_ms",
    "latency_p90_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_std_ms",
    "fps",
    "session_create_ms",
    "first_run_ms",
    "peak_rss_mb",
    "runs",
    "warmup",
    "cold_starts",
)


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("profile")


def test_python_profile_stats(pyz: Path, root: Path) -> None:
    model = make_cnn(root / "cnn.onnx")
    profile_json = root / "out" / "profile.json"
    request = {
        "model": str(model),
        "runs": 30,
        "warmup": 3,
        "cold_starts": 2,
        "intra_op_threads": 1,
        "profile_json": str(profile_json),
    }
    run = run_agent(pyz, "ort.profile", request, root / "runs")
    assert run.returncode == 0, run.stderr
    m = run.metrics
    for key in STAT_KEYS:
        assert m[key] is not None, key
    assert (
        m["latency_min_ms"]
        <= m["latency_median_ms"]
        <= m["latency_p90_ms"]
        <= m["latency_p95_ms"]
        <= m["latency_p99_ms"]
        <= m["latency_max_ms"]
    )
    assert m["latency_min_ms"] <= m["latency_mean_ms"] <= m["latency_max_ms"]
    assert (m["runs"], m["warmup"], m["cold_starts"]) == (30, 3, 2)
    assert m["session_create_ms"] > 0 and m["first_run_ms"] > 0 and m["peak_rss_mb"] > 10
    assert len(run.data["cold_starts"]) == 2
    assert "layers" not in run.data
    # dynamic batch dim -> random input with N=1, said in a warning
    assert run.data["shapes"] == {"image": {"dtype": "float32", "shape": [1, 3, 16, 16]}}
    assert run.result["params"]["shapes"] == run.data["shapes"]
    assert any("dynamic dimensions set to 1" in w for w in run.result["warnings"])

    document = json.loads(profile_json.read_text())
    assert len(document["samples_us"]) == 30
    samples_ms = np.array(document["samples_us"]) / 1000.0
    assert np.median(samples_ms) == pytest.approx(m["latency_median_ms"], abs=2e-3)
    assert samples_ms.min() == pytest.approx(m["latency_min_ms"], abs=2e-3)
    assert m["fps"] == pytest.approx(1000.0 / samples_ms.mean(), rel=1e-3)
    assert document["stats"]["latency_p99_ms"] == m["latency_p99_ms"]
    assert len(document["cold_starts"]) == 2
    assert document["env"]["onnxruntime"] and document["settings"]["runs"] == 30
    assert document["settings"]["shapes"] == run.data["shapes"]
    assert "layers" not in document


def test_layerwise_names_the_models_nodes(pyz: Path, root: Path) -> None:
    model = make_cnn(root / "cnn_lw.onnx")
    profile_json = root / "lw.json"
    request = {
        "model": str(model),
        "runs": 5,
        "warmup": 1,
        "method": "layerwise",
        "graph_optimization_level": "disable",
        "profile_json": str(profile_json),
    }
    tmp = root / "tmp"
    tmp.mkdir()
    run = run_agent(pyz, "ort.profile", request, root / "runs", env={"TMPDIR": str(tmp)})
    assert run.returncode == 0, run.stderr
    layers = run.data["layers"]
    assert {row["name"] for row in layers} == {"conv1", "relu1", "conv2", "relu2", "flatten", "fc"}
    by_name = {row["name"]: row for row in layers}
    assert by_name["conv1"]["op_type"] == "Conv"
    assert by_name["fc"]["op_type"] == "Gemm"
    for row in layers:
        assert row["provider"] == "CPUExecutionProvider"
        assert row["calls"] == 5  # the profiled session's first run is dropped
        assert row["mean_us"] == pytest.approx(row["total_us"] / row["calls"], abs=1e-3)
    assert [r["total_us"] for r in layers] == sorted((r["total_us"] for r in layers), reverse=True)
    assert sum(r["share"] for r in layers) == pytest.approx(1.0, abs=1e-3)
    assert run.metrics["num_layers"] == 6 and run.metrics["profiled_runs"] == 5
    assert run.metrics["model_run_mean_ms"] > 0
    document = json.loads(profile_json.read_text())
    assert document["layers"] == layers
    assert document["trace"]["model_runs"] == 5
    # ORT's trace file and the agent's temporary directory are deleted
    assert [p for p in tmp.iterdir() if p.name.startswith("edgehub") or p.suffix == ".json"] == []


def test_model_method_and_npz_input(pyz: Path, root: Path) -> None:
    model = make_two_input(root / "two.onnx")
    inputs = root / "two_in.npz"
    rng = np.random.default_rng(0)
    np.savez(
        inputs,
        a=rng.standard_normal((4, 4)).astype(np.float32),
        b=rng.standard_normal((4, 4)).astype(np.float32),
    )
    request = {
        "model": str(model),
        "runs": 40,
        "warmup": 2,
        "method": "model",
        "input_data": str(inputs),
    }
    run = run_agent(pyz, "ort.profile", request, root / "runs")
    assert run.returncode == 0, run.stderr
    assert run.metrics["profiled_runs"] == 20  # min(runs, 20)
    assert run.metrics["model_run_mean_ms"] > 0
    assert "layers" not in run.data
    assert run.data["shapes"] == {
        "a": {"dtype": "float32", "shape": [4, 4]},
        "b": {"dtype": "float32", "shape": [4, 4]},
    }
    assert run.data["input_source"] == "npz"
    assert not [w for w in run.result["warnings"] if "random" in w]


def test_profile_bad_input_is_user_error(pyz: Path, root: Path) -> None:
    model = make_int64(root / "int64.onnx")
    inputs = root / "bad.npz"
    np.savez(inputs, ids=np.zeros((1, 5), np.int32))
    run = run_agent(
        pyz, "ort.profile", {"model": str(model), "input_data": str(inputs)}, root / "runs"
    )
    assert run.returncode == 2
    assert "'ids' has dtype int32, expected int64" in run.message
    assert "Expected inputs: ids: int64[N,5]" in run.message


def test_profile_rejects_bad_options(pyz: Path, root: Path) -> None:
    model = make_int64(root / "int64b.onnx")
    run = run_agent(pyz, "ort.profile", {"model": str(model), "runs": 0}, root / "runs")
    assert run.returncode == 2 and "'runs' must be an integer >= 1" in run.message
    run = run_agent(
        pyz,
        "ort.profile",
        {"model": str(model), "providers": ["NopeExecutionProvider"]},
        root / "runs",
    )
    assert run.returncode == 2 and "not available" in run.message


def test_input_shape_sets_random_input_shapes(pyz: Path, root: Path) -> None:
    model = make_two_input(root / "two_shapes.onnx")
    request = {"model": str(model), "runs": 3, "warmup": 0, "input_shape": {"a": [3, 4]}}
    run = run_agent(pyz, "ort.profile", request, root / "runs")
    assert run.returncode == 0, run.stderr
    # 'N' is shared by both inputs, so fixing it through 'a' sizes 'b' too
    assert {k: v["shape"] for k, v in run.data["shapes"].items()} == {"a": [3, 4], "b": [3, 4]}
    assert not [w for w in run.result["warnings"] if "dynamic dimensions" in w]


def test_sigterm_cancels_with_a_result(pyz: Path, root: Path) -> None:
    model = make_int64(root / "int64_cancel.onnx")
    (root / "cancel").mkdir()
    request_path = root / "cancel" / "request.json"
    result_path = root / "cancel" / "result.json"
    request_path.write_text(json.dumps({"model": str(model), "runs": 10**8, "warmup": 0}))
    python = os.environ.get("EDGEHUB_AGENT_TEST_PYTHON") or sys.executable
    argv = [
        python,
        str(pyz),
        "ort.profile",
        "--request",
        str(request_path),
        "--result",
        str(result_path),
    ]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # streamed live, line by line
        lines.append(line)
        if line.startswith("timing:"):
            break
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 130
    result = load_result(result_path)
    assert result["ok"] is False and result["error"]["kind"] == "Cancelled"
    assert rest.strip().splitlines()[-1] == f"error: {result['error']['message']}"


# --- profiles at the shapes users run ---------------------------------------------------------


def test_a_dynamic_model_profiled_at_two_sizes(pyz: Path, root: Path) -> None:
    model = make_dynamic_conv(root / "dyn.onnx")
    runs = {}
    for size in (32, 160):
        request = {"model": str(model), "runs": 30, "warmup": 3, "input_shape": [1, 3, size, size]}
        run = run_agent(pyz, "ort.profile", request, root / "runs")
        assert run.returncode == 0, run.stderr
        assert run.data["shapes"] == {"image": {"dtype": "float32", "shape": [1, 3, size, size]}}
        assert not [w for w in run.result["warnings"] if "dynamic dimensions" in w]
        runs[size] = run
    # 25x the pixels: far slower, whatever else runs on this machine
    assert runs[160].metrics["latency_median_ms"] > 3 * runs[32].metrics["latency_median_ms"]


def test_a_model_failing_on_1_sized_dims_profiles_with_input_data(pyz: Path, root: Path) -> None:
    model = make_reflect_pad(root / "pad.onnx")
    run = run_agent(pyz, "ort.profile", {"model": str(model), "runs": 5}, root / "runs")
    assert run.returncode != 0  # random data has T = 1: the reflect Pad cannot run
    inputs = root / "audio.npz"
    np.savez(inputs, audio=np.random.default_rng(0).standard_normal((1, 400)).astype(np.float32))
    request = {"model": str(model), "runs": 5, "input_data": str(inputs)}
    run = run_agent(pyz, "ort.profile", request, root / "runs")
    assert run.returncode == 0, run.stderr
    assert run.data["shapes"] == {"audio": {"dtype": "float32", "shape": [1, 400]}}
    assert run.data["input_source"] == "npz"


def test_a_directory_of_samples_is_cycled(pyz: Path, root: Path) -> None:
    model = make_reflect_pad(root / "pad_dir.onnx")
    samples = root / "samples"
    samples.mkdir()
    rng = np.random.default_rng(1)
    for i, length in enumerate((100, 200, 100)):
        data = rng.standard_normal((1, length)).astype(np.float32)
        np.savez(samples / f"{i:02d}.npz", audio=data)
    request = {"model": str(model), "runs": 6, "warmup": 0, "input_data": str(samples)}
    run = run_agent(pyz, "ort.profile", request, root / "runs")
    assert run.returncode == 0, run.stderr
    assert run.data["shapes"]["audio"]["shapes"] == [[1, 100], [1, 200]]
    assert run.result["params"]["input_samples"] == 3

    (samples / "03.npz").write_bytes(b"")
    np.savez(samples / "04.npz", other=np.zeros((1, 5), np.float32))
    run = run_agent(pyz, "ort.profile", request, root / "runs")
    assert run.returncode == 2 and "input" in run.message


def test_input_shape_with_input_data_is_a_usage_error(pyz: Path, root: Path) -> None:
    model = make_reflect_pad(root / "pad_both.onnx")
    inputs = root / "audio_both.npz"
    np.savez(inputs, audio=np.zeros((1, 50), np.float32))
    request = {"model": str(model), "input_data": str(inputs), "input_shape": [1, 60]}
    run = run_agent(pyz, "ort.profile", request, root / "runs")
    assert run.returncode == 2 and "pass one of the two" in run.message
