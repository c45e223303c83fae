"""`hub-tui --serve` (the real entry point, the ``served`` fixture) serves a page that loads
nothing from outside: every URL in the page and in the styles it links names this server (by
either loopback name), and the fonts the page uses are served here. A browser with no network
renders it the same and tells no one it was opened."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from tests.tui.served import Served

URL = re.compile(r"""\b(?:https?|wss?)://[^\s"'<>)]+""", re.IGNORECASE)
LOOPBACK = {"127.0.0.1", "localhost"}


COMMENTS = re.compile(r"/\*.*?\*/|<!--.*?-->", re.DOTALL)  # a licence's links load nothing


def _outside(text: str) -> list[str]:
    """The URLs in ``text`` (outside comments) that name a host other than this machine."""
    live = COMMENTS.sub("", text)
    return [url for url in URL.findall(live) if urlsplit(url).hostname not in LOOPBACK]


def _path(url: str) -> str:
    return urlsplit(url).path


def test_the_served_page_and_its_styles_load_nothing_from_outside(served: Served) -> None:
    status, page = served.get(f"/?token={served.token}")
    assert status == 200, page
    assert _outside(page) == [], _outside(page)

    stylesheets = re.findall(r"""<link[^>]*rel="stylesheet"[^>]*href="([^"]+)\"""", page)
    scripts = re.findall(r"""<script[^>]*src="([^"]+)\"""", page)
    fonts = re.findall(r"""url\(["']?([^"')]+\.(?:ttf|woff2?))""", page)
    assert stylesheets and scripts and fonts, page  # the page's own parts, named here
    for url in stylesheets:
        status, css = served.get(_path(url))
        assert status == 200, url
        assert _outside(css) == [], (url, _outside(css))
        fonts += re.findall(r"""url\(["']?([^"')]+\.(?:ttf|woff2?))""", css)
    for url in [*scripts, *fonts]:
        assert urlsplit(url).hostname in LOOPBACK, url
        status, _ = served.get(_path(url))
        assert status == 200, url
    assert any("RobotoMono" in font for font in fonts), fonts  # the terminal's font, local
