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


def _embedding_model(path: Path) -> Path:
    """A BERT-like front: token ids into a 30-row table, token types (cast, unsqueezed) into a
    2-row table at axis 0, a position id that only reaches an Add (no table)."""
    rng = np.random.default_rng(0)
    tables = [
        helper.make_tensor("words", TensorProto.FLOAT, [30, 4], rng.random(120).tolist()),
        helper.make_tensor("types", TensorProto.FLOAT, [2, 4], rng.random(8).tolist()),
    ]
    nodes = [
        helper.make_node("Gather", ["words", "ids"], ["w"], axis=0),
        helper.make_node("Cast", ["type_ids"], ["t32"], to=TensorProto.INT32),
        helper.make_node("Unsqueeze", ["t32", "axes"], ["t2"]),
        helper.make_node("Squeeze", ["t2", "axes"], ["t3"]),
        helper.make_node("Gather", ["types", "t3"], ["t"], axis=0),
        helper.make_node("Add", ["w", "t"], ["y"]),
        helper.make_node("Add", ["pos", "pos"], ["pos2"]),
    ]
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [2])
    names = ("ids", "type_ids", "pos")
    graph = helper.make_graph(
        nodes,
        "embeddings",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["N", 6]) for n in names],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("pos2", TensorProto.INT64, None)],
        [*tables, axes],
    )  # fmt: skip
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    onnx.save(proto, str(path))
    return path


def test_inputs_indexing_a_table_stay_below_its_size(tmp_path: Path) -> None:
    """Random token types of a 2-row table are 0 or 1 (0..9 overflowed it: onnxruntime's
    Gather failed on a real BERT export); the signature carries the limit to the host, and an
    input that indexes no table keeps the usual range."""
    from edgehub.agent.models import describe_model, graph_inputs, index_limits
    from edgehub.agent.ort.sessions import create_session, input_specs

    model = _embedding_model(tmp_path / "emb.onnx")
    proto = onnx.load(str(model))
    assert index_limits(proto) == {"ids": 30, "type_ids": 2}
    specs = graph_inputs(proto)
    assert [s.values_below for s in specs] == [30, 2, None]
    feeds, _ = agent_random_inputs(specs, seed=3, shapes={"ids": [64, 6]})
    assert feeds["type_ids"].max() == 1 and feeds["type_ids"].min() == 0
    assert feeds["ids"].max() == 9 and feeds["pos"].max() == 9  # the usual 0..9 below 30
    session = create_session(model)
    assert [s.values_below for s in input_specs(session, model)] == [30, 2, None]
    assert [s.values_below for s in input_specs(session)] == [None, None, None]
    host = random_inputs(describe_model(proto)["inputs"], seed=3, input_shape={"ids": [64, 6]})
    _same(host, feeds)
    session.run(None, feeds)  # every index lands in its table


def test_columns_offset_into_one_table_stay_below_the_smallest_room(tmp_path: Path) -> None:
    """Tabular exports: each column of a categorical input gathered into its own table (7 and
    3 rows: every column stays below 3), or offset per column into one shared table of 10 rows
    (offsets 0 and 6: below 4)."""
    from edgehub.agent.models import index_limits

    rng = np.random.default_rng(0)
    const = [
        helper.make_tensor("t7", TensorProto.FLOAT, [7, 2], rng.random(14).tolist()),
        helper.make_tensor("t3", TensorProto.FLOAT, [3, 2], rng.random(6).tolist()),
        helper.make_tensor("t10", TensorProto.FLOAT, [10, 2], rng.random(20).tolist()),
        helper.make_tensor("c0", TensorProto.INT64, [], [0]),
        helper.make_tensor("c1", TensorProto.INT64, [], [1]),
        helper.make_tensor("offsets", TensorProto.INT64, [2], [0, 6]),
    ]
    nodes = [
        helper.make_node("Gather", ["cat", "c0"], ["col0"], axis=1),
        helper.make_node("Gather", ["cat", "c1"], ["col1"], axis=1),
        helper.make_node("Gather", ["t7", "col0"], ["e0"]),
        helper.make_node("Gather", ["t3", "col1"], ["e1"]),
        helper.make_node("Add", ["shared", "offsets"], ["shifted"]),
        helper.make_node("Gather", ["t10", "shifted"], ["e2"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tabular",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["N", 2]) for n in ("cat", "shared")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("e0", "e1", "e2")],
        const,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert index_limits(proto) == {"cat": 3, "shared": 4}
