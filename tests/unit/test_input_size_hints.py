"""Inputs at sizes a model does not take, told in one line with what to pass instead.

Random inputs at guessed sizes: a model that cannot run with its dynamic dims set to 1 (a
detector whose feature maps must line up, here a Reshape to a fixed size) fails saying the sizes
were guessed and which ``input_shape`` to pass, for ``ort.profile`` and for the calibration of
``ort.compile``; the shape examples the agent gives are accepted as written, and a dim named by
two inputs is fixed for both by TFLite's compile (the speech-model layout
``features: [batch, frames, 40]``, ``h0: [2, batch, 96]``), and for TensorRT's optimization
profile too. A stacked dataset given where one
sample is expected is named as such. Real agent runs under onnxruntime.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_models import run_agent

from edgehub.agent.bundle import build_agent_zipapp
from edgehub.agent.models import graph_inputs
from edgehub.agent.protocol import InputDataError, UsageError
from edgehub.agent.report import Report
from edgehub.agent.shapes import example_shapes, parse_input_shape, shape_example
from edgehub.agent.tensors import TensorSpec, check_arrays
from edgehub.agent.tflite.onnx_fixups import static_shapes_to_fix
from edgehub.agent.trt.shapes import parse_shapes


def _model(inputs: list[Any], outputs: list[Any], nodes: list[Any], inits: Any = ()) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def speech_layout(h0_first: bool = False) -> Any:
    features = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", "frames", 40])
    h0 = helper.make_tensor_value_info("h0", TensorProto.FLOAT, [2, "batch", 96])
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Identity", ["features"], ["o"])]
    return _model([h0, features] if h0_first else [features, h0], [out], nodes)


@pytest.fixture(scope="module")
def reshaping(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``x: [1, n]`` reshaped to ``[1, 4]``, then a MatMul: it runs only where ``n`` is 4."""
    weight = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    target = numpy_helper.from_array(np.array([1, 4], np.int64), "target")
    model = _model(
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [
            helper.make_node("Reshape", ["x", "target"], ["r"]),
            helper.make_node("MatMul", ["r", "w"], ["y"]),
        ],
        [weight, target],
    )
    path = tmp_path_factory.mktemp("guessed") / "reshaping.onnx"
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_agent_zipapp(tmp_path_factory.getbasetemp() / "agent-cache")


def test_a_run_at_guessed_sizes_says_so_and_what_to_pass(
    pyz: Path, reshaping: Path, tmp_path: Path
) -> None:
    run = run_agent(pyz, "ort.profile", {"model": str(reshaping), "runs": 2}, tmp_path)
    assert run.returncode != 0 and run.result["error"]["kind"] == "RuntimeFailure"
    message = run.message
    assert "\n" not in message and "Traceback" not in run.stderr
    assert "dynamic dims set to 1 (x: float32[1,1])" in message, message
    assert "input_shape=1x32 (the first input)" in message and "with input data" in message

    given = {"model": str(reshaping), "runs": 2, "input_shape": [1, 4]}
    assert run_agent(pyz, "ort.profile", given, tmp_path).returncode == 0


def test_a_calibration_at_guessed_sizes_says_so_without_a_traceback(
    pyz: Path, reshaping: Path, tmp_path: Path
) -> None:
    request = {"model": str(reshaping), "output": str(tmp_path / "q.onnx")}
    run = run_agent(pyz, "ort.compile", dict(request, mode="quantize-static"), tmp_path)
    assert run.returncode != 0 and run.result["error"]["kind"] == "RuntimeFailure"
    message = run.message
    assert message.startswith("onnxruntime failed while calibrating the model: "), message
    assert "dynamic dims set to 1 (x: float32[1,1])" in message
    assert message.endswith("or with calibration data") and "Traceback" not in run.stderr

    given = dict(request, mode="quantize-static", input_shape=[1, 4])
    assert run_agent(pyz, "ort.compile", given, tmp_path).returncode == 0


def test_the_example_gives_a_shared_named_dim_one_size_and_is_accepted() -> None:
    specs = graph_inputs(speech_layout())
    assert example_shapes(specs) == [[1, 32, 40], [2, 1, 96]]
    example = shape_example(specs)
    assert "input_shape=features:1x32x40,h0:2x1x96 (per input)" in example
    assert '{"features": [1, 32, 40], "h0": [2, 1, 96]}' in example
    shapes = parse_input_shape({"features": [1, 32, 40], "h0": [2, 1, 96]}, specs)
    assert shapes == {"features": [1, 32, 40], "h0": [2, 1, 96]}


def test_tflite_takes_the_first_input_form_its_message_offers() -> None:
    specs = graph_inputs(speech_layout())
    report = Report(io.StringIO())
    shapes = static_shapes_to_fix(specs, [1, 32, 40], report)
    assert shapes == {"features": [1, 32, 40], "h0": [2, 1, 96]}
    assert report.warnings == []  # batch was given, not guessed

    with pytest.raises(UsageError) as error:
        static_shapes_to_fix(specs, None, report)
    message = str(error.value)
    assert "features: float32[1,frames,40] has dynamic dimensions" in message
    assert "input_shape=1x32x40 (the first input)" in message
    assert report.warnings == ["input 'features' has a dynamic batch dimension: converted with 1"]


def test_tflite_ties_a_batch_whatever_the_input_order() -> None:
    specs = graph_inputs(speech_layout(h0_first=True))
    shapes = static_shapes_to_fix(specs, {"features": [1, 8, 40]}, Report(io.StringIO()))
    assert shapes == {"features": [1, 8, 40], "h0": [2, 1, 96]}
    with pytest.raises(UsageError) as error:  # batch guessed from features', frames left open
        static_shapes_to_fix(specs, None, Report(io.StringIO()))
    assert "but features: float32[1,frames,40] has dynamic" in str(error.value)


def test_tensorrt_sizes_a_dim_that_another_input_names() -> None:
    """TensorRT's network shows dynamic dims as -1; the dims' names come from the ONNX model."""
    network: Any = [{"name": "features", "shape": [-1, -1, 40]},
                    {"name": "h0", "shape": [2, -1, 96]}]  # fmt: skip
    names: Any = {"features": ["batch", "frames", None], "h0": [None, "batch", None]}
    profile = parse_shapes(None, network, [1, 32, 40], names)
    assert profile["h0"] == {"min": [2, 1, 96], "opt": [2, 1, 96], "max": [2, 1, 96]}
    ranged = {"features": {"min": [1, 8, 40], "opt": [2, 16, 40], "max": [4, 32, 40]}}
    assert parse_shapes(ranged, network, None, names)["h0"]["max"] == [2, 4, 96]
    with pytest.raises(UsageError) as error:
        parse_shapes(None, network, None, names)
    message = str(error.value)
    assert "give input_shape=1x32x40 (the first input) or " in message
    assert "input_shape=features:1x32x40,h0:2x1x96," in message
    parse_shapes(None, network, {"features": [1, 32, 40], "h0": [2, 1, 96]}, names)


def test_a_stacked_dataset_given_as_one_input_is_named_as_such() -> None:
    specs = [TensorSpec("features", "float32", ["batch", 49, 40]),
             TensorSpec("h0", "float32", [2, "batch", 96])]  # fmt: skip
    stacked = {"features": np.zeros((8, 49, 40), np.float32),
               "h0": np.zeros((8, 2, 1, 96), np.float32)}  # fmt: skip
    with pytest.raises(InputDataError) as error:
        check_arrays(stacked, specs)
    message = str(error.value)
    assert "'h0' has shape [8,2,1,96] (rank 4), expected rank 3" in message
    assert "They look like 8 samples stacked on a leading axis" in message

    fixed_batch = [TensorSpec("features", "float32", [1, 49, 40]), specs[1]]
    with pytest.raises(InputDataError, match="look like 8 samples stacked"):
        check_arrays(stacked, fixed_batch)
    wrong = dict(stacked, features=np.zeros((8, 50, 40), np.float32))  # not a stack of samples
    with pytest.raises(InputDataError) as error:
        check_arrays(wrong, specs)
    assert "stacked" not in str(error.value)
    check_arrays({k: v[:1] if k == "features" else v[0] for k, v in stacked.items()}, specs)
