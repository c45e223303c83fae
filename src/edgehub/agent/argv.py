"""The agent's command-line reading, in one place: ``--NAME VALUE`` / ``--NAME=VALUE`` options
and positional words, for a command (:mod:`.cli`), ``serve`` (:mod:`.server.serve`), the
``--server`` client (:mod:`.server.client`) and the entry point (:mod:`.entry`). Standard library
only, and nothing is imported: the entry point reads its line before choosing what to load."""

from __future__ import annotations

from typing import Sequence


class ArgvProblem(Exception):
    """What is wrong with a command line, in one line."""


def wants_help(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks for help or the version (they win over everything else)."""
    return any(a in ("-h", "--help", "--version") for a in argv)


def read_options(
    argv: Sequence[str], names: Sequence[str], *, value: str = "a value"
) -> tuple[list[str], dict[str, str]]:
    """(the positional words, the options among ``names`` that were given: the last one wins).

    `ArgvProblem` for an option not in ``names`` or one without its value (``value`` says what
    it should have been, e.g. "a path").
    """
    words: list[str] = []
    values: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        if name in names:
            if eq:
                values[name] = inline
                i += 1
            elif i + 1 < len(argv):
                values[name] = argv[i + 1]
                i += 2
            else:
                raise ArgvProblem(f"{name} needs {value}")
            continue
        if arg.startswith("-"):
            raise ArgvProblem(f"unknown option {arg}")
        words.append(arg)
        i += 1
    return words, values


def option_value(argv: Sequence[str], name: str) -> str | None:
    """The first value of option ``name``, found even when the rest of ``argv`` is bad (so an
    error can still be reported where the caller asked)."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def take_option(argv: Sequence[str], name: str) -> tuple[str | None, list[str]]:
    """(the value of option ``name``, None when absent or empty; the other arguments). ``name``
    given with no value stays among them, for the command line to report."""
    found: str | None = None
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith(name + "="):
            found = arg.split("=", 1)[1]
            i += 1
        elif arg == name and i + 1 < len(argv):
            found = argv[i + 1]
            i += 2
        else:
            rest.append(arg)
            i += 1
    return found or None, rest
