"""A real browser for the served TUI: Debian's headless Chromium, driven by the Playwright
package (``executable_path``; Playwright's own browser builds are never used), and what a page
received over its WebSocket replayed as a screen (the page draws on a canvas, so there is no text
in the DOM)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.tui.served import Served
from tests.tui.terminal_screen import TerminalScreen

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [  # a closed network: no background connections, no sign-in, no updates
    "--headless=new",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SECONDS = 60


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        pytest.skip("needs Chromium (Debian: apt-get install chromium)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="needs Playwright for Python (pip install -e '.[browser]')"
    )
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=FLAGS, chromium_sandbox=False
        )
        try:
            yield chromium
        finally:
            chromium.close()


class Session:
    """A page's WebSocket traffic: the screen it was sent, and what it sent."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.sent: list[Any] = []

    def attach(self, websocket: Any) -> None:
        websocket.on("framereceived", self._received)
        websocket.on("framesent", lambda payload: self.sent.append(json.loads(payload)))

    def _received(self, payload: bytes | str) -> None:
        if isinstance(payload, bytes):  # terminal output; text frames are the protocol's own
            self.received.append(payload)

    def screen(self) -> str:
        sizes = [message[1] for message in self.sent if message[0] == "resize"]
        if not sizes:
            return ""
        screen = TerminalScreen(sizes[-1]["width"], sizes[-1]["height"])
        for chunk in self.received:
            screen.feed(chunk)
        return screen.text()


def until(page: Any, check: Callable[[], bool], seconds: float = SECONDS) -> bool:
    """Whether ``check`` holds within ``seconds``; waits through the page, so its events
    (the WebSocket's frames) keep arriving."""
    for _ in range(int(seconds * 5)):
        if check():
            return True
        page.wait_for_timeout(200)
    return check()


def loopback_page(browser: Any, served: Served) -> tuple[Any, Session, list[str]]:
    """A new page that may load only from ``served`` (anything else asked for is noted in the
    list and refused), its WebSocket traffic recorded in the `Session`."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    elsewhere: list[str] = []

    def loopback_only(route: Any) -> None:
        url = route.request.url
        if url.startswith(f"http://127.0.0.1:{served.port}/"):
            route.continue_()
        else:
            elsewhere.append(url)
            route.abort()

    page.route("**/*", loopback_only)
    session = Session()
    page.on("websocket", session.attach)
    return page, session, elsewhere
