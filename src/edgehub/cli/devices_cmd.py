"""`hub devices`, `hub init` and `hub doctor`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from edgehub.cli.output import print_json, table

STARTER = """# edgehub project: devices and provider settings. See `hub devices`.
[project]
name = "{name}"

[devices.local]
provider = "local"
"""


def add_parser(commands: Any) -> None:
    devices = commands.add_parser("devices", help="the devices hub.toml defines")
    devices.add_argument("--json", action="store_true")
    devices.set_defaults(handler=_devices)
    init = commands.add_parser("init", help="write a starter hub.toml in this directory")
    init.add_argument("--name", help="project name (default: the directory name)")
    init.set_defaults(handler=_init)
    doctor = commands.add_parser("doctor", help="check hub.toml, Docker and the images")
    doctor.set_defaults(handler=_doctor)


def _devices(args: argparse.Namespace) -> int:
    from edgehub.cli.project import open_project

    config = open_project(args.config).config
    rows = [
        {"name": name, "provider": section.provider, "spec": section.spec}
        for name, section in config.devices.items()
    ]
    if args.json:
        print_json(rows)
    else:
        table(["device", "provider", "spec"], [list(r.values()) for r in rows])
    return 0


def _init(args: argparse.Namespace) -> int:
    from edgehub.config.save import atomic_write
    from edgehub.errors import UsageError

    path = Path.cwd() / "hub.toml"
    if path.exists():
        raise UsageError(f"{path} already exists; edit it, or remove it first")
    atomic_write(path, STARTER.format(name=args.name or Path.cwd().name).encode())
    print(f"wrote {path}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from edgehub import images
    from edgehub.cli.project import open_project
    from edgehub.errors import EdgehubError

    checks: list[tuple[str, str, str]] = []
    ok = True
    try:
        config = open_project(args.config).config
        checks.append(("hub.toml", "ok", str(config.path or "none (defaults)")))
    except EdgehubError as error:
        checks.append(("hub.toml", "FAIL", str(error)))
        ok = False
    try:
        images.docker_client()
        checks.append(("docker daemon", "ok", "reachable"))
        for status in images.list_images():
            state = "ok" if status.built else "missing"
            hint = status.tag if status.built else f"run: hub images build {status.runtime}"
            checks.append((f"image {status.runtime}", state, hint))
            ok = ok and status.built
    except EdgehubError as error:
        checks.append(("docker daemon", "FAIL", str(error)))
        ok = False
    table(["check", "state", "detail"], checks)
    return 0 if ok else 3
