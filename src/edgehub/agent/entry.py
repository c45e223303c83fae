"""Where the agent starts (the zipapp's ``__main__`` and ``python -m edgehub.agent``).

A ``--server`` call goes straight to :mod:`.server_client`, which loads neither :mod:`.cli` nor
numpy nor onnxruntime unless it ends up running the command itself; everything else goes to
:func:`.cli.main`.
"""

from __future__ import annotations

import sys


def wants_server(argv: list[str]) -> bool:
    if any(a in ("-h", "--help", "--version") for a in argv):
        return False
    return any(a == "--server" or a.startswith("--server=") for a in argv)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if wants_server(args):
        from .server_client import client_main

        return client_main(args)
    from .cli import main as cli_main

    return cli_main(args)
