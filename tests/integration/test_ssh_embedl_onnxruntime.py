"""The ``embedl_onnxruntime`` providers against the SSH test device, where the published
``embedl-onnxruntime`` 2026.2.0 CLI runs in a venv with onnxruntime (tests/ssh_device).

Outputs are compared with ONNX Runtime on this host; the security cases check that hostile
names and cli_args reach the device as single words and run nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from edgehub.core.context import HubContext
from edgehub.core.device import Device, DeviceSpec
from edgehub.core.device.configs import EmbedlONNXRuntimeConfig
from edgehub.errors import CompileError, InvokeError, ModelError, ProviderError
from edgehub.runners.ssh import SSHCommandRunner
from edgehub.toolchains.onnxruntime import (
    ONNXRuntimeCompiledModel,
    ONNXRuntimeCompiler,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice
from unit.agent_models import (
    NUMPY_NAMED_FEEDS,
    check_numpy_named,
    make_cnn,
    make_numpy_named,
    make_two_input,
)

pytestmark = pytest.mark.ssh

HOSTILE = "a b'c\"d;$(touch /tmp/pwned-s)`touch /tmp/pwned-b`"


def _context(
    device: SSHDevice, tmp_path: Path, config: EmbedlONNXRuntimeConfig | None = None, **kw: object
) -> HubContext:
    board = Device(
        name="board",
        runner=SSHCommandRunner(device.config()),
        spec=DeviceSpec(device_name="edgehub SSH test device"),
        provider_type="embedl_onnxruntime",
        provider_config=config or EmbedlONNXRuntimeConfig(),
        **kw,  # type: ignore[arg-type]
    )
    return HubContext(artifact_base_dir=tmp_path / "store", devices=[board])


def _static(path: Path) -> Path:
    """The model with its batch dimension fixed to 1 (measure-latency needs static shapes)."""
    model = onnx.load(str(path))
    for value in (*model.graph.input, *model.graph.output):
        dim = value.type.tensor_type.shape.dim[0]
        dim.ClearField("dim_param")
        dim.dim_value = 1
    onnx.save(model, str(path))
    return path


def _reference(model: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [out.name for out in session.get_outputs()]
    return dict(zip(names, session.run(None, inputs), strict=True))


def _nothing_ran(device: SSHDevice) -> None:
    listed = device.exec("sh", "-c", "ls /tmp/pwned* 2>/dev/null || true").stdout
    assert listed.strip() == ""


def test_invoke_matches_local_onnxruntime_and_resends_no_model(
    device: SSHDevice, tmp_path: Path
) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    rng = np.random.default_rng(0)
    inputs = {"image": rng.standard_normal((2, 3, 16, 16)).astype(np.float32)}
    with _context(device, tmp_path) as ctx:
        first = ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(model), inputs)
        runner = ctx.device("board").runner
        assert isinstance(runner, SSHCommandRunner)
        sent = runner.transfer_stats.upload_bytes
        second = ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(model), inputs)
        # the second call sent only the inputs (a few kB), not the model again
        assert runner.transfer_stats.upload_bytes - sent < model.stat().st_size
        assert runner.transfer_stats.cache_hits >= 1
    expected = _reference(model, inputs)
    for result in (first, second):
        assert set(result.output) == {"logits"}
        assert result.output["logits"].dtype == np.float32
        np.testing.assert_allclose(
            result.output["logits"], expected["logits"], rtol=1e-5, atol=1e-5
        )


def test_two_input_model_and_hostile_file_and_tensor_names(
    device: SSHDevice, tmp_path: Path
) -> None:
    model = make_two_input(tmp_path / f"{HOSTILE}.onnx")
    inputs = {
        "a": np.arange(8, dtype=np.float32).reshape(2, 4),
        "b": np.ones((2, 4), np.float32),
    }
    with _context(device, tmp_path) as ctx:
        result = ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(model), inputs)
    expected = _reference(model, inputs)
    for name in ("sum", "prod"):
        np.testing.assert_allclose(result.output[name], expected[name], rtol=1e-6)
    _nothing_ran(device)


def test_hostile_cli_args_are_single_words_and_run_nothing(
    device: SSHDevice, tmp_path: Path
) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    inputs = {"image": np.zeros((1, 3, 16, 16), np.float32)}
    config = EmbedlONNXRuntimeConfig(cli_args=("--execution-mode", HOSTILE))
    with (
        _context(device, tmp_path, config) as ctx,
        pytest.raises(InvokeError, match=r"execution-mode|Invalid value"),
    ):
        ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(model), inputs)
    _nothing_ran(device)


def test_invoke_without_inputs_uses_random_ones_kept_with_the_run(
    device: SSHDevice, tmp_path: Path
) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    with _context(device, tmp_path) as ctx:
        result = ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(model), None)
        assert result.run_log is not None and result.run_log.artifact_dir is not None
        inputs = dict(np.load(result.run_log.artifact_dir / "input" / "data.npz"))
    assert inputs["image"].shape == (1, 3, 16, 16)
    np.testing.assert_allclose(
        result.output["logits"], _reference(model, inputs)["logits"], rtol=1e-5, atol=1e-5
    )


def test_profile_reports_the_cli_mean(device: SSHDevice, tmp_path: Path) -> None:
    model = _static(make_cnn(tmp_path / "cnn.onnx"))
    with _context(device, tmp_path) as ctx:
        result = ONNXRuntimeProfiler(runs=20, burn_ins=2).run(
            ctx, ONNXRuntimeCompiledModel.from_path(model)
        )
    assert 0 < result.latency.value < 100
    assert result.fps.value == pytest.approx(1000 / result.latency.value)


def test_compile_quantizes_with_calibration_data_and_per_component_override(
    device: SSHDevice, tmp_path: Path
) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    rng = np.random.default_rng(1)
    calibration = {"image": rng.standard_normal((4, 3, 16, 16)).astype(np.float32)}
    # the device's path is wrong; the compiler's override names the real one (seed 001)
    broken = EmbedlONNXRuntimeConfig(embedl_onnxruntime_path="/nonexistent/embedl-onnxruntime")
    fixed = EmbedlONNXRuntimeConfig(embedl_onnxruntime_path="/opt/device/bin/embedl-onnxruntime")
    overrides = {ONNXRuntimeCompiler: fixed}
    with _context(device, tmp_path, broken, provider_config_overrides=overrides) as ctx:
        compiled = ONNXRuntimeCompiler(calibration_data=calibration).run(ctx, model)
        local = compiled.path.to_local(ctx).local()
        with pytest.raises(InvokeError, match="not found on device 'board'"):
            ONNXRuntimeInvoker().run(ctx, compiled, {"image": calibration["image"][:1]})
    quantized = onnx.load(str(local))
    assert any(node.op_type == "QuantizeLinear" for node in quantized.graph.node)
    sample = {"image": calibration["image"][:1]}
    close = np.abs(_reference(local, sample)["logits"] - _reference(model, sample)["logits"])
    assert float(close.max()) < 0.5


def test_compile_options_it_cannot_serve_are_refused(device: SSHDevice, tmp_path: Path) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    with _context(device, tmp_path) as ctx, pytest.raises(ProviderError, match="quantize_io"):
        ONNXRuntimeCompiler(quantize_io=True).run(ctx, model)
        with pytest.raises(ProviderError, match="input_shape"):
            ONNXRuntimeCompiler(input_shape=(1, 3, 16, 16)).run(ctx, model)


def test_no_remote_workspace_is_left(device: SSHDevice, tmp_path: Path) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    with _context(device, tmp_path) as ctx:
        ONNXRuntimeInvoker().run(
            ctx,
            ONNXRuntimeCompiledModel.from_path(model),
            {"image": np.zeros((1, 3, 16, 16), np.float32)},
        )
    left = device.exec(
        "sh", "-c", "ls -d /tmp/edgehub-* ~/.cache/edgehub/work/* 2>/dev/null || true"
    ).stdout
    assert left.strip() == ""  # the connection's work folder went with it


def test_failed_compile_is_one_line(device: SSHDevice, tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx model")
    with _context(device, tmp_path) as ctx, pytest.raises(CompileError) as caught:
        ONNXRuntimeCompiler().run(ctx, bad)
    assert "\n" not in str(caught.value)
    assert "embedl_onnxruntime failed on device 'board'" in str(caught.value)


def test_dynamic_classifier_runs_as_a_fixed_copy_and_without_a_shape_fails_in_one_line(
    device: SSHDevice, tmp_path: Path
) -> None:
    """``x: [-1, 3, "?", "?"]``: the device CLI takes static shapes only, so edgehub sends a copy
    fixed to ``input_shape`` (or the shapes of the inputs given), made here and cached."""
    from integration.test_unnamed_dims import conv_model

    path = conv_model(tmp_path / "cls.onnx")
    model = ONNXRuntimeCompiledModel.from_path(path)
    feed = {"x": np.random.default_rng(0).standard_normal((1, 3, 48, 192)).astype(np.float32)}
    with _context(device, tmp_path) as ctx:
        profiled = ONNXRuntimeProfiler(runs=5, burn_ins=1, input_shape=(1, 3, 48, 192)).run(
            ctx, model
        )
        invoked = ONNXRuntimeInvoker().run(ctx, model, feed)
        with pytest.raises(ModelError) as caught:
            ONNXRuntimeProfiler(runs=5, burn_ins=1).run(ctx, model)
    assert profiled.latency.value > 0
    assert profiled.run_log is not None
    assert profiled.run_log.params["static_input_shapes"].value == {"x": [1, 3, 48, 192]}
    np.testing.assert_allclose(
        invoked.output["y"], _reference(path, feed)["y"], rtol=1e-5, atol=1e-5
    )
    assert str(caught.value) == (
        "input 'x' of cls.onnx is dynamic [-1, 3, '?', '?'] and embedl-onnxruntime takes static "
        "shapes only: give its shape, for example --set input_shape=x:1x3x32x32"
    )
    assert len(list((tmp_path / "store" / "cache" / "static_models").iterdir())) == 1


def test_inputs_and_outputs_named_like_numpys_parameters(device: SSHDevice, tmp_path: Path) -> None:
    model = ONNXRuntimeCompiledModel.from_path(make_numpy_named(tmp_path / "named.onnx"))
    with _context(device, tmp_path) as ctx:
        result = ONNXRuntimeInvoker().run(ctx, model, dict(NUMPY_NAMED_FEEDS))
    check_numpy_named(result.output)
