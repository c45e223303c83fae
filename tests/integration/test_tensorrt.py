"""TensorRT without a GPU: engines built ahead of time by TensorRT for RTX in the real
tensorrt-rtx image, from the example model and the onnx wheel's `light` models, for several
compute capabilities and all three precisions (int8 from a QDQ model made by the real
ONNXRuntimeCompiler); bad input gives one line and a FAILED run; profile / invoke refuse before
starting anything when no GPU is visible. Real Docker, real images, real models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from edgehub.core import HubContext
from edgehub.core.compile import ONNXRuntimeCompiler, TensorRTCompiler
from edgehub.core.invoke import TensorRTInvoker
from edgehub.core.profile import TensorRTProfiler
from edgehub.errors import GpuUnavailableError, ModelError, UsageError
from edgehub.toolchains.tensorrt.components import TensorRTCompiledModel
from edgehub.toolchains.tensorrt.gpu import detect_gpu

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
# The light models that build in a few seconds on 2 cores (densenet121, inception_v2, resnet50
# and shufflenet take 5-22 s each for fp32 alone, so CI leaves them out).
LIGHT = ("light_squeezenet", "light_bvlc_alexnet", "light_inception_v1")


def light_model(name: str) -> Path:
    import onnx

    path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(f"the installed onnx wheel ships no {path.name}")
    return path


@pytest.fixture(scope="session")
def rtx_image(docker_daemon: Any) -> str:
    """The tensorrt-rtx image, built from the base image if it is not built yet."""
    from edgehub import images

    if not images.image_status("tensorrt-rtx").built:
        base = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
        if images.image_attrs(base) is None:
            pytest.skip(f"needs the base image {base} (make it: bash scripts/make-base-image.sh)")
        images.build_image("tensorrt-rtx", base=base)
    return images.image_tag("tensorrt-rtx")


@pytest.fixture
def ctx(tmp_path: Path, rtx_image: str) -> Any:
    with HubContext(project_name="trt-tests", artifact_base_dir=tmp_path / "store") as context:
        yield context


def _check_built(ctx: Any, compiled: TensorRTCompiledModel, precision: str, target: str) -> Any:
    log = ctx.store.run_log(compiled.run_log.run_id)
    assert log.status == "FINISHED"
    params = {k: p.value for k, p in log.params.items()}
    assert params["precision"] == precision
    assert params["target"] == target
    assert params["tensorrt_version"].startswith("1.7.")
    assert params["tensorrt_flavor"] == "rtx"
    metrics = {k: m.value for k, m in log.metrics.items()}
    engine = Path(compiled.path.local())
    assert engine.stat().st_size == metrics["engine_size_bytes"] > 10_000
    assert metrics["num_layers"] >= 1 and metrics["build_time_s"] > 0
    layer_info = json.loads(Path(log.artifacts["layer_info"].local()).read_text())
    assert len(layer_info["layers"]) == metrics["num_layers"]
    assert "Engine generation completed" in Path(log.artifacts["build_log"].local()).read_text()
    return layer_info


@pytest.mark.parametrize(
    ("precision", "target", "layer_type"),
    [("fp32", "sm86", "FLOAT"), ("fp16", "sm120", "HALF"), ("fp32", "8.9", "FLOAT")],
)
def test_tiny_cnn_float_engines(ctx: Any, precision: str, target: str, layer_type: str) -> None:
    compiled = TensorRTCompiler(precision=precision, target=target).run(ctx, TINY)
    want = "sm89" if target == "8.9" else target
    info = _check_built(ctx, compiled, precision, want)
    assert info["output_types"].get(layer_type, 0) >= 5  # fp16 really converts the layers


def test_int8_from_the_onnxruntime_compilers_qdq_model(ctx: Any) -> None:
    qdq = ONNXRuntimeCompiler(quantization="static").run(ctx, TINY)
    compiled = TensorRTCompiler(precision="int8", target="sm89").run(ctx, qdq.path.local())
    info = _check_built(ctx, compiled, "int8", "sm89")
    assert info["output_types"].get("INT8", 0) >= 3


def test_int8_from_calibration_data(ctx: Any, tmp_path: Path) -> None:
    import numpy as np

    data = {"image": np.random.default_rng(0).standard_normal((4, 1, 3, 32, 32), np.float32)[0]}
    compiled = TensorRTCompiler(precision="int8", target="sm120", calibration_data=data).run(
        ctx, TINY
    )
    info = _check_built(ctx, compiled, "int8", "sm120")
    assert info["output_types"].get("INT8", 0) >= 3


@pytest.mark.parametrize(
    ("name", "precision", "target"),
    [
        ("light_squeezenet", "fp32", "sm80"),
        ("light_squeezenet", "fp16", "sm86"),
        ("light_bvlc_alexnet", "fp16", "sm120"),
        ("light_inception_v1", "fp32", "sm89"),
    ],
)
def test_light_models(ctx: Any, name: str, precision: str, target: str) -> None:
    compiled = TensorRTCompiler(precision=precision, target=target).run(ctx, light_model(name))
    _check_built(ctx, compiled, precision, target)


def test_dynamic_batch_with_a_min_opt_max_profile(ctx: Any, tmp_path: Path) -> None:
    import onnx

    model = onnx.load(str(TINY))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    dynamic = tmp_path / "dynamic.onnx"
    onnx.save(model, str(dynamic))
    with pytest.raises(UsageError, match=r"image\[\?,3,32,32\] need a shape to build for"):
        TensorRTCompiler(target="sm86").run(ctx, dynamic)
    shapes = {"image": {"min": (1, 3, 32, 32), "opt": (4, 3, 32, 32), "max": (8, 3, 32, 32)}}
    compiled = TensorRTCompiler(target="sm86", input_shapes=shapes, workspace_mb=64).run(
        ctx, dynamic
    )
    log = ctx.store.run_log(compiled.run_log.run_id)
    assert log.params["shapes"].value["image"]["max"] == [8, 3, 32, 32]
    assert log.params["workspace_mb"].value == 64


def _failed_runs(ctx: Any) -> list[dict[str, Any]]:
    return [r for r in ctx.store.list_runs(limit=None) if r.status == "FAILED"]


def test_unsupported_target_is_one_line_and_a_failed_run(ctx: Any) -> None:
    with pytest.raises(UsageError) as error:
        TensorRTCompiler(target="sm90").run(ctx, TINY)
    message = str(error.value)
    assert "\n" not in message and "sm90" in message and "sm86" in message and "sm120" in message
    with pytest.raises(ModelError, match="FP32 GEMM is not supported") as built:
        TensorRTCompiler(target="sm75").run(ctx, TINY)
    assert "\n" not in str(built.value)
    assert len(_failed_runs(ctx)) == 2


def test_op_the_parser_cannot_import_names_the_node(ctx: Any, tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [])
    node = helper.make_node("Det", ["x"], ["y"], name="the_det")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]))
    path = tmp_path / "det.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ModelError) as error:
        TensorRTCompiler(target="sm86").run(ctx, path)
    message = str(error.value)
    assert "\n" not in message and "the_det" in message and "Det" in message
    assert len(_failed_runs(ctx)) == 1


def test_precision_needs_and_int8_without_qdq(ctx: Any) -> None:
    with pytest.raises(UsageError, match="needs a QDQ model"):
        TensorRTCompiler(precision="int8", target="sm86").run(ctx, TINY)
    with pytest.raises(UsageError, match="'precision' must be one of"):
        TensorRTCompiler(precision="int4", target="sm86").run(ctx, TINY)  # type: ignore[arg-type]


@pytest.mark.skipif(detect_gpu().visible, reason="checks the no-GPU path; this host has a GPU")
def test_profile_and_invoke_refuse_without_a_gpu_before_starting_anything(
    ctx: Any, docker_daemon: Any
) -> None:
    import numpy as np

    engine = TensorRTCompiler(target="sm86").run(ctx, TINY)
    before = {c.id for c in docker_daemon.containers.list(all=True, sparse=True)}
    with pytest.raises(GpuUnavailableError, match=r"NVIDIA GPU.*'trtexec' provider over SSH"):
        TensorRTProfiler().run(ctx, engine)
    with pytest.raises(GpuUnavailableError, match=r"NVIDIA GPU.*'trtexec' provider over SSH"):
        TensorRTInvoker().run(ctx, engine, {"image": np.zeros((1, 3, 32, 32), np.float32)})
    after = {c.id for c in docker_daemon.containers.list(all=True, sparse=True)}
    assert after <= before  # no container was started for them
    statuses = [r.status for r in ctx.store.list_runs(limit=None)]
    assert statuses.count("FAILED") == 2


def test_hub_exec_compile_and_the_unbuildable_full_image(tmp_path: Path, rtx_image: str) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "trt-cli"\n')
    done = subprocess.run(
        [HUB, "exec", "compile", "tensorrt", str(TINY), "--set", "target=sm86", "--set",
         "precision=fp16", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["metrics"]["engine_size_bytes"] > 10_000
    full = subprocess.run(
        [HUB, "images", "build", "tensorrt"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert full.returncode != 0
    errors = [line for line in full.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(errors) == 1 and "nvcr.io" in errors[0] and "docker pull" in errors[0], full.stderr
    assert "Traceback" not in full.stderr
