"""The ``aws`` provider (AWS Device Farm) through a real HubContext and the real run store.

AWS cannot be reached from our machines, so these tests do NOT talk to Device Farm: they use
botocore's own ``Stubber`` on a real ``devicefarm`` client, which checks every request against
the service's published API model (names and shapes of parameters) and the exact order of the
calls, and a small HTTP server on 127.0.0.1 standing in for the pre-signed S3 URLs (uploads
are PUT there, the artifact zip is served from there). The benchmark logs are fixtures written
from LiteRT benchmark_model's documented output (tests/data/litert_benchmark, version named).
"""

from __future__ import annotations

import gzip
import http.server
import io
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

botocore_session = pytest.importorskip("botocore.session", reason="needs botocore (edgehub[aws])")
from botocore.stub import Stubber  # noqa: E402

from edgehub.core import HubContext  # noqa: E402
from edgehub.core.compile import TFLiteCompiledModel  # noqa: E402
from edgehub.core.device import Device, DeviceSpec  # noqa: E402
from edgehub.core.profile import TFLiteProfiler  # noqa: E402
from edgehub.errors import (  # noqa: E402
    DeviceError,
    DeviceOutputError,
    OperationCancelled,
    ProfileError,
    UsageError,
)
from edgehub.events import EventSink, LogEvent  # noqa: E402
from edgehub.toolchains.aws import DeviceFarmConfig, resume_device_farm_run  # noqa: E402
from edgehub.toolchains.aws.check import check_device_farm  # noqa: E402
from edgehub.toolchains.aws.client import client_factory  # noqa: E402
from edgehub.toolchains.aws.devices import select_device  # noqa: E402
from edgehub.toolchains.aws.package import (  # noqa: E402
    build_test_package,
    build_test_spec,
    plan_benchmark,
)
from edgehub.toolchains.aws.uploads import upload_name  # noqa: E402
from edgehub.toolchains.tflite.benchmark_log import parse_benchmark_log  # noqa: E402

DATA = Path(__file__).parent.parent / "data" / "litert_benchmark"
PROJECT = "arn:aws:devicefarm:us-west-2:123456789012:project:5e01a8c7-c861-4c0a-b1d5-12345EXAMPLE"
RUN = "arn:aws:devicefarm:us-west-2:123456789012:run:5e01a8c7-c861-4c0a-b1d5-12345EXAMPLE/0fcac17b"
PIXEL = {
    "arn": "arn:aws:devicefarm:us-west-2::device:A0C0F5C1F9D04C5D9F2E4A1EXAMPLE",
    "name": "Google Pixel 8",
    "manufacturer": "Google",
    "model": "Pixel 8",
    "platform": "ANDROID",
    "os": "14",
    "availability": "HIGHLY_AVAILABLE",
    "cpu": {"frequency": "MHz", "architecture": "arm64-v8a", "clock": 2900.0},
}
GALAXY = {**PIXEL, "arn": PIXEL["arn"][:-7] + "GALAXY1", "name": "Samsung Galaxy S24"}


# -- the stand-in for S3's pre-signed URLs ----------------------------------------------------
class S3Standin:
    def __init__(self) -> None:
        self.puts: dict[str, bytes] = {}
        self.files: dict[str, bytes] = {}
        standin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                size = int(self.headers["Content-Length"])
                standin.puts[self.path] = self.rfile.read(size)
                self.send_response(200)
                self.end_headers()

            def do_GET(self) -> None:
                body = standin.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


@pytest.fixture
def s3() -> Iterator[S3Standin]:
    standin = S3Standin()
    yield standin
    standin.server.shutdown()


@pytest.fixture
def farm() -> Iterator[tuple[Any, Stubber]]:
    client = botocore_session.get_session().create_client(
        "devicefarm",
        region_name="us-west-2",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="x",
    )
    with Stubber(client) as stubber, client_factory(lambda region: client):
        yield client, stubber
        stubber.assert_no_pending_responses()


# -- helpers ----------------------------------------------------------------------------------
def arm64_binary(folder: Path) -> Path:
    header = bytearray(64)
    header[:7] = b"\x7fELF\x02\x01\x01"
    header[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
    path = folder / "benchmark_model"
    path.write_bytes(bytes(header) + b"\0" * 256)
    return path


class Events:
    def __init__(self) -> None:
        self.sink = EventSink()
        self.seen: list[LogEvent] = []
        self.sink.subscribe(self.seen.append)

    def text(self) -> str:
        return "\n".join(e.message for e in self.seen)


def phone(binary: Path, **config: Any) -> Device:
    settings = {"project_arn": PROJECT, "benchmark_binary": str(binary), "poll_interval": 0.01}
    return Device(
        name="phone",
        runner=None,
        spec=DeviceSpec(device_name="Pixel 8"),
        provider_type="aws",
        provider_config=DeviceFarmConfig(**{**settings, **config}),
    )


def context(tmp_path: Path, device: Device, events: Events) -> HubContext:
    return HubContext(
        project_name="farm",
        artifact_base_dir=tmp_path / "store",
        devices=[device],
        events=events.sink,
    )


def model(tmp_path: Path) -> TFLiteCompiledModel:
    path = tmp_path / "tiny.tflite"
    path.write_bytes(b"\x1c\0\0\0TFL3" + bytes(range(256)) * 4)
    return TFLiteCompiledModel.from_path(path)


def artifacts_zip(log: str, exit_code: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zipped:
        zipped.writestr("Host_Machine_Files/$DEVICEFARM_LOG_DIR/benchmark.log", log)
        zipped.writestr("Host_Machine_Files/$DEVICEFARM_LOG_DIR/benchmark.exit", f"{exit_code}\n")
        zipped.writestr(
            "Host_Machine_Files/$DEVICEFARM_LOG_DIR/edgehub-device.txt",
            "ro.product.manufacturer=Google\nro.product.model=Pixel 8\nro.soc.model=Tensor G3\n",
        )
    return out.getvalue()


DEFAULT_FLAGS = {"num_runs": 100, "warmup_runs": 10, "use_xnnpack": True}
MODEL_FILTERS = [
    {"attribute": "PLATFORM", "operator": "EQUALS", "values": ["ANDROID"]},
    {"attribute": "MODEL", "operator": "CONTAINS", "values": ["Pixel 8"]},
]


def expect_uploads(
    stub: Stubber,
    s3: S3Standin,
    package: tuple[bytes, str],
    spec: tuple[bytes, str],
    *,
    fresh: bool,
) -> None:
    for (_data, sha), suffix, kind in (
        (package, ".tgz", "APPIUM_NODE_TEST_PACKAGE"),
        (spec, ".yml", "APPIUM_NODE_TEST_SPEC"),
    ):
        name = upload_name(sha, suffix)
        arn = f"{PROJECT.replace(':project:', ':upload:')}/{sha[:12]}"
        listed = [] if fresh else [{"arn": arn, "name": name, "status": "SUCCEEDED", "type": kind}]
        stub.add_response("list_uploads", {"uploads": listed}, {"arn": PROJECT, "type": kind})
        if not fresh:
            continue
        stub.add_response(
            "create_upload",
            {
                "upload": {
                    "arn": arn,
                    "name": name,
                    "url": s3.url(f"/put/{name}"),
                    "status": "INITIALIZED",
                }
            },
            {
                "projectArn": PROJECT,
                "name": name,
                "type": kind,
                "contentType": "application/octet-stream",
            },
        )
        stub.add_response(
            "get_upload", {"upload": {"arn": arn, "status": "PROCESSING"}}, {"arn": arn}
        )
        stub.add_response(
            "get_upload", {"upload": {"arn": arn, "status": "SUCCEEDED"}}, {"arn": arn}
        )


def expect_schedule(stub: Stubber, package_sha: str, spec_sha: str) -> None:
    upload = PROJECT.replace(":project:", ":upload:")
    stub.add_response(
        "schedule_run",
        {"run": {"arn": RUN, "status": "SCHEDULING"}},
        {
            "projectArn": PROJECT,
            "name": "edgehub tiny",
            "test": {
                "type": "APPIUM_NODE",
                "testPackageArn": f"{upload}/{package_sha[:12]}",
                "testSpecArn": f"{upload}/{spec_sha[:12]}",
            },
            "executionConfiguration": {"jobTimeoutMinutes": 6},
            "deviceSelectionConfiguration": {
                "filters": [{"attribute": "ARN", "operator": "IN", "values": [PIXEL["arn"]]}],
                "maxDevices": 1,
            },
        },
    )


def expect_finish(
    stub: Stubber, s3: S3Standin, log: str, *, result: str = "PASSED", exit_code: int = 0
) -> None:
    for status in ("PENDING_DEVICE", "RUNNING", "COMPLETED"):
        answer: dict[str, Any] = {"arn": RUN, "status": status}
        if status == "COMPLETED":
            answer["result"] = result
        stub.add_response("get_run", {"run": answer}, {"arn": RUN})
    s3.files["/artifacts.zip"] = artifacts_zip(log, exit_code)
    stub.add_response(
        "list_artifacts",
        {
            "artifacts": [
                {
                    "arn": RUN + "/a1",
                    "name": "Test spec output",
                    "type": "TESTSPEC_OUTPUT",
                    "extension": "txt",
                    "url": s3.url("/spec.txt"),
                },
                {
                    "arn": RUN + "/a2",
                    "name": "Customer Artifacts",
                    "type": "CUSTOMER_ARTIFACT",
                    "extension": "zip",
                    "url": s3.url("/artifacts.zip"),
                },
            ]
        },
        {"arn": RUN, "type": "FILE"},
    )
    if result in ("PASSED", "WARNED") and exit_code == 0:
        stub.add_response(
            "list_jobs", {"jobs": [{"arn": RUN + "/job", "device": PIXEL}]}, {"arn": RUN}
        )


# -- the provider -----------------------------------------------------------------------------
def test_profile_schedules_a_custom_run_and_reuses_uploads(
    tmp_path: Path, farm: tuple[Any, Stubber], s3: S3Standin
) -> None:
    _, stub = farm
    binary = arm64_binary(tmp_path)
    compiled = model(tmp_path)
    log = (DATA / "litert1.0_xnnpack_op_profile.log").read_text()
    package = build_test_package(binary, compiled.path.local())
    spec = build_test_spec(plan_benchmark({**DEFAULT_FLAGS, "num_threads": 4}))
    for fresh in (True, False):
        stub.add_response("list_devices", {"devices": [PIXEL]}, {"filters": MODEL_FILTERS})
        expect_uploads(stub, s3, package, spec, fresh=fresh)
        expect_schedule(stub, package[1], spec[1])
        expect_finish(stub, s3, log)
    events = Events()
    with context(tmp_path, phone(binary), events) as ctx:
        first = TFLiteProfiler(device="phone", threads=4).run(ctx, compiled)
        puts_after_first = dict(s3.puts)
        second = TFLiteProfiler(device="phone", benchmark_params={"num_threads": 4}).run(
            ctx, compiled
        )
        run = ctx.client.latest_run_log
    assert first.latency.value == pytest.approx(1.196) and second.latency.value == pytest.approx(
        1.196
    )
    # the package and the spec went up once, as built; the second profile uploaded nothing
    assert len(puts_after_first) == 2 and s3.puts == puts_after_first
    sent_package = puts_after_first[f"/put/{upload_name(package[1], '.tgz')}"]
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(sent_package))) as tar:
        assert sorted(tar.getnames()) == [
            "package/benchmark_model",
            "package/model.tflite",
            "package/package.json",
        ]
        assert tar.extractfile("package/model.tflite").read() == compiled.path.local().read_bytes()  # type: ignore[union-attr]
    sent_spec = puts_after_first[f"/put/{upload_name(spec[1], '.yml')}"].decode()
    assert "--graph=/data/local/tmp/edgehub/model.tflite" in sent_spec
    assert "--num_threads=4" in sent_spec and "--enable_op_profiling=true" in sent_spec
    assert "$DEVICEFARM_LOG_DIR" in sent_spec
    text = events.text()
    assert "pending device" in text and "running" in text and "completed" in text
    assert "already uploaded" in text
    assert run is not None
    metrics = {k: m.value for k, m in run.metrics.items()}
    assert metrics["$latency"] == pytest.approx(1.196)
    assert metrics["latency_p95_ms"] == pytest.approx(1.344)
    assert metrics["num_layers"] == 4
    params = {k: p.value for k, p in run.params.items()}
    assert params["aws_run_arn"] == RUN
    assert params["$device"].startswith("Google Pixel 8 (Android 14")
    assert params["delegate"] == "XNNPACK"
    stored = [p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file()]
    assert stored and not any(b"AKIDTEST" in blob for blob in stored)  # no key in the store


def test_resume_by_run_arn_schedules_nothing(
    tmp_path: Path, farm: tuple[Any, Stubber], s3: S3Standin
) -> None:
    _, stub = farm
    expect_finish(stub, s3, (DATA / "tf2.4_no_op_profile.log").read_text())
    events = Events()
    with context(tmp_path, phone(arm64_binary(tmp_path)), events) as ctx:
        result = resume_device_farm_run(ctx, TFLiteProfiler(device="phone"), RUN, model(tmp_path))
    assert result.latency.value == pytest.approx(1.5537)  # that log has no median: its mean
    assert "resuming Device Farm run" in events.text()
    assert "no op profile" in events.text()


@pytest.mark.parametrize("result", ["FAILED", "ERRORED", "STOPPED"])
def test_failed_run_is_recorded_failed_with_the_device_log_tail(
    tmp_path: Path, farm: tuple[Any, Stubber], s3: S3Standin, result: str
) -> None:
    _, stub = farm
    expect_finish(
        stub, s3, (DATA / "failed_old_binary.log").read_text(), result=result, exit_code=1
    )
    events = Events()
    with context(tmp_path, phone(arm64_binary(tmp_path)), events) as ctx:
        with pytest.raises(
            ProfileError, match=rf"ended {result}, benchmark_model exit 1.*Benchmarking failed"
        ):
            resume_device_farm_run(ctx, TFLiteProfiler(device="phone"), RUN, model(tmp_path))
        run = ctx.client.latest_run_log
    assert run is not None and run.status == "FAILED"
    assert "device: Failed to initialize the interpreter" in events.text()
    assert "benchmark_log" in run.artifacts


def test_interrupted_wait_leaves_the_run_going_and_says_how_to_stop_it(
    tmp_path: Path, farm: tuple[Any, Stubber], s3: S3Standin
) -> None:
    _, stub = farm
    # one status answer: the cancel comes with its "running" event, before the next poll
    stub.add_response("get_run", {"run": {"arn": RUN, "status": "RUNNING"}}, {"arn": RUN})
    events = Events()
    with context(tmp_path, phone(arm64_binary(tmp_path), timeout=600), events) as ctx:
        events.sink.subscribe(lambda e: ctx.cancel() if "running" in e.message else None)
        with pytest.raises(OperationCancelled):
            resume_device_farm_run(ctx, TFLiteProfiler(device="phone"), RUN, model(tmp_path))
        run = ctx.client.latest_run_log
    assert f"aws devicefarm stop-run --arn {RUN}" in events.text()
    assert f"--from-job {RUN}" in events.text()
    assert run is not None and run.status in ("KILLED", "FAILED")
    assert "stop run" not in events.text()  # edgehub did not stop it (nor try to)


@pytest.mark.parametrize(
    ("variable", "cap"),
    [("EDGEHUB_AWS_ARTIFACTS_MAX_MEMBER_BYTES", "4K"), ("EDGEHUB_AWS_ARTIFACTS_MAX_BYTES", "8K")],
)
def test_artifacts_over_their_caps_are_refused_naming_the_variable(
    tmp_path: Path,
    farm: tuple[Any, Stubber],
    s3: S3Standin,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    cap: str,
) -> None:
    _, stub = farm
    monkeypatch.setenv(variable, cap)
    expect_finish(stub, s3, "INFO: " + "x" * 20_000, result="FAILED", exit_code=1)
    with (
        context(tmp_path, phone(arm64_binary(tmp_path)), Events()) as ctx,
        pytest.raises(DeviceOutputError, match=f"over the limit of {cap[0]} KiB.*raise {variable}"),
    ):
        resume_device_farm_run(ctx, TFLiteProfiler(device="phone"), RUN, model(tmp_path))
    monkeypatch.setenv(variable, "1M")
    expect_finish(stub, s3, "INFO: " + "x" * 20_000, result="FAILED", exit_code=1)
    with (
        context(tmp_path, phone(arm64_binary(tmp_path)), Events()) as ctx,
        pytest.raises(ProfileError, match="ended FAILED"),  # raised, it lets the same zip in
    ):
        resume_device_farm_run(ctx, TFLiteProfiler(device="phone"), RUN, model(tmp_path))


def test_list_calls_follow_next_token_across_pages(
    tmp_path: Path, farm: tuple[Any, Stubber], s3: S3Standin
) -> None:
    client, stub = farm
    # devices: the only phone that matches is on the second page
    stub.add_response(
        "list_devices", {"devices": [], "nextToken": "page-2"}, {"filters": MODEL_FILTERS}
    )
    stub.add_response(
        "list_devices", {"devices": [PIXEL]}, {"filters": MODEL_FILTERS, "nextToken": "page-2"}
    )
    config = DeviceFarmConfig(project_arn=PROJECT)
    assert select_device(client, config, "Pixel 8", "phone").device == PIXEL
    # artifacts: the customer artifact zip is listed on the second page
    for status in ("RUNNING", "COMPLETED"):
        answer: dict[str, Any] = {"arn": RUN, "status": status, "result": "PASSED"}
        stub.add_response("get_run", {"run": answer}, {"arn": RUN})
    s3.files["/artifacts.zip"] = artifacts_zip((DATA / "tf2.4_no_op_profile.log").read_text(), 0)
    stub.add_response(
        "list_artifacts", {"artifacts": [], "nextToken": "next"}, {"arn": RUN, "type": "FILE"}
    )
    stub.add_response(
        "list_artifacts",
        {
            "artifacts": [
                {
                    "arn": RUN + "/a2",
                    "name": "Customer Artifacts",
                    "type": "CUSTOMER_ARTIFACT",
                    "extension": "zip",
                    "url": s3.url("/artifacts.zip"),
                }
            ]
        },
        {"arn": RUN, "type": "FILE", "nextToken": "next"},
    )
    stub.add_response("list_jobs", {"jobs": [{"arn": RUN + "/job", "device": PIXEL}]}, {"arn": RUN})
    with context(tmp_path, phone(arm64_binary(tmp_path)), Events()) as ctx:
        result = resume_device_farm_run(ctx, TFLiteProfiler(device="phone"), RUN, model(tmp_path))
    assert result.latency.value == pytest.approx(1.5537)


def test_a_cancel_during_a_long_poll_interval_stops_waiting_at_once(
    tmp_path: Path, farm: tuple[Any, Stubber], s3: S3Standin
) -> None:
    _, stub = farm
    stub.add_response("get_run", {"run": {"arn": RUN, "status": "RUNNING"}}, {"arn": RUN})
    events = Events()
    device = phone(arm64_binary(tmp_path), poll_interval=600)
    with context(tmp_path, device, events) as ctx:
        threading.Timer(0.5, ctx.cancel).start()
        started = time.monotonic()
        with pytest.raises(OperationCancelled, match="AWS Device Farm run"):
            resume_device_farm_run(ctx, TFLiteProfiler(device="phone"), RUN, model(tmp_path))
    assert time.monotonic() - started < 60  # not the 600 s poll interval
    assert f"--from-job {RUN}" in events.text()


def test_active_timeout_stops_the_run(
    tmp_path: Path, farm: tuple[Any, Stubber], s3: S3Standin
) -> None:
    _, stub = farm
    for _ in range(2):  # the second answer comes after one poll pause: past the timeout
        stub.add_response("get_run", {"run": {"arn": RUN, "status": "RUNNING"}}, {"arn": RUN})
    stub.add_response("stop_run", {"run": {"arn": RUN, "status": "STOPPING"}}, {"arn": RUN})
    events = Events()
    device = phone(arm64_binary(tmp_path), timeout=0.001)
    with (
        context(tmp_path, device, events) as ctx,
        pytest.raises(ProfileError, match="active for more than"),
    ):
        resume_device_farm_run(ctx, TFLiteProfiler(device="phone"), RUN, model(tmp_path))
    assert "asked Device Farm to stop run" in events.text()


def test_selector_matching_nothing_suggests_devices_and_schedules_nothing(
    tmp_path: Path, farm: tuple[Any, Stubber]
) -> None:
    _, stub = farm
    filters = [
        *MODEL_FILTERS[:1],
        {"attribute": "MODEL", "operator": "CONTAINS", "values": ["Pixle 8"]},
    ]
    stub.add_response("list_devices", {"devices": []}, {"filters": filters})
    stub.add_response("list_devices", {"devices": [PIXEL, GALAXY]}, {"filters": filters[:1]})
    device = phone(arm64_binary(tmp_path), model="Pixle 8")
    with (
        context(tmp_path, device, Events()) as ctx,
        pytest.raises(DeviceError, match="did you mean 'Google Pixel 8'"),
    ):
        TFLiteProfiler(device="phone").run(ctx, model(tmp_path))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"benchmark_binary": "/nonexistent/benchmark_model"}, "does not exist"),
        ({"project_arn": ""}, "has no project_arn"),
        ("x86", "not arm64"),
        ("flag", "not a flag of LiteRT's benchmark_model"),
        ("value", "values may hold"),
    ],
)
def test_bad_input_is_refused_before_any_call(
    tmp_path: Path, farm: tuple[Any, Stubber], change: Any, message: str
) -> None:
    binary = arm64_binary(tmp_path)
    params: dict[str, Any] | None = None
    config: dict[str, Any] = {}
    if change == "x86":
        data = bytearray(binary.read_bytes())
        data[18:20] = (62).to_bytes(2, "little")  # EM_X86_64
        binary.write_bytes(bytes(data))
    elif change == "flag":
        params = {"use_turbo": "true"}
    elif change == "value":
        params = {"num_threads": "4; reboot"}
    else:
        config = change
    with (
        context(tmp_path, phone(binary, **config), Events()) as ctx,
        pytest.raises(UsageError, match=message),
    ):
        TFLiteProfiler(device="phone", benchmark_params=params).run(ctx, model(tmp_path))
    # no call reached the stubbed client (any would have failed as unexpected)


def test_no_credentials_is_one_line_naming_the_chain(tmp_path: Path) -> None:
    (tmp_path / "bm").write_bytes(arm64_binary(tmp_path).read_bytes())
    (tmp_path / "m.tflite").write_bytes(b"TFL3")
    (tmp_path / "hub.toml").write_text(
        '[devices.phone]\nprovider = "aws"\nspec = "Pixel 8"\n\n[devices.phone.aws]\n'
        f'project_arn = "{PROJECT}"\nbenchmark_binary = "bm"\n'
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AWS_EC2_METADATA_DISABLED": "true"}
    hub = Path(sys.executable).with_name("hub")
    done = subprocess.run(
        [str(hub), "exec", "profile", "tflite", "m.tflite", "--device", "phone"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no AWS credentials found" in lines[0] and "AWS_PROFILE" in lines[0]
    assert "Traceback" not in done.stderr


def test_devices_check_names_the_credential_source_project_and_phone(
    farm: tuple[Any, Stubber], tmp_path: Path
) -> None:
    _, stub = farm
    stub.add_response(
        "get_project", {"project": {"arn": PROJECT, "name": "phones"}}, {"arn": PROJECT}
    )
    busy = {**GALAXY, "availability": "BUSY"}
    stub.add_response("list_devices", {"devices": [busy, PIXEL]}, {"filters": MODEL_FILTERS})
    config = DeviceFarmConfig(project_arn=PROJECT, benchmark_binary=str(tmp_path / "bm"))
    check = check_device_farm(config, "Pixel 8", "phone")
    assert check.ok, check.message
    assert "project 'phones'" in check.message
    assert "Google Pixel 8" in check.message  # the available one, not the busy one
    assert not check_device_farm(DeviceFarmConfig(), None, "phone").ok  # no project_arn


# -- the benchmark log --------------------------------------------------------------------------
def test_log_of_litert_1_0_with_op_profile() -> None:
    parsed = parse_benchmark_log((DATA / "litert1.0_xnnpack_op_profile.log").read_text())
    assert parsed.metrics["latency"] == pytest.approx(1.196)  # the timed phase's median
    assert parsed.metrics["runs"] == 812 and parsed.metrics["load_time"] == pytest.approx(2.874)
    assert parsed.metrics["peak_memory_usage"] == pytest.approx(6.5)
    assert parsed.metrics["peak_memory_footprint_mb"] == pytest.approx(9.875)
    assert parsed.params == {"delegate": "XNNPACK", "delegate_coverage": "completely"}
    assert [round(r["time_us"]) for r in parsed.layers] == [498, 390, 100, 212]
    assert parsed.layers[0]["type"] == "Convolution (NHWC, F32) IGEMM"
    assert {r["compute_unit"] for r in parsed.layers} == {"CPU"}  # XNNPACK runs on the CPU


def test_log_of_tf_2_4_without_op_profile_or_percentiles() -> None:
    parsed = parse_benchmark_log((DATA / "tf2.4_no_op_profile.log").read_text())
    assert parsed.metrics["latency"] == pytest.approx(1.5537)  # no median printed: the mean
    assert "latency_median_ms" not in parsed.metrics
    assert parsed.metrics["peak_memory_usage"] == pytest.approx(3.52734)
    assert parsed.layers == [] and parsed.op_profile is False


def test_log_of_a_failed_benchmark_has_no_latency() -> None:
    parsed = parse_benchmark_log((DATA / "failed_old_binary.log").read_text())
    assert "latency" not in parsed.metrics and parsed.layers == []
