"""The headline paths on models shaped the way exporters write them, through the real ``hub``.

Each case is a failure a user met on a real export (issue 35), rebuilt here with the onnx helper
API at the same shapes and dims: a classifier whose unknown dims are all ``?`` and whose output
batch is dynamic (a PaddleOCR direction classifier: ``x [-1, 3, ?, ?]`` -> ``[-1, 2]``), a
detector-like model that cannot run with its dynamic dims set to 1 (a valid convolution), and
a network with a dead channel whose outputs are fine. Real Docker, the real images, the real
``hub`` entry point; no fakes (TensorRT builds its engine without a GPU and the pipeline stops
after the compile, as it does for a user without one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.docker

onnx = pytest.importorskip("onnx", reason="the onnx package builds the test models")

HUB = str(Path(sys.executable).with_name("hub"))
SHAPE = (1, 3, 32, 48)


def hub(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env=dict(os.environ),
        timeout=timeout,
    )  # fmt: skip


def _save(graph: Any, path: Path) -> Path:
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def direction_classifier(path: Path) -> Path:
    """Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> Softmax over
    ``x [-1, 3, ?, ?]``, output ``[-1, 2]``: how PaddleOCR exports its direction classifier."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    fc = numpy_helper.from_array(rng.standard_normal((2, 8)).astype(np.float32), "fc")
    fb = numpy_helper.from_array(np.array([0.1, -0.1], np.float32), "fb")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
            helper.make_node("Relu", ["c"], ["r"], name="relu"),
            helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
            # the flatten as the exporter writes it: a Reshape to (batch read at run time, -1)
            helper.make_node("Shape", ["g"], ["gs"], name="shape"),
            helper.make_node("Slice", ["gs", "zero", "one"], ["batch"], name="slice"),
            helper.make_node("Concat", ["batch", "minus_one"], ["flat_shape"], axis=0),
            helper.make_node("Reshape", ["g", "flat_shape"], ["f"], name="flatten"),
            helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1, name="fc"),
            helper.make_node("Softmax", ["logits"], ["softmax_0.tmp_0"], axis=-1, name="sm"),
        ],
        "direction_classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "?", "?"])],
        [helper.make_tensor_value_info("softmax_0.tmp_0", TensorProto.FLOAT, [-1, 2])],
        [
            w,
            fc,
            fb,
            *(
                numpy_helper.from_array(np.array([v], np.int64), n)
                for n, v in (("zero", 0), ("one", 1), ("minus_one", -1))
            ),
        ],
    )
    return _save(graph, path)


def valid_conv_detector(path: Path) -> Path:
    """Two unpadded 3x3 convolutions and a head over ``images [batch, 3, height, width]``:
    a 1x1 input (every dynamic dim set to 1) cannot run, as a YOLO head's Concat cannot."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((6, 8, 3, 3)).astype(np.float32) * 0.3, "w2")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["images", "w1"], ["c1"], name="stem"),
            helper.make_node("Relu", ["c1"], ["r1"], name="act"),
            helper.make_node("Conv", ["r1", "w2"], ["c2"], name="head"),
            helper.make_node("Sigmoid", ["c2"], ["output0"], name="sigmoid"),
        ],
        "detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                       ["batch", 3, "height", "width"])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT,
                                       ["batch", 6, "height - 4", "width - 4"])],
        [w1, w2],
    )  # fmt: skip
    return _save(graph, path)


def dead_channel_net(path: Path) -> Path:
    """Conv (16 channels, one nearly dead: weights 1e-4 of the others) -> Relu ->
    GlobalAveragePool -> Flatten -> Gemm: int8 rounds the dead channel to nothing while every
    output stays right."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    weights = rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.3
    weights[5] *= 1e-4
    bias = np.abs(rng.standard_normal(16)).astype(np.float32) * 0.1
    bias[5] = 1e-5
    fc = rng.standard_normal((4, 16)).astype(np.float32) * 0.5
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
            helper.make_node("Relu", ["c"], ["r"], name="relu"),
            helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
            helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
            helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1, name="fc"),
        ],
        "dead_channel",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b"),
         numpy_helper.from_array(fc, "fc")],
    )  # fmt: skip
    return _save(graph, path)


def _images(count: int, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Smooth, photo-like samples (low-frequency patterns plus noise), not white noise."""
    rng = np.random.default_rng(seed)
    _, channels, height, width = shape
    ys, xs = np.mgrid[0:height, 0:width] / max(height, width)
    out = np.empty((count, *shape), np.float32)
    for i in range(count):
        for c in range(channels):
            fx, fy, phase = rng.uniform(1, 4, 3)
            pattern = np.sin(2 * np.pi * (fx * xs + fy * ys) + phase)
            out[i, 0, c] = pattern + 0.1 * rng.standard_normal((height, width))
    return out


@pytest.fixture(scope="module")
def images(docker_daemon: Any) -> None:
    """The onnxruntime, tflite and tensorrt-rtx images, built from the base if missing."""
    from edgehub import images as hub_images

    base = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
    for name in ("onnxruntime", "tflite", "tensorrt-rtx"):
        if not hub_images.image_status(name).built:
            if hub_images.image_attrs(base) is None:
                pytest.skip(f"needs the base image {base} (bash scripts/make-base-image.sh)")
            hub_images.build_image(name, base=base)


@pytest.fixture
def project(tmp_path: Path, images: None) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text('[project]\nname = "exported-models"\n')
    return folder


@pytest.mark.parametrize("runtime", ["onnxruntime", "tflite", "tensorrt"])
def test_pipeline_honours_input_shape_in_every_step(project: Path, runtime: str) -> None:
    """``--set input_shape=`` given once shapes the compile, the profile, the invoke and the
    reference of a model whose dims are all dynamic (TensorRT: its compile, without a GPU)."""
    model = direction_classifier(project / "cls.onnx")
    shape = "x".join(map(str, SHAPE))
    extra = ["--set", "target=sm86"] if runtime == "tensorrt" else []
    done = hub(
        "exec", "pipeline", runtime, str(model), "--set", f"input_shape={shape}", *extra,
        "--json", cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["compile"]["status"] == "FINISHED"
    if runtime == "tensorrt":
        assert report["stopped_after_compile"], report
        return
    assert report["invoke"]["status"] == "FINISHED"
    assert report["accuracy"], report
    (figures,) = report["accuracy"]
    assert figures["cosine_similarity"] > 0.99, figures
    assert figures["shape"] == [1, 2]
    assert report["reference"]["status"] == "FINISHED"
    assert report["reference"]["params"]["shapes"]["x"]["shape"] == list(SHAPE)


def test_tflite_pairs_an_output_with_a_dynamic_batch(project: Path) -> None:
    """The ONNX output ``[-1, 2]`` is paired with the TFLite ``[1, 2]`` by the reference run's
    resolved shape, and the converted model agrees with ONNX Runtime."""
    model = direction_classifier(project / "cls.onnx")
    done = hub(
        "exec", "compile", "tflite", str(model), "--set", "input_shape=1x3x48x192", "--json",
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["status"] == "FINISHED"
    assert report["metrics"]["max_abs_error_vs_onnxruntime"] < 1e-4, report["metrics"]
    x = np.random.default_rng(2).standard_normal((1, 3, 48, 192)).astype(np.float32)
    np.savez(project / "x.npz", x=x)
    run = hub("exec", "invoke", "tflite", "--from-run", report["run_id"], "--input", "x.npz",
              "--json", cwd=project)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    outputs = json.loads(run.stdout)["outputs"]
    assert "softmax_0.tmp_0" in json.dumps(outputs), outputs


def test_eval_takes_shapes_and_calibration_from_the_dataset(project: Path) -> None:
    """An eval of a model that cannot run at 1x1 compiles at the dataset's shape and
    calibrates on the dataset's samples (no input_shape, no calibration_data given), and says
    so in the table and the JSON."""
    model = valid_conv_detector(project / "det.onnx")
    np.savez(project / "photos.npz", images=_images(12, (1, 3, 40, 56), seed=1))
    done = hub("exec", "eval", "onnxruntime", str(model), "--dataset", "photos.npz", "--json",
               cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["calibration"] == "dataset"
    assert report["outputs"]["output0"]["cosine"] > 0.99, report["outputs"]
    assert "calibrating on the dataset's 12 samples" in done.stderr
    assert "images:1x3x40x56" in done.stderr
    table = hub("exec", "eval", "onnxruntime", str(model), "--dataset", "photos.npz",
                cwd=project)  # fmt: skip
    assert table.returncode == 0, table.stderr[-3000:]
    assert "calibrated on: the dataset evaluated" in table.stdout


def test_layers_ignores_a_dead_channel_when_the_outputs_are_fine(project: Path) -> None:
    """``--layers`` on an int8 model whose outputs agree names no divergent layer: the dead
    channel's rounding is judged against the tensor's scale."""
    model = dead_channel_net(project / "dead.onnx")
    np.savez(project / "data.npz", x=_images(8, (1, 3, 32, 32), seed=4))
    done = hub("exec", "eval", "onnxruntime", str(model), "--dataset", "data.npz", "--layers",
               "--set", "per_channel=true", "--json", cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["outputs"]["y"]["cosine"] > 0.999, report["outputs"]
    assert report["layers"]["first_divergent"] is None, report["layers"]
    table = hub("runs", "show", report["run_id"], cwd=project)
    assert "no divergent layer above the threshold (0.2)" in table.stdout, table.stdout
