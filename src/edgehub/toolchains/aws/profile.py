"""The ``aws`` provider of `TFLiteProfiler`: LiteRT's ``benchmark_model`` on a phone of AWS
Device Farm, in a custom test environment.

Everything the run needs is checked before anything is sent. The test package and spec are
uploaded (reused by content), the run is scheduled and polled, and the benchmark's log is
parsed into the profiler's figures. Interrupted, the run keeps going on Device Farm:
`resume_device_farm_run` (``hub exec profile … --from-job RUN_ARN``) attaches to it again.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import DeviceError, OperationCancelled, ProfileError, UsageError
from edgehub.toolchains.aws.client import farm_call, farm_pages, make_client
from edgehub.toolchains.aws.config import DeviceFarmConfig, farm_region
from edgehub.toolchains.aws.devices import describe_device, select_device
from edgehub.toolchains.aws.package import (
    DEVICE_INFO_NAME,
    EXIT_NAME,
    LOG_NAME,
    build_test_package,
    build_test_spec,
    check_arm64_binary,
    model_file,
    plan_benchmark,
)
from edgehub.toolchains.aws.transfer import download, read_members
from edgehub.toolchains.aws.uploads import content_upload
from edgehub.toolchains.options import provides, read_options
from edgehub.toolchains.outputs import log_figures
from edgehub.toolchains.polling import pause
from edgehub.toolchains.tflite.benchmark_log import parse_benchmark_log
from edgehub.toolchains.tflite.components import (
    TFLiteCompiledModel,
    TFLiteProfiler,
    TFLiteProfilingResult,
)

if TYPE_CHECKING:
    from edgehub.core.component.base import Component
    from edgehub.core.context import HubContext


QUEUED = {"PENDING", "PENDING_CONCURRENCY", "PENDING_DEVICE", "PROCESSING", "SCHEDULING"}
GOOD_RESULTS = {"PASSED", "WARNED"}
_RESUME: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "edgehub_aws_resume", default=None
)


def resume_device_farm_run(ctx: HubContext, component: Component, run_arn: str, *args: Any) -> Any:
    """``component.run(ctx, *args)`` attached to Device Farm run ``run_arn`` instead of
    scheduling a new one."""
    if not isinstance(component, TFLiteProfiler):
        raise UsageError(
            f"{type(component).__name__} runs no AWS Device Farm jobs; only TFLiteProfiler does"
        )
    token = _RESUME.set(run_arn)
    try:
        return component.run(ctx, *args)
    finally:
        _RESUME.reset(token)


def _flags_from_options(options: dict[str, Any], params: dict[str, Any] | None) -> dict[str, Any]:
    merged = {
        "num_runs": options["runs"],
        "warmup_runs": options["warmup"],
        "use_xnnpack": options["xnnpack"],
    }
    if options["threads"] is not None:
        merged["num_threads"] = options["threads"]
    merged.update({str(k).lstrip("-"): v for k, v in (params or {}).items()})
    return merged


@contextlib.contextmanager
def _waiting(ctx: HubContext, arn: str) -> Iterator[None]:
    try:
        yield
    except (KeyboardInterrupt, OperationCancelled):
        ctx.events.warning(
            f"stopped waiting; AWS Device Farm run {arn} keeps running; resume with "
            f"`hub exec profile … --from-job {arn}`, or stop it with `aws devicefarm stop-run "
            f"--arn {arn}`"
        )
        raise


def _stop(ctx: HubContext, client: Any, arn: str) -> None:
    try:
        farm_call(ProfileError, "stopping the run", client.stop_run, arn=arn)
        ctx.events.info(f"aws: asked Device Farm to stop run {arn}")
    except Exception as error:  # the failure that made us stop is the one to report
        ctx.events.warning(f"aws: could not stop run {arn}: {error}")


def _wait(ctx: HubContext, client: Any, arn: str, config: DeviceFarmConfig) -> dict[str, Any]:
    """Poll run ``arn`` until it completes; status changes are events on the run."""
    last = None
    active = queued = 0.0
    tick = time.monotonic()
    while True:
        if ctx.cancelled:
            raise OperationCancelled("stopped waiting for the AWS Device Farm run")
        run = farm_call(ProfileError, "reading the run's status", client.get_run, arn=arn)["run"]
        now = time.monotonic()
        status = str(run.get("status", ""))
        if last in QUEUED:
            queued += now - tick
        elif last is not None:
            active += now - tick
        tick = now
        if status != last:
            last = status
            ctx.events.info(f"aws run {arn.rsplit('/', 1)[-1]}: {status.lower().replace('_', ' ')}")
        if status == "COMPLETED":
            return dict(run)
        if status not in QUEUED and active > config.timeout:
            _stop(ctx, client, arn)
            raise ProfileError(
                f"AWS Device Farm run {arn} was active for more than {config.timeout:g} s "
                "(timeout under [devices.NAME.aws]); it was stopped"
            )
        if status in QUEUED and config.queue_timeout and queued > config.queue_timeout:
            _stop(ctx, client, arn)
            raise ProfileError(
                f"AWS Device Farm run {arn} waited in the queue for more than "
                f"{config.queue_timeout:g} s (queue_timeout); it was stopped"
            )
        pause(ctx, config.poll_interval)


def _artifacts(client: Any, arn: str) -> dict[str, bytes]:
    """The benchmark's files from the run's customer artifacts (empty if there are none)."""
    found: dict[str, bytes] = {}
    listed = farm_pages(
        ProfileError,
        "listing the run's artifacts",
        client.list_artifacts,
        "artifacts",
        arn=arn,
        type="FILE",
    )
    for artifact in listed:
        if artifact.get("type") == "CUSTOMER_ARTIFACT" and artifact.get("url"):
            data = download(str(artifact["url"]), "the run's artifacts")
            wanted = {LOG_NAME, EXIT_NAME, DEVICE_INFO_NAME} - set(found)
            found.update(read_members(data, wanted, "the run's artifacts"))
    return found


def _tail(text: str, lines: int = 12) -> list[str]:
    return [line.rstrip()[:300] for line in text.splitlines()[-lines:] if line.strip()]


def _device_props(raw: bytes) -> dict[str, str]:
    props = {}
    for line in raw.decode("utf-8", "replace").splitlines()[:64]:
        key, sep, value = line.partition("=")
        if sep and key.startswith("ro.") and value.strip():
            props[key.strip()[:64]] = value.strip()[:128]
    return props


def _job_device(client: Any, arn: str) -> dict[str, Any] | None:
    answer = farm_call(ProfileError, "listing the run's jobs", client.list_jobs, arn=arn)
    jobs = answer.get("jobs") or []
    device = jobs[0].get("device") if jobs else None
    return dict(device) if isinstance(device, dict) else None


@provides(
    TFLiteProfiler, ProviderType.AWS, "benchmark_params", "runs", "warmup", "threads", "xnnpack"
)
def _profile_tflite_aws(
    ctx: HubContext, model: TFLiteCompiledModel, **options: Any
) -> TFLiteProfilingResult:
    """Profile a ``.tflite`` model on an AWS Device Farm phone with LiteRT's benchmark_model."""
    o = read_options(TFLiteProfiler, options)
    if o.device is None:
        raise DeviceError("TFLiteProfiler on aws needs a device")
    dev = ctx.device(o.device)
    config = dev.get_provider_config(DeviceFarmConfig, TFLiteProfiler) or DeviceFarmConfig()
    resume = _RESUME.get()
    path = model_file(Path(model.path.to_local(ctx).local()))
    chosen = {"runs": o.runs, "warmup": o.warmup, "threads": o.threads, "xnnpack": o.xnnpack}
    plan = plan_benchmark(_flags_from_options(chosen, o.benchmark_params))
    for name, value in plan.overridden.items():
        ctx.events.info(
            f"aws: benchmark_params {name}={value} is set by edgehub and was overridden"
        )
    binary = Path(config.benchmark_binary)
    region = farm_region(config, o.device, run_arn=resume or "")
    if not resume:
        if not config.project_arn:
            raise UsageError(
                f"aws device {o.device!r} has no project_arn; set project_arn under "
                f"[devices.{o.device}.aws] to your Device Farm project's ARN"
            )
        check_arm64_binary(binary)
    client, source = make_client(region)
    ctx.events.info(f"aws: credentials from {source} (not stored)")
    ctx.client.log_param("$runtime", "TensorFlow Lite")
    ctx.client.log_params({f"benchmark.{k}": v for k, v in plan.flags.items()})
    if resume:
        arn = resume
        ctx.events.info(f"aws: resuming Device Farm run {arn} instead of scheduling anew")
        ctx.client.log_param("aws_resumed_run_arn", arn)
    else:
        selection = select_device(client, config, dev.spec.device_name, o.device)
        ctx.events.info(f"aws: device {selection.label()}")
        uploads = (
            (*build_test_package(binary, path), ".tgz", "PACKAGE", "the model and benchmark_model"),
            (*build_test_spec(plan), ".yml", "SPEC", "the test spec"),
        )
        package_arn, spec_arn = (
            content_upload(ctx, client, config.project_arn, data=data, sha256=sha256,
                           suffix=suffix, kind=f"APPIUM_NODE_TEST_{kind}", what=what,
                           poll=min(config.poll_interval, 5.0))
            for data, sha256, suffix, kind, what in uploads
        )  # fmt: skip
        scheduled = farm_call(
            ProfileError,
            "scheduling the run",
            client.schedule_run,
            projectArn=config.project_arn,
            name=f"edgehub {path.stem}"[:256],
            test={"type": "APPIUM_NODE", "testPackageArn": package_arn, "testSpecArn": spec_arn},
            executionConfiguration={"jobTimeoutMinutes": max(1, int(config.timeout // 60) + 1)},
            **selection.schedule_params(),
        )["run"]
        arn = str(scheduled["arn"])
    ctx.client.log_param("aws_run_arn", arn)
    ctx.client.log_tag("aws_run", arn)
    ctx.events.info(f"aws run {arn}")
    with _waiting(ctx, arn):
        run = _wait(ctx, client, arn, config)
    files = _artifacts(client, arn)
    log_text = files.get(LOG_NAME, b"").decode("utf-8", "replace")
    if log_text:
        log_path = ctx.artifact_dir / LOG_NAME
        log_path.write_text(log_text, encoding="utf-8")
        ctx.client.log_artifact(log_path, name="benchmark_log")
    exit_text = files.get(EXIT_NAME, b"").decode("ascii", "replace").strip()
    result = str(run.get("result", ""))
    if result not in GOOD_RESULTS or (exit_text and exit_text != "0"):
        for line in _tail(log_text):
            ctx.events.warning(f"device: {line}")
        why = " ".join(str(run.get("message") or "").split())[:200]
        last = (_tail(log_text, 1) or ["no benchmark log came back"])[0]
        code = f", benchmark_model exit {exit_text}" if exit_text and exit_text != "0" else ""
        raise ProfileError(
            f"AWS Device Farm run {arn} ended {result or 'without a result'}{code}"
            f"{': ' + why if why else ''}; last log line: {last}"
        )
    parsed = parse_benchmark_log(log_text)
    if "latency" not in parsed.metrics:
        raise ProfileError(
            f"AWS Device Farm run {arn}: the benchmark log has no timed runs; last line: "
            f"{(_tail(log_text, 1) or ['(empty log)'])[0]}"
        )
    if not parsed.op_profile:
        ctx.events.warning("aws: the benchmark log has no op profile; no per-layer rows")
    props = _device_props(files.get(DEVICE_INFO_NAME, b""))
    job_device = _job_device(client, arn)
    label = describe_device(job_device) if job_device else props.get("ro.product.model", "")
    ctx.client.log_param("$device", label or o.device)
    ctx.client.log_environment(
        {"aws_device": label, **{f"device.{k}": v for k, v in props.items()}}
    )
    log_figures(ctx, parsed.metrics)
    ctx.client.log_params(parsed.params)
    metrics = parsed.metrics
    ctx.events.info(
        f"latency: {'median' if 'latency_median_ms' in metrics else 'mean'} "
        f"{metrics['latency']:.3f} ms over {int(metrics.get('runs', 0))} runs on "
        f"{label or o.device}"
    )
    document = {
        "aws_run_arn": arn,
        "device": job_device,
        "device_properties": props,
        "stats": metrics,
        "params": parsed.params,
        "layers": parsed.layers,
    }
    profile_json = ctx.artifact_dir / "profile.json"
    profile_json.write_text(json.dumps(document, indent=1), encoding="utf-8")
    ctx.client.log_artifact(profile_json, name="output_file")
    output: TFLiteProfilingResult = TFLiteProfilingResult.from_current_run(ctx)
    return output
