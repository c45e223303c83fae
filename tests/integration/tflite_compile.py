"""What the TFLite conversion tests share: the tflite image (as built), a model built with
onnx.helper compiled through the real ``hub exec compile tflite``, the compile's error, and a
recurrent cell fed a state input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

HUB = str(Path(sys.executable).with_name("hub"))
HIDDEN = 8


@pytest.fixture(scope="module")
def tflite_image(docker_daemon: Any) -> str:
    """The tflite image, as built (these tests do not build it)."""
    from edgehub import images

    if not images.image_status("tflite").built:
        pytest.skip("needs the tflite image: hub images build tflite")
    return images.image_tag("tflite")


def compile_tflite(
    tmp_path: Path, model: onnx.ModelProto, *options: str
) -> tuple[dict[str, Any], str]:
    """``model`` compiled with ``--set`` ``options``: the compile's JSON report and its log."""
    (tmp_path / "hub.toml").write_text('[project]\nname = "tflite-conversion"\n')
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(tmp_path / "model.onnx"))
    sets = [arg for option in options for arg in ("--set", option)]
    done = subprocess.run(
        [HUB, "exec", "compile", "tflite", "model.onnx", *sets, "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # hub's own traceback (onnx2tf's, from a try edgehub retried, is quoted as "| onnx2tf:")
    assert not any(line.startswith("Traceback") for line in done.stderr.splitlines())
    return dict(json.loads(done.stdout)), done.stderr


def max_error(report: dict[str, Any]) -> float:
    """The compile's max abs error of the TFLite outputs against onnxruntime's."""
    error = report["metrics"].get("max_abs_error_vs_onnxruntime")
    assert error is not None, f"the compile measured no error: {report['metrics']}"
    return float(error)


def state_cell_model() -> onnx.ModelProto:
    """A Silero-style LSTM cell of Gemms: ``state`` [2, batch, H] holds h and c (batch on
    axis 1); the next state is returned, and a score from h."""
    rng = np.random.default_rng(1)

    def weights(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    index = [numpy_helper.from_array(np.array(i, dtype=np.int64), f"i{i}") for i in (0, 1)]
    nodes = [
        helper.make_node("Gather", ["state", "i0"], ["h"], axis=0),
        helper.make_node("Gather", ["state", "i1"], ["c"], axis=0),
        helper.make_node("Gemm", ["h", "w_hh", "b_hh"], ["gh"], transB=1),
        helper.make_node("Gemm", ["x", "w_ih", "b_ih"], ["gx"], transB=1),
        helper.make_node("Add", ["gh", "gx"], ["gates"]),
        helper.make_node("Split", ["gates", "halves"], ["g0", "g1"], axis=1),
        helper.make_node("Sigmoid", ["g0"], ["forget"]),
        helper.make_node("Tanh", ["g1"], ["cand"]),
        helper.make_node("Mul", ["forget", "c"], ["kept"]),
        helper.make_node("Add", ["kept", "cand"], ["c_next"]),
        helper.make_node("Tanh", ["c_next"], ["h_next"]),
        helper.make_node("Unsqueeze", ["h_next", "axes0"], ["h_out"]),
        helper.make_node("Unsqueeze", ["c_next", "axes0"], ["c_out"]),
        helper.make_node("Concat", ["h_out", "c_out"], ["state_next"], axis=0),
        helper.make_node("ReduceMean", ["h_next"], ["score"], axes=[-1], keepdims=1),
    ]
    graph = helper.make_graph(
        nodes,
        "state_cell",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, HIDDEN]),
        ],
        [
            helper.make_tensor_value_info("score", TensorProto.FLOAT, [1, 1]),
            helper.make_tensor_value_info("state_next", TensorProto.FLOAT, [2, 1, HIDDEN]),
        ],
        [
            *index,
            weights("w_hh", 2 * HIDDEN, HIDDEN),
            weights("b_hh", 2 * HIDDEN),
            weights("w_ih", 2 * HIDDEN, 16),
            weights("b_ih", 2 * HIDDEN),
            numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0"),
            numpy_helper.from_array(np.array([HIDDEN, HIDDEN], dtype=np.int64), "halves"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
