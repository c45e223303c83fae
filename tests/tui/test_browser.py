"""`hub-tui --serve` in a real browser: Debian's headless Chromium, driven by the Playwright
package (``executable_path``; Playwright's own browser builds are never used), opens the URL
the real entry point printed. The splash's Start button starts the app, the Devices screen
renders, and a key typed into the page switches the TUI to the Run screen.

What the page shows is read from the terminal output the browser received over its WebSocket
(the page draws on a canvas, so there is no text in the DOM), replayed on `TerminalScreen`;
the screenshots show that the page's own drawing changed with the key press."""

from __future__ import annotations

from typing import Any

import pytest
from tests.tui.browser_page import SECONDS, loopback_page, until
from tests.tui.polling import wait_for
from tests.tui.served import Served

pytestmark = pytest.mark.browser


def test_the_served_tui_starts_from_the_splash_and_takes_a_key_press(
    served: Served, browser: Any
) -> None:
    page, session, elsewhere = loopback_page(browser, served)
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
