"""Input shapes: the forms users type (`edgehub.core.values.shapes`) accepted alike by every
runtime's compile/profile/invoke components, and unnamed dims (``"?"``, ``""``, ``"-1"``) kept
apart from each other while named ones tie, in the agent code that ONNX Runtime, TFLite and
TensorRT run (models built here with the onnx helper API)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgehub.agent.models import graph_inputs
from edgehub.agent.protocol import UsageError as AgentUsageError
from edgehub.agent.report import Report
from edgehub.agent.shapes import fix_input_shapes, parse_input_shape
from edgehub.agent.tensors import is_named_dim
from edgehub.agent.trt.shapes import name_unknown_dims, parse_shapes
from edgehub.core import HubContext
from edgehub.core.component import Component, NoProviderError, ProviderType, RunType
from edgehub.core.component.options import parse_option
from edgehub.core.runtimes import get_runtime
from edgehub.core.values import ValueProblem, parse
from edgehub.core.values.shapes import InputShape, InputShapeRange
from edgehub.errors import UsageError
from edgehub.tracking import RunStore


def _model(inputs: list[Any], outputs: list[Any], nodes: list[Any], inits: Any = ()) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def conv_model() -> Any:
    """The OCR-classifier-like input ``x: [-1, 3, "?", "?"]``."""
    weight = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    return _model(
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "?", "?"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 4, "?", "?"])],
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
        [weight],
    )


def tied_model() -> Any:
    """Two inputs sharing the named dim ``batch``."""
    return _model(
        [
            helper.make_tensor_value_info("p", TensorProto.FLOAT, ["batch", 4]),
            helper.make_tensor_value_info("q", TensorProto.FLOAT, ["batch", ""]),
        ],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_node("Add", ["p", "q"], ["s"])],
    )


# --- the forms users type -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1x3x224x224", (1, 3, 224, 224)),
        ("1,3,224,224", (1, 3, 224, 224)),
        ("x:1x3x48x192,y:1x4", {"x": (1, 3, 48, 192), "y": (1, 4)}),
        ("x:1,3,48,192, y:1,4", {"x": (1, 3, 48, 192), "y": (1, 4)}),
        ("x:1x3x48x192;y:1x4", {"x": (1, 3, 48, 192), "y": (1, 4)}),
        ("input:0:1x3x8x8", {"input:0": (1, 3, 8, 8)}),
        ('{"x": [1, 3, 48, 192]}', {"x": [1, 3, 48, 192]}),
        ("[2, 5]", [2, 5]),
        ("none", None),
    ],
)
def test_input_shape_forms(text: str, value: Any) -> None:
    assert parse(text, InputShape | None) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("x:1x3x32x96/1x3x48x192/2x3x64x384",
         {"x": {"min": (1, 3, 32, 96), "opt": (1, 3, 48, 192), "max": (2, 3, 64, 384)}}),
        ("1x4/2x4/8x4", {"min": (1, 4), "opt": (2, 4), "max": (8, 4)}),
        ("a:1x4,b:1x2/1x3/1x4", {"a": (1, 4), "b": {"min": (1, 2), "opt": (1, 3), "max": (1, 4)}}),
        ('{"x": {"min": [1], "opt": [2], "max": [3]}}',
         {"x": {"min": [1], "opt": [2], "max": [3]}}),
    ],
)  # fmt: skip
def test_input_shape_range_forms(text: str, value: Any) -> None:
    assert parse(text, InputShapeRange | None) == value


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("1x0x3", "between 1 and 10000000"),
        ("", "no dimensions given"),
        ("x:1xa", "'1xa' is not a shape"),
        ("x:1,x:2", "named twice"),
        (":1x2", "no input name"),
        ('{"x": [0]}', "positive integer"),
        ("{x: [1]}", "not valid JSON"),
    ],
)
def test_bad_shapes_name_the_problem_and_the_forms(text: str, detail: str) -> None:
    with pytest.raises(ValueProblem) as problem:
        parse(text, InputShape | None)
    assert detail in problem.value.expected
    assert (
        "1x3x224x224" in problem.value.expected and "x:1x3x48x192,y:1x4" in problem.value.expected
    )


def _components() -> list[tuple[str, type[Any]]]:
    found = []
    for name in ("onnxruntime", "tflite", "tensorrt"):
        runtime = get_runtime(name)
        for component in (runtime.compiler, runtime.profiler, runtime.invoker):
            if "input_shape" in component.keyword_options():
                found.append((name, component))
    return found


def test_every_runtime_takes_input_shape_on_its_compiler() -> None:
    takers = {(rt, c.__name__) for rt, c in _components()}
    for name in ("onnxruntime", "tflite", "tensorrt"):
        assert (name, get_runtime(name).compiler.__name__) in takers
    assert len(takers) >= 6  # compilers, and the profilers / invokers that make random inputs


@pytest.mark.parametrize(
    "text", ["1x3x48x192", "1,3,48,192", "x:1x3x48x192,y:1x4", '{"x": [1, 3, 48, 192]}']
)
def test_every_component_reads_the_same_forms(text: str) -> None:
    values = {parse_option(c, "input_shape", text).__repr__() for _, c in _components()}
    assert len(values) == 1, values


def test_a_bad_shape_is_one_line_naming_the_component_option_and_forms() -> None:
    compiler = get_runtime("tensorrt").compiler
    with pytest.raises(UsageError) as error:
        parse_option(compiler, "input_shape", "x:1,3,48,oops")
    message = str(error.value)
    assert "\n" not in message and "TensorRTCompiler" in message and "'input_shape'" in message
    assert "x:1x3x48x192,y:1x4" in message and "got 'x:1,3,48,oops'" in message
    ranged = parse_option(compiler, "input_shape_range", "x:1x3x32x96/1x3x48x192/1x3x64x384")
    assert ranged["x"]["max"] == (1, 3, 64, 384)
    assert parse_option(compiler, "input_shapes", "x:1x3x48x192") == {"x": (1, 3, 48, 192)}


# --- unnamed dims are independent unknowns; named ones tie -------------------------------


@pytest.mark.parametrize(
    ("param", "named"),
    [("?", False), ("", False), ("-1", False), ("3", False), ("??", False), ("batch", True),
     ("unk__12", True), ("height", True)],
)  # fmt: skip
def test_which_dim_params_name_a_dim(param: str, named: bool) -> None:
    assert is_named_dim(param) is named


def test_question_marks_take_different_sizes_and_outputs_follow() -> None:
    model = conv_model()
    specs = graph_inputs(model)
    assert specs[0].shape == [None, 3, None, None]
    shapes = parse_input_shape([1, 3, 48, 192], specs)
    assert fix_input_shapes(model, shapes) == []
    assert graph_inputs(model)[0].shape == [1, 3, 48, 192]
    out = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert out == [1, 4, 48, 192]


def test_named_dims_still_tie_in_one_line() -> None:
    specs = graph_inputs(tied_model())
    assert parse_input_shape({"p": [2, 4], "q": [2, 7]}, specs)["q"] == [2, 7]  # "" is free
    with pytest.raises(AgentUsageError) as error:
        parse_input_shape({"p": [2, 4], "q": [3, 4]}, specs)
    message = str(error.value)
    assert "\n" not in message
    assert "'batch' two values: 2 (p dim 0) and 3 (q dim 0)" in message


def test_shape_errors_give_an_example_with_the_models_own_inputs() -> None:
    specs = graph_inputs(tied_model())
    with pytest.raises(AgentUsageError) as error:
        parse_input_shape({"x": [1, 4]}, specs)
    assert "input_shape=p:1x4,q:1x32" in str(error.value)
    with pytest.raises(AgentUsageError, match=r"rank 3 .* input_shape=1x4 \(the first input\)"):
        parse_input_shape([1, 4, 4], specs)


def test_tensorrt_gets_unique_names_for_unnamed_dims(tmp_path: Path) -> None:
    import onnx

    source = tmp_path / "conv.onnx"
    onnx.save(conv_model(), str(source))
    named, names, renamed = name_unknown_dims(source, tmp_path / "named.onnx", Report())
    assert named != source and renamed == {"x": {"2": "x_dim2", "3": "x_dim3"}}
    assert names == {"x": [None, None, None, None]}
    dims = onnx.load(str(named)).graph.input[0].type.tensor_type.shape.dim
    params = [d.dim_param for d in dims[2:]]
    assert len(set(params)) == 2 and "?" not in params
    tied = tmp_path / "tied.onnx"
    onnx.save(tied_model(), str(tied))
    _, tied_names, _ = name_unknown_dims(tied, tmp_path / "t.onnx", Report())
    assert tied_names == {"p": ["batch", None], "q": ["batch", None]}
    network = [{"name": "p", "shape": [-1, 4]}, {"name": "q", "shape": [-1, -1]}]
    with pytest.raises(AgentUsageError, match=r"'batch' two values: 2 \(p dim 0\) and 3"):
        parse_shapes(None, network, {"p": [2, 4], "q": [3, 4]}, tied_names)  # type: ignore[arg-type]
    profile = parse_shapes(
        {"q": {"min": [2, 1], "opt": [2, 4], "max": [2, 9]}},
        network,  # type: ignore[arg-type]
        {"p": [2, 4]},
        tied_names,
    )
    assert profile["p"]["max"] == [2, 4] and profile["q"]["max"] == [2, 9]
    with pytest.raises(AgentUsageError, match="both give p"):
        parse_shapes({"p": [2, 4]}, network, {"p": [2, 4]}, tied_names)  # type: ignore[arg-type]


# --- one name for warm-up runs: `warmup` beside `burn_ins` --------------------------------


class Warmed(Component):
    """A profiler-like component whose ``warmup`` is another name of ``burn_ins``."""

    run_type = RunType.PROFILE
    option_aliases = {"warmup": "burn_ins"}

    def __init__(
        self, *, name: str | None = None, device: str | None = None, burn_ins: int = 10,
        warmup: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__(name=name, device=device, burn_ins=burn_ins, warmup=warmup)

    def run(
        self, ctx: HubContext, model: Path, *, device: str | None = None, burn_ins: int = 10,
        warmup: int | None = None,
    ) -> int:  # fmt: skip
        raise NoProviderError


@Warmed.provider(ProviderType.LOCAL)
def _warmed(ctx: HubContext, model: Path, *, device: str | None = None, burn_ins: int = 10) -> int:
    return burn_ins  # takes only the seed's name: the alias arrives as burn_ins


def test_warmup_is_burn_ins_under_another_name_and_the_run_records_it(tmp_path: Path) -> None:
    model = tmp_path / "m.bin"
    model.write_bytes(b"x")
    with HubContext(project_name="aliases", artifact_base_dir=tmp_path / ".hub") as ctx:
        assert Warmed().run(ctx, model, warmup=3) == 3
        assert Warmed(warmup=4).run(ctx, model) == 4
        assert Warmed().run(ctx, model, burn_ins=5) == 5
        with pytest.raises(UsageError, match=r"warmup=3 and burn_ins=5 are one option"):
            Warmed().run(ctx, model, warmup=3, burn_ins=5)
        with pytest.raises(UsageError, match=r"'warmup' must be .*between 0 and 100000"):
            Warmed().run(ctx, model, warmup=-1)
    first = RunStore(tmp_path / ".hub").list_runs(limit=None)[-1]
    params = {
        k: p.value for k, p in RunStore(tmp_path / ".hub").run_log(first.run_id).params.items()
    }
    assert params["option.warmup"] == 3


def test_the_shipped_profilers_take_both_names() -> None:
    for name in ("onnxruntime", "tflite"):
        options = get_runtime(name).profiler.keyword_options()
        assert {"warmup", "burn_ins"} <= set(options), name


def test_tensorrt_runtime_shapes_go_to_trtexec_by_name() -> None:
    from edgehub.toolchains.tensorrt.shapes import runtime_shapes, shapes_flag
    from edgehub.toolchains.tensorrt.trtexec import _shape_flags

    profiler = get_runtime("tensorrt").profiler
    typed = parse_option(profiler, "input_shape", "x:1x3x48x192,y:1x4")
    assert shapes_flag(runtime_shapes(typed)) == ["--shapes=x:1x3x48x192,y:1x4"]
    assert shapes_flag(runtime_shapes(None)) == []
    with pytest.raises(UsageError, match=r"by input name .* input_shape=NAME:1x3x224x224"):
        runtime_shapes(parse_option(profiler, "input_shape", "1x3x48x192"))
    flags = _shape_flags({"x": [1, 3, 48, 192]}, {"y": {"min": [1], "opt": [2], "max": [4]}})
    assert flags == [
        "--minShapes=x:1x3x48x192,y:1",
        "--optShapes=x:1x3x48x192,y:2",
        "--maxShapes=x:1x3x48x192,y:4",
    ]
    with pytest.raises(UsageError, match="trtexec takes shapes by input name"):
        _shape_flags([1, 3, 48, 192], None)
