"""One component call on several AI Hub devices: the jobs are submitted together (the
client's multi-device submission) and each device gets its own run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import DeviceError, EdgehubError, ToolchainError, UsageError
from edgehub.toolchains.qai_hub.devices import hub_config
from edgehub.toolchains.qai_hub.session import JobPlan, job_plan

if TYPE_CHECKING:
    from edgehub.core.component.base import Component
    from edgehub.core.context import HubContext


class FanOutError(ToolchainError):
    """Some device runs of a fan-out failed; ``results`` holds the others' outputs."""

    def __init__(self, message: str, results: dict[str, Any], errors: dict[str, Exception]):
        super().__init__(message)
        self.results = results
        self.errors = errors


def run_on_devices(
    ctx: HubContext, component: Component, *inputs: Any, devices: Sequence[str], **options: Any
) -> dict[str, Any]:
    """``component.run(ctx, *inputs, device=name, **options)`` for each qai_hub device, with
    one submission for all of them. Returns ``{device: output}``; if any run failed, a
    `FanOutError` after all have run."""
    names = list(dict.fromkeys(devices))
    if not names:
        raise UsageError("run_on_devices needs at least one device")
    cls = type(component)
    for name in names:
        if str(ctx.device(name).provider_type) != ProviderType.QAI_HUB.value:
            raise DeviceError(f"device {name!r} is not a qai_hub device; a fan-out needs those")
    configs = {name: hub_config(ctx, name, cls) for name in names}
    if len(set(configs.values())) != 1:
        raise UsageError(
            f"devices {', '.join(names)} have different qai_hub settings for {cls.__name__}; "
            "one submission needs one set (run them separately)"
        )
    results: dict[str, Any] = {}
    errors: dict[str, Exception] = {}
    with job_plan(JobPlan(devices=names)):
        for name in names:
            try:
                results[name] = component.run(ctx, *inputs, device=name, **options)
            except EdgehubError as error:
                errors[name] = error
    if errors:
        detail = "; ".join(f"{name}: {error}" for name, error in errors.items())
        raise FanOutError(
            f"{len(errors)} of {len(names)} device runs failed: {detail}", results, errors
        )
    return results
