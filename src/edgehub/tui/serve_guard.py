"""Who may talk to ``hub-tui --serve``: a loopback Host and Origin on the served port, and the
launch's secret token.

Binding to 127.0.0.1 is not enough. Any web page the user opens can make the browser connect
to 127.0.0.1 (its requests carry that page's Origin), and a DNS name rebound to 127.0.0.1 reaches
the port with that name in Host. Other users of the machine reach loopback too; they do not
know the token. So every request needs a loopback Host with the served port and, where it has
one, a loopback Origin with that port (a WebSocket must have one: browsers always send it).
Everything but `OPEN_ROUTES` (so the page, the WebSocket and any unknown path) also needs the
token, compared in constant time. A refused request gets 403 before any handler runs, so no
TUI session starts.
"""

from __future__ import annotations

import hmac
import secrets
import sys
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
# routes without the token: textual-serve's own scripts and styles, and files the app delivers
# (under a random key; the page opens them in a new tab, so they cannot carry the token)
OPEN_ROUTES = frozenset({"static", "download"})
HEADERS = {  # the token is in the page's URL: never send it on, never frame the page
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class Guard:
    """The checks for a server on loopback ``port``, with this launch's ``token``."""

    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)

    @property
    def hosts(self) -> frozenset[str]:
        """The Host values allowed: a loopback name with the port (alone too on port 80)."""
        hosts = {f"{name}:{self.port}" for name in LOOPBACK_NAMES}
        return frozenset(hosts | set(LOOPBACK_NAMES) if self.port == 80 else hosts)

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    def token_matches(self, given: str | None) -> bool:
        """Whether ``given`` is the token; constant time (also for text that is not ASCII)."""
        if given is None:
            return False
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is refused, or None when it may go on."""
        hosts = request.headers.getall("Host", [])
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            shown = ", ".join(repr(host) for host in hosts) or "none"
            return f"Host {shown} is not this server's (127.0.0.1:{self.port})"
        route = request.match_info.route.name
        upgrade = request.headers.get("Upgrade", "").lower()
        websocket = route == "websocket" or upgrade == "websocket"
        origins = request.headers.getall("Origin", [])
        if len(origins) > 1 or (origins and origins[0].lower() not in self.origins):
            return f"Origin {', '.join(repr(o) for o in origins)} is not this server's"
        if websocket and not origins:
            return "a WebSocket without an Origin"
        if route not in OPEN_ROUTES:
            given = request.match_info.get("token") or request.query.get("token")
            if not self.token_matches(given):
                return "missing or wrong token: open the URL hub-tui printed, token included"
        return None


def guard_middleware(guard: Guard) -> Middleware:
    """An aiohttp middleware answering 403 to what `Guard.refusal` refuses, and adding
    `HEADERS` to what it lets through."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        reason = guard.refusal(request)
        if reason is not None:
            # repr: no control characters reach the terminal; the token is not echoed
            where = repr(request.path[:80].replace(guard.token, "<token>"))
            print(f"hub-tui: refused {request.method} {where}: {reason}", file=sys.stderr)
            raise web.HTTPForbidden(text=f"refused: {reason}\n", headers=HEADERS)
        response = await handler(request)
        if not response.prepared:
            response.headers.update(HEADERS)
        return response

    return check
