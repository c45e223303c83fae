"""Fixed-shape copies of ONNX models made on the host without ``onnx`` (onnx_wire,
static_model); ``onnx`` and ONNX Runtime here only check the copies."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgehub.core.context import HubContext
from edgehub.errors import ModelError, UsageError
from edgehub.toolchains.onnx_wire import GraphInput, read_inputs, write_fixed
from edgehub.toolchains.static_model import static_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from integration.test_unnamed_dims import conv_model, mat_model, tied_model


def test_reads_unknown_and_named_dims(tmp_path: Path) -> None:
    assert read_inputs(conv_model(tmp_path / "c.onnx")) == [GraphInput("x", (-1, 3, "?", "?"))]
    tied = read_inputs(tied_model(tmp_path / "t.onnx"))
    assert [(i.name, i.dims, i.dynamic) for i in tied] == [
        ("p", ("batch", 4), True),
        ("q", ("batch", 4), True),
    ]


def test_fixed_copy_keeps_weights_and_runs_at_the_shape(tmp_path: Path) -> None:
    import onnxruntime as ort

    source = conv_model(tmp_path / "c.onnx")
    target = tmp_path / "fixed.onnx"
    write_fixed(source, target, {"x": (1, 3, 48, 192)})
    fixed, original = onnx.load(str(target)), onnx.load(str(source))
    onnx.checker.check_model(fixed)
    assert [d.dim_value for d in fixed.graph.input[0].type.tensor_type.shape.dim] == [1, 3, 48, 192]
    assert fixed.graph.initializer[0] == original.graph.initializer[0]
    assert fixed.graph.node == original.graph.node
    session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].shape == [1, 3, 48, 192]
    feed = {"x": np.ones((1, 3, 48, 192), np.float32)}
    reference = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, feed)[0], reference.run(None, feed)[0])


def test_damaged_model_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x3a\xff\xff\xff\x0f junk")
    with pytest.raises(ModelError, match="not a readable ONNX model"):
        read_inputs(bad)


def _fix(tmp_path: Path, model: Path, shape: object) -> tuple[Path, dict[str, object]]:
    with (
        HubContext(artifact_base_dir=tmp_path / "store") as ctx,
        ctx.open_run("CUSTOM", "fix"),
    ):
        path = static_model(ctx, model, shape, tool="the tool")
        assert ctx.run_log is not None
        return path, {k: p.value for k, p in ctx.run_log.params.items()}


def test_cached_by_content_and_recorded(tmp_path: Path) -> None:
    model = conv_model(tmp_path / "c.onnx")
    first, params = _fix(tmp_path, model, (1, 3, 48, 192))
    second, _ = _fix(tmp_path, model, (1, 3, 48, 192))
    other, _ = _fix(tmp_path, model, {"x": (1, 3, 32, 96)})
    assert first == second != other
    assert first.parent.parent == tmp_path / "store" / "cache" / "static_models"
    assert params["static_input_shapes"] == {"x": [1, 3, 48, 192]}


def test_named_symbol_carries_to_the_other_input(tmp_path: Path) -> None:
    fixed, params = _fix(tmp_path, tied_model(tmp_path / "t.onnx"), {"p": (3, 4)})
    assert params["static_input_shapes"] == {"p": [3, 4], "q": [3, 4]}
    assert [i.dims for i in read_inputs(fixed)] == [(3, 4), (3, 4)]


@pytest.mark.parametrize(
    ("shape", "error", "text"),
    [
        (None, ModelError, "input 'a' of m.onnx is dynamic ['?', '?'] and the tool takes static "
         "shapes only: give its shape, for example --set input_shape=a:1x32"),
        ((2, 3, 4), UsageError, "input_shape for 'a' has 3 dims but the input has 2"),
        ({"b": (2, 5)}, UsageError, "input_shape names unknown input 'b'; model inputs: a"),
    ],
)  # fmt: skip
def test_bad_shapes_are_one_line(
    tmp_path: Path, shape: object, error: type[Exception], text: str
) -> None:
    with pytest.raises(error) as caught:
        _fix(tmp_path, mat_model(tmp_path / "m.onnx"), shape)
    assert text in str(caught.value) and "\n" not in str(caught.value)


def test_static_model_is_used_as_it_is(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    write_fixed(mat_model(tmp_path / "d.onnx"), model, {"a": (2, 5)})
    assert _fix(tmp_path, model, None)[0] == model
