"""ONNX rewrites and onnxsim passes that keep real models clear of onnx2tf's pitfalls: scalar
constant operands given as 1-element tensors, and onnx2tf's onnxsim run without the fusions
into ops onnx2tf has no converter for.

The conversions they unblock (bert, segformer, yolos, vitpose in the conformance corpus) need
the tflite image: benchmarks/conformance.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from edgehub.agent.report import Report
from edgehub.agent.tflite import onnx_fixups, simplifier
from edgehub.agent.tflite.graph_rewrites import scalars_as_vectors


def _attention_scale_model() -> onnx.ModelProto:
    """``q * 32**-0.25`` (a 0-d Constant node), ``q + bias`` (a 0-d initializer) and a scalar
    product of two 0-d constants that must stay 0-d."""
    scale = helper.make_node(
        "Constant",
        [],
        ["scale"],
        value=numpy_helper.from_array(np.array(32**-0.25, dtype=np.float32)),
    )
    nodes = [
        scale,
        helper.make_node("Mul", ["q", "scale"], ["scaled"], name="attention/Mul"),
        helper.make_node("Add", ["bias", "scaled"], ["y"], name="attention/Add"),
        helper.make_node("Mul", ["scale", "bias"], ["s"], name="scalar/Mul"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 4, 32, 32])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 32, 32]),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
        ],
        [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "bias")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, q: np.ndarray) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return [np.asarray(a) for a in session.run(None, {"q": q})]


def test_a_scalar_constant_operand_becomes_a_one_element_tensor() -> None:
    model = _attention_scale_model()
    q = np.random.default_rng(0).standard_normal((1, 4, 32, 32)).astype(np.float32)
    before = _run(model, q)

    assert scalars_as_vectors(model) == ["attention/Mul", "attention/Add"]
    onnx.checker.check_model(model, full_check=True)
    constants = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes = {n.name: n for n in model.graph.node}
    for name in ("attention/Mul", "attention/Add"):
        operand = next(i for i in nodes[name].input if i in constants)
        assert constants[operand].shape == (1,)
    # the product of two scalars keeps its 0-d operands, so its output stays 0-d
    assert all(constants[i].ndim == 0 for i in nodes["scalar/Mul"].input if i in constants)

    after = _run(model, q)
    assert [a.shape for a in after] == [b.shape for b in before] == [(1, 4, 32, 32), ()]
    for a, b in zip(after, before, strict=True):
        np.testing.assert_array_equal(a, b)
    assert scalars_as_vectors(model) == []  # nothing left to rewrite


def test_prepare_records_the_scalars_it_rewrote() -> None:
    done = onnx_fixups.prepare(_attention_scale_model(), None, Report())
    assert done["scalars_as_vectors"] == 2


def test_onnxsim_skips_only_the_fusions_onnx2tf_cannot_convert() -> None:
    assert simplifier.passes_to_skip(None) == []
    assert simplifier.passes_to_skip({"Attention", "RMSNormalization"}) == [
        "fuse_gqa",
        "fuse_rope",
    ]
    assert simplifier.passes_to_skip(set()) == list(simplifier.FUSIONS)


def test_the_onnxsim_onnx2tf_finds_runs_the_real_one_with_the_fusions_skipped(
    tmp_path: Path,
) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    log = tmp_path / "argv.txt"
    real = real_dir / "onnxsim"
    real.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\n', encoding="utf-8")
    real.chmod(0o755)
    env = {"PATH": os.pathsep.join([str(real_dir), os.environ.get("PATH", "")])}

    assert simplifier.write_shim(tmp_path / "shim", ["fuse_attention", "fuse_rope"], env)
    assert env["PATH"].split(os.pathsep)[0] == str(tmp_path / "shim")
    # onnx2tf runs `onnxsim IN OUT [options]` by name, from its PATH
    subprocess.run(
        ["onnxsim", "in model.onnx", "out.onnx", "--no-large-tensor", "10MB"],
        env=env,
        check=True,
    )
    assert log.read_text(encoding="utf-8").splitlines() == [
        "in model.onnx",
        "out.onnx",
        "--no-large-tensor",
        "10MB",
        "--skip-optimization",
        "fuse_attention",
        "fuse_rope",
    ]


def test_no_shim_without_passes_to_skip_or_an_onnxsim(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path / "empty")}
    assert not simplifier.write_shim(tmp_path / "shim", ["fuse_attention"], env)
    assert not simplifier.write_shim(tmp_path / "shim", [], dict(os.environ))
    assert env == {"PATH": str(tmp_path / "empty")}
    assert not (tmp_path / "shim").exists()
