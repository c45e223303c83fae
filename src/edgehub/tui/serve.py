"""``hub-tui --serve``: the same app in a browser through textual-serve, on loopback only.

The listening socket is bound here first, so a taken port is a one-line error and ``--port 0``
picks a free one. The web app is built from textual-serve's public handlers behind
`serve_guard` (loopback Host and Origin, the launch's token): the printed URL carries the
token as ``?token=``, the page hands it on in its WebSocket's path (``/ws/<token>``). The page
(web/index.html) loads only what this server serves: it works offline and tells no one else.
"""

from __future__ import annotations

import errno
import shlex
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import EnvironmentProblem

if TYPE_CHECKING:
    from aiohttp import web

    from edgehub.tui.serve_guard import Guard


HOST = "127.0.0.1"
# the page: textual-serve's, loading nothing from outside
PAGE_DIR = Path(__file__).with_name("web")
WARNING = (
    "hub-tui: serving on http://{host}:{port} (this machine only). Whoever opens the URL below "
    "acts as {user}: runs, hub.toml edits and image builds; keep it secret. Reach it from "
    "elsewhere through an SSH tunnel on the same port (ssh -L {port}:{host}:{port} ...), never "
    "by exposing the port."
)


def serve_command(config: Path | None) -> str:
    """The command textual-serve starts for each browser session."""
    argv = [sys.executable, "-m", "edgehub.tui"]
    if config is not None:
        argv += ["--config", str(config.absolute())]
    return shlex.join(argv)


def bind(port: int) -> socket.socket:
    """A listening socket on loopback ``port`` (0: a free one); a taken or forbidden port is
    an `EnvironmentProblem` saying what to do."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            why = "is in use by another program"
        elif error.errno == errno.EACCES:
            why = "needs privileges this user does not have"
        else:
            why = f"cannot be used ({error.strerror or error})"
        raise EnvironmentProblem(
            f"port {port} on {HOST} {why}; pick another with --port (0 picks a free one)"
        ) from None
    sock.setblocking(False)
    return sock


def serve(config: Path | None, port: int) -> int:
    """Serve the TUI on loopback ``port`` until Ctrl-C or SIGTERM."""
    import getpass

    from aiohttp import web

    from edgehub.tui.serve_guard import Guard

    sock = bind(port)
    guard = Guard(int(sock.getsockname()[1]))
    app = _web_app(config, guard)
    print(WARNING.format(host=HOST, port=guard.port, user=getpass.getuser()), file=sys.stderr)
    print(f"hub-tui: open http://{HOST}:{guard.port}/?token={guard.token}", file=sys.stderr)
    sys.stderr.flush()
    web.run_app(app, sock=sock, print=None, access_log=None, shutdown_timeout=5)
    return 0


def _web_app(config: Path | None, guard: Guard) -> web.Application:
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.server import Server

    from edgehub.tui.serve_guard import guard_middleware

    server = Server(serve_command(config), host=HOST, port=guard.port, title="edgehub")

    @aiohttp_jinja2.template("index.html")
    async def index(request: web.Request) -> dict[str, Any]:
        host = request.host.lower()  # one of the guard's loopback hosts
        return {
            "font_size": _font_size(request.query.get("fontsize", "")),
            "app_websocket_url": f"ws://{host}/ws/{guard.token}",
            "config": {"static": {"url": f"http://{host}/static/"}},
            "application": {"name": server.title},
        }

    app = web.Application(middlewares=[guard_middleware(guard)])
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(PAGE_DIR))
    app.add_routes(
        [
            web.get("/", index, name="index"),
            web.get("/ws/{token}", server.handle_websocket, name="websocket"),
            web.get("/download/{key}", server.handle_download, name="download"),
            web.static("/static", server.statics_path, name="static"),
        ]
    )
    return app


def _font_size(text: str) -> int:
    size = int(text) if text.isascii() and text.isdigit() and len(text) <= 2 else 16
    return size if size >= 6 else 16
