"""`hub images build [RUNTIME...] [--base IMAGE]` and `hub images list`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from edgehub.cli.options import project_of
from edgehub.cli.output import ProgressBar, print_json, table


def add_parser(commands: Any) -> None:
    from edgehub.cli.commands import summary

    parser = commands.add_parser("images", help=summary("images"))
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
    from edgehub.ops.images import BuildFailed, build_images

    bar = ProgressBar()

    def progress(runtime: str, label: str, step: int, steps: int) -> None:
        if steps:
            bar.update(f"{runtime}: step {step}/{steps} {label}", step, steps)
        elif bar.tty:
            bar.update(f"{runtime}: {label}", 0, None)
        else:
            print(f"{runtime}: {label}", file=sys.stderr)

    try:
        built = build_images(
            project_of(args),
            args.runtimes,
            base=args.base,
            offline=args.offline,
            progress=None if args.quiet else progress,
        )
    except BuildFailed as failure:
        bar.clear()
        if not args.quiet:
            print(f"last lines of {failure.log_path}:", file=sys.stderr)
            for line in failure.log_tail:
                print(f"  | {line}", file=sys.stderr)
        raise
    bar.clear()
    for image in built:
        print(f"built {image.runtime}: {image.tag} ({image.seconds:.0f} s; log: {image.log_path})")
    return 0


def _list(args: argparse.Namespace) -> int:
    from edgehub.ops.images import list_images

    rows = list_images()
    if args.json:
        print_json([row.__dict__ for row in rows])
        return 0
    shown = []
    for r in rows:
        size = round(r.size_bytes / 1e6, 1) if r.size_bytes else None
        shown.append([r.runtime, r.tag, "yes" if r.built else "no", (r.digest or "-")[:19], size])
    table(["runtime", "tag", "built", "digest", "size MB"], shown)
    return 0
