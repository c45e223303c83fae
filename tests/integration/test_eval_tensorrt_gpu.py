"""`hub exec eval tensorrt --layers / --fix` on a real NVIDIA GPU, through the real `hub`: the
outlier-channel model of the ONNX Runtime and TFLite eval tests (conv3 makes one channel 500
times the others), quantized to QDQ in the onnxruntime image, built and run in the tensorrt-rtx
image with the GPU passed through; the repair's latency table profiles with trtexec in the full
tensorrt image. Skipped (with the reason) where no GPU is visible, which is every machine of
this project's CI; the same paths with the GPU faked: test_eval_tensorrt.py."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.integration.test_eval_cli import HUB, _outlier_model, runs

from edgehub.toolchains.tensorrt.gpu import detect_gpu

GPU = detect_gpu()
pytestmark = [
    pytest.mark.docker,
    pytest.mark.gpu,
    pytest.mark.skipif(not GPU.visible, reason=f"needs an NVIDIA GPU: {GPU.describe()}"),
]

onnx = pytest.importorskip("onnx", reason="the onnx package builds the test model")

LAYERS = 11  # six Conv, five Relu
INT8 = ["--set", "precision=int8", "--set", "calibration_data=ods"]


@pytest.fixture
def outlier(tmp_path: Path, ort_image: str, docker_daemon: Any) -> Path:
    from edgehub import images

    for runtime in ("tensorrt-rtx", "tensorrt"):
        if not images.image_status(runtime).built:
            pytest.skip(f"needs the {runtime} image (hub images build {runtime})")
    folder = tmp_path / "proj"
    (folder / "ods").mkdir(parents=True)
    (folder / "hub.toml").write_text('[project]\nname = "eval-trt-gpu"\n')
    rng = np.random.default_rng(5)
    assert _outlier_model(folder / "outlier.onnx", rng) == LAYERS
    for i in range(8):
        np.savez(folder / "ods" / f"{i}.npz", x=rng.standard_normal((1, 3, 8, 8)).astype("f4"))
    return folder


def _eval(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["exec", "eval", "tensorrt", "outlier.onnx", "--dataset", "ods", *INT8, *extra]
    return subprocess.run([HUB, *args], cwd=folder, capture_output=True, text=True, timeout=1200)


def test_layers_name_the_outlier_layer_of_the_int8_engine(outlier: Path) -> None:
    result = _eval(outlier, "--layers", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    layers = report["layers"]
    assert layers["layers"] == LAYERS
    first = layers["first_divergent"]  # the quantizer folds each ReLU into the Conv before it
    assert first is not None and first["node"] in ("conv3", "relu3"), first
    assert first["channel_rel_l2"] > 0.2
    assert 1 <= layers["runs"] <= math.ceil(math.log2(LAYERS)) + 2
    assert result.stderr.count("layers: probe") == layers["runs"]
    before = [r for r in layers["measured"] if r["index"] < first["index"]]
    assert all(r["channel_rel_l2"] <= 0.2 for r in before)
    fused = {row["node"] for row in layers["fused_or_renamed"]}
    assert fused and first["node"] not in fused  # reported, not skipped
    (run,) = [r for r in runs(outlier) if r.run_type == "EVAL"]
    assert run.status == "FINISHED" and run.params["first_divergent_layer"] == first["node"]
    assert "gpu" in run.environment  # the GPU the engine ran on, as nvidia-smi names it


def test_fix_keeps_the_outlier_layer_of_the_engine_in_float(outlier: Path) -> None:
    result = _eval(outlier, "--goal", "cosine>=0.99", "--fix")
    assert result.returncode == 0, result.stderr
    assert "latency ms (median)" in result.stdout and "fix: the goals hold with" in result.stdout
    by_id = {r.run_id: r for r in runs(outlier)}
    (parent,) = [r for r in by_id.values() if r.run_type == "FIX"]
    fix = json.loads(Path(str(parent.artifacts["fix"].file_path)).read_text())
    assert fix["passed"] is True and parent.status == "FINISHED"
    assert 1 <= len(fix["kept_layers"]) <= 3 and "conv3" in fix["kept_nodes"]
    table = {row["model"]: row for row in fix["table"]}
    assert [table[m]["passed"] for m in ("float32", "int8", "repaired")] == [True, False, True]
    assert all(row["latency_median_ms"] > 0 for row in table.values())
    repaired = by_id[table["repaired"]["compile_run"]]
    assert repaired.params["excluded_nodes"] == fix["kept_nodes"]
    assert set(repaired.params["float_layers"]) == set(fix["kept_nodes"])
    assert by_id[table["float32"]["compile_run"]].params["precision"] == "fp32"


def test_evaluator_component_scores_the_engine(outlier: Path) -> None:
    from edgehub.core import HubContext
    from edgehub.core.compile import TensorRTCompiler
    from edgehub.core.evaluate import TensorRTEvaluator

    with HubContext("trt-evaluator", artifact_base_dir=outlier / "store") as ctx:
        engine = TensorRTCompiler().run(ctx, outlier / "outlier.onnx")
        result = TensorRTEvaluator(worst=2).run(ctx, engine, outlier / "ods")
    assert result.samples == 8 and result.outputs["c6"]["cosine"] > 0.999
    assert len(result.worst["c6"]) == 2
