"""eval --layers for TFLite, the pure parts: pairing ONNX tensors with TFLite tensors by value
(`layer_map.pair`), marking tensors as outputs in a flatbuffer (`marking`), and every ONNX node
output on a sample (`layer_map.onnx_values`, with the onnxruntime of this host), which shares
the graph helpers of ``ort.batch``'s ``extra_outputs`` (run here through the real agent zipapp).

The real conversion and probes run in the tflite image: tests/integration/test_eval_tflite.py.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from agent_models import make_cnn, run_agent

from edgehub.agent.bundle import build_agent_zipapp
from edgehub.agent.tflite import marking
from edgehub.agent.tflite.layer_map import onnx_values, pair


def test_onnx_values_are_every_node_output_in_graph_order(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime on this host")
    model = make_cnn(tmp_path / "cnn.onnx")
    image = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    names, values = onnx_values(model, {"image": image})
    assert names[:4] == ["c1", "r1", "c2", "r2"] and set(names) == set(values)
    (expected,) = ort.InferenceSession(str(model)).run(None, {"image": image})
    assert np.allclose(values[names[-1]], expected, atol=1e-5)
    assert not list(tmp_path.glob(".probe-*"))  # the probe is gone


def test_batch_extra_outputs_are_saved_and_unknown_ones_refused(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="needs onnxruntime on this host")
    pyz = build_agent_zipapp(tmp_path / "agent-cache")
    model = make_cnn(tmp_path / "cnn.onnx")
    image = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "sample.npz", image=image)
    request = {
        "samples": str(tmp_path / "sample.npz"),
        "stacked": True,
        "runs": [{"model": str(model), "output": str(tmp_path / "out.npz"), "graph": True}],
    }
    request["runs"][0]["extra_outputs"] = ["r1"]  # type: ignore[index]
    done = run_agent(pyz, "ort.batch", request, tmp_path / "work")
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "out.npz") as out:
        assert set(out.files) >= {"r1"} and out["r1"].shape == (1, 1, 8, 16, 16)
    graph = done.result["data"]["runs"][0]["graph"]
    assert [n["name"] for n in graph][:2] == ["conv1", "relu1"]
    request["runs"][0]["extra_outputs"] = ["nowhere"]  # type: ignore[index]
    refused = run_agent(pyz, "ort.batch", request, tmp_path / "work")
    assert refused.returncode != 0 and "'nowhere' are not produced by any node" in refused.message


def test_pairs_follow_values_layouts_and_the_last_equal_tensor() -> None:
    rng = np.random.default_rng(0)
    conv = np.abs(rng.standard_normal((1, 4, 3, 5))).astype(np.float32)  # NCHW, all positive
    relu = conv.copy()  # the ReLU changes nothing on this sample: the Conv was fused into it
    other = rng.standard_normal((1, 4, 3, 5)).astype(np.float32)
    zeros = np.zeros((1, 4, 3, 5), np.float32)
    onnx = {"c": conv, "r": relu, "o": other, "z": zeros}
    tflite = {
        "fused": np.transpose(relu, (0, 2, 3, 1)) + 1e-6,  # NHWC, float rounding
        "plain": other.copy(),
        "gone": zeros.copy(),
        "elsewhere": np.transpose(other, (0, 2, 3, 1)),  # not in the shipped model
    }
    found = pair(["c", "r", "o", "z"], onnx, tflite, {"fused", "plain", "gone"}, {"r": "r:0"})
    assert [(m.onnx_name, m.tflite_name, m.perm) for m in found] == [
        ("r:0", "fused", [0, 2, 3, 1]),  # the original name, channels-last
        ("o", "plain", None),
    ]  # c: fused into r; z: all zeros match anything, so nothing is claimed
    off = {"fused": np.transpose(relu, (0, 2, 3, 1)) * 1.01}  # 1 % off: not the same tensor
    assert pair(["r"], onnx, off, {"fused"}, {}) == []


def _model(names: list[str], outputs: list[int]) -> bytes:
    """A minimal TFLite flatbuffer: Model.subgraphs[0] with named tensors, inputs [0] and
    ``outputs``; every offset laid out by hand, forward, as flatbuffers requires."""
    buf = bytearray(4)

    def put(data: bytes, align: int = 4) -> int:
        buf.extend(b"\0" * (-len(buf) % align))
        buf.extend(data)
        return len(buf) - len(data)

    def ref(at: int, target: int) -> None:
        struct.pack_into("<I", buf, at, target - at)

    model_vt = put(struct.pack("<5H", 10, 8, 0, 0, 4), 2)
    model = put(b"\0" * 8)
    subgraphs = put(struct.pack("<II", 1, 0))
    graph_vt = put(struct.pack("<5H", 10, 16, 4, 8, 12), 2)
    graph = put(b"\0" * 16)
    tensors = put(struct.pack("<I", len(names)) + b"\0" * 4 * len(names))
    inputs = put(struct.pack("<Ii", 1, 0))
    outs = put(struct.pack(f"<I{len(outputs)}i", len(outputs), *outputs))
    tensor_vt = put(struct.pack("<6H", 12, 8, 0, 0, 0, 4), 2)
    tables = [put(struct.pack("<iI", 0, 0)) for _ in names]
    for index, (table, name) in enumerate(zip(tables, names, strict=True)):
        struct.pack_into("<i", buf, table, table - tensor_vt)
        ref(table + 4, put(struct.pack("<I", len(name)) + name.encode() + b"\0"))
        ref(tensors + 4 + 4 * index, table)
    struct.pack_into("<i", buf, model, model - model_vt)
    struct.pack_into("<i", buf, graph, graph - graph_vt)
    ref(subgraphs + 4, graph)
    ref(model + 4, subgraphs)
    ref(graph + 4, tensors)
    ref(graph + 8, inputs)
    ref(graph + 12, outs)
    ref(0, model)
    return bytes(buf)


def _outputs(data: bytes) -> list[int]:
    graph = marking._main_subgraph(data)
    field = marking._field(data, graph, 2)
    assert field is not None
    vector = marking._target(data, field)
    count = struct.unpack_from("<I", data, vector)[0]
    return list(struct.unpack_from(f"<{count}i", data, vector + 4))


def test_marking_appends_an_outputs_vector_and_moves_nothing() -> None:
    data = _model(["x", "model/relu;model/conv", "y"], [2])
    assert marking.tensor_names(data) == ["x", "model/relu;model/conv", "y"]
    assert _outputs(data) == [2]
    marked = marking.with_outputs(data, [1, 2])  # 2 is an output already: not twice
    assert _outputs(marked) == [2, 1]
    assert marking.tensor_names(marked) == marking.tensor_names(data)
    changed = [i for i in range(len(data)) if data[i] != marked[i]]
    assert changed and max(changed) - min(changed) < 4  # one uoffset repointed, rest appended
