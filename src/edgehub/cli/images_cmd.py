"""`hub images build [RUNTIME...] [--base IMAGE]` and `hub images list`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from edgehub.cli.output import ProgressBar, print_json, table


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("images", help="build and list the pinned toolchain images")
    sub = parser.add_subparsers(dest="images_command", metavar="ACTION")
    sub.required = True
    build = sub.add_parser("build", help="build toolchain images (wheels fetched on the host)")
    build.add_argument("runtimes", nargs="*", help="default: every available runtime")
    build.add_argument(
        "--base",
        help="base image (default: [images] base in hub.toml, else the Dockerfile's pinned Debian)",
    )
    build.add_argument("--offline", action="store_true", help="use only the wheel cache")
    build.set_defaults(handler=_build)
    listing = sub.add_parser("list", help="each runtime's image tag, whether built, size")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)


def _build(args: argparse.Namespace) -> int:
    import re

    from edgehub import images
    from edgehub.cli.project import open_project
    from edgehub.errors import UsageError

    config = open_project(args.config).config
    base = args.base or config.images.base
    runtimes = args.runtimes or images.available_runtimes()
    unknown = [r for r in runtimes if r not in images.available_runtimes()]
    if unknown:
        buildable = ", ".join(images.available_runtimes())
        raise UsageError(f"no image for {', '.join(unknown)}; buildable: {buildable}")
    bar = ProgressBar()
    step = re.compile(r"^Step (\d+)/(\d+)")
    for runtime in runtimes:

        def progress(line: str, runtime: str = runtime) -> None:
            match = step.match(line)
            if match:
                bar.update(f"{runtime}: {line.strip()}", int(match[1]), int(match[2]))
            elif not args.quiet and line.strip() and not bar.tty:
                print(f"  | {line.rstrip()}", file=sys.stderr)

        tag = images.build_image(runtime, base=base, progress=progress, offline=args.offline)
        bar.clear()
        print(f"built {runtime}: {tag}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from edgehub import images

    rows = images.list_images()
    if args.json:
        print_json([row.__dict__ for row in rows])
        return 0
    table(
        ["runtime", "tag", "built", "digest", "size MB"],
        [
            [
                r.runtime,
                r.tag,
                "yes" if r.built else "no",
                (r.digest or "-")[:19],
                round(r.size_bytes / 1e6, 1) if r.size_bytes else None,
            ]
            for r in rows
        ],
    )
    return 0
