"""Choosing the phone: a device ARN, a device pool, or filters resolved through
``list_devices`` (the closest names suggested when nothing matches)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from edgehub.errors import DeviceError, ProfileError
from edgehub.toolchains.aws.client import farm_call, farm_pages
from edgehub.toolchains.aws.config import DeviceFarmConfig

_AVAILABILITY = {"HIGHLY_AVAILABLE": 0, "AVAILABLE": 1, "BUSY": 2, "TEMPORARY_NOT_AVAILABLE": 3}


class Selection:
    """Where a run goes: ``device`` (one phone, its record) or ``pool_arn`` (a device pool)."""

    def __init__(self, device: dict[str, Any] | None = None, pool_arn: str = "") -> None:
        self.device = device
        self.pool_arn = pool_arn

    def schedule_params(self) -> dict[str, Any]:
        """The ``schedule_run`` parameters that send the run there."""
        if self.device is None:
            return {"devicePoolArn": self.pool_arn}
        return {
            "deviceSelectionConfiguration": {
                "filters": [{"attribute": "ARN", "operator": "IN", "values": [self.device["arn"]]}],
                "maxDevices": 1,
            }
        }

    def label(self) -> str:
        return describe_device(self.device) if self.device else f"device pool {self.pool_arn}"


def describe_device(device: dict[str, Any]) -> str:
    """ "Google Pixel 8 (Android 14, arm64-v8a)"."""
    name = str(device.get("name") or device.get("model") or device.get("arn", "?"))
    maker = str(device.get("manufacturer") or "")
    if maker and not name.lower().startswith(maker.lower()):
        name = f"{maker} {name}"
    extra = [str(device.get("platform", "")).title() + " " + str(device.get("os", ""))]
    cpu = device.get("cpu") or {}
    if cpu.get("architecture"):
        extra.append(str(cpu["architecture"]))
    return f"{name} ({', '.join(e.strip() for e in extra if e.strip())})"


def _pages(client: Any, filters: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return farm_pages(
        ProfileError, "listing devices", client.list_devices, "devices", filters=filters
    )


def _filters(config: DeviceFarmConfig, spec: str | None) -> list[dict[str, Any]]:
    found = [{"attribute": "PLATFORM", "operator": "EQUALS", "values": [config.platform.upper()]}]
    for attribute, value, operator in (
        ("MANUFACTURER", config.manufacturer, "EQUALS"),
        ("OS_VERSION", config.os_version, "EQUALS"),
        ("MODEL", config.model or (spec or ""), "CONTAINS"),
    ):
        if value:
            found.append({"attribute": attribute, "operator": operator, "values": [value]})
    return found


def select_device(client: Any, config: DeviceFarmConfig, spec: str | None, name: str) -> Selection:
    """The phone (or pool) device ``name`` of hub.toml asks for; a selector that matches
    nothing is a `DeviceError` naming the closest devices of the platform."""
    if config.platform.upper() != "ANDROID":
        raise DeviceError(
            f"aws device {name!r}: platform {config.platform!r} is not supported; edgehub runs "
            "LiteRT's benchmark_model on ANDROID phones"
        )
    if config.device_arn:
        answer = farm_call(
            ProfileError, "looking up the device", client.get_device, arn=config.device_arn
        )
        return Selection(device=answer["device"])
    if config.device_pool_arn:
        return Selection(pool_arn=config.device_pool_arn)
    filters = _filters(config, spec)
    matches = list(_pages(client, filters))
    if not matches:
        every = sorted({str(d.get("name", "")) for d in _pages(client, filters[:1])} - {""})
        wanted = " ".join(str(f["values"][0]) for f in filters[1:]) or config.platform
        close = difflib.get_close_matches(wanted, every, n=3, cutoff=0.3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(f"{f['attribute'].lower()}={f['values'][0]!r}" for f in filters)
        raise DeviceError(
            f"no AWS Device Farm device matches aws device {name!r} ({shown}){hint} (set model, "
            "manufacturer, os_version or device_arn under [devices." + name + ".aws])"
        )
    matches.sort(
        key=lambda d: (_AVAILABILITY.get(str(d.get("availability")), 9), str(d.get("name")))
    )
    return Selection(device=matches[0])
