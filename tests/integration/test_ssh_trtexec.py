"""The ``trtexec`` providers against the SSH test device.

There is no GPU and no TensorRT here: the device's ``trtexec`` is a STAND-IN script
(tests/ssh_device/trtexec-standin.py) that takes trtexec's flags and writes its documented
output formats with made-up numbers (its invoke is an identity on the first input). These tests
check the provider's command lines, transfers, parsing and dtype handling, not TensorRT.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from edgehub.core.context import HubContext
from edgehub.core.device import Device
from edgehub.core.device.configs import TrtexecConfig
from edgehub.errors import ModelError, ProviderError, UsageError
from edgehub.runners.ssh import SSHCommandRunner
from edgehub.toolchains.tensorrt import (
    TensorRTCompiledModel,
    TensorRTCompiler,
    TensorRTInvoker,
    TensorRTProfiler,
)
from edgehub.toolchains.tensorrt.trtexec import merge_args

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice

pytestmark = pytest.mark.ssh
MODEL = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


def _context(device: SSHDevice, tmp_path: Path, config: TrtexecConfig | None = None) -> HubContext:
    board = Device(
        name="jetson",
        runner=SSHCommandRunner(device.config()),
        provider_type="trtexec",
        provider_config=config or TrtexecConfig(),
    )
    return HubContext(artifact_base_dir=tmp_path / "store", devices=[board])


def test_merge_args_adds_and_names_both_sides_of_a_conflict() -> None:
    assert merge_args(["--onnx=a"], ["--fp16"]) == ["--onnx=a", "--fp16"]
    with pytest.raises(ProviderError, match=r"'--saveEngine=x'.*'--saveEngine=/r/e.trt'"):
        merge_args(["--saveEngine=/r/e.trt"], ["--saveEngine=x"])


def test_build_profile_invoke_through_the_standin(device: SSHDevice, tmp_path: Path) -> None:
    config = TrtexecConfig(trtexec_cli_args=("--verbose",))
    with _context(device, tmp_path, config) as ctx:
        engine = TensorRTCompiler(precision="fp16").run(ctx, MODEL)
        run = engine.run_log
        assert run is not None
        assert {"path", "layer_info", "build_log"} <= set(run.artifacts)
        build_log = Path(run.artifacts["build_log"].local()).read_text()
        assert "STAND-IN" in build_log
        assert run.params["precision"].value == "fp16"

        profile = TensorRTProfiler(iterations=10).run(ctx, engine)
        assert profile.latency.value == pytest.approx(1.04)  # the median of the stand-in's times
        document = json.loads(Path(profile.output_file.local()).read_text())  # type: ignore[union-attr]
        assert document["metrics"]["trtexec_latency_mean_ms"] == pytest.approx(1.0)

        sent = np.arange(6, dtype=np.float32).reshape(1, 6)
        result = TensorRTInvoker().run(ctx, engine, {"image": sent})
    # identity stand-in; dtype from the build's layer information (FP16), not float32
    assert result.output["output"].dtype == np.float16
    np.testing.assert_array_equal(result.output["output"], sent.astype(np.float16))


def test_conflicting_cli_args_and_wrong_model_are_refused(
    device: SSHDevice, tmp_path: Path
) -> None:
    config = TrtexecConfig(trtexec_cli_args=("--saveEngine=/tmp/elsewhere.trt",))
    with _context(device, tmp_path, config) as ctx:
        with pytest.raises(ProviderError, match="--saveEngine"):
            TensorRTCompiler().run(ctx, MODEL)
        with pytest.raises(UsageError, match="not a TensorRT engine"):
            TensorRTProfiler().run(ctx, TensorRTCompiledModel.from_path(MODEL))


def test_dynamic_model_needs_a_shape_and_takes_a_plain_one(
    device: SSHDevice, tmp_path: Path
) -> None:
    """``x: [-1, 3, "?", "?"]``: without a shape trtexec would build it at 1x3x1x1, so the
    build is refused in one line; a plain ``input_shape`` is the first input's, by its name
    (read from the model here)."""
    from integration.test_unnamed_dims import conv_model

    model = conv_model(tmp_path / "cls.onnx")
    with _context(device, tmp_path) as ctx:
        with pytest.raises(ModelError) as caught:
            TensorRTCompiler().run(ctx, model)
        built = TensorRTCompiler(input_shape=(1, 3, 48, 192)).run(ctx, model)
    assert str(caught.value) == (
        "input 'x' of cls.onnx is dynamic [-1, 3, '?', '?'] and trtexec needs its shape: give "
        "--set input_shape=x:1x3x32x32 (or input_shape_range)"
    )
    assert built.run_log is not None and built.run_log.status == "FINISHED"
