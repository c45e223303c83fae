"""`hub devices`, `hub init` and `hub doctor`: parse, call `ops`, print."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from edgehub.cli.output import print_json, table


def add_parser(commands: Any) -> None:
    devices = commands.add_parser("devices", help="the devices hub.toml defines")
    devices.add_argument("--json", action="store_true")
    devices.set_defaults(handler=_devices)
    init = commands.add_parser("init", help="write a starter hub.toml in this directory")
    init.add_argument("--name", help="project name (default: the directory name)")
    init.set_defaults(handler=_init)
    doctor = commands.add_parser("doctor", help="check hub.toml, Docker and the images")
    doctor.add_argument("--json", action="store_true")
    doctor.add_argument(
        "--repair", action="store_true", help="fix artifacts whose bytes no longer match"
    )
    doctor.set_defaults(handler=_doctor)


def _devices(args: argparse.Namespace) -> int:
    from edgehub.ops.devices import list_devices
    from edgehub.ops.project import open_project

    rows = list_devices(open_project(args.config))
    if args.json:
        print_json([row.to_dict() for row in rows])
    else:
        table(["device", "provider", "spec", "ssh"], [list(r.to_dict().values()) for r in rows])
    return 0


def _init(args: argparse.Namespace) -> int:
    from edgehub.ops.devices import init_project

    print(f"wrote {init_project(Path.cwd(), args.name)}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from edgehub.ops.doctor import doctor

    checks = doctor(args.config, repair=args.repair)
    if args.json:
        print_json([check.to_dict() for check in checks])
    else:
        table(["check", "state", "detail"], [[c.name, c.state, c.detail] for c in checks])
    return 0 if all(check.ok for check in checks) else 3
