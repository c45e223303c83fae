"""Small real ONNX models for the agent tests, built with ``onnx.helper``.

- ``make_cnn``: image float32[N,3,16,16] -> Conv+Relu -> Conv+Relu -> Flatten -> Gemm -> [N,10]
- ``make_two_input``: a float32[N,4], b float32[N,4] -> sum = a + b, prod = MatMul(sum, W[4,3])
- ``make_int64``: ids int64[N,5] -> Gather(table[20,4]) -> emb float32[N,5,4]
- ``make_dynamic_conv``: image float32[1,3,H,W] -> 2x (Conv 3x3 + Relu), 16 channels ->
  GlobalAveragePool -> [1,16,1,1]; its cost grows with H*W (a few ms at 320x320)
- ``make_numpy_named``: inputs and outputs named like numpy's own parameters (``file``, ...)
- ``make_reflect_pad``: audio float32[1,T] -> reflect Pad of 4 on T -> ReduceMean; fails at T <= 4
- ``matmul_chain``: x float32[16,size] -> ``length`` MatMuls -> y (the A/B tests and bench: one
  more MatMul is ~1/length more work)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 8


def _finish(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="edgehub-tests",
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def make_cnn(path: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)

    def he(shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        weights: np.ndarray = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        return weights.astype(np.float32)

    inits = [
        numpy_helper.from_array(he((8, 3, 3, 3), 27), "conv1_w"),
        numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "conv1_b"),
        numpy_helper.from_array(he((8, 8, 3, 3), 72), "conv2_w"),
        numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "conv2_b"),
        numpy_helper.from_array(he((10, 512), 512), "fc_w"),
        numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "fc_b"),
    ]
    nodes = [
        helper.make_node(
            "Conv", ["image", "conv1_w", "conv1_b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]
        ),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node(
            "Conv",
            ["r1", "conv2_w", "conv2_b"],
            ["c2"],
            name="conv2",
            pads=[1, 1, 1, 1],
            strides=[2, 2],
        ),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Flatten", ["r2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        initializer=inits,
    )
    return _finish(graph, path)


def make_two_input(path: Path, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["a", "b"], ["sum"], name="add"),
            helper.make_node("MatMul", ["sum", "w"], ["prod"], name="matmul"),
        ],
        "two_input",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 4]),
        ],
        [
            helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("prod", TensorProto.FLOAT, ["N", 3]),
        ],
        initializer=[numpy_helper.from_array(w, "w")],
    )
    return _finish(graph, path)


def make_numpy_named(path: Path) -> Path:
    """Inputs ``allow_pickle`` and ``file``, outputs ``fix_imports`` (their sum) and
    ``mmap_mode`` (their product): names of ``numpy.savez``'s and ``numpy.load``'s parameters."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["allow_pickle", "file"], ["fix_imports"], name="add"),
         helper.make_node("Mul", ["allow_pickle", "file"], ["mmap_mode"], name="mul")],
        "numpy_names",
        [helper.make_tensor_value_info("allow_pickle", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("file", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("fix_imports", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("mmap_mode", TensorProto.FLOAT, [1, 4])],
    )  # fmt: skip
    return _finish(graph, path)


NUMPY_NAMED_FEEDS = {
    "allow_pickle": np.arange(4, dtype=np.float32)[None],
    "file": np.full((1, 4), 10, np.float32),
}


def check_numpy_named(outputs: Mapping[str, np.ndarray]) -> None:
    """``outputs`` are what `make_numpy_named` gives for `NUMPY_NAMED_FEEDS`."""
    a, b = NUMPY_NAMED_FEEDS["allow_pickle"], NUMPY_NAMED_FEEDS["file"]
    assert sorted(outputs) == ["fix_imports", "mmap_mode"]
    np.testing.assert_array_equal(outputs["fix_imports"], a + b)
    np.testing.assert_array_equal(outputs["mmap_mode"], a * b)


def make_int64(path: Path, seed: int = 2) -> Path:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((20, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed", axis=0)],
        "int64_input",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 5])],
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["N", 5, 4])],
        initializer=[numpy_helper.from_array(table, "table")],
    )
    return _finish(graph, path)


def make_dynamic_conv(path: Path, seed: int = 3, channels: int = 16) -> Path:
    rng = np.random.default_rng(seed)

    def weights(shape: tuple[int, ...]) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        values: np.ndarray = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        return values.astype(np.float32)

    inits = [
        numpy_helper.from_array(weights((channels, 3, 3, 3)), "conv1_w"),
        numpy_helper.from_array(weights((channels, channels, 3, 3)), "conv2_w"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1_w"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "conv2_w"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["pooled"], name="pool"),
    ]
    graph = helper.make_graph(
        nodes,
        "dynamic_conv",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, channels, 1, 1])],
        initializer=inits,
    )
    return _finish(graph, path)


def matmul_chain(path: Path, length: int, size: int = 128) -> Path:
    """x float32[16,size] -> ``length`` MatMuls with size x size weights (seed 0) -> y."""
    rng = np.random.default_rng(0)
    nodes, inits, source = [], [], "x"
    for i in range(length):
        weight = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
        inits.append(numpy_helper.from_array(weight, f"w{i}"))
        target = "y" if i == length - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [source, f"w{i}"], [target]))
        source = target
    graph = helper.make_graph(
        nodes,
        "matmul_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, size])],
        initializer=inits,
    )
    return _finish(graph, path)


def make_reflect_pad(path: Path) -> Path:
    pads = numpy_helper.from_array(np.array([0, 4, 0, 4], dtype=np.int64), "pads")
    nodes = [
        helper.make_node("Pad", ["audio", "pads"], ["padded"], name="pad", mode="reflect"),
        helper.make_node("ReduceMean", ["padded"], ["level"], name="mean", axes=[1]),
    ]
    graph = helper.make_graph(
        nodes,
        "reflect_pad",
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, "T"])],
        [helper.make_tensor_value_info("level", TensorProto.FLOAT, [1, 1])],
        initializer=[pads],
    )
    return _finish(graph, path)


def save_with_external_data(model_path: Path, directory: Path) -> Path:
    """Re-save ``model_path`` into ``directory`` with every initializer in ``model.onnx.data``."""
    model = onnx.load(str(model_path))
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / "model.onnx"
    onnx.save(
        model,
        str(out),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    return out


# --- running the built zipapp exactly as the host does ------------------------------------------


class AgentRun:
    """One finished agent process: exit code, parsed result and stderr lines."""

    def __init__(self, returncode: int, result: dict[str, Any], stderr: str, stdout: str) -> None:
        self.returncode = returncode
        self.result = result
        self.stderr = stderr
        self.stdout = stdout

    @property
    def lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    @property
    def metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = self.result.get("metrics", {})
        return metrics

    @property
    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = self.result.get("data", {})
        return data

    @property
    def message(self) -> str:
        return str(self.result.get("error", {}).get("message", ""))


def run_agent(
    pyz: Path,
    command: str,
    request: dict[str, Any] | None,
    workdir: Path,
    env: dict[str, str] | None = None,
) -> AgentRun:
    """Run ``python PYZ COMMAND --request R --result O`` in a subprocess and load the result."""
    import itertools
    import json
    import os
    import subprocess
    import sys

    from edgehub.agent.protocol import load_result

    workdir.mkdir(parents=True, exist_ok=True)
    for n in itertools.count():
        stem = workdir / f"{command.replace('.', '_')}_{n}"
        if not stem.with_suffix(".result.json").exists():
            break
    request_path = stem.with_suffix(".request.json")
    result_path = stem.with_suffix(".result.json")
    # EDGEHUB_AGENT_TEST_PYTHON runs the agent under another interpreter (e.g. a Python 3.8 venv
    # with an older onnxruntime) to check the agent's portability.
    python = os.environ.get("EDGEHUB_AGENT_TEST_PYTHON") or sys.executable
    argv = [python, str(pyz), command, "--result", str(result_path)]
    if request is not None:
        request_path.write_text(json.dumps(request))
        argv[3:3] = ["--request", str(request_path)]
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=180, cwd=workdir, env=full_env
    )
    result = load_result(result_path)
    return AgentRun(proc.returncode, result, proc.stderr, proc.stdout)
