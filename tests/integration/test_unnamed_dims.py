"""Exported models whose unknown dims are all written ``"?"`` (an OCR classifier's
``x: [-1, 3, "?", "?"]``, and ``a: ["?", "?"]``), built here with the onnx helper API, compiled
and run at a typed ``input_shape`` on every runtime through the real images: ONNX Runtime,
TFLite (outputs against ONNX Runtime on the host) and TensorRT (an engine built for sm86 by
TensorRT for RTX, with no GPU). A model whose inputs share a named dim refuses contradictory
shapes in one line through the real ``hub``. Real Docker, real images, no fakes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgehub.core import HubContext
from edgehub.core.compile import ONNXRuntimeCompiler, TensorRTCompiler, TFLiteCompiler
from edgehub.core.invoke import ONNXRuntimeInvoker, TFLiteInvoker
from edgehub.core.profile import ONNXRuntimeProfiler
from edgehub.errors import UsageError

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))
CONV_SHAPE = (1, 3, 48, 192)
MAT_SHAPE = (2, 5)


def _save(model: Any, path: Path) -> Path:
    import onnx

    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def conv_model(path: Path) -> Path:
    """Conv + Relu over ``x: [-1, 3, "?", "?"]``, output ``[-1, 4, "?", "?"]``."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "?", "?"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 4, "?", "?"])],
        [weight],
    )  # fmt: skip
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def mat_model(path: Path) -> Path:
    """``b = relu(a) * relu(a)`` over ``a: ["?", "?"]``."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["a"], ["r"]), helper.make_node("Mul", ["r", "r"], ["b"])],
        "mat",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["?", "?"])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, ["?", "?"])],
    )
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def tied_model(path: Path) -> Path:
    """``s = p + q``, both inputs ``["batch", 4]``."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["p", "q"], ["s"])],
        "tied",
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("q", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", 4])],
    )  # fmt: skip
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def reference(model: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model's outputs from ONNX Runtime on the host."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


@pytest.fixture(scope="module")
def images(docker_daemon: Any) -> list[str]:
    """The onnxruntime, tflite and tensorrt-rtx images, built from the base if missing."""
    from edgehub import images as hub_images

    base = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
    tags = []
    for name in ("onnxruntime", "tflite", "tensorrt-rtx"):
        if not hub_images.image_status(name).built:
            if hub_images.image_attrs(base) is None:
                pytest.skip(f"needs the base image {base} (bash scripts/make-base-image.sh)")
            hub_images.build_image(name, base=base)
        tags.append(hub_images.image_tag(name))
    return tags


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("models")
    return {
        "conv": conv_model(folder / "conv.onnx"),
        "mat": mat_model(folder / "mat.onnx"),
        "tied": tied_model(folder / "tied.onnx"),
    }


@pytest.fixture(scope="module")
def ctx(images: list[str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubContext]:
    folder = tmp_path_factory.mktemp("store")
    with HubContext(project_name="unnamed-dims", artifact_base_dir=folder / ".hub") as context:
        yield context


def _feeds(kind: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    if kind == "conv":
        return {"x": rng.standard_normal(CONV_SHAPE).astype(np.float32)}
    return {"a": rng.standard_normal(MAT_SHAPE).astype(np.float32)}


SHAPES = {"conv": "1x3x48x192", "mat": "a:2x5"}


def _typed(kind: str, component: type[Any]) -> Any:
    from edgehub.core.component.options import parse_option

    return parse_option(component, "input_shape", SHAPES[kind])


@pytest.mark.parametrize("kind", ["conv", "mat"])
def test_onnxruntime_compiles_profiles_and_runs(
    ctx: HubContext, models: dict[str, Path], kind: str
) -> None:
    compiled = ONNXRuntimeCompiler(
        input_shape=_typed(kind, ONNXRuntimeCompiler), quantization="none"
    ).run(ctx, models[kind])
    profiled = ONNXRuntimeProfiler(runs=3, burn_ins=1).run(ctx, compiled)
    log = ctx.store.run_log(profiled.run_log.run_id)
    assert log.status == "FINISHED"
    feeds = _feeds(kind)
    out = ONNXRuntimeInvoker().run(ctx, compiled, feeds)
    want = reference(models[kind], feeds)
    for name, array in want.items():
        np.testing.assert_allclose(out.output[name], array, rtol=1e-4, atol=1e-5)


# float32 for both models, every other precision for the image-like one
CASES = [("conv", "float32"), ("mat", "float32"), ("conv", "float16"), ("conv", "int8"),
         ("conv", "int16x8")]  # fmt: skip
TOLERANCE = {"float32": 1e-4, "float16": 2e-2, "int8": 0.25, "int16x8": 0.05}


@pytest.mark.parametrize(("kind", "precision"), CASES)
def test_tflite_compiles_and_matches_onnxruntime(
    ctx: HubContext, models: dict[str, Path], kind: str, precision: str
) -> None:
    feeds = _feeds(kind)
    compiled = TFLiteCompiler(
        input_shape=_typed(kind, TFLiteCompiler),
        precision=precision,  # type: ignore[arg-type]
        calibration_data=None if precision in ("float32", "float16") else feeds,
    ).run(ctx, models[kind])
    out = TFLiteInvoker().run(ctx, compiled, feeds)
    for name, array in reference(models[kind], feeds).items():
        got = out.output[name]
        assert got.shape == array.shape
        scale = float(np.abs(array).max())
        assert float(np.abs(got - array).max()) <= TOLERANCE[precision] * scale, precision


@pytest.mark.parametrize("kind", ["conv", "mat"])
def test_tensorrt_builds_for_sm86_without_a_gpu(
    ctx: HubContext, models: dict[str, Path], kind: str
) -> None:
    compiled = TensorRTCompiler(target="sm86", input_shape=_typed(kind, TensorRTCompiler)).run(
        ctx, models[kind]
    )
    log = ctx.store.run_log(compiled.run_log.run_id)
    assert log.status == "FINISHED"
    params = {k: p.value for k, p in log.params.items()}
    name, array = next(iter(_feeds(kind).items()))
    assert params["shapes"][name]["opt"] == list(array.shape)
    renamed = params["renamed_dims"][name]
    assert len(set(renamed.values())) == len(renamed) >= 2  # each "?" got its own name
    assert Path(compiled.path.local()).stat().st_size > 1000


def test_tensorrt_range_keeps_the_unknowns_apart(ctx: HubContext, models: dict[str, Path]) -> None:
    from edgehub.core.component.options import parse_option

    ranged = parse_option(
        TensorRTCompiler, "input_shape_range", "x:1x3x32x96/1x3x48x192/2x3x64x384"
    )
    compiled = TensorRTCompiler(target="sm86", input_shape_range=ranged).run(ctx, models["conv"])
    log = ctx.store.run_log(compiled.run_log.run_id)
    assert log.params["shapes"].value["x"]["max"] == [2, 3, 64, 384]


def test_contradictory_named_shapes_are_refused_in_one_line(
    ctx: HubContext, models: dict[str, Path]
) -> None:
    bad = {"p": (2, 4), "q": (3, 4)}
    for compiler in (
        ONNXRuntimeCompiler(input_shape=bad),
        TFLiteCompiler(input_shape=bad),
        TensorRTCompiler(target="sm86", input_shape=bad),
    ):
        with pytest.raises(UsageError) as error:
            compiler.run(ctx, models["tied"])
        message = str(error.value)
        assert "\n" not in message, message
        assert "'batch' two values: 2 (p dim 0) and 3 (q dim 0)" in message


def _hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=dict(os.environ)
    )


def test_hub_takes_typed_shapes_and_the_old_tensorrt_name(
    images: list[str], models: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "typed"\n')
    conv, tied = str(models["conv"]), str(models["tied"])
    done = _hub("exec", "profile", "onnxruntime", conv, "--set", "input_shape=1x3x48x192",
                "--set", "runs=3", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    old = _hub("exec", "compile", "tensorrt", conv, "--set", "target=sm86",
               "--set", 'input_shapes={"x": [1, 3, 48, 192]}', cwd=tmp_path)  # fmt: skip
    assert old.returncode == 0, old.stderr
    assert "input_shapes is deprecated: use input_shape_range" in old.stderr
    refused = _hub("exec", "profile", "onnxruntime", tied, "--set", "input_shape=p:2x4,q:3x4",
                   cwd=tmp_path)  # fmt: skip
    errors = [line for line in refused.stderr.splitlines() if line.startswith("hub: error:")]
    assert refused.returncode != 0 and len(errors) == 1 and "Traceback" not in refused.stderr
    assert "'batch' two values" in errors[0]
    typo = _hub("exec", "compile", "tensorrt", conv, "--set", "input_shape=x:1,3,48,oops",
                cwd=tmp_path)  # fmt: skip
    errors = [line for line in typo.stderr.splitlines() if line.startswith("hub: error:")]
    assert typo.returncode != 0 and len(errors) == 1, typo.stderr
    assert "x:1x3x48x192,y:1x4" in errors[0] and "'1,3,48,oops' is not a shape" in errors[0]
    missing = _hub("exec", "compile", "tensorrt", conv, "--set", "target=sm86", cwd=tmp_path)
    errors = [line for line in missing.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(errors) == 1 and "x[?,3,?,?] need a shape" in errors[0]
    assert "input_shape=x:1x3x32x32" in errors[0]  # an example made of the model's own input
