"""Qualcomm AI Hub devices by `DeviceSpec.device_name`, checked against the service's list
(fetched once per context), with the closest names suggested on a typo."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from edgehub.core.component.provider_type import ProviderType
from edgehub.errors import DeviceError, ToolchainError
from edgehub.toolchains.qai_hub.client import hub_call
from edgehub.toolchains.qai_hub.config import QAIHubConfig
from edgehub.toolchains.qai_hub.session import session_for

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


def hub_config(ctx: HubContext, device: str, component: type[Any]) -> QAIHubConfig:
    """The device's `QAIHubConfig` for ``component`` (the defaults when none is set)."""
    dev = ctx.device(device)
    return dev.get_provider_config(QAIHubConfig, component) or QAIHubConfig()


def service_devices(ctx: HubContext, failure: type[ToolchainError]) -> list[Any]:
    """The service's devices (``qai_hub.Device`` objects), fetched once per context."""
    session = session_for(ctx)
    with session.lock:
        if session.devices is None:
            session.devices = list(
                hub_call(session.hub, failure, "listing devices", session.hub.get_devices)
            )
        return session.devices


def hub_device(
    ctx: HubContext, device: str, component: type[Any], failure: type[ToolchainError]
) -> Any:
    """The ``qai_hub.Device`` for context device ``device``; logs ``$device``."""
    dev = ctx.device(device)
    if str(dev.provider_type) != ProviderType.QAI_HUB.value:
        raise DeviceError(f"device {device!r} is not a qai_hub device ({dev.provider_type})")
    name = dev.spec.device_name
    if not name:
        raise DeviceError(
            f"qai_hub device {device!r} has no device_name; set it to an AI Hub device name "
            "such as 'Samsung Galaxy S24' (see `qai-hub list-devices`)"
        )
    known = sorted({d.name for d in service_devices(ctx, failure)})
    if name not in known:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise DeviceError(
            f"Qualcomm AI Hub has no device named {name!r} (device {device!r}){hint} "
            "(`qai-hub list-devices` lists them)"
        )
    config = hub_config(ctx, device, component)
    hub = session_for(ctx).hub
    return hub.Device(name=name, os=config.device_os, attributes=list(config.device_attributes))


def start_on_device(
    ctx: HubContext, device: str | None, component: type[Any], failure: type[ToolchainError]
) -> tuple[Any, QAIHubConfig]:
    """Check the client, resolve the device and record both on the run: returns the client
    (the ``qai_hub`` module) and the device's config for ``component``."""
    if device is None:
        raise DeviceError(f"{component.__name__} on qai_hub needs a device")
    session = session_for(ctx)
    target = hub_device(ctx, device, component, failure)
    ctx.client.log_param("$device", target.name)
    ctx.client.log_environment(
        {"qai_hub_client": getattr(session.hub, "__version__", None), "qai_hub_device": target.name}
    )
    return session.hub, hub_config(ctx, device, component)


def hub_devices(
    ctx: HubContext, names: list[str], component: type[Any], failure: type[ToolchainError]
) -> Any:
    """The ``device`` argument of a submission: one ``qai_hub.Device``, or a list for several."""
    devices = [hub_device(ctx, name, component, failure) for name in names]
    return devices[0] if len(devices) == 1 else devices
