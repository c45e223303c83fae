"""`hub-tui --serve` in a real browser: Debian's headless Chromium, driven by the Playwright
package (``executable_path``; Playwright's own browser builds are never used), opens the URL
the real entry point printed. The splash's Start button starts the app, the Devices screen
renders, and a key typed into the page switches the TUI to the Run screen.

What the page shows is read from the terminal output the browser received over its WebSocket
(the page draws on a canvas, so there is no text in the DOM), replayed on `TerminalScreen`;
the screenshots show that the page's own drawing changed with the key press."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.tui.polling import wait_for
from tests.tui.served import Served
from tests.tui.terminal_screen import TerminalScreen

pytestmark = pytest.mark.browser

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


def test_the_served_tui_starts_from_the_splash_and_takes_a_key_press(
    served: Served, browser: Any
) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    elsewhere: list[str] = []

    def loopback_only(route: Any) -> None:  # anything asked of another host: noted, refused
        url = route.request.url
        if url.startswith(f"http://127.0.0.1:{served.port}/"):
            route.continue_()
        else:
            elsewhere.append(url)
            route.abort()

    page.route("**/*", loopback_only)
    session = Session()
    page.on("websocket", session.attach)
    try:
        # the printed URL with ?delay: the splash waits for its Start button
        page.goto(f"http://127.0.0.1:{served.port}/?token={served.token}&delay=1")
        assert page.locator(".intro-dialog .intro").inner_text().strip() == "edgehub\nStart"
        page.wait_for_timeout(500)
        assert served.children() == []  # no TUI before the click
        page.click("#start")  # reloads the page with the token, without the delay

        assert until(page, lambda: "Devices of hub.toml" in session.screen()), session.screen()
        assert page.locator("body.-first-byte").count() == 1  # the splash gave way
        assert page.locator(".intro-dialog").is_hidden()
        assert len(served.children()) == 1
        screen = session.screen()
        assert "1 Devices" in screen and "local" in screen, screen
        page.wait_for_timeout(500)  # the first screen settles
        before = page.screenshot()

        page.click("#terminal")
        page.keyboard.press("2")
        assert until(page, lambda: "profile options" in session.screen()), session.screen()
        assert ["stdin", "2"] in session.sent
        assert "Devices of hub.toml" not in session.screen()
        page.wait_for_timeout(500)
        assert page.screenshot() != before
        assert elsewhere == []  # the page loads nothing from outside (fonts included)
    finally:
        page.close()
    # the page gone, its TUI session ends (the served fixture checks none outlives the server)
    assert wait_for(lambda: served.children() == [], SECONDS), served.stderr
