"""``hub-tui --serve``: the same app in a browser through textual-serve, on loopback only."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

__all__ = ["HOST", "serve", "serve_command"]

HOST = "127.0.0.1"
WARNING = (
    "hub-tui: serving on http://{host}:{port} (this machine only). Whoever reaches this port "
    "acts as {user}: runs, hub.toml edits and image builds. Reach it from elsewhere through "
    "an SSH tunnel (ssh -L {port}:{host}:{port} ...), never by exposing the port."
)


def serve_command(config: Path | None) -> str:
    """The command textual-serve starts for each browser session."""
    argv = [sys.executable, "-m", "edgehub.tui"]
    if config is not None:
        argv += ["--config", str(config.absolute())]
    return shlex.join(argv)


def serve(config: Path | None, port: int) -> int:
    import getpass

    from textual_serve.server import Server

    print(WARNING.format(host=HOST, port=port, user=getpass.getuser()), file=sys.stderr)
    server = Server(serve_command(config), host=HOST, port=port, title="edgehub")
    server.serve()
    return 0
