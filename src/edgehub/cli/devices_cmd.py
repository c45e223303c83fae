"""`hub devices`, `hub init` and `hub doctor`: parse, call `ops`, print."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from edgehub.cli.options import project_of
from edgehub.cli.output import print_json, table


def add_parser(commands: Any) -> None:
    from edgehub.cli.commands import summary

    devices = commands.add_parser("devices", help=summary("devices"))
    devices.add_argument("--json", action="store_true")
    devices.set_defaults(handler=_devices)
    verbs = devices.add_subparsers(
        dest="devices_command", metavar="{list,check,trust,release,unquarantine}"
    )
    listing = verbs.add_parser("list", help="the devices hub.toml defines (the default)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_devices)
    check = verbs.add_parser(
        "check", help="connect to a device: OS, arch, Python, runtimes, providers it can serve"
    )
    check.add_argument("--json", action="store_true")
    check.add_argument("--timeout", type=float, default=20.0, help="seconds (default 20)")
    check.set_defaults(handler=_check)
    trust = verbs.add_parser(
        "trust", help="show an SSH device's host key fingerprint and, if you agree, trust it"
    )
    trust.add_argument(
        "--yes",
        action="store_true",
        help="trust without asking (for scripts: check the printed fingerprint out of band first)",
    )
    trust.set_defaults(handler=_trust)
    release = verbs.add_parser(
        "release", help="free a labgrid pool device's places whose edgehub holder is gone"
    )
    release.add_argument(
        "--force", action="store_true", help="release held places even if their holder may run"
    )
    release.set_defaults(handler=_release)
    unquarantine = verbs.add_parser(
        "unquarantine", help="let a quarantined device's boards be used again (clears failures)"
    )
    unquarantine.set_defaults(handler=_unquarantine)
    for verb in (check, trust, release, unquarantine):
        verb.add_argument("name", help="device name in hub.toml")
    init = commands.add_parser("init", help=summary("init"))
    init.add_argument("--name", help="project name (default: the directory name)")
    init.set_defaults(handler=_init)
    doctor = commands.add_parser("doctor", help=summary("doctor"))
    doctor.add_argument("--json", action="store_true")
    doctor.add_argument(
        "--repair", action="store_true", help="fix artifacts whose bytes no longer match"
    )
    doctor.set_defaults(handler=_doctor)


def _devices(args: argparse.Namespace) -> int:
    from edgehub.ops.devices import list_devices

    rows = list_devices(project_of(args))
    if args.json:
        print_json([row.to_dict() for row in rows])
    else:
        headers = ["device", "provider", "spec", "ssh"]
        pools = any(r.places is not None for r in rows)
        health = any(r.health is not None for r in rows)
        headers += ["labgrid places"] * pools + ["health"] * health
        shown = []
        for r in rows:
            extra = [r.places] * pools + [r.health or "ok"] * health
            shown.append([r.name, r.provider, r.spec, r.ssh, *extra])
        table(headers, shown)
    return 0


def _release(args: argparse.Namespace) -> int:
    from edgehub.ops.devices import release_device

    for line in release_device(project_of(args), args.name, force=args.force):
        print(line)
    return 0


def _unquarantine(args: argparse.Namespace) -> int:
    from edgehub.errors import UsageError
    from edgehub.ops.devices import unquarantine

    project = project_of(args)
    if args.name not in project.config.devices:
        known = ", ".join(project.config.devices)
        raise UsageError(f"device {args.name!r} not in hub.toml; known: {known}")
    cleared = unquarantine(project, args.name)
    for line in cleared:
        print(f"cleared {line}")
    if not cleared:
        print(f"{args.name}: no failed health checks recorded; nothing to clear")
    return 0


def _check(args: argparse.Namespace) -> int:
    from edgehub.ops.device_check import inspect_device

    report = inspect_device(project_of(args), args.name, timeout=args.timeout)
    if args.json:
        print_json(report.to_dict())
        return 0 if report.reachable else 3
    if not report.reachable:
        print(f"{args.name}: {report.error}", file=sys.stderr)
        return 3
    rows = [["provider type", report.provider], ["os", report.os or "-"],
            ["arch", report.arch or "-"]]  # fmt: skip
    rows += [["python", f"{p['version']}  {p['path']}"] for p in report.pythons]
    rows += [[r["runtime"], f"{r['version']}  (python {r['python']})"] for r in report.runtimes]
    rows += [[tool, path] for tool, path in report.tools.items()]
    rows.append(["can serve", ", ".join(report.providers) or "-"])
    table([args.name, ""], rows)
    return 0


def _trust(args: argparse.Namespace) -> int:
    from edgehub.cli.terminal import confirmed
    from edgehub.ops.trust import host_key_of, trust_host_key

    offer = host_key_of(project_of(args), args.name)
    print(f"{args.name} ({offer.host}) offers {offer.key_type} key {offer.fingerprint}")
    if offer.state == "trusted":
        print(f"already trusted in {offer.known_hosts}")
        return 0
    unasked = (
        "not asking without a terminal; compare the fingerprint with the device's "
        "(`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` there) and pass --yes"
    )
    question = f"Trust this key and add it to {offer.known_hosts}?"
    if offer.state == "unknown" and not args.yes and not confirmed(question, unasked):
        print("not trusted")
        return 1
    path = trust_host_key(offer)  # refuses changed and revoked keys
    print(f"trusted: added to {path}")
    return 0


def _init(args: argparse.Namespace) -> int:
    from edgehub.ops.devices import init_project

    print(f"wrote {init_project(Path.cwd(), args.name)}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from edgehub.ops.doctor import doctor

    checks = doctor(args.config, repair=args.repair, item_limit=None if args.json else 20)
    if args.json:
        print_json([check.to_dict() for check in checks])
    else:
        table(["check", "state", "detail"], [[c.name, c.state, c.detail] for c in checks])
    return 0 if all(check.ok for check in checks) else 3
