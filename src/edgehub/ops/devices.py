"""The project's devices, and writing a starter hub.toml."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgehub.errors import UsageError
from edgehub.ops.project import Project

TEMPLATE = Path(__file__).with_name("hub_template.toml")  # the repository's hub.toml, bar two lines


@dataclass(frozen=True)
class DeviceRow:
    name: str
    provider: str | None
    spec: str | None
    ssh: str | None
    places: str | None = None  # a labgrid pool's matching places and who holds them
    health: str | None = None  # failed health checks / quarantine of its boards, if any

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def list_devices(project: Project) -> list[DeviceRow]:
    """The devices hub.toml defines, in file order; for a labgrid pool device, its places and
    who holds them (asked of the coordinator); for each, its boards' failed health checks and
    quarantine (`edgehub.acquire.board_health`)."""
    rows = []
    for name, section in project.config.devices.items():
        ssh = getattr(section, "ssh", None)
        where = f"{ssh.user}@{ssh.host}:{ssh.port}" if ssh is not None else None
        places = pool_places(project, name) if section.labgrid is not None else None
        health = health_line(project, name)
        rows.append(DeviceRow(name, section.provider, section.spec, where, places, health))
    return rows


def health_line(project: Project, name: str) -> str | None:
    """Device ``name``'s boards that failed health checks, one line (None: all healthy)."""
    from edgehub.acquire.board_health import device_health
    from edgehub.errors import EdgehubError

    try:
        found = device_health(project.config, name)
    except EdgehubError:
        return None
    if not found:
        return None
    if len(found) == 1 and found[0][0] == name:
        return found[0][1].describe()
    return "; ".join(f"{label}: {record.describe()}" for label, record in found)


def pool_places(project: Project, name: str) -> str:
    """``b1 free, b2 held by host/user`` for device ``name``'s labgrid pool (one line)."""
    from edgehub.acquire.labgrid_pool import device_places
    from edgehub.errors import EdgehubError

    try:
        places = device_places(project.config, name) or []
    except EdgehubError as error:
        return f"pool unreachable: {error}"
    if not places:
        return "no matching places"
    return ", ".join(
        f"{p.name} held by {p.acquired_by}" if p.acquired_by else f"{p.name} free" for p in places
    )


def release_device(project: Project, name: str, *, force: bool = False) -> list[str]:
    """Free device ``name``'s labgrid places whose holder is gone (with ``force``, every held
    place), a line per place (`edgehub.acquire.place_holders.release_device`)."""
    from edgehub.acquire.place_holders import release_device as release

    return release(project.config, name, force=force)


def unquarantine(project: Project, name: str) -> list[str]:
    """Clear the failures and quarantine of device ``name``'s boards; what was cleared
    (`edgehub.acquire.board_health.unquarantine`)."""
    from edgehub.acquire.board_health import unquarantine as clear

    return clear(project.config, name)


def init_project(directory: Path, name: str | None = None) -> Path:
    """Write a starter hub.toml in ``directory``: `TEMPLATE`, the commented file the repository's
    hub.toml shows (this machine as ``local``, the other kinds of device as commented-out
    blocks), named ``name``; refuses to overwrite one.

    The name goes in through the TOML library (`ConfigDocument`), so quotes, newlines or
    control characters in it stay part of the name and the file always loads back; the
    document is checked by the config loader before it is written.
    """
    from edgehub.config.save import ConfigDocument

    path = directory / "hub.toml"
    if os.path.lexists(path):  # a link too, dangling or not: never write where it points
        raise UsageError(f"{path} already exists; edit it, or remove it first")
    name = name or directory.resolve().name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"project name {name!r} is not UTF-8 text; name the project with 'hub init --name NAME'"
        ) from None
    document = ConfigDocument(path, TEMPLATE.read_text(encoding="utf-8"))
    document.set(("project", "name"), name)
    document.save()
    return path
