"""The ``ssh`` provider: edgehub's agent run by the SSH test device's own Python and runtime
(the venv /opt/device: onnxruntime, ai-edge-litert), resident for the life of the context."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from edgehub.core.context import HubContext
from edgehub.core.device import Device
from edgehub.runners.ssh import SSHCommandRunner
from edgehub.toolchains.onnxruntime import (
    ONNXRuntimeCompiledModel,
    ONNXRuntimeCompiler,
    ONNXRuntimeInvoker,
    ONNXRuntimeProfiler,
)
from edgehub.toolchains.remote.config import SSHAgentConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import SSHDevice
from unit.agent_models import NUMPY_NAMED_FEEDS, check_numpy_named, make_cnn, make_numpy_named

pytestmark = pytest.mark.ssh
DEVICE_PYTHON = "/opt/device/bin/python3"


def _context(device: SSHDevice, tmp_path: Path, **config: object) -> HubContext:
    board = Device(
        name="pi",
        runner=SSHCommandRunner(device.config()),
        provider_type="ssh",
        provider_config=SSHAgentConfig(python=DEVICE_PYTHON, **config),  # type: ignore[arg-type]
    )
    return HubContext(artifact_base_dir=tmp_path / "store", devices=[board])


def _reference(model: Path, inputs: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)[0]  # type: ignore[no-any-return]


def _agent_processes(device: SSHDevice) -> str:
    found = device.exec("pgrep", "-u", "edge", "-af", "serve --socket", check=False)
    return found.stdout.strip()


def test_invoke_profile_compile_resident_and_cleaned_up(device: SSHDevice, tmp_path: Path) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    rng = np.random.default_rng(3)
    inputs = {"image": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
    with _context(device, tmp_path) as ctx:
        runner = ctx.device("pi").runner
        assert isinstance(runner, SSHCommandRunner)
        compiled = ONNXRuntimeCompiledModel.from_path(model)
        first = ONNXRuntimeInvoker().run(ctx, compiled, inputs)
        sent = runner.transfer_stats.upload_bytes
        timings = []
        for _ in range(3):
            started = time.perf_counter()
            again = ONNXRuntimeInvoker().run(ctx, compiled, inputs)
            timings.append(time.perf_counter() - started)
        # the model went up once; later calls send the request and the inputs only
        assert runner.transfer_stats.upload_bytes - sent < 3 * model.stat().st_size
        assert "serve --socket" in _agent_processes(device)  # resident for the context

        profile = ONNXRuntimeProfiler(runs=30, burn_ins=3).run(ctx, compiled)
        run = profile.run_log
        assert run is not None
        for key in ("latency_median_ms", "latency_p90_ms", "latency_min_ms"):
            assert key in run.metrics, sorted(run.metrics)
        assert run.environment.get("onnxruntime"), run.environment

        calibration = {"image": rng.standard_normal((4, 3, 16, 16)).astype(np.float32)}
        quantized = ONNXRuntimeCompiler(calibration_data=calibration).run(ctx, model)
        assert quantized.path.to_local(ctx).local().is_file()
    expected = _reference(model, inputs)
    np.testing.assert_allclose(first.output["logits"], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(again.output["logits"], expected, rtol=1e-5, atol=1e-5)

    def work_left() -> str:
        return device.exec(
            "sh", "-c", "ls -d /tmp/edgehub-* ~/.cache/edgehub/work/* 2>/dev/null || true"
        ).stdout.strip()

    deadline = time.monotonic() + 30  # generous: a busy machine ends them late
    while (_agent_processes(device) or work_left()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _agent_processes(device) == ""  # the resident agent ended with the context
    assert work_left() == ""  # the connection's work folder went with it


def test_not_resident_leaves_no_server(device: SSHDevice, tmp_path: Path) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    inputs = {"image": np.ones((1, 3, 16, 16), np.float32)}
    with _context(device, tmp_path, resident=False) as ctx:
        result = ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(model), inputs)
        assert _agent_processes(device) == ""
    np.testing.assert_allclose(result.output["logits"], _reference(model, inputs), rtol=1e-5)


def test_missing_python_is_a_one_line_error(device: SSHDevice, tmp_path: Path) -> None:
    from edgehub.errors import EdgehubError

    model = make_cnn(tmp_path / "cnn.onnx")
    board = Device(
        name="pi",
        runner=SSHCommandRunner(device.config()),
        provider_type="ssh",
        provider_config=SSHAgentConfig(python="/no/such/python3"),
    )
    inputs = {"image": np.ones((1, 3, 16, 16), np.float32)}
    context = HubContext(artifact_base_dir=tmp_path / "s", devices=[board])
    with context as ctx, pytest.raises(EdgehubError) as caught:
        ONNXRuntimeInvoker().run(ctx, ONNXRuntimeCompiledModel.from_path(model), inputs)
    assert "\n" not in str(caught.value)


def test_tflite_invoke_and_profile_on_the_device_match_the_local_interpreter(
    device: SSHDevice, tmp_path: Path
) -> None:
    """Compiled here (the tflite image), run on the device by its own ai-edge-litert."""
    from edgehub import images
    from edgehub.toolchains.tflite import TFLiteCompiler, TFLiteInvoker, TFLiteProfiler

    if not images.image_status("tflite").built:
        pytest.skip("needs the tflite image to compile a model (hub images build tflite)")
    model = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
    image = np.random.default_rng(9).standard_normal((1, 3, 32, 32)).astype(np.float32)
    with _context(device, tmp_path) as ctx:
        compiled = TFLiteCompiler(device="local").run(ctx, model)
        there = TFLiteInvoker(device="pi").run(ctx, compiled, {"image": image})
        here = TFLiteInvoker(device="local").run(ctx, compiled, {"image": image})
        profile = TFLiteProfiler(device="pi", runs=20).run(ctx, compiled)
        run = profile.run_log
    assert set(there.output) == set(here.output) == {"probabilities"}
    np.testing.assert_allclose(there.output["probabilities"], here.output["probabilities"])
    assert run is not None and "latency_median_ms" in run.metrics


def test_until_stable_over_ssh_records_convergence_and_conditions(
    device: SSHDevice, tmp_path: Path
) -> None:
    model = make_cnn(tmp_path / "cnn.onnx")
    with _context(device, tmp_path) as ctx:
        compiled = ONNXRuntimeCompiledModel.from_path(model)
        profiler = ONNXRuntimeProfiler(runs=20, burn_ins=3, until_stable=True)
        # 900 %: agrees within a few windows however busy the shared machine is (how many is the
        # machine's); no limit on other processes' share
        run = profiler.run(ctx, compiled, stable_tolerance=9.0, stable_max_other_share=1.0).run_log
        assert run is not None
        metrics = {name: metric.value for name, metric in run.metrics.items()}
        assert metrics["stable_converged"] == 1 and metrics["stable_windows"] >= 3, metrics
        assert metrics["stable_spread_pct"] <= 900, metrics
        assert run.params["until_stable"].value is True
        assert "conditions.other_cpu_share" in run.environment, sorted(run.environment)


def test_inputs_and_outputs_named_like_numpys_parameters(device: SSHDevice, tmp_path: Path) -> None:
    """``file`` and ``allow_pickle`` in, ``fix_imports`` and ``mmap_mode`` out, through the
    agent on the device; given as a dict and as an .npz read the way ``hub exec invoke
    --input`` reads it."""
    from edgehub.toolchains.tensors import load_npz, save_npz

    model = ONNXRuntimeCompiledModel.from_path(make_numpy_named(tmp_path / "named.onnx"))
    npz = save_npz(tmp_path / "in.npz", NUMPY_NAMED_FEEDS)
    with _context(device, tmp_path) as ctx:
        given = ONNXRuntimeInvoker().run(ctx, model, dict(NUMPY_NAMED_FEEDS))
        from_file = ONNXRuntimeInvoker().run(ctx, model, load_npz(npz))
    check_numpy_named(given.output)
    check_numpy_named(from_file.output)
