"""Resuming a component run from an AI Hub job submitted earlier (a run interrupted while it
waited, or one whose wait timed out), instead of submitting it again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import CompileError, DeviceError, InvokeError, ProfileError, UsageError
from edgehub.toolchains.qai_hub.client import hub_call
from edgehub.toolchains.qai_hub.session import JobPlan, job_plan, session_for
from edgehub.tracking.run_type import RunType

if TYPE_CHECKING:
    from edgehub.core.component.base import Component
    from edgehub.core.context import HubContext
    from edgehub.errors import ToolchainError


KINDS: dict[str, tuple[set[str], type[ToolchainError]]] = {
    RunType.COMPILE.value: ({"compile", "quantize"}, CompileError),
    RunType.PROFILE.value: ({"profile"}, ProfileError),
    RunType.INFERENCE.value: ({"inference"}, InvokeError),
}


def job_kind(job: Any) -> str:
    """``compile``, ``quantize``, ``profile`` (an inference job with profiling) or
    ``inference``."""
    kind = str(getattr(job, "job_type", "") or "")
    if kind == "inference" and getattr(job, "profiling", False):
        return "profile"
    return kind


def _device_for(ctx: HubContext, job: Any, kind: str) -> str:
    hub_devices = [
        d for d in ctx.devices.values() if str(d.provider_type) == ProviderType.QAI_HUB.value
    ]
    target = getattr(getattr(job, "device", None), "name", None)
    if kind == "quantize" and hub_devices:
        return hub_devices[0].name
    for dev in hub_devices:
        if target and dev.spec.device_name == target:
            return dev.name
    raise DeviceError(
        f"qai_hub job {job.job_id} ran on {target or 'an unknown device'!r}, and no qai_hub "
        f"device in {ctx.device_source} has that device_name; pass device=NAME"
    )


def resume_job(
    ctx: HubContext,
    component: Component,
    job_id: str,
    *inputs: Any,
    device: str | None = None,
    **options: Any,
) -> Any:
    """Run ``component`` as ``component.run(ctx, *inputs, **options)`` would, but attached to
    AI Hub job ``job_id`` instead of submitting a new one (a compile run resumed from its
    quantize job submits only the compile job). ``device`` defaults to the context device
    whose device_name is the job's. Returns the component's output."""
    run_type = str(type(component).run_type)
    if run_type not in KINDS:
        raise UsageError(f"{type(component).__name__} runs no Qualcomm AI Hub jobs")
    kinds, failure = KINDS[run_type]
    hub = session_for(ctx).hub
    job = hub_call(hub, failure, f"looking up job {job_id}", hub.get_job, job_id)
    kind = job_kind(job)
    if kind not in kinds:
        raise UsageError(
            f"qai_hub job {job_id} is a {kind} job; {type(component).__name__} resumes "
            f"{' or '.join(sorted(kinds))} jobs"
        )
    name = device or _device_for(ctx, job, kind)
    with job_plan(JobPlan(resume={kind: job})):
        return component.run(ctx, *inputs, device=name, **options)
