"""`check_device_farm`: what ``hub devices check`` says of an ``aws`` device — where the
credentials come from (never the keys), whether the project is reachable, and which phones
match the device's selector."""

from __future__ import annotations

from dataclasses import dataclass

from edgehub.errors import EdgehubError, ProfileError
from edgehub.toolchains.aws.client import farm_call, make_client
from edgehub.toolchains.aws.config import DeviceFarmConfig, farm_region
from edgehub.toolchains.aws.devices import select_device


@dataclass(frozen=True)
class DeviceFarmCheck:
    ok: bool
    message: str


def check_device_farm(config: DeviceFarmConfig, spec: str | None, name: str) -> DeviceFarmCheck:
    """Credentials, project and phone of aws device ``name``, each stated in one message."""
    if not config.project_arn:
        return DeviceFarmCheck(False, f"no project_arn under [devices.{name}.aws]")
    try:
        client, source = make_client(farm_region(config, name))
        project = farm_call(
            ProfileError, "reading the project", client.get_project, arn=config.project_arn
        )
        selection = select_device(client, config, spec, name)
    except EdgehubError as error:
        return DeviceFarmCheck(False, str(error))
    title = str(project.get("project", {}).get("name", "?"))
    return DeviceFarmCheck(
        True, f"credentials from {source}; project {title!r}; runs on {selection.label()}"
    )
