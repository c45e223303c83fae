"""`hub config schema [-o FILE]`: the JSON Schema of hub.toml, for editors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(commands: Any) -> None:
    from edgehub.cli.commands import summary

    parser = commands.add_parser("config", help=summary("config"))
    sub = parser.add_subparsers(dest="config_command", metavar="ACTION")
    sub.required = True
    schema = sub.add_parser(
        "schema",
        help="print the JSON Schema of hub.toml (for taplo / Even Better TOML)",
        description="Print the JSON Schema (draft 2020-12) of hub.toml: built-in and installed "
        "providers, devices, their ssh/docker/labgrid tables. Point an editor at it with a "
        "'#:schema ./hub.schema.json' first line in hub.toml.",
    )
    schema.add_argument("-o", "--output", type=Path, metavar="FILE", help="write it to FILE")
    schema.set_defaults(handler=_schema)


def _schema(args: argparse.Namespace) -> int:
    from edgehub.errors import EnvironmentProblem
    from edgehub.ops.config_schema import config_schema_text, write_config_schema

    if args.output is None:
        try:
            sys.stdout.write(config_schema_text())
            sys.stdout.flush()  # here, so that a full disk is an error, not a silent exit 0
        except BrokenPipeError:
            raise
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise EnvironmentProblem(f"cannot write the schema to stdout: {reason}") from None
        return 0
    write_config_schema(args.output)
    if not args.quiet:
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
