"""Where the agent starts (the zipapp's ``__main__`` and ``python -m edgehub.agent``).

A ``--server`` call goes straight to :mod:`.server.client`, which loads neither :mod:`.cli` nor
numpy nor the runtime unless it ends up running the command itself; ``relay`` goes to
:mod:`.server.relay`; everything else goes to :func:`.cli.main`. A command (not ``serve``)
first starts what :mod:`.lifeline`'s environment variables ask for.
"""

from __future__ import annotations

import sys


def wants_server(argv: list[str]) -> bool:
    if any(a in ("-h", "--help", "--version") for a in argv):
        return False
    return any(a == "--server" or a.startswith("--server=") for a in argv)


def runs_a_command(argv: list[str]) -> bool:
    """Whether ``argv`` runs a command (not help, version or ``serve``)."""
    if any(a in ("-h", "--help", "--version") for a in argv):
        return False
    first = argv[:1]
    if first == ["--server"]:
        first = argv[2:3]
    elif first and first[0].startswith("--server="):
        first = argv[1:2]
    return first != ["serve"]


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
