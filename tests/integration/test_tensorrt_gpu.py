"""TensorRT on a real NVIDIA GPU: build for the GPU present, profile and invoke the engine, and
compare its outputs with ONNX Runtime's. Skipped (with the reason) where no GPU is visible, which
is every machine of this project's CI; they need the full tensorrt image (NVIDIA's container)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgehub.toolchains.tensorrt.gpu import detect_gpu

GPU = detect_gpu()
pytestmark = [
    pytest.mark.docker,
    pytest.mark.gpu,
    pytest.mark.skipif(not GPU.visible, reason=f"needs an NVIDIA GPU: {GPU.describe()}"),
]

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


@pytest.fixture
def ctx(tmp_path: Path, docker_daemon: Any) -> Any:
    from edgehub import images
    from edgehub.core import HubContext

    for runtime in ("tensorrt", "tensorrt-rtx", "onnxruntime"):
        if not images.image_status(runtime).built:
            pytest.skip(f"needs the {runtime} image (hub images build {runtime})")
    with HubContext(project_name="trt-gpu", artifact_base_dir=tmp_path / "store") as context:
        yield context


def test_compile_profile_invoke_and_accuracy_against_onnxruntime(ctx: Any) -> None:
    from edgehub.core.compile import ONNXRuntimeCompiledModel, TensorRTCompiler
    from edgehub.core.invoke import ONNXRuntimeInvoker, TensorRTInvoker
    from edgehub.core.profile import TensorRTProfiler

    engine = TensorRTCompiler(target="current").run(ctx, TINY)
    profile = TensorRTProfiler(iterations=50).run(ctx, engine)
    assert profile.latency.value > 0 and profile.fps.value > 0
    inputs = {"image": np.random.default_rng(0).standard_normal((1, 3, 32, 32), np.float32)}
    got = TensorRTInvoker().run(ctx, engine, inputs).output["probabilities"]
    want = ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(TINY), inputs)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want.output["probabilities"], rtol=1e-3, atol=1e-4)
