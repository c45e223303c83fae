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


def embedding_classifier(path: Path) -> Path:
    """A BERT-like front end: token ids into a 30-row table, token types into a 2-row one,
    summed, averaged over the sequence, classified (``ids``, ``type_ids`` int64 ``[N, 8]``)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    tables = [
        numpy_helper.from_array(rng.standard_normal((30, 16)).astype(np.float32), "words"),
        numpy_helper.from_array(rng.standard_normal((2, 16)).astype(np.float32), "types"),
        numpy_helper.from_array(rng.standard_normal((16, 3)).astype(np.float32), "fc"),
    ]
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["words", "ids"], ["w"], name="word_embeddings"),
            helper.make_node("Gather", ["types", "type_ids"], ["t"], name="type_embeddings"),
            helper.make_node("Add", ["w", "t"], ["e"], name="embeddings"),
            helper.make_node("ReduceMean", ["e"], ["m"], axes=[1], keepdims=0, name="pool"),
            helper.make_node("MatMul", ["m", "fc"], ["logits"], name="classifier"),
        ],
        "embedding_classifier",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, ["N", 8])
            for n in ("ids", "type_ids")
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])],
        tables,
    )
    return _save(graph, path)


def erf_net(path: Path) -> Path:
    """``Erf(x @ w) * k`` over ``x [1, 16]``: the exact GELU's Erf where onnx2tf does not fuse
    a GELU, which LiteRT runs only through the Flex delegate; ``k`` (2.0) is a Mul's input."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(6)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="dense"),
            helper.make_node("Erf", ["h"], ["e"], name="erf"),
            helper.make_node("Mul", ["e", "k"], ["y"], name="scale"),
        ],
        "erf_net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32) * 0.3, "w"),
         numpy_helper.from_array(np.array([2.0], np.float32), "k")],
    )  # fmt: skip
    return _save(graph, path)


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


def test_a_model_that_cannot_run_at_guessed_sizes_is_told_the_shape_to_pass(
    project: Path,
) -> None:
    """The README's pipeline on a detector without ``input_shape``: its random calibration
    inputs are 1x1, which it cannot run; the error is one line that says so and offers a
    shape, with no traceback, and the shape it offers runs."""
    model = valid_conv_detector(project / "det.onnx")
    failed = hub("exec", "pipeline", "onnxruntime", str(model), cwd=project)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("hub: error: onnxruntime failed while calibrating the model: "), last
    assert "dynamic dims set to 1 (images: float32[1,3,1,1])" in last
    offered = "input_shape=1x3x32x32"
    assert f"{offered} (the first input)" in last and last.endswith("with calibration data")
    done = hub("exec", "pipeline", "onnxruntime", str(model), "--set", offered, cwd=project)
    assert done.returncode == 0, done.stderr[-3000:]


def test_eval_takes_shapes_and_calibration_from_the_dataset(project: Path) -> None:
    """An eval of a model that cannot run at 1x1 compiles at the dataset's shape and
    calibrates on the dataset's samples (no input_shape, no calibration_data given), and says
    so in the table and the JSON; an input_shape the samples do not have is refused first."""
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
    other = hub("exec", "eval", "onnxruntime", str(model), "--dataset", "photos.npz",
                "--set", "input_shape=1x3x32x32", cwd=project)  # fmt: skip
    assert other.returncode == 2 and "Traceback" not in other.stderr
    assert other.stderr.strip().splitlines()[-1] == (
        "hub: error: input_shape gives images 1x3x32x32 but the dataset's samples are "
        "1x3x40x56: eval compiles at the samples' shape by itself; drop input_shape, or give "
        "samples of that shape"
    )


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


@pytest.mark.parametrize("runtime", ["onnxruntime", "tflite"])
def test_inputs_indexing_a_table_get_values_inside_it(project: Path, runtime: str) -> None:
    """Random token types stay below the 2-row table's size in every step (0..9 overflowed it:
    ONNX Runtime's int8 calibration and LiteRT's profile failed on a Gather); TFLite's int8
    calibrates on the dataset's int64 samples as int64 (onnx2tf feeds them as float32)."""
    model = embedding_classifier(project / "emb.onnx")
    done = hub("exec", "pipeline", runtime, str(model), "--set", "input_shape=1x8",
               "--set", "profile.runs=5", "--json", cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["invoke"]["status"] == "FINISHED", report
    (figures,) = report["accuracy"]
    assert figures["cosine_similarity"] > 0.99, figures
    rng = np.random.default_rng(7)
    np.savez(project / "tokens.npz", ids=rng.integers(0, 30, (10, 1, 8)),
             type_ids=rng.integers(0, 2, (10, 1, 8)))  # fmt: skip
    precision = "precision=int8" if runtime == "tflite" else "quantization=static"
    done = hub("exec", "eval", runtime, str(model), "--dataset", "tokens.npz", "--set", precision,
               "--json", cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["calibration"] == "dataset"
    assert report["outputs"]["logits"]["cosine"] > 0.98, report["outputs"]


def test_tflite_writes_erf_with_builtins_and_takes_a_parameter_replacement(project: Path) -> None:
    """A model with Erf converts to a .tflite that LiteRT runs without the Flex delegate, and
    agrees with ONNX Runtime; a parameter replacement file reaches onnx2tf (the Mul's constant
    2.0 replaced by 5.0 shows as a conversion error); a missing one is a one-line error."""
    model = erf_net(project / "erf.onnx")
    done = hub("exec", "pipeline", "tflite", str(model), "--set", "profile.runs=5", "--json",
               cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    (figures,) = report["accuracy"]
    assert figures["max_abs_error"] < 1e-4, figures
    assert "Erf written with LiteRT builtins" in done.stderr
    replacement = project / "replace.json"
    replacement.write_text(json.dumps({"format_version": 1, "operations": [
        {"op_name": "scale", "param_target": "inputs", "param_name": "k", "values": [5.0]},
    ]}))  # fmt: skip
    done = hub("exec", "compile", "tflite", str(model), "--set",
               f"param_replacement={replacement}", "--json", cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["metrics"]["max_abs_error_vs_onnxruntime"] > 0.5
    missing = hub("exec", "compile", "tflite", str(model), "--set",
                  "param_replacement=nowhere.json", cwd=project)  # fmt: skip
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert "nowhere.json" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
