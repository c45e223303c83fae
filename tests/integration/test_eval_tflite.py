"""`hub exec eval tflite --layers / --fix` through the real `hub`, the tflite and ORT images.

The model is the outlier-channel model of the ONNX Runtime tests (conv3 makes one channel 500
times the others, and conv4 ignores it): per-tensor int8 activations give conv3's other
channels a scale they all round to zero in. The int8 conversion runs in the tflite image
(onnx2tf, then TensorFlow's quantizer), which takes a while: the `--layers` test compiles once
and the `--fix` test four times (int8, two repairs, float32). The figures are checked against
the host's ONNX Runtime running the ONNX model.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.integration.test_eval_cli import HUB, _outlier_model, hub, runs

pytestmark = pytest.mark.docker

onnx = pytest.importorskip("onnx", reason="the onnx package builds the test model")
ort = pytest.importorskip("onnxruntime", reason="host ONNX Runtime recomputes the figures")

LAYERS = 11  # six Conv, five Relu
CALIBRATION, PROBED = 8, 4  # calibration samples; --layers compares on the first four


@pytest.fixture
def outlier(tmp_path: Path, ort_image: str, docker_daemon: Any) -> Path:
    from edgehub import images

    if not images.image_status("tflite").built:
        pytest.skip("needs the tflite image (hub images build tflite)")
    folder = tmp_path / "proj"
    (folder / "ods").mkdir(parents=True)
    (folder / "hub.toml").write_text('[project]\nname = "eval-tflite"\n')
    rng = np.random.default_rng(5)
    assert _outlier_model(folder / "outlier.onnx", rng) == LAYERS
    for i in range(CALIBRATION):
        np.savez(folder / "ods" / f"{i}.npz", x=rng.standard_normal((1, 3, 8, 8)).astype("f4"))
    return folder


def _host(model: Path, folder: Path, tensor: str) -> np.ndarray:
    """``tensor`` of the ONNX model for every sample of ``folder``, by the host's ORT."""
    proto = onnx.load(str(model))
    if tensor not in [o.name for o in proto.graph.output]:
        proto.graph.output.append(onnx.ValueInfoProto(name=tensor))
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    files = sorted(folder.glob("*.npz"))
    return np.stack([session.run([tensor], {"x": np.load(f)["x"]})[0] for f in files])


def _eval(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Four conversions take a minute or two alone, several on a busy machine: a wide margin."""
    args = ["exec", "eval", "tflite", "outlier.onnx", "--dataset", "ods",
            "--set", "calibration_data=ods", *extra]  # fmt: skip
    return subprocess.run([HUB, *args], cwd=folder, capture_output=True, text=True, timeout=1200)


def test_layers_name_the_outlier_layer_of_the_int8_tflite_model(outlier: Path) -> None:
    result = _eval(outlier, "--layers", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["layers"]
    assert report["layers"] == LAYERS and report["samples"] == PROBED
    first = report["first_divergent"]  # TFLite fuses each ReLU into the Conv before it
    assert (first["node"], first["fused"]) == ("relu3", ["conv3"])
    fused = [row["node"] for row in report["fused_or_renamed"]]
    assert fused == ["conv1", "conv2", "conv3", "conv4", "conv5"]  # reported, not skipped
    assert 1 <= report["runs"] <= math.ceil(math.log2(LAYERS)) + 2
    assert result.stderr.count("layers: probe") == report["runs"]  # a few tensors a probe
    measured = {row["node"]: row for row in report["measured"]}
    before = [row for row in report["measured"] if row["index"] < measured["relu3"]["index"]]
    assert before and all(row["channel_rel_l2"] <= 0.2 for row in before)
    # conv3's channels other than the outlier (at most ~5 % of its peak) fall on a handful of
    # steps of the per-tensor int8 scale (calibrated range [0, max], 255 steps): simulated on
    # the host, the worst channel is about 100 % off, while the whole tensor still looks fine
    s3 = _host(outlier / "outlier.onnx", outlier / "ods", "s3")[:PROBED]  # NCHW, as ONNX's
    scale = float(s3.max()) / 255
    crushed = np.round(s3 / scale) * scale
    channels = np.moveaxis(s3, 2, 0).reshape(8, -1)
    errors = np.linalg.norm(np.moveaxis(crushed, 2, 0).reshape(8, -1) - channels, axis=1)
    simulated = float(np.max(errors / np.linalg.norm(channels, axis=1)))
    assert simulated > 0.5
    assert measured["relu3"]["channel_rel_l2"] == pytest.approx(simulated, abs=0.15)
    assert measured["relu3"]["cosine"] > 0.99 and measured["relu3"]["growth"] > 0.5
    (run,) = [r for r in runs(outlier) if r.run_type == "EVAL"]
    assert run.params["first_divergent_layer"] == "relu3"
    (compiled,) = [r for r in runs(outlier) if r.run_type == "COMPILE"]
    mapping = json.loads(Path(str(compiled.artifacts["mapping"].file_path)).read_text())
    pairs = {t["onnx_name"]: t for t in mapping["tensors"]}
    assert set(pairs) == {"s1", "s2", "s3", "s4", "s5"}  # each conv's output fused with relu
    assert pairs["s3"]["perm"] == [0, 2, 3, 1] and pairs["s3"]["tflite_shape"] == [1, 8, 8, 8]


def test_fix_keeps_the_outlier_layer_of_the_tflite_model_in_float(outlier: Path) -> None:
    result = _eval(outlier, "--goal", "cosine>=0.99", "--fix")
    assert result.returncode == 0, result.stderr
    assert "latency ms (median)" in result.stdout and "fix: the goals hold with" in result.stdout
    for label in ("float32", "int8", "repaired"):
        assert any(line.startswith(label) for line in result.stdout.splitlines()), label
    by_id = {r.run_id: r for r in runs(outlier)}
    (parent,) = [r for r in by_id.values() if r.run_type == "FIX"]
    fix = json.loads(Path(str(parent.artifacts["fix"].file_path)).read_text())
    assert fix["passed"] is True and parent.status == "FINISHED"
    assert fix["steps"][0]["first_divergent"]["node"] == "relu3"
    assert fix["kept_layers"][0] == "relu3" and 1 <= len(fix["kept_layers"]) <= 3
    assert {"conv3", "relu3"} <= set(fix["kept_nodes"])
    table = {row["model"]: row for row in fix["table"]}
    assert [table[m]["passed"] for m in ("float32", "int8", "repaired")] == [True, False, True]
    assert all(row["latency_median_ms"] > 0 for row in table.values())
    repaired = by_id[table["repaired"]["compile_run"]]
    assert repaired.params["excluded_nodes"] == fix["kept_nodes"]
    assert len(repaired.params["float_tensors"]) == len(fix["kept_layers"])  # one op a layer
    assert by_id[table["float32"]["compile_run"]].params["precision"] == "float32"
    # the repaired model's outputs, against the host's ONNX Runtime: the goal does hold
    outputs = np.load(str(by_id[table["repaired"]["eval_run"]].artifacts["outputs"].file_path))
    a = outputs["c6"].reshape(CALIBRATION, -1).astype(np.float64)
    b = _host(outlier / "outlier.onnx", outlier / "ods", "c6").reshape(CALIBRATION, -1)
    cosine = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cosine.mean() >= 0.99
    assert table["repaired"]["cosine"] == pytest.approx(cosine.mean(), rel=1e-5)
    children = [r for r in by_id.values() if r.run_id != parent.run_id]
    assert all(r.parent_run_id == parent.run_id for r in children)
    assert sum(r.run_type == "PROFILE" for r in children) == 3


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "--fix keeps layers of an int8 TFLite model in float: give --set calibration_data"),
        (["--set", "calibration_data=ods", "--set", "quantize_io=true"], "drop --set quantize_io"),
    ],
)
def test_bad_tflite_fix_requests_exit_2_before_any_run(
    outlier: Path, args: list[str], needle: str
) -> None:
    result = hub("exec", "eval", "tflite", "outlier.onnx", "--dataset", "ods", *args,
                 "--goal", "cosine>=0.9", "--fix", cwd=outlier)  # fmt: skip
    assert result.returncode == 2 and needle in result.stderr, result.stderr
    assert result.stderr.count("hub: error:") == 1 and "Traceback" not in result.stderr
    assert runs(outlier) == []
