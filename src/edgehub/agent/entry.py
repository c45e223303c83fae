"""Where the agent starts (the zipapp's ``__main__`` and ``python -m edgehub.agent``).

A ``--server`` call goes straight to :mod:`.server.client`, which loads neither :mod:`.cli` nor
numpy nor the runtime unless it ends up running the command itself; ``relay`` goes to
:mod:`.server.relay`; everything else goes to :func:`.cli.main`. A command (not ``serve``)
first starts what :mod:`.lifeline`'s environment variables ask for.
"""

from __future__ import annotations

import sys

from .argv import take_option, wants_help


def wants_server(argv: list[str]) -> bool:
    """Whether ``argv`` names ``--server`` (with a path or not: a bare one is reported later)."""
    return not wants_help(argv) and take_option(argv, "--server")[1] != argv


def runs_a_command(argv: list[str]) -> bool:
    """Whether ``argv`` runs a command (not help, version or ``serve``)."""
    return not wants_help(argv) and take_option(argv, "--server")[1][:1] != ["serve"]


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["relay"]:
        from .server.relay import relay_main

        return relay_main(args[1:])
    if runs_a_command(args):
        from .lifeline import start_from_env

        start_from_env()
    if wants_server(args):
        from .server.client import client_main

        return client_main(args)
    from .cli import main as cli_main

    return cli_main(args)
