"""`hub`'s commands: the module whose ``add_parser`` builds each, and each one's help line.

A command runs with only its own parser built: `hub --help` (and argparse's "invalid choice")
show no more of the others than their names and help lines, which a listed-only parser
(`add_listed`) carries. Building every parser of every command on each start cost more host
time than many commands' own work.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

# in `hub --help` order; the commands of one module stay next to each other
COMMANDS: dict[str, tuple[str, str]] = {
    "exec": (
        "edgehub.cli.exec_cmd",
        "compile, profile or invoke a model (or all three: pipeline); eval, ab, sweep",
    ),
    "images": ("edgehub.cli.images_cmd", "build and list the pinned toolchain images"),
    "runs": ("edgehub.cli.runs_cmd", "list, show and compare recorded runs"),
    "devices": (
        "edgehub.cli.devices_cmd",
        "the devices hub.toml defines (list, check NAME, trust NAME, release NAME, "
        "unquarantine NAME)",
    ),
    "init": ("edgehub.cli.devices_cmd", "write a starter hub.toml in this directory"),
    "doctor": ("edgehub.cli.devices_cmd", "check hub.toml, Docker and the images"),
    "config": ("edgehub.cli.config_cmd", "about hub.toml itself"),
}

# the options `hub` takes before the command that are followed by a value
_VALUED = ("--config",)


def summary(command: str) -> str:
    """The help line of ``command``."""
    return COMMANDS[command][1]


def add_listed(group: Any, name: str, help_line: str) -> argparse.ArgumentParser:
    """A parser that only lists ``name`` with its help line in its parent's help: it takes no
    arguments, not even --help, and sets no handler (`cli.main` then builds the full parser)."""
    parser: argparse.ArgumentParser = group.add_parser(name, help=help_line, add_help=False)
    parser.set_defaults(listed_only=True)
    return parser


def words(argv: Sequence[str]) -> list[str]:
    """The words of ``argv`` that are no option nor option value (the command, its verb, ...),
    as `hub`'s own options (``--config FILE``, also abbreviated) leave them."""
    found: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--":
            break
        elif word.startswith("-"):
            skip = not found and "=" not in word and _takes_value(word)
        else:
            found.append(word)
    return found


def _takes_value(option: str) -> bool:
    return option.startswith("--") and any(v.startswith(option) for v in _VALUED)
