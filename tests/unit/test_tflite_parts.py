"""The TFLite toolchain's pure parts: benchmark_params, the layout mapping, quantization at the
edges, the ONNX fixups for onnx2tf, the converter's command line and failure reason.

The conversion itself needs the tflite image: tests/integration/test_tflite.py.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgehub.agent.protocol import UsageError as AgentUsageError
from edgehub.agent.report import Report
from edgehub.agent.tflite import converter, onnx_fixups
from edgehub.agent.tflite.edges import dequantize, quantize
from edgehub.agent.tflite.interpreter import TFLiteTensor
from edgehub.agent.tflite.layout import IOMapping, TensorMap, layout_candidates, sidecar_path
from edgehub.errors import UsageError
from edgehub.toolchains.tflite.benchmark_params import parse_benchmark_params
from edgehub.toolchains.tflite.components import TFLiteCompiledModel


def test_benchmark_params_map_onto_profiler_options() -> None:
    settings = parse_benchmark_params(
        {"num_threads": "2", "num_runs": 30, "warmup_runs": "0", "use_xnnpack": "false",
         "enable_op_profiling": True, "max_secs": "1.5", "use_gpu": "true", "graph": "x"}
    )  # fmt: skip
    assert settings.options == {
        "threads": 2, "runs": 30, "warmup": 0, "xnnpack": False, "op_profiling": True,
        "max_secs": 1.5,
    }  # fmt: skip
    assert settings.ignored == ["use_gpu", "graph"]
    assert settings.params["num_runs"] == "30"
    assert parse_benchmark_params({"num_threads": "-1"}).options["threads"] is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"num_run": "3"}, r"unknown benchmark_params key 'num_run'; did you mean 'num_runs'"),
        ({"use_xnnpack": "maybe"}, r"'use_xnnpack' must be true or false"),
        ({"num_runs": "ten"}, r"'num_runs' must be an integer"),
        ({"num_runs": "0"}, r"at least 1"),
    ],
)
def test_benchmark_params_errors(params: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_benchmark_params(params)


def test_layout_candidates_and_round_trip() -> None:
    assert layout_candidates([1, 3, 8, 6], [1, 8, 6, 3]) == [[0, 2, 3, 1]]
    assert layout_candidates([1, 10], [1, 10]) == [[]]
    assert layout_candidates([1, 2, 2, 2], [1, 2, 2, 2]) == [[], [0, 2, 3, 1]]
    assert layout_candidates([1, 3, 8, 6], [1, 3, 6, 8]) == []
    entry = TensorMap("x", "x", [1, 3, 8, 6], [1, 8, 6, 3], [0, 2, 3, 1], "float32", "int8")
    array = np.arange(144, dtype=np.float32).reshape(1, 3, 8, 6)
    nhwc = entry.to_tflite(array)
    assert nhwc.shape == (1, 8, 6, 3) and nhwc[0, 2, 1, 0] == array[0, 0, 2, 1]
    assert np.array_equal(entry.to_onnx(nhwc), array)
    mapping = IOMapping([entry], [], source="m.onnx", precision="int8")
    assert IOMapping.from_json(json.loads(json.dumps(mapping.to_json())), "x") == mapping
    assert sidecar_path("d/compiled_m.tflite") == Path("d/compiled_m.mapping.json")


def test_quantize_round_trip_and_clipping() -> None:
    tensor = TFLiteTensor("x", 0, "int8", [4], [4], scale=0.5, zero_point=-3)
    q = quantize(np.array([0.0, 1.0, -100.0, 100.0], dtype=np.float32), tensor)
    assert q.dtype == np.int8 and q.tolist() == [-3, -1, -128, 127]
    assert dequantize(q, tensor).tolist() == [0.0, 1.0, -62.5, 65.0]


def _model(nodes: list, inputs: list, outputs: list, inits: list | None = None, opset: int = 17):  # type: ignore[type-arg,no-untyped-def]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_fixups_names_kernel_shape_and_static_shapes() -> None:
    weight = numpy_helper.from_array(np.ones((4, 3, 3, 3), dtype=np.float32), "w")
    model = _model(
        [helper.make_node("Conv", ["in:0", "w"], ["c"], name="conv/0"),
         helper.make_node("Softmax", ["c"], ["out@1"], name="Softmax@0", axis=-1)],
        [helper.make_tensor_value_info("in:0", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("out@1", TensorProto.FLOAT, None)],
        [weight],
    )  # fmt: skip
    done = onnx_fixups.prepare(model, None, Report())
    assert done["input_shapes"] == {"in:0": [1, 3, 8, 8]}
    assert done["renamed"] == {"in:0": "in_0", "out@1": "out_1"}
    conv, softmax = model.graph.node
    assert [a.ints for a in conv.attribute if a.name == "kernel_shape"] == [[3, 3]]
    assert softmax.name == "Softmax_0" and conv.name == "conv/0"
    assert model.graph.input[0].name == "in_0" and model.graph.output[0].name == "out_1"
    dynamic = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(AgentUsageError, match=r"pass input_shape"):
        onnx_fixups.prepare(dynamic, None, Report())
    assert onnx_fixups.prepare(dynamic, [1, 3, 4, 5], Report())["input_shapes"] == {
        "x": [1, 3, 4, 5]
    }


def test_old_softmax_gets_its_opset13_form(tmp_path: Path) -> None:
    model = _model(
        [helper.make_node("Softmax", ["x"], ["y"], name="sm")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 3, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 3, 1])],
        opset=9,
    )
    original = tmp_path / "old.onnx"
    onnx.save(model, str(original))
    assert onnx_fixups.flatten_old_softmax(model, Report()) == ["sm"]
    assert [n.op_type for n in model.graph.node] == ["Flatten", "Softmax", "Reshape"]
    rewritten = tmp_path / "new.onnx"
    onnx.save(model, str(rewritten))
    x = np.random.default_rng(0).standard_normal((2, 5, 3, 1)).astype(np.float32)
    before, after = (
        onnxruntime.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(
            None, {"x": x}
        )[0]
        for p in (original, rewritten)
    )
    assert after.shape == (2, 5, 3, 1) and np.allclose(before, after, atol=1e-6)


def test_erf_is_written_with_builtin_ops_within_its_bound(tmp_path: Path) -> None:
    """Erf (which LiteRT runs only through Flex) becomes Abs/Sign/Exp/Reciprocal arithmetic
    that agrees with ONNX Runtime's erf within 5e-7 in float32, over the range that matters."""
    model = _model(
        [helper.make_node("Erf", ["x"], ["y"], name="gelu/erf")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4001])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4001])],
    )
    original = tmp_path / "erf.onnx"
    onnx.save(model, str(original))
    assert onnx_fixups.expand_erf(model, Report()) == ["gelu/erf"]
    kinds = {n.op_type for n in model.graph.node}
    assert "Erf" not in kinds and {"Sign", "Exp", "Reciprocal"} <= kinds
    rewritten = tmp_path / "expanded.onnx"
    onnx.save(model, str(rewritten))
    x = np.linspace(-6, 6, 4001, dtype=np.float32)[None, :]
    before, after = (
        onnxruntime.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(
            None, {"x": x}
        )[0]
        for p in (original, rewritten)
    )
    assert np.abs(before - after).max() < 5e-7  # the bound (1.5e-7) plus float32 rounding
    assert onnx_fixups.expand_erf(model, Report()) == []  # nothing left to rewrite


def test_a_silent_converter_failure_says_how_it_ended(tmp_path: Path) -> None:
    """A converter that dies without printing an error (TensorFlow's converter segfaulting on
    a GRU's int8 quantization) is described by its exit, never an empty reason."""
    for code, words in ((-11, "crashed (SIGSEGV)"), (-9, "out of memory"), (3, "status 3")):
        script = "import os, signal, sys; print('  inputs_0 (TensorSpec)'); sys.stdout.flush(); "
        script += f"os.kill(os.getpid(), {-code}) if {code} < 0 else sys.exit({code})"
        with pytest.raises(converter.ConversionFailure, match=re.escape(words)) as failed:
            converter.run_onnx2tf([sys.executable, "-c", script], tmp_path, Report())
        assert failed.value.reason.startswith("it ")


def test_onnx2tf_failures_name_a_remedy() -> None:
    missing = "ModuleNotFoundError: No module named 'onnx2tf.ops.Attention'"
    assert "opset_version=17" in converter.remedy(missing)
    assert "param_replacement=FILE.json" in converter.remedy("ValueError: x (ONNX node 'n')")
    assert converter.remedy("MemoryError") == ""


def test_converter_command_and_failure_reason(tmp_path: Path) -> None:
    argv = converter.command(
        tmp_path / "m.onnx", tmp_path / "out", "int8", True, {"x": tmp_path / "c.npy"}, True
    )
    assert argv[1:3] == ["-m", "onnx2tf"]
    assert ["-cind", "x", str(tmp_path / "c.npy"), "0", "1"] == argv[argv.index("-cind") :][:5]
    assert "-oiqt" in argv and argv[argv.index("-qt") + 1] == "per-channel"
    assert argv[argv.index("-iqd") + 1] == "int8"
    assert converter.output_file(tmp_path, "m", "int8", True).name == (
        "m_full_integer_quant.tflite"
    )
    assert "-odrqt" in converter.command(tmp_path, tmp_path, "dynamic_int8", False, {}, True)
    lines = [
        "ERROR: The trace log is below.",
        "Traceback (most recent call last):",
        'ValueError: Exception encountered when calling layer "tf.nn.softmax" (type TFOpLambda).',
        "",
        "'Softmax@0' is not a valid scope name.",
        "ERROR: onnx_op_name: Softmax@0",
    ]
    assert converter.failure_reason(lines) == (
        "ValueError: 'Softmax@0' is not a valid scope name. (ONNX node 'Softmax@0')"
    )


def test_compiled_model_reads_the_mapping_beside_it(tmp_path: Path) -> None:
    model = tmp_path / "compiled_m.tflite"
    model.write_bytes(b"\x1c\x00\x00\x00TFL3")
    entry = TensorMap("image", "image", [1, 3, 2, 2], [1, 2, 2, 3], [0, 2, 3, 1], "float32",
                      "float32")  # fmt: skip
    out = TensorMap("probs", "Identity", [1, 10], [1, 10], None, "float32", "float32")
    IOMapping([entry], [out]).write(sidecar_path(model))
    wrapped = TFLiteCompiledModel.from_path(model)
    assert wrapped.input_name_mapping == {"image": "image"}
    assert wrapped.output_name_mapping == {"probs": "Identity"}
    assert wrapped.io_mapping is not None and wrapped.io_mapping["inputs"][0]["perm"] == [
        0,
        2,
        3,
        1,
    ]
    assert wrapped.signature == {
        "inputs": [{"name": "image", "dtype": "float32", "shape": [1, 3, 2, 2]}],
        "outputs": [{"name": "probs", "dtype": "float32", "shape": [1, 10]}],
    }
    bare = tmp_path / "other.tflite"
    bare.write_bytes(b"\x1c\x00\x00\x00TFL3")
    assert TFLiteCompiledModel.from_path(bare).input_name_mapping is None


def test_onnx2tf_is_run_again_with_the_replacement_it_generated(tmp_path: Path) -> None:
    """Where onnx2tf fails and writes ``<stem>_auto.json`` (its remedy for the failure), the
    conversion runs once more with ``-prf`` that file, and says what it applied; where that
    fails too, the error gives both reasons. The child is a stand-in script that behaves as
    onnx2tf does here (no real model is known whose failure onnx2tf's own JSON repairs)."""
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "fake_onnx2tf.py"
    script.write_text(
        "import json, pathlib, sys\n"
        "out = pathlib.Path(sys.argv[1])\n"
        "if '-prf' in sys.argv:\n"
        "    ops = json.loads(pathlib.Path(sys.argv[sys.argv.index('-prf') + 1]).read_text())\n"
        "    if ops['operations'][0]['values'] == 'good':\n"
        "        sys.exit(0)\n"
        "    print('ValueError: still wrong'); sys.exit(1)\n"
        "(out / 'model_auto.json').write_text(json.dumps({'format_version': 1, 'operations': [\n"
        "    {'op_name': 'cat', 'param_target': 'inputs', 'param_name': 'a',\n"
        "     'values': out.name.split('-')[-1]}]}))\n"
        "print('ERROR: onnx_op_name: cat'); print('ValueError: shapes differ'); sys.exit(1)\n"
    )
    report = Report()
    source, given = tmp_path / "source", tmp_path / "convert" / "model.onnx"
    source.mkdir()
    (source / "model.onnx").write_text("the model")
    good = out.rename(tmp_path / "out-good")
    seconds, applied = converter.convert(
        [sys.executable, str(script), str(good), "-i", str(given)], tmp_path, source, good,
        {"Concat"}, report,
    )  # fmt: skip
    assert seconds >= 0 and applied["auto_param_replacement"]["operations"][0]["op_name"] == "cat"
    bad = tmp_path / "out-bad"
    bad.mkdir()
    with pytest.raises(converter.ConversionFailure) as failed:
        converter.convert(
            [sys.executable, str(script), str(bad), "-i", str(given)], tmp_path, source, bad,
            set(), Report(),
        )  # fmt: skip
    message = str(failed.value)
    assert message.startswith("onnx2tf cannot convert the model: ValueError: shapes differ")
    assert "(1 operation(s)), which failed too: ValueError: still wrong" in message
    assert "param_replacement=FILE.json" in message


def test_onnx2tf_skips_onnxsim_when_onnxsim_wrote_an_op_it_cannot_convert(tmp_path: Path) -> None:
    """A converter missing for an op the model does not have (onnxsim, run first by onnx2tf,
    fused attention into ONNX's Attention): the retry skips onnxsim. For an op the model has,
    there is nothing to retry. (A stand-in script plays onnx2tf, as above.)"""
    script = tmp_path / "fake_onnx2tf.py"
    script.write_text(
        "import sys\n"
        "if '-nuo' in sys.argv:\n"
        "    sys.exit(0)\n"
        "print(\"ModuleNotFoundError: No module named 'onnx2tf.ops.Attention'\"); sys.exit(1)\n"
    )
    source, given = tmp_path / "source", tmp_path / "convert" / "model.onnx"
    source.mkdir()
    (source / "model.onnx").write_text("the model")
    argv = [sys.executable, str(script), "-i", str(given)]
    ops = {"MatMul", "Softmax"}
    _, applied = converter.convert(argv, tmp_path, source, tmp_path, ops, Report())
    assert applied == {"onnxsim": False}
    assert given.read_text() == "the model"  # each run converts a fresh copy
    with pytest.raises(converter.ConversionFailure, match="opset_version=17"):
        converter.convert(argv, tmp_path, source, tmp_path, {"Attention"}, Report())


def test_a_division_by_a_constant_becomes_a_product() -> None:
    """``x / 3.46`` (an attention's scale) becomes ``x * (1 / 3.46)`` with the same values;
    a division by a tensor, or by zero, stays."""
    scale = numpy_helper.from_array(np.array(12**0.5, dtype=np.float32), "scale")
    zero = numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")
    model = _model(
        [
            helper.make_node("Div", ["x", "scale"], ["a"], name="attention/Div"),
            helper.make_node("Div", ["a", "x"], ["b"], name="by_tensor"),
            helper.make_node("Div", ["b", "zero"], ["y"], name="by_zero"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("a", "y")],
        [scale, zero],
    )
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)

    def scaled() -> np.ndarray:
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return np.asarray(session.run(["a"], {"x": x})[0])

    before = scaled()
    assert onnx_fixups.divisions_as_products(model) == ["attention/Div"]
    assert [n.op_type for n in model.graph.node] == ["Mul", "Div", "Div"]
    assert {t.name for t in model.graph.initializer} == {"scale_reciprocal", "zero"}
    np.testing.assert_allclose(scaled(), before, rtol=1e-6)
