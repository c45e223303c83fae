"""`hub exec eval` through its real entry point, the real Docker daemon and the ORT image.

The models are built here with the onnx helper API; every figure the command reports is
recomputed in the test with numpy from the two models run by the host's ONNX Runtime (the
same version as the image's).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgehub.errors import EXIT_GOAL_FAILED
from edgehub.tracking import RunRecord, RunStore

pytestmark = pytest.mark.docker

onnx = pytest.importorskip("onnx", reason="the onnx package builds the test models")
ort = pytest.importorskip("onnxruntime", reason="host ONNX Runtime recomputes the figures")

HUB = str(Path(sys.executable).with_name("hub"))
FEATURES, CLASSES, SAMPLES = 16, 10, 24


def hub(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def _classifier(path: Path, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    from onnx import TensorProto, helper, numpy_helper

    weights = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)
    bias = rng.standard_normal(CLASSES).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"]),
            helper.make_node("Add", ["h", "b"], ["logits"]),
        ],
        "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES])],
        [numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return weights, bias


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    """A project with a classifier, a dataset directory and labels (three of them wrong)."""
    folder = tmp_path / "proj"
    (folder / "ds").mkdir(parents=True)
    (folder / "hub.toml").write_text('[project]\nname = "eval-tests"\n')
    rng = np.random.default_rng(7)
    weights, bias = _classifier(folder / "clf.onnx", rng)
    labels = []
    for i in range(SAMPLES):
        x = rng.standard_normal((1, FEATURES)).astype(np.float32)
        np.savez(folder / "ds" / f"{i:03d}.npz", x=x)
        labels.append(int((x @ weights + bias).argmax()))
    for i in (0, 5, 9):
        labels[i] = (labels[i] + 1) % CLASSES
    np.savez(folder / "labels.npz", labels=np.array(labels))
    return folder


def runs(project: Path) -> list[RunRecord]:
    return RunStore(project / ".hub").list_runs(limit=None)


def _run_host(model: str, folder: Path) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    files = sorted(folder.glob("*.npz"))
    return np.stack([session.run(None, {"x": np.load(f)["x"]})[0] for f in files])


def _int8(project: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return hub(
        "exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds", "--labels", "labels.npz",
        "--set", "quantization=static", "--set", "calibration_data=ds", *extra, cwd=project,
    )  # fmt: skip


def test_int8_classifier_figures_match_numpy(project: Path) -> None:
    result = _int8(project, "--metric", "top1", "--metric", "top5", "--goal", "cosine>=0.9",
                   "--goal", "top1>=0.5*reference", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] is True and report["samples"] == SAMPLES
    model = _run_host(report["model"], project / "ds").astype(np.float64)
    reference = _run_host(str(project / "clf.onnx"), project / "ds").astype(np.float64)
    assert not np.array_equal(model, reference)  # int8: the outputs do differ
    a, b = model.reshape(SAMPLES, -1), reference.reshape(SAMPLES, -1)
    cosine = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    noise = np.mean((a - b) ** 2, axis=1)
    figures = report["outputs"]["logits"]
    assert figures["cosine"] == pytest.approx(cosine.mean(), rel=1e-6)
    assert figures["cosine_min"] == pytest.approx(cosine.min(), rel=1e-6)
    assert figures["max_abs"] == pytest.approx(np.abs(a - b).max(), rel=1e-6)
    assert figures["mean_abs"] == pytest.approx(np.abs(a - b).mean(axis=1).mean(), rel=1e-6)
    snr = 10 * np.log10(np.mean(b**2, axis=1) / noise)
    assert figures["snr_db"] == pytest.approx(snr.mean(), rel=1e-6)
    psnr = 10 * np.log10(np.ptp(b, axis=1) ** 2 / noise)
    assert figures["psnr_db"] == pytest.approx(psnr.mean(), rel=1e-6)
    labels = np.load(project / "labels.npz")["labels"]
    top1 = report["tasks"]["top1"]
    assert top1["against"] == "labels"
    assert top1["model"] == pytest.approx(np.mean(a.argmax(axis=1) == labels))
    assert top1["reference"] == pytest.approx(np.mean(b.argmax(axis=1) == labels))
    assert top1["reference"] == pytest.approx((SAMPLES - 3) / SAMPLES)
    top5 = [labels[i] in np.argsort(-a[i])[:5] for i in range(SAMPLES)]
    assert report["tasks"]["top5"]["model"] == pytest.approx(np.mean(top5))
    worst = report["worst_samples"]["logits"]
    assert worst[0]["sample"] == f"{int(cosine.argmin()):03d}.npz"
    per_sample = report["per_sample"]
    assert per_sample["samples"][0] == "000.npz"
    assert per_sample["outputs"]["logits"]["cosine"] == pytest.approx(list(cosine), rel=1e-6)
    # recorded: the EVAL run with its figures, the dataset stored, the per-sample values
    by_type = {r.run_type: r for r in runs(project)}
    assert set(by_type) == {"COMPILE", "EVAL"}
    run = by_type["EVAL"]
    assert run.status == "FINISHED" and run.run_id == report["run_id"]
    assert run.metrics["logits.cosine"] == pytest.approx(figures["cosine"])
    assert run.metrics["reference.top1"] == pytest.approx(top1["reference"])
    assert run.metrics["goals_passed"] == 1.0
    assert run.params["worst_samples"]["logits"] == [row["sample"] for row in worst]
    assert run.artifacts["dataset"].sha256 == report["dataset_sha256"]
    stored = json.loads(Path(str(run.artifacts["per_sample"].file_path)).read_text())
    assert stored["tasks"]["top1"]["model"] == [float(v) for v in a.argmax(axis=1) == labels]
    outputs = np.load(str(run.artifacts["outputs"].file_path))
    assert np.allclose(outputs["logits"].reshape(SAMPLES, -1), a, rtol=0, atol=1e-6)


def test_missed_goal_exits_with_its_code(project: Path) -> None:
    result = _int8(project, "--goal", "cosine>=0.99999999", "--goal", "top1>=0.5*reference")
    assert result.returncode == EXIT_GOAL_FAILED == 6, result.stderr
    assert "goal cosine>=0.99999999: MISSED" in result.stdout
    assert "goal top1>=0.5*reference: passed" in result.stdout  # top1 added for the goal
    assert f"goals missed: exit {EXIT_GOAL_FAILED}" in result.stdout
    (run,) = [r for r in runs(project) if r.run_type == "EVAL"]
    assert run.status == "FINISHED" and run.metrics["goals_passed"] == 0.0
    shown = hub("runs", "show", run.run_id, cwd=project).stdout  # as the eval printed it
    assert "goal cosine>=0.99999999: MISSED" in shown and "goal top1>=0.5*reference" in shown
    assert "worst samples of logits by cosine: " in shown and "SNR dB" in shown
    assert "nan" not in shown.split("worst samples")[1].split("\n")[0]  # their figures kept
    again = _int8(project, "--goal", "max-degradation=0%", "--metric", "top1", "--json")
    report = json.loads(again.stdout)
    (goal,) = report["goals"]
    tasks = report["tasks"]["top1"]
    assert goal["passed"] is (tasks["model"] >= tasks["reference"])
    assert again.returncode == (0 if goal["passed"] else EXIT_GOAL_FAILED)


def test_float_model_without_labels_and_a_stacked_dataset(project: Path) -> None:
    stack = np.stack([np.load(f)["x"] for f in sorted((project / "ds").glob("*.npz"))])
    np.savez(project / "all.npz", x=stack)
    result = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "all.npz",
                 "--set", "quantization=none", "--metric", "top1", "--goal", "cosine>=0.99999",
                 "--goal", "top1>=1", "--json", cwd=project)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["tasks"]["top1"] == {
        "model": 1.0, "reference": 1.0, "output": "logits", "against": "reference"
    }  # fmt: skip
    assert report["per_sample"]["samples"][:2] == ["#0", "#1"]


def test_dataset_stored_once_across_evals(project: Path) -> None:
    for _ in range(2):
        result = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds",
                     "--set", "quantization=none", cwd=project)  # fmt: skip
        assert result.returncode == 0, result.stderr
        # ONNX Runtime's own start-up warning (its telemetry ID, on a read-only root) is not
        # among the run's lines: the container gives it a writable cache
        assert "telemetry" not in result.stdout + result.stderr, result.stderr
    stored = {str(r.artifacts["dataset"].file_path) for r in runs(project) if r.run_type == "EVAL"}
    assert len(stored) == 1
    (path,) = stored
    assert Path(path).is_dir() and len(list(Path(path).glob("*.npz"))) == SAMPLES


def test_dataset_sent_once_to_a_warm_container(project: Path) -> None:
    """In a warm container the dataset is placed once in the folder it shares with the host
    and read there by later evals (nothing sent again); the outputs stay the same."""
    samples = np.random.default_rng().standard_normal((6, 1, FEATURES)).astype(np.float32)
    np.savez(project / "warm.npz", x=samples)  # new content: never shared before
    said, outputs = [], []
    for _ in range(2):
        result = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "warm.npz",
                     "--set", "quantization=none", "--json", cwd=project,
                     env={"EDGEHUB_KEEP_WARM": "20"})  # fmt: skip
        assert result.returncode == 0, result.stderr
        said.append([line for line in result.stderr.splitlines() if "dataset /run/" in line])
        run = RunStore(project / ".hub").get_run(json.loads(result.stdout)["run_id"])
        outputs.append(np.load(str(run.artifacts["outputs"].file_path))["logits"])
    assert len(said[0]) == 1 and said[0][0].endswith("sent to the device"), said
    assert len(said[1]) == 1 and "already on the device, not sent again" in said[1][0], said
    assert np.array_equal(outputs[0], outputs[1])
    session = ort.InferenceSession(str(project / "clf.onnx"), providers=["CPUExecutionProvider"])
    host = np.stack([session.run(None, {"x": sample})[0] for sample in samples])
    assert np.allclose(outputs[0], host, atol=1e-5)


def test_user_metric_from_an_entry_point(project: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    (plugin / "mine-0.1.dist-info").mkdir(parents=True)
    (plugin / "mine_metrics.py").write_text(
        "import numpy as np\n\ndef peak(output, target):\n"
        "    return float(np.max(np.abs(np.asarray(output) - np.asarray(target))))\n"
    )
    (plugin / "mine-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: mine\n"
                                                             "Version: 0.1\n")  # fmt: skip
    (plugin / "mine-0.1.dist-info" / "entry_points.txt").write_text(
        "[edgehub.metrics]\npeak = mine_metrics:peak\n"
    )
    env = {"PYTHONPATH": str(plugin)}
    result = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds", "--metric", "peak",
                 "--set", "quantization=static", "--json", cwd=project, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["tasks"]["peak"]["model"] == pytest.approx(
        np.mean(report["per_sample"]["outputs"]["logits"]["max_abs"]), rel=1e-6
    )
    unknown = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds",
                  "--metric", "nope", cwd=project, env=env)  # fmt: skip
    assert unknown.returncode == 2 and "known: top1, top5, iou, mse, peak" in unknown.stderr


def _bad(project: Path, case: str) -> tuple[list[str], str]:
    """Arguments of a bad dataset ``case`` and the words its error must hold."""
    ds = project / "bad"
    ds.mkdir()
    x = np.zeros((1, FEATURES), np.float32)
    for i in range(3):
        np.savez(ds / f"{i}.npz", x=x)
    args = ["--dataset", "bad"]
    if case == "missing input":
        np.savez(ds / "1.npz", y=x)
        return args, "sample 1.npz data does not match the model: missing 'x'"
    if case == "wrong dtype":
        np.savez(ds / "2.npz", x=x.astype(np.float64))
        return args, "sample 2.npz data does not match the model: 'x' has dtype float64"
    if case == "wrong shape":
        np.savez(ds / "0.npz", x=np.zeros((1, FEATURES + 1), np.float32))
        return args, "sample 0.npz data does not match the model: 'x' has shape [1,17]"
    if case == "empty directory":
        for f in ds.iterdir():
            f.unlink()
        return args, "dataset directory bad holds no .npz samples"
    if case == "pickled npz":
        save: Any = np.savez
        save(ds / "1.npz", x=np.array([{"a": 1}], dtype=object), allow_pickle=True)
        return args, "sample 1.npz file 'bad/1.npz' holds pickled (object) arrays"
    assert case == "wrong label count"
    (project / "few.json").write_text("[1, 2]")
    return [*args, "--labels", "few.json"], "labels few.json hold 2 entries but dataset bad has 3"


@pytest.mark.parametrize(
    "case",
    ["missing input", "wrong dtype", "wrong shape", "empty directory", "pickled npz",
     "wrong label count"],
)  # fmt: skip
def test_bad_dataset_one_line_exit_2_nothing_finished(project: Path, case: str) -> None:
    args, needle = _bad(project, case)
    result = hub("exec", "eval", "onnxruntime", "clf.onnx", *args, "--metric", "top1", cwd=project)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert runs(project) == []  # checked before any run: nothing stored, nothing FINISHED


@pytest.mark.parametrize(
    "case",
    ["missing input", "wrong dtype", "wrong shape", "empty directory", "pickled npz",
     "wrong label count"],
)  # fmt: skip
def test_pipeline_checks_its_dataset_before_compiling(project: Path, case: str) -> None:
    """`hub exec pipeline --dataset` refuses a bad dataset before its first step: no compile,
    profile or invoke run is stored (they used to be, FINISHED, before the eval step failed)."""
    args, needle = _bad(project, case)
    result = hub("exec", "pipeline", "onnxruntime", "clf.onnx", *args, "--metric", "top1",
                 cwd=project)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert runs(project) == []


def test_help_documents_the_goal_exit_code(tmp_path: Path) -> None:
    top = hub("--help", cwd=tmp_path)
    assert "6  `hub exec eval --goal`: the model missed an accuracy goal" in top.stdout
    sub = hub("exec", "eval", "--help", cwd=tmp_path)
    assert "--goal EXPR" in sub.stdout and "--dataset" in sub.stdout


@pytest.fixture
def tflite_built(docker_daemon: Any) -> str:
    from edgehub import images

    if not images.image_status("tflite").built:
        pytest.skip("needs the tflite image (hub images build tflite)")
    return images.image_tag("tflite")


def _conv(path: Path, rng: np.random.Generator) -> None:
    from onnx import TensorProto, helper, numpy_helper

    weights = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["image", "W"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["features"]),
        ],
        "conv",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 4, 8, 8])],
        [numpy_helper.from_array(weights, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))


def test_tflite_eval_in_the_onnx_layout(tmp_path: Path, tflite_built: str) -> None:
    """A TFLite model (NHWC inside) is fed and read in the ONNX names and NCHW layout."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text('[project]\nname = "eval-tflite"\n')
    rng = np.random.default_rng(11)
    _conv(folder / "conv.onnx", rng)
    np.savez(folder / "all.npz", image=rng.standard_normal((6, 1, 3, 8, 8)).astype(np.float32))
    goals = ["--goal", "cosine>=0.9999", "--goal", "snr_db>=60"]
    result = hub("exec", "eval", "tflite", "conv.onnx", "--dataset", "all.npz", *goals, "--json",
                 cwd=folder)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["runtime"] == "tflite" and report["passed"] is True
    (run,) = [r for r in runs(folder) if r.run_type == "EVAL"]
    model = np.load(str(run.artifacts["outputs"].file_path))["features"]
    reference = np.load(str(run.artifacts["reference_outputs"].file_path))["features"]
    assert model.shape == reference.shape == (6, 1, 4, 8, 8)  # NCHW, as the ONNX model says
    host = ort.InferenceSession(str(folder / "conv.onnx"), providers=["CPUExecutionProvider"])
    images = np.load(folder / "all.npz")["image"]
    expected = np.stack([host.run(None, {"image": images[i]})[0] for i in range(6)])
    assert np.allclose(reference, expected, atol=1e-5)
    a, b = model.reshape(6, -1).astype(np.float64), reference.reshape(6, -1).astype(np.float64)
    cosine = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert report["outputs"]["features"]["cosine"] == pytest.approx(cosine.mean(), rel=1e-9)
    assert report["outputs"]["features"]["max_abs"] == pytest.approx(np.abs(a - b).max())


def _outlier_model(path: Path, rng: np.random.Generator) -> int:
    """Six 3x3 convolutions with ReLUs between; conv3 makes one outlier channel (x500) that
    conv4 ignores, so a per-tensor int8 scale on conv3's output crushes its other channels.
    Returns the number of layers (nodes)."""
    from onnx import TensorProto, helper, numpy_helper

    weights = [(rng.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32) for _ in range(6)]
    weights[0] = weights[0][:, :3]
    weights[5] = weights[5][:4]
    weights[2] = np.abs(weights[2]) * 0.3
    weights[2][0] *= 500.0
    weights[3][:, 0] = 0.0
    nodes, tensors, previous = [], [], "x"
    for i, w in enumerate(weights, start=1):
        nodes.append(helper.make_node("Conv", [previous, f"W{i}"], [f"c{i}"], name=f"conv{i}",
                                      pads=[1, 1, 1, 1]))  # fmt: skip
        tensors.append(numpy_helper.from_array(w, f"W{i}"))
        previous = f"c{i}"
        if i < 6:
            nodes.append(helper.make_node("Relu", [previous], [f"s{i}"], name=f"relu{i}"))
            previous = f"s{i}"
    graph = helper.make_graph(
        nodes,
        "outlier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 4, 8, 8])],
        tensors,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return len(nodes)


def test_layers_name_the_outlier_layer_in_few_runs(project: Path) -> None:
    rng = np.random.default_rng(5)
    layers = _outlier_model(project / "outlier.onnx", rng)
    (project / "ods").mkdir()
    for i in range(8):
        np.savez(project / "ods" / f"{i}.npz", x=rng.standard_normal((1, 3, 8, 8)).astype("f4"))
    result = hub("exec", "eval", "onnxruntime", "outlier.onnx", "--dataset", "ods",
                 "--set", "quantization=static", "--set", "calibration_data=ods",
                 "--layers", "--json", cwd=project)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["layers"]
    assert report["layers"] == layers == 11
    first = report["first_divergent"]  # the quantizer folds each Conv into its ReLU
    assert (first["node"], first["fused"]) == ("relu3", ["conv3"])
    assert first["channel_rel_l2"] > 0.2
    fused = [row["node"] for row in report["fused_or_renamed"]]
    assert fused == ["conv1", "conv2", "conv3", "conv4", "conv5"]  # reported, not skipped
    assert 1 <= report["runs"] <= int(np.ceil(np.log2(layers))) + 2
    assert result.stderr.count("layers: probe") == report["runs"]
    measured = {row["node"]: row for row in report["measured"]}
    assert measured["relu3"]["growth"] > 0.2  # conv3 + relu3 themselves added the error
    before = [row for row in report["measured"] if row["index"] < measured["relu3"]["index"]]
    assert all(row["channel_rel_l2"] <= 0.2 for row in before)
    (run,) = [r for r in runs(project) if r.run_type == "EVAL"]
    assert run.params["first_divergent_layer"] == "relu3"
    stored = json.loads(Path(str(run.artifacts["layers"].file_path)).read_text())
    assert stored["first_divergent"]["node"] == "relu3" and stored["runs"] == report["runs"]
    assert run.metrics["layers.runs"] == report["runs"]
    shown = hub("runs", "show", run.run_id, cwd=project)  # the layer table, formatted
    assert "first divergent layer: relu3 (Relu, tensor s3; conv3 fused into it)" in shown.stdout
    assert "worst channel" in shown.stdout and "fused or renamed" in shown.stdout
    text = hub("exec", "eval", "onnxruntime", "outlier.onnx", "--dataset", "ods",
               "--set", "quantization=static", "--layers", "0.2", cwd=project)  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "first divergent layer: relu3 (Relu, tensor s3; conv3 fused into it)" in text.stdout


def test_interrupted_eval_is_killed_and_leaves_no_container(project: Path) -> None:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    width, depth = 256, 40  # ~2.6 M multiply-adds a sample: 20,000 samples take a while
    weights = [(rng.standard_normal((width, width)) / 16).astype(np.float32) for _ in range(depth)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i - 1}", f"W{i}"], [f"h{i}"])
             for i in range(depth)]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "slow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info(f"h{depth - 1}", TensorProto.FLOAT, [1, width])],
        [numpy_helper.from_array(w, f"W{i}") for i, w in enumerate(weights)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(project / "slow.onnx"))
    np.savez(project / "many.npz", x=rng.standard_normal((20000, 1, width)).astype(np.float32))
    proc = subprocess.Popen(
        [HUB, "exec", "eval", "onnxruntime", "slow.onnx", "--dataset", "many.npz",
         "--set", "quantization=none"],
        cwd=project, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # the samples are on their way through the models
        lines.append(line)
        if line.startswith("run 20000 samples"):
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 130, "".join(lines)
    lines += proc.stderr.readlines()
    assert not any("Traceback" in line for line in lines), "".join(lines)
    statuses = {r.run_type: r.status for r in runs(project)}
    assert statuses == {"COMPILE": "FINISHED", "EVAL": "KILLED"}, "".join(lines)
    deadline = time.monotonic() + 60  # containers go late on a busy machine
    left = ["?"]
    while left and time.monotonic() < deadline:
        left = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=org.edgehub.owner-pid={proc.pid}"],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        time.sleep(0.2)
    assert left == []


def test_reference_from_an_earlier_eval_run(project: Path) -> None:
    float_eval = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds",
                     "--set", "quantization=none", "--json", cwd=project)  # fmt: skip
    assert float_eval.returncode == 0, float_eval.stderr
    first = json.loads(float_eval.stdout)
    int8 = _int8(project, "--metric", "top1", "--json")
    against_ort = json.loads(int8.stdout)
    result = _int8(project, "--metric", "top1", "--reference", first["run_id"][:8], "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["reference"] == f"run {first['run_id']}"
    assert "reference: run" in result.stderr and "both models in one call" not in result.stderr
    stored = np.load(str(next(r for r in runs(project) if r.run_id == first["run_id"])
                         .artifacts["outputs"].file_path))["logits"]  # fmt: skip
    model = np.load(str(next(r for r in runs(project) if r.run_id == report["run_id"])
                        .artifacts["outputs"].file_path))["logits"]  # fmt: skip
    a, b = model.reshape(SAMPLES, -1), stored.reshape(SAMPLES, -1)
    assert report["outputs"]["logits"]["max_abs"] == pytest.approx(float(np.abs(a - b).max()))
    for key in ("cosine", "snr_db"):  # the float run's outputs are the original's, or nearly
        ort_value = against_ort["outputs"]["logits"][key]
        assert report["outputs"]["logits"][key] == pytest.approx(ort_value, rel=1e-4)
    labels = np.load(project / "labels.npz")["labels"]
    assert report["tasks"]["top1"]["reference"] == pytest.approx(np.mean(b.argmax(1) == labels))
    np.savez(project / "other.npz", x=np.zeros((3, 1, FEATURES), np.float32))
    other = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "other.npz",
                "--reference", first["run_id"], cwd=project)  # fmt: skip
    assert other.returncode == 2 and "evaluated another dataset" in other.stderr
    layers = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds", "--layers",
                 "--reference", first["run_id"], cwd=project)  # fmt: skip
    assert layers.returncode == 2 and "drop the stored reference run" in layers.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--goal", "cosine:nope>=0.9"], "the model has no output 'nope'; outputs: logits"),
        (["--goal", "top1>=x"], "'x' is not a number"),
        (["--metric", "f1"], "unknown metric 'f1'"),
        (["--labels", "missing.json"], "labels missing.json not found"),
    ],
)
def test_bad_goals_and_metrics_exit_2_before_any_run(
    project: Path, args: list[str], needle: str
) -> None:
    result = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds", *args, cwd=project)
    assert result.returncode == 2 and needle in result.stderr, result.stderr
    assert result.stderr.count("hub: error:") == 1 and "Traceback" not in result.stderr
    assert runs(project) == []


def test_devices_of_other_providers_are_refused(project: Path) -> None:
    with (project / "hub.toml").open("a") as toml:
        toml.write('\n[devices.board]\nprovider = "embedl_onnxruntime"\n')
    result = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds", "--device",
                 "board", cwd=project)  # fmt: skip
    assert result.returncode == 2
    assert (
        "providers local, ssh, qai_hub so far; device 'board' uses 'embedl_onnxruntime'"
        in result.stderr
    )
    assert runs(project) == []


def test_runs_compare_of_two_evals(project: Path) -> None:
    ids = []
    for mode in ("none", "static"):
        result = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds", "--labels",
                     "labels.npz", "--metric", "top1", "--set", f"quantization={mode}", "--json",
                     cwd=project)  # fmt: skip
        assert result.returncode == 0, result.stderr
        ids.append(json.loads(result.stdout)["run_id"])
    compared = hub("runs", "compare", *ids, "--json", cwd=project)
    assert compared.returncode == 0, compared.stderr
    figures = {f["name"]: f for f in json.loads(compared.stdout)["accuracy"]["figures"]}
    stored = [
        json.loads(Path(str(r.artifacts["per_sample"].file_path)).read_text())
        for run_id in ids
        for r in runs(project)
        if r.run_id == run_id
    ]
    pick = {"top1": lambda d: d["tasks"]["top1"]["model"],
            "logits.cosine": lambda d: d["outputs"]["logits"]["cosine"]}  # fmt: skip
    for name, values in pick.items():
        a, b = (np.mean(values(d)) for d in stored)
        figure = figures[name]
        assert figure["a"] == pytest.approx(a) and figure["b"] == pytest.approx(b)
        low, high = figure["ci95"]
        assert low <= figure["delta"] <= high
    assert figures["logits.cosine"]["significant"] is True  # int8 is measurably off float
    text = hub("runs", "compare", *ids, cwd=project)
    assert "paired bootstrap 95% CI" in text.stdout and "logits.snr_db" in text.stdout
    np.savez(project / "other.npz", x=np.zeros((3, 1, FEATURES), np.float32))
    other = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "other.npz", "--json",
                cwd=project)  # fmt: skip
    different = hub("runs", "compare", ids[0], json.loads(other.stdout)["run_id"], cwd=project)
    assert different.returncode == 2 and "evaluated different datasets" in different.stderr


def _outlier_project(project: Path) -> None:
    rng = np.random.default_rng(5)
    _outlier_model(project / "outlier.onnx", rng)
    (project / "ods").mkdir()
    for i in range(8):
        np.savez(project / "ods" / f"{i}.npz", x=rng.standard_normal((1, 3, 8, 8)).astype("f4"))


def _fix(project: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return hub("exec", "eval", "onnxruntime", "outlier.onnx", "--dataset", "ods",
               "--set", "quantization=static", "--set", "calibration_data=ods", *extra,
               cwd=project)  # fmt: skip


def _cosine(model: str, folder: Path, reference: Path) -> float:
    a = _run_host(model, folder).reshape(8, -1).astype(np.float64)
    b = _run_host(str(reference), folder).reshape(8, -1).astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float(np.mean(np.where(norms > 0, np.sum(a * b, axis=1) / np.maximum(norms, 1e-30), 0)))


def test_fix_keeps_the_outlier_layer_in_float_until_the_goal_holds(project: Path) -> None:
    _outlier_project(project)
    result = _fix(project, "--goal", "cosine>=0.99", "--metric", "top1", "--fix", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    fix = report["fix"]
    assert fix["passed"] is True and report["passed"] is True
    assert fix["steps"][0]["first_divergent"]["node"] == "relu3"  # what --layers names
    assert fix["steps"][0]["passed"] is False and fix["steps"][-1]["passed"] is True
    assert fix["kept_layers"][0] == "relu3" and 1 <= len(fix["kept_layers"]) <= 3
    assert {"conv3", "relu3"} <= set(fix["kept_nodes"])
    table = {row["model"]: row for row in fix["table"]}
    assert list(table) == ["float32", "int8", "repaired"]
    assert [table[m]["passed"] for m in table] == [True, False, True]
    assert all(row["latency_median_ms"] > 0 for row in table.values())
    # top1 (against the reference's argmax) of float32, int8 and the repaired model, side by side
    top1 = {m: table[m]["tasks"]["top1"] for m in table}
    assert top1["float32"] == 1.0 and top1["repaired"] >= top1["int8"]
    # the figures hold against the host's ONNX Runtime: int8 is broken, the repair is not
    by_id = {r.run_id: r for r in runs(project)}
    paths = {m: str(by_id[table[m]["compile_run"]].artifacts["path"].file_path) for m in table}
    reference = project / "outlier.onnx"
    assert _cosine(paths["int8"], project / "ods", reference) < 0.99
    assert _cosine(paths["repaired"], project / "ods", reference) >= 0.99
    assert table["repaired"]["cosine"] == pytest.approx(
        _cosine(paths["repaired"], project / "ods", reference), rel=1e-5
    )
    repaired = by_id[table["repaired"]["compile_run"]]
    assert repaired.params["excluded_nodes"] == fix["kept_nodes"]
    # every compile, eval and profile is a child of the one FIX run
    parent = by_id[fix["run_id"]]
    assert parent.run_type == "FIX" and parent.status == "FINISHED"
    children = [r for r in by_id.values() if r.run_id != parent.run_id]
    assert all(r.parent_run_id == parent.run_id for r in children)
    assert sum(r.run_type == "PROFILE" for r in children) == 3
    assert {table[m]["profile_run"] for m in table} <= set(by_id)
    stored = json.loads(Path(str(parent.artifacts["fix"].file_path)).read_text())
    assert stored["kept_nodes"] == fix["kept_nodes"]
    text = _fix(project, "--goal", "cosine>=0.99", "--fix", "3")
    assert text.returncode == 0, text.stderr
    assert "latency ms (median)" in text.stdout and "repaired" in text.stdout
    assert "fix: the goals hold with" in text.stdout and "goals missed: exit" not in text.stdout


def test_fix_that_reaches_its_limit_exits_6(project: Path) -> None:
    _outlier_project(project)
    result = _fix(project, "--goal", "cosine>=0.99", "--fix", "1")
    assert result.returncode == EXIT_GOAL_FAILED, result.stderr
    line = f"fix: the goals still fail with 1 layer in float (limit 1): goals missed, exit {6}"
    assert line in result.stdout
    assert "latency ms (median)" in result.stdout  # the table still shows what it cost
    (parent,) = [r for r in runs(project) if r.run_type == "FIX"]
    assert parent.status == "FINISHED" and parent.metrics["passed"] == 0.0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--fix"], "name at least one goal"),
        (["--goal", "cosine>=0.9", "--fix", "0"], "a positive number"),
        (["--goal", "cosine>=0.9", "--fix", "--set", "quantization=none"], "drop --set quant"),
    ],
)
def test_bad_fix_requests_exit_2_before_any_run(
    project: Path, args: list[str], needle: str
) -> None:
    result = hub("exec", "eval", "onnxruntime", "clf.onnx", "--dataset", "ds", *args, cwd=project)
    assert result.returncode == 2 and needle in result.stderr, result.stderr
    assert result.stderr.count("hub: error:") == 1 and "Traceback" not in result.stderr
    assert runs(project) == []
