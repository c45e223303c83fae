"""Constants of rank >= 3 beside tensors onnx2tf holds in ONNX's axis order (a detector's
anchors ``[1, 2, A]`` and strides ``[1, 1, A]`` after a Reshape) lose their leading 1s, on the
model onnx2tf's onnxsim writes (`simplifier.write_shim`'s rewrite). The conversion this
unblocks (yolov8n in the conformance corpus) needs the tflite image:
tests/integration/test_tflite_detector_decode.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgehub.agent.tflite import simplifier
from edgehub.agent.tflite.graph_rewrites import constants_below_rank3

ANCHORS = 16


def _model() -> onnx.ModelProto:
    """A Conv's map ``[1, 2, 4, 4]``: a bias ``[1, 2, 1, 1]`` added to it (channels-last in
    onnx2tf: kept), then flattened to ``[1, 2, A]``, anchors subtracted and strides applied."""
    rng = np.random.default_rng(0)

    def const(name: str, array: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(array, name)

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["f"], kernel_shape=[1, 1]),
        helper.make_node("Add", ["f", "bias"], ["fb"]),
        helper.make_node("Reshape", ["fb", "flat"], ["maps"]),
        helper.make_node("Sigmoid", ["maps"], ["dist"]),
        helper.make_node("Sub", ["anchors", "dist"], ["corner"]),
        helper.make_node("Mul", ["corner", "strides"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "decode",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 2, ANCHORS])],
        [
            const("w", rng.standard_normal((2, 3, 1, 1)).astype(np.float32)),
            const("bias", rng.standard_normal((1, 2, 1, 1)).astype(np.float32)),
            const("flat", np.array([1, 2, ANCHORS], dtype=np.int64)),
            const("anchors", rng.random((1, 2, ANCHORS), dtype=np.float32) * 4),
            const("strides", np.full((1, 1, ANCHORS), 8.0, dtype=np.float32)),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString())
    return np.asarray(session.run(None, {"x": x})[0])


def _shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    return {t.name: list(t.dims) for t in model.graph.initializer}


def test_anchors_and_strides_after_a_reshape_lose_their_leading_ones() -> None:
    model = _model()
    x = np.random.default_rng(1).random((1, 3, 4, 4), dtype=np.float32)
    before = _run(model, x)

    assert constants_below_rank3(model) == ["corner", "out"]  # unnamed nodes: their outputs
    shapes = _shapes(model)
    assert shapes["anchors_low"] == [2, ANCHORS]
    assert shapes["strides_low"] == [1, ANCHORS]
    assert "anchors" not in shapes and "strides" not in shapes
    assert shapes["bias"] == [1, 2, 1, 1]  # beside a Conv's output: onnx2tf transposes both
    onnx.checker.check_model(model, full_check=True)
    np.testing.assert_array_equal(_run(model, x), before)


# no-op "simplifiers": a Python script, as onnxsim's own is (run in the shim's interpreter),
# and another program (run as a process)
NO_OP_SIMPLIFIERS = {
    "python": f"#!{sys.executable}\nimport shutil, sys\nshutil.copy(sys.argv[1], sys.argv[2])\n",
    "shell": '#!/bin/sh\ncp "$1" "$2"\n',
}


@pytest.mark.parametrize("script", NO_OP_SIMPLIFIERS.values(), ids=NO_OP_SIMPLIFIERS.keys())
def test_the_onnxsim_shim_rewrites_what_onnxsim_wrote(tmp_path: Path, script: str) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = real_dir / "onnxsim"
    real.write_text(script, encoding="utf-8")
    real.chmod(0o755)
    env = {"PATH": os.pathsep.join([str(real_dir), os.environ.get("PATH", "")])}
    assert simplifier.write_shim(tmp_path / "shim", [], env, rewrite=True)
    source = tmp_path / "in.onnx"
    onnx.save(_model(), str(source))

    subprocess.run(
        [shutil.which("onnxsim", path=env["PATH"]) or "onnxsim", str(source), "out.onnx"],
        cwd=tmp_path, env=env, check=True, capture_output=True,
    )  # fmt: skip

    shapes = _shapes(onnx.load(str(tmp_path / "out.onnx")))
    assert shapes["anchors_low"] == [2, ANCHORS]
    assert _shapes(onnx.load(str(source)))["anchors"] == [1, 2, ANCHORS]
