"""The qai_hub providers, run through a real HubContext and the real run store.

These tests do NOT reach the live Qualcomm AI Hub service (it is not reachable from our
machines): they use `tests/qai_hub_double.py`, a test double of the `qai_hub` module built on
the client's real types (qai-hub 0.56.0) and the documented profile schema, and assert the
exact calls edgehub makes. Inference jobs on ONNX models really run them with onnxruntime.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import qai_hub as real
from onnx import TensorProto, helper

from edgehub.core import HubContext
from edgehub.core.compile import ONNXRuntimeCompiledModel, ONNXRuntimeCompiler, TFLiteCompiler
from edgehub.core.component import ProviderType
from edgehub.core.device import Device, DeviceSpec
from edgehub.core.invoke import ONNXRuntimeInvoker, TFLiteInvoker
from edgehub.core.profile import ONNXRuntimeProfiler, TFLiteProfiler
from edgehub.errors import (
    CompileError,
    DeviceError,
    EdgehubError,
    InvokeError,
    ProfileError,
    UsageError,
)
from edgehub.events import EventSink, LogEvent
from edgehub.toolchains.qai_hub import (
    FanOutError,
    QAIHubConfig,
    resume_job,
    run_on_devices,
)
from edgehub.toolchains.qai_hub import client as qai_client
from edgehub.toolchains.qai_hub.client import QAIHubSetupError
from qai_hub_double import QAIRT, WEB_URL, QAIHubDouble

State = real.JobStatus.State
TOKEN = "secret-token-0123456789"


# -- models ------------------------------------------------------------------------------------
def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def one_input(folder: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "one", [x], [y])
    return _save(graph, folder / "one.onnx")


def two_inputs(folder: Path) -> Path:
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4])
    b = helper.make_tensor_value_info("b", TensorProto.INT64, [1, 4])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 4])
    nodes = [
        helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["a", "bf"], ["s"]),
    ]
    return _save(helper.make_graph(nodes, "two", [a, b], [s]), folder / "two.onnx")


def dynamic(folder: Path) -> Path:
    x = helper.make_tensor_value_info("tokens", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 16])
    graph = helper.make_graph([helper.make_node("Relu", ["tokens"], ["out"])], "dyn", [x], [y])
    return _save(graph, folder / "dynamic.onnx")


# -- fixtures ----------------------------------------------------------------------------------
@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> QAIHubDouble:
    ini = tmp_path / "client.ini"
    ini.write_text(f"[api]\napi_token = {TOKEN}\napi_url = {WEB_URL}\nweb_url = {WEB_URL}\n")
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(ini))
    double = QAIHubDouble()
    monkeypatch.setattr(qai_client, "load_qai_hub", lambda: double)
    return double


def hub_device(name: str = "s24", device_name: str = "Samsung Galaxy S24", **config: Any) -> Device:
    return Device(
        name=name,
        runner=None,
        spec=DeviceSpec(device_name=device_name),
        provider_type=ProviderType.QAI_HUB,
        provider_config=QAIHubConfig(**{"poll_interval": 0, **config}),
    )


class Events:
    def __init__(self) -> None:
        self.sink = EventSink()
        self.seen: list[LogEvent] = []
        self.sink.subscribe(self.seen.append)

    def messages(self, kind: str | None = None) -> list[str]:
        return [e.message for e in self.seen if kind is None or e.kind == kind]


def context(tmp_path: Path, *devices: Device, events: Events | None = None) -> HubContext:
    return HubContext(
        project_name="qai",
        artifact_base_dir=tmp_path / "store",
        devices=list(devices) or [hub_device()],
        events=events.sink if events else None,
    )


def last_run(ctx: HubContext) -> Any:
    run = ctx.client.latest_run_log
    assert run is not None
    return run


def params(run: Any) -> dict[str, Any]:
    return {k: v.value for k, v in run.params.items()}


S24 = real.Device("Samsung Galaxy S24", "", [])
S23 = real.Device("Samsung Galaxy S23", "", [])


# -- compile -----------------------------------------------------------------------------------
def test_float_compile_sends_real_input_specs_and_typed_options(
    tmp_path: Path, service: QAIHubDouble
) -> None:
    model = one_input(tmp_path)
    events = Events()
    device = hub_device(compute_unit="npu", options="--truncate_64bit_io")
    with context(tmp_path, device, events=events) as ctx:
        compiled = ONNXRuntimeCompiler().run(ctx, model, device="s24")
        run = last_run(ctx)
    assert [c for c, _ in service.calls] == ["get_devices", "upload_model", "submit_compile_job"]
    assert service.called("upload_model") == [{"model": str(model), "name": None, "project": None}]
    (submitted,) = service.called("submit_compile_job")
    uploaded = next(iter(service.models.values()))
    assert submitted == {
        "model": uploaded,
        "device": S24,
        "name": "one onnx",
        "input_specs": {"x": ((1, 3, 8, 8), "float32")},
        "options": "--target_runtime onnx --compute_unit npu --truncate_64bit_io",
        "calibration_data": None,
    }
    job = next(iter(service.jobs.values()))
    assert run.status == "FINISHED"
    logged = params(run)
    assert logged["qai_hub_compile_job_id"] == job.job_id
    assert logged["qai_hub_compile_job_url"] == f"{WEB_URL}/jobs/{job.job_id}/"
    assert logged["qairt_version"] == QAIRT
    assert logged["$device"] == "Samsung Galaxy S24"
    assert run.environment["qai_hub_client"] == str(real.__version__)
    assert isinstance(compiled, ONNXRuntimeCompiledModel)
    assert compiled.path.local().read_bytes() == model.read_bytes()
    assert compiled.input_name_mapping is None
    statuses = [
        m for m in events.messages("info") if m.startswith(f"qai_hub compile job {job.job_id}:")
    ]
    assert statuses == [
        f"qai_hub compile job {job.job_id}: {WEB_URL}/jobs/{job.job_id}/",
        f"qai_hub compile job {job.job_id}: created, waiting in the queue",
        f"qai_hub compile job {job.job_id}: optimizing the model",
        f"qai_hub compile job {job.job_id}: success",
    ]


def test_input_specs_for_two_inputs_and_dynamic_dimensions(
    tmp_path: Path, service: QAIHubDouble
) -> None:
    with context(tmp_path) as ctx:
        ONNXRuntimeCompiler().run(ctx, two_inputs(tmp_path), device="s24")
        ONNXRuntimeCompiler().run(ctx, dynamic(tmp_path), input_shape=(4, 16))
        with pytest.raises(UsageError, match=r"input 'tokens' has dynamic dimensions \(\?, 16\)"):
            ONNXRuntimeCompiler().run(ctx, dynamic(tmp_path))
        with pytest.raises(UsageError, match=r"2 inputs \(a, b\); give input_shape as"):
            ONNXRuntimeCompiler().run(ctx, two_inputs(tmp_path), input_shape=(1, 4))
        assert last_run(ctx).status == "FAILED"
    specs = [c["input_specs"] for c in service.called("submit_compile_job")]
    assert specs == [
        {"a": ((1, 4), "float32"), "b": ((1, 4), "int64")},
        {"tokens": ((4, 16), "float32")},
    ]
    assert list(specs[0]) == ["a", "b"]  # the model's input order


def test_calibration_data_runs_a_quantize_job_first(tmp_path: Path, service: QAIHubDouble) -> None:
    model = two_inputs(tmp_path)
    rng = np.random.default_rng(0)
    calibration = {
        "b": rng.integers(0, 5, size=(3, 1, 4)).astype(np.int64),
        "a": rng.standard_normal((3, 1, 4)).astype(np.float64),  # cast to the input's float32
    }
    with context(tmp_path) as ctx:
        compiled = ONNXRuntimeCompiler().run(ctx, model, calibration_data=calibration)
        run = last_run(ctx)
    names = [c for c, _ in service.calls]
    assert names == [
        "get_devices",
        "upload_model",
        "upload_dataset",
        "submit_quantize_job",
        "submit_compile_job",
    ]
    (dataset_call,) = service.called("upload_dataset")
    data = dataset_call["data"]
    assert list(data) == ["a", "b"]  # the dataset schema is the model's input order
    assert len(data["a"]) == len(data["b"]) == 3
    for i in range(3):
        np.testing.assert_array_equal(data["a"][i], calibration["a"][i].astype(np.float32))
        assert data["a"][i].dtype == np.float32
        np.testing.assert_array_equal(data["b"][i], calibration["b"][i])
    (quantize,) = service.called("submit_quantize_job")
    assert quantize["weights_dtype"] is real.QuantizeDtype.INT8
    assert quantize["activations_dtype"] is real.QuantizeDtype.INT8
    assert (
        quantize["calibration_data"].dataset_id
        == params(run)["qai_hub_calibration_data_dataset_id"]
    )
    quantize_job = next(j for j in service.jobs.values() if j.job_type == "quantize")
    (compile_call,) = service.called("submit_compile_job")
    assert compile_call["model"] is quantize_job.get_target_model()  # not uploaded again
    assert params(run)["num_calibration_samples"] == 3
    assert params(run)["qai_hub_quantize_job_id"] == quantize_job.job_id
    assert "quantized" in run.artifacts
    assert compiled.path.local().name == "compiled_two.onnx"


def test_tflite_compile_profile_and_invoke(tmp_path: Path, service: QAIHubDouble) -> None:
    model = one_input(tmp_path)
    service.renamer = lambda name: f"serving_default_{name}:0"
    service.tflite_outputs = {"serving_default_y:0": [np.ones((1, 3, 8, 8), np.float32)]}
    device = hub_device(quantize_full_type="int8", qairt_version="2.37")
    with context(tmp_path, device) as ctx:
        compiled = TFLiteCompiler().run(ctx, model, quantize_io=True)
        assert compiled.path.local().suffix == ".tflite"
        assert compiled.input_name_mapping == {"x": "serving_default_x:0"}
        assert compiled.output_name_mapping == {"y": "serving_default_y:0"}
        profiled = TFLiteProfiler().run(ctx, compiled)
        result = TFLiteInvoker().run(ctx, compiled, {"x": np.zeros((1, 3, 8, 8), np.float32)})
        assert params(last_run(ctx))["qairt_version_requested"] == "2.37"
    (compile_call,) = service.called("submit_compile_job")
    assert compile_call["options"] == (
        "--target_runtime tflite --quantize_full_type int8 --quantize_io"
    )
    profile_call, invoke_call = service.called("submit_inference_job")
    assert profile_call["options"] == "--qairt_version 2.37"
    assert profile_call["profile"] is True and profile_call["inputs"] is None
    assert invoke_call["profile"] is False
    assert list(invoke_call["inputs"].download()) == ["serving_default_x:0"]
    assert profiled.latency.value == pytest.approx(1.501)
    assert list(result.output) == ["y"]
    assert len(service.called("upload_model")) == 1  # the compiled model was never re-uploaded


# -- profile -----------------------------------------------------------------------------------
def test_profile_statistics_match_the_local_profilers(
    tmp_path: Path, service: QAIHubDouble
) -> None:
    compiled = ONNXRuntimeCompiledModel.from_path(one_input(tmp_path))
    events = Events()
    with context(tmp_path, events=events) as ctx:
        result = ONNXRuntimeProfiler().run(ctx, compiled, runs=50)
        run = last_run(ctx)
    (call,) = service.called("submit_inference_job")
    assert call == {
        "model": next(iter(service.models.values())),
        "device": S24,
        "inputs": None,
        "name": "one profile",
        "options": "--max_profiler_iterations 50",
        "profile": True,
    }
    samples_ms = np.array(service.profile["execution_summary"]["all_inference_times"]) / 1000
    metrics = {k: v.value for k, v in run.metrics.items()}
    assert result.latency.value == metrics["latency_median_ms"] == round(np.median(samples_ms), 3)
    for name, value in {
        "latency_mean_ms": samples_ms.mean(),
        "latency_min_ms": samples_ms.min(),
        "latency_max_ms": samples_ms.max(),
        "latency_p90_ms": np.percentile(samples_ms, 90),
        "latency_p95_ms": np.percentile(samples_ms, 95),
        "latency_p99_ms": np.percentile(samples_ms, 99),
        "latency_std_ms": samples_ms.std(),
    }.items():
        assert metrics[name] == pytest.approx(value, abs=1e-3), name
    assert result.fps.value == pytest.approx(1000 / samples_ms.mean(), rel=1e-3)
    assert metrics["estimated_inference_time_ms"] == 1.5
    assert result.load_time is not None and result.load_time.value == 12.0
    assert metrics["first_load_time_ms"] == 250.0
    assert result.peak_memory_usage is not None and result.peak_memory_usage.value == 3.0
    assert metrics["first_load_memory_peak_max_mb"] == 40.0
    assert metrics["num_layers"] == 4
    assert metrics["num_layers_npu"] == 3 and metrics["num_layers_cpu"] == 1
    assert params(run)["compute_units"] == "NPU (3) | CPU (1) | Total (4)"
    assert params(run)["peak_memory_range"] == "0.09-2.98 MB"
    document = json.loads(result.output_file.local().read_text())
    assert [row["name"] for row in document["layers"]] == ["conv1", "relu", "relu#2", "softmax_3"]
    assert [row["compute_unit"] for row in document["layers"]] == ["NPU", "NPU", "NPU", "CPU"]
    assert document["layers"][0]["cycles"] == 910_000
    assert document["qai_hub_profile"] == json.loads(json.dumps(service.profile))
    job = next(iter(service.jobs.values()))
    assert f"qai_hub profile job {job.job_id}: provisioning a device" in events.messages()
    assert f"qai_hub profile job {job.job_id}: measuring performance" in events.messages()


def test_unchanged_model_is_uploaded_once(tmp_path: Path, service: QAIHubDouble) -> None:
    compiled = ONNXRuntimeCompiledModel.from_path(one_input(tmp_path))
    with context(tmp_path) as ctx:
        ONNXRuntimeProfiler().run(ctx, compiled)
        ONNXRuntimeProfiler().run(ctx, compiled)
    with context(tmp_path) as ctx:  # a later process: the id comes from the store's cache
        ONNXRuntimeProfiler().run(ctx, compiled)
    assert len(service.called("upload_model")) == 1
    models = {id(c["model"]) for c in service.called("submit_inference_job")}
    assert len(models) == 1
    assert service.called("get_model") == [{"model_id": next(iter(service.models))}]
    assert len(service.called("get_devices")) == 2  # once per context


# -- invoke ------------------------------------------------------------------------------------
def test_invoke_remaps_names_both_ways_and_flattens(tmp_path: Path, service: QAIHubDouble) -> None:
    service.renamer = lambda name: f"{name}_0"
    x = np.linspace(-1, 1, 192, dtype=np.float32).reshape(1, 3, 8, 8)
    with context(tmp_path) as ctx:
        compiled = ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
        assert compiled.input_name_mapping == {"x": "x_0"}
        assert compiled.output_name_mapping == {"y": "y_0"}
        result = ONNXRuntimeInvoker().run(ctx, compiled, {"x": x})
        again = ONNXRuntimeInvoker().run(ctx, compiled, {"x_0": x})  # compiled names pass
        raw = ONNXRuntimeInvoker().run(ctx, compiled, {"x_0": x}, use_compiled_names=True)
        with pytest.raises(InvokeError, match=r"'z' is neither an original input name \(x\) nor"):
            ONNXRuntimeInvoker().run(ctx, compiled, {"z": x})
        failed = last_run(ctx)
    sent = service.called("upload_dataset")[0]["data"]
    assert list(sent) == ["x_0"]
    np.testing.assert_array_equal(sent["x_0"][0], x)
    assert list(result.output) == ["y"] and list(again.output) == ["y"]
    assert list(raw.output) == ["y_0"]
    np.testing.assert_array_equal(result.output["y"], np.maximum(x, 0))  # ran for real
    assert result.output["y"].shape == (1, 3, 8, 8)  # the first sample, not a list
    assert len(service.called("upload_dataset")) == 1  # same inputs: the dataset is reused
    assert failed.status == "FAILED"
    saved = np.load(result.output_file.local())
    np.testing.assert_array_equal(saved["y"], np.maximum(x, 0))


def test_inputs_and_outputs_named_like_numpys_parameters(
    tmp_path: Path, service: QAIHubDouble
) -> None:
    """``file``, ``allow_pickle`` in and ``fix_imports``, ``mmap_mode`` out, as a dict and as
    an .npz read the way ``hub exec invoke --input`` reads it, through the AI Hub test double
    (the service itself cannot be reached here)."""
    from agent_models import NUMPY_NAMED_FEEDS, check_numpy_named, make_numpy_named

    from edgehub.toolchains.tensors import load_npz, save_npz

    npz = save_npz(tmp_path / "in.npz", NUMPY_NAMED_FEEDS)
    with context(tmp_path) as ctx:
        compiled = ONNXRuntimeCompiler().run(ctx, make_numpy_named(tmp_path / "named.onnx"))
        given = ONNXRuntimeInvoker().run(ctx, compiled, dict(NUMPY_NAMED_FEEDS))
        from_file = ONNXRuntimeInvoker().run(ctx, compiled, load_npz(npz))
    assert sorted(service.called("upload_dataset")[0]["data"]) == ["allow_pickle", "file"]
    check_numpy_named(given.output)
    check_numpy_named(from_file.output)
    with np.load(given.output_file.local(), allow_pickle=False) as saved:
        check_numpy_named({k: saved[k] for k in saved.files})


def test_flatten_outputs_takes_the_first_sample() -> None:
    from edgehub.toolchains.qai_hub.invoke import flatten_outputs

    first, second = np.zeros(2), np.ones(2)
    out = flatten_outputs({"a": [first, second], "b": np.arange(3), "c": []})
    assert out["a"] is first
    np.testing.assert_array_equal(out["b"], np.arange(3))
    assert out["c"].shape == (0,)


# -- devices, fan-out, resume -------------------------------------------------------------------
def test_unknown_device_name_suggests_the_closest(tmp_path: Path, service: QAIHubDouble) -> None:
    device = hub_device(device_name="Samsung Galaxy S42")
    with context(tmp_path, device) as ctx:
        with pytest.raises(DeviceError) as error:
            ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
        assert last_run(ctx).status == "FAILED"
    message = str(error.value)
    assert "\n" not in message
    assert "no device named 'Samsung Galaxy S42'" in message
    assert "did you mean 'Samsung Galaxy S24', 'Samsung Galaxy S23'?" in message
    assert not service.called("submit_compile_job")


def test_a_list_of_devices_is_one_submission_and_one_run_each(
    tmp_path: Path, service: QAIHubDouble
) -> None:
    model = one_input(tmp_path)
    devices = [hub_device("s24"), hub_device("s23", "Samsung Galaxy S23")]
    with context(tmp_path, *devices) as ctx:
        results = run_on_devices(ctx, ONNXRuntimeCompiler(), model, devices=["s24", "s23"])
        runs = ctx.client.run_history
    (call,) = service.called("submit_compile_job")
    assert call["device"] == [S24, S23]
    assert list(results) == ["s24", "s23"]
    assert len(runs) == 2 and {r.status for r in runs} == {"FINISHED"}
    ids = [params(r)["qai_hub_compile_job_id"] for r in runs]
    assert ids == [j.job_id for j in service.jobs.values()]
    assert [params(r)["$device"] for r in runs] == ["Samsung Galaxy S24", "Samsung Galaxy S23"]


def test_fan_out_reports_each_failed_device(tmp_path: Path, service: QAIHubDouble) -> None:
    service.script["compile"] = [State.CREATED, (State.FAILED, "no NPU for this op")]
    devices = [hub_device("s24"), hub_device("s23", "Samsung Galaxy S23")]
    failed = r"2 of 2 device runs failed: s24: qai_hub"
    with context(tmp_path, *devices) as ctx, pytest.raises(FanOutError, match=failed):
        run_on_devices(ctx, ONNXRuntimeCompiler(), one_input(tmp_path), devices=["s24", "s23"])
    assert len(service.called("submit_compile_job")) == 1


def test_a_job_that_never_finishes_times_out_and_resumes_from_its_id(
    tmp_path: Path, service: QAIHubDouble
) -> None:
    service.script["profile"] = [State.CREATED, State.PROVISIONING_DEVICE]
    compiled = ONNXRuntimeCompiledModel.from_path(one_input(tmp_path))
    device = hub_device(timeout=0.05, poll_interval=0.01)
    with context(tmp_path, device) as ctx:
        with pytest.raises(ProfileError) as error:
            ONNXRuntimeProfiler().run(ctx, compiled)
        failed = last_run(ctx)
        (job,) = service.jobs.values()
        url = f"{WEB_URL}/jobs/{job.job_id}/"
        message = str(error.value)
        assert "\n" not in message
        assert f"qai_hub profile job {job.job_id} did not finish within 0.05 s" in message
        assert "last status: provisioning a device" in message
        assert f"keeps running on the service at {url}" in message
        assert f"--from-job {job.job_id}" in message
        assert failed.status == "FAILED"
        assert params(failed)["qai_hub_profile_job_id"] == job.job_id
        assert params(failed)["qai_hub_profile_job_url"] == url
        assert failed.tags["qai_hub_profile_job"] == job.job_id

        job._states = [State.MEASURING_PERFORMANCE, State.SUCCESS]  # the service went on
        result = resume_job(ctx, ONNXRuntimeProfiler(), job.job_id, compiled)
        resumed = last_run(ctx)
    assert len(service.called("submit_inference_job")) == 1  # not submitted again
    assert service.called("get_job") == [{"job_id": job.job_id}]
    assert resumed.status == "FINISHED"
    assert params(resumed)["qai_hub_resumed_job_id"] == job.job_id
    assert params(resumed)["$device"] == "Samsung Galaxy S24"  # found from the job's device
    assert result.latency.value == pytest.approx(1.501)


def test_resume_refuses_a_job_of_another_kind(tmp_path: Path, service: QAIHubDouble) -> None:
    with context(tmp_path) as ctx:
        compiled = ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
        job_id = params(last_run(ctx))["qai_hub_compile_job_id"]
        with pytest.raises(UsageError, match=f"{job_id} is a compile job; ONNXRuntimeProfiler"):
            resume_job(ctx, ONNXRuntimeProfiler(), job_id, compiled)
        with pytest.raises(ProfileError, match="Job ID 'jx404' could not be found"):
            resume_job(ctx, ONNXRuntimeProfiler(), "jx404", compiled)


def test_ctrl_c_stops_waiting_and_says_the_job_keeps_running(
    tmp_path: Path, service: QAIHubDouble
) -> None:
    service.script["compile"] = [State.CREATED, "interrupt"]
    events = Events()
    with context(tmp_path, events=events) as ctx:
        with pytest.raises(KeyboardInterrupt):
            ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
        run = last_run(ctx)
    (job,) = service.jobs.values()
    assert run.status == "KILLED"
    assert params(run)["qai_hub_compile_job_id"] == job.job_id
    (warning,) = events.messages("warning")
    assert warning == (
        f"stopped waiting; qai_hub compile job {job.job_id} keeps running on the service at "
        f"{WEB_URL}/jobs/{job.job_id}/; resume with `hub exec … --from-job {job.job_id}`"
    )


# -- bad input and failures --------------------------------------------------------------------
def test_a_job_failing_on_the_service_is_one_line(tmp_path: Path, service: QAIHubDouble) -> None:
    reason = "Your model ir_version 12 is higher than the checker's (11)."
    service.script["compile"] = [State.CREATED, State.OPTIMIZING_MODEL, (State.FAILED, reason)]
    with context(tmp_path) as ctx:
        with pytest.raises(CompileError) as error:
            ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
        run = last_run(ctx)
    (job,) = service.jobs.values()
    assert str(error.value) == (
        f"qai_hub compile job {job.job_id} failed on the service: {reason} "
        f"(details: {WEB_URL}/jobs/{job.job_id}/)"
    )
    assert run.status == "FAILED"
    assert params(run)["qai_hub_compile_job_url"] == f"{WEB_URL}/jobs/{job.job_id}/"


def test_missing_token(
    tmp_path: Path, service: QAIHubDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    ini = tmp_path / "empty.ini"
    ini.write_text("[api]\napi_url = x\n")
    monkeypatch.setenv("QAIHUB_CLIENT_INI", str(ini))
    with context(tmp_path) as ctx:
        with pytest.raises(QAIHubSetupError) as error:
            ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
        assert last_run(ctx).status == "FAILED"
    assert str(error.value).startswith(
        f"no Qualcomm AI Hub API token in {ini}; run `qai-hub configure"
    )
    assert "hub.toml" in str(error.value)
    assert not service.calls


def test_rejected_client_versions(tmp_path: Path, service: QAIHubDouble) -> None:
    service.__version__ = "0.40.0"
    with (
        context(tmp_path) as ctx,
        pytest.raises(
            QAIHubSetupError, match=r"qai-hub 0.40.0 is installed but edgehub works with 0.56.x"
        ),
    ):
        ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
    service.__version__ = str(real.__version__)
    service.refuse["upload_model"] = real.UserError(
        "\n┌────┐\n│ This version of the Hub client is no longer supported. Please upgrade by "
        "running 'pip install --upgrade qai-hub'. │\n└────┘"
    )
    with context(tmp_path) as ctx:
        with pytest.raises(QAIHubSetupError) as error:
            ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
        assert last_run(ctx).status == "FAILED"
    assert str(error.value).startswith(
        f"Qualcomm AI Hub no longer accepts qai-hub {real.__version__!s}"
    )


def test_service_errors_and_bad_options_are_one_line(tmp_path: Path, service: QAIHubDouble) -> None:
    service.refuse["submit_compile_job"] = real.InternalError(
        "Error uploading to QDC: status code=500"
    )
    expected = (
        r"^Qualcomm AI Hub failed while submitting the compile job: "
        r"Error uploading to QDC: status code=500$"
    )
    with context(tmp_path) as ctx, pytest.raises(CompileError, match=expected):
        ONNXRuntimeCompiler().run(ctx, one_input(tmp_path))
    bad = [
        hub_device("a", options="--compute_unit gpu", compute_unit="npu"),
        hub_device("b", quantize_full_type="int8"),
    ]
    with context(tmp_path, *bad) as ctx:
        with pytest.raises(UsageError, match="options repeat --compute_unit"):
            ONNXRuntimeCompiler().run(ctx, one_input(tmp_path), device="a")
        with pytest.raises(UsageError, match="quantize_full_type does not apply to ONNX Runtime"):
            ONNXRuntimeCompiler().run(ctx, one_input(tmp_path), device="b")
        with pytest.raises(UsageError, match="no dynamic quantization"):
            ONNXRuntimeCompiler().run(ctx, one_input(tmp_path), device="a", quantization="dynamic")
    with pytest.raises(EdgehubError, match="compute_unit 'tpu' is not valid"):
        QAIHubConfig(compute_unit="tpu")


def test_device_os_and_attributes_narrow_the_device(tmp_path: Path, service: QAIHubDouble) -> None:
    attributes = ("chipset:qualcomm-snapdragon-8gen3",)
    device = hub_device(device_os="[14,15)", device_attributes=attributes)
    with context(tmp_path, device) as ctx:
        ONNXRuntimeProfiler().run(ctx, ONNXRuntimeCompiledModel.from_path(one_input(tmp_path)))
    (call,) = service.called("submit_inference_job")
    assert call["device"] == real.Device("Samsung Galaxy S24", "[14,15)", list(attributes))


def test_a_lost_connection_while_waiting_is_exit_3_with_the_job_to_resume(
    tmp_path: Path, service: QAIHubDouble
) -> None:
    from edgehub.toolchains.qai_hub.client import QAIHubUnreachable

    service.script["profile"] = [State.CREATED, "disconnect"]
    compiled = ONNXRuntimeCompiledModel.from_path(one_input(tmp_path))
    with context(tmp_path) as ctx:
        with pytest.raises(QAIHubUnreachable) as error:
            ONNXRuntimeProfiler().run(ctx, compiled)
        failed = last_run(ctx)
    (job,) = service.jobs.values()
    message = str(error.value)
    assert error.value.exit_code == 3 and "\n" not in message
    assert message.startswith("cannot reach Qualcomm AI Hub while reading the profile job")
    assert f"job {job.job_id} keeps running, resume with" in message
    assert f"--from-job {job.job_id}" in message
    assert failed.status == "FAILED"
