"""Random inputs (seed N) are the same data on the host and in the agent: the host's
`random_inputs` (used by `pipeline` without --input and by the embedl_onnxruntime invoker)
makes them with the agent's code, from the signature the agent reports for a real model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

from edgehub.agent.tensors import TensorSpec
from edgehub.agent.tensors import random_inputs as agent_random_inputs
from edgehub.errors import InputDataError
from edgehub.toolchains.tensors import random_inputs

INPUTS = [  # name, element type, shape ("N": a named dim, None: an unnamed one)
    ("image", TensorProto.FLOAT, ["N", 3, 4]),
    ("half", TensorProto.FLOAT16, [2, None]),
    ("codes", TensorProto.INT8, ["N", 5]),
    ("pixels", TensorProto.UINT8, [6]),
    ("ids", TensorProto.INT64, [None, 3]),
    ("mask", TensorProto.BOOL, [4]),
    ("file", TensorProto.DOUBLE, [2]),  # a name that is also numpy.savez's parameter
]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    inputs = [helper.make_tensor_value_info(n, t, s) for n, t, s in INPUTS]
    outputs = [helper.make_tensor_value_info(f"{n}_out", t, s) for n, t, s in INPUTS]
    nodes = [helper.make_node("Identity", [n], [f"{n}_out"]) for n, _, _ in INPUTS]
    graph = helper.make_graph(nodes, "identities", inputs, outputs)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    path = tmp_path_factory.mktemp("model") / "identities.onnx"
    onnx.save(proto, str(path))
    return path


def _agent_specs(model: Path) -> list[TensorSpec]:
    """The inputs as the agent reads them (onnxruntime's NodeArgs)."""
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return [TensorSpec.from_ort(arg) for arg in session.get_inputs()]


def _same(host: dict[str, np.ndarray], agent: dict[str, np.ndarray]) -> None:
    assert list(host) == list(agent)
    for name in agent:
        assert host[name].dtype == agent[name].dtype, name
        np.testing.assert_array_equal(host[name], agent[name], err_msg=name)


@pytest.mark.parametrize("seed", [0, 7])
def test_host_and_agent_make_the_same_arrays(model: Path, seed: int) -> None:
    specs = _agent_specs(model)
    agent, _ = agent_random_inputs(specs, seed=seed)
    host = random_inputs([spec.to_json() for spec in specs], seed=seed)  # what inspect reports
    _same(host, agent)
    assert agent["codes"].min() < 0 or agent["codes"].max() > 10  # 8-bit: the full range


def test_signature_read_with_onnx_gives_the_same_arrays(model: Path) -> None:
    """The embedl_onnxruntime invoker's signature: dims from onnx, 0 where unknown."""
    graph = onnx.load(str(model)).graph
    signature = [
        {
            "name": value.name,
            "dtype": str(helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)),
            "shape": [d.dim_value for d in value.type.tensor_type.shape.dim],
        }
        for value in graph.input
    ]
    agent, _ = agent_random_inputs(_agent_specs(model), seed=0)
    _same(random_inputs(signature, seed=0), agent)


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "c", "dtype": "complex64", "shape": [2]},
        {"name": "r", "dtype": "float32", "shape": None},
    ],
    ids=["no-random-data-for-the-type", "unknown-rank"],
)
def test_inputs_that_cannot_be_made_are_one_input_error(spec: dict[str, object]) -> None:
    with pytest.raises(InputDataError, match=f"input '{spec['name']}'"):
        random_inputs([spec])
