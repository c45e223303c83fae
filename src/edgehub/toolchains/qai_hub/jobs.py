"""AI Hub jobs on a run: submitted (or attached to), recorded and waited for."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edgehub.errors import OperationCancelled, ToolchainError
from edgehub.toolchains.polling import pause
from edgehub.toolchains.qai_hub.client import QAIHubUnreachable, hub_call, one_line
from edgehub.toolchains.qai_hub.config import JobKind, QAIHubConfig
from edgehub.toolchains.qai_hub.devices import hub_devices
from edgehub.toolchains.qai_hub.session import current_plan, session_for

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


STATE_WORDS = {
    "CREATED": "created, waiting in the queue",
    "OPTIMIZING_MODEL": "optimizing the model",
    "QUANTIZING_MODEL": "quantizing the model",
    "PROVISIONING_DEVICE": "provisioning a device",
    "MEASURING_PERFORMANCE": "measuring performance",
    "RUNNING_INFERENCE": "running inference",
    "LINKING_MODELS": "linking models",
    "SUCCESS": "success",
    "FAILED": "failed",
}
Submit = Callable[[list[str]], Any]


def run_job(
    ctx: HubContext,
    kind: JobKind,
    key: str,
    device: str | None,
    config: QAIHubConfig,
    failure: type[ToolchainError],
    submit: Callable[..., Any],
    uploads: Callable[[], dict[str, Any]],
    component: type[Any] | None = None,
    **fields: Any,
) -> Any:
    """The ``kind`` job, submitted or attached to (`obtain_job`), recorded on the run and
    waited for. ``submit`` (the client's ``submit_*_job``) gets what ``uploads()`` returns
    (uploaded only when the job is submitted), the devices of ``component`` and ``fields``;
    ``key`` tells a fan-out's jobs apart."""
    hub = session_for(ctx).hub

    def submitted(names: list[str]) -> Any:
        uploaded = uploads()
        if component is not None:
            uploaded["device"] = hub_devices(ctx, names, component, failure)
        what = f"submitting the {kind} job"
        return hub_call(hub, failure, what, submit, **uploaded, **fields)

    job = obtain_job(ctx, kind, key, device, submitted)
    record_job(ctx, kind, job)
    wait_for_job(ctx, kind, job, config, failure)
    return job


def obtain_job(ctx: HubContext, kind: JobKind, key: str, device: str | None, submit: Submit) -> Any:
    """The job of ``kind`` for context device ``device`` (None: a device-less quantize job):
    one given to `resume_job`, else submitted; in a fan-out the first call submits it for every
    device at once and later calls take theirs. ``submit(device_names)`` returns one job, or a
    list in device order."""
    plan = current_plan()
    if plan is not None and kind in plan.resume:
        job = plan.resume.pop(kind)
        ctx.events.info(f"resuming qai_hub {kind} job {job.job_id} instead of submitting anew")
        ctx.client.log_param("qai_hub_resumed_job_id", job.job_id)
        return job
    if plan is None or not plan.devices or (device is not None and device not in plan.devices):
        made = submit([device] if device else [])
        return made[0] if isinstance(made, list) else made
    jobs = plan.submitted.get((kind, key))
    if jobs is None:
        names: list[str | None] = list(plan.devices) if device is not None else [None]
        made = submit([n for n in names if n is not None])
        made_list = made if isinstance(made, list) else [made]
        jobs = dict(zip(names, made_list, strict=True))
        plan.submitted[(kind, key)] = jobs
    return jobs[device]


def record_job(ctx: HubContext, kind: JobKind, job: Any) -> None:
    """Log the job's id and URL on the run (they stay there if the run fails)."""
    ctx.client.log_param(f"qai_hub_{kind}_job_id", job.job_id)
    ctx.client.log_param(f"qai_hub_{kind}_job_url", job.url)
    ctx.client.log_tag(f"qai_hub_{kind}_job", str(job.job_id))
    hub_version = getattr(job, "hub_version", None)
    if hub_version:
        ctx.client.log_environment({"qai_hub_service": hub_version})
    ctx.events.info(f"qai_hub {kind} job {job.job_id}: {job.url}")


def describe(status: Any) -> str:
    words = STATE_WORDS.get(status.code, status.code.lower().replace("_", " "))
    message = one_line(status.message or "")
    return f"{words}: {message}" if message else words


def wait_for_job(
    ctx: HubContext, kind: JobKind, job: Any, config: QAIHubConfig, failure: type[ToolchainError]
) -> Any:
    """Wait until ``job`` finishes, each status change an event on the run. A job that fails,
    or does not finish within ``config.timeout`` seconds, is a ``failure``; Ctrl-C or a cancel
    stops waiting (not the job) and says how to resume."""
    hub = session_for(ctx).hub
    resume = f"resume with `hub exec … --from-job {job.job_id}`"
    started = time.monotonic()
    last = None
    try:
        while True:
            if ctx.cancelled:  # the TUI's cancel, hub exec --timeout: stop waiting
                raise OperationCancelled(f"stopped waiting for qai_hub {kind} job {job.job_id}")
            try:
                status = hub_call(hub, failure, f"reading the {kind} job's status", job.get_status)
            except QAIHubUnreachable as lost:  # the job goes on without us
                text = f"{lost}; job {job.job_id} keeps running, {resume}"
                raise QAIHubUnreachable(text) from None
            if status.code != last:
                last = status.code
                ctx.events.info(f"qai_hub {kind} job {job.job_id}: {describe(status)}")
            if status.success:
                return status
            if status.failure:
                reason = one_line(status.message or "") or "no reason given"
                raise failure(
                    f"qai_hub {kind} job {job.job_id} failed on the service: {reason} "
                    f"(details: {job.url})"
                )
            waited = time.monotonic() - started
            if waited >= config.timeout:
                raise failure(
                    f"qai_hub {kind} job {job.job_id} did not finish within "
                    f"{config.timeout:g} s (last status: {describe(status)}); it keeps running "
                    f"on the service at {job.url}; {resume}, or raise timeout in the qai_hub "
                    "provider config"
                )
            pause(ctx, min(config.poll_interval, config.timeout - waited))
    except (KeyboardInterrupt, OperationCancelled):
        ctx.events.warning(
            f"stopped waiting; qai_hub {kind} job {job.job_id} keeps running on the service "
            f"at {job.url}; {resume}"
        )
        raise


def record_qairt(ctx: HubContext, model: Any, config: QAIHubConfig) -> None:
    """Record the QAIRT version on the run: the one a compiled model says it was built with,
    else the version the config asked for."""
    hub = session_for(ctx).hub
    version = None
    key = getattr(getattr(hub, "ModelMetadataKey", None), "QAIRT_SDK_VERSION", None)
    if model is not None and key is not None:
        with contextlib.suppress(Exception):  # metadata comes lazily; a missing field is no error
            version = model.metadata.get(key)
    if version:
        ctx.client.log_param("qairt_version", str(version))
        ctx.client.log_environment({"qairt": str(version)})
    if config.qairt_version:
        ctx.client.log_param("qairt_version_requested", config.qairt_version)
