"""`hub-tui --serve` through its real entry point on a free loopback port (the ``served`` fixture):
only the printed URL (its token) from a loopback Host and Origin gets the page and a TUI session;
a cross-site page, a DNS-rebound name or a guessed URL gets 403 and no TUI process starts. A bad
or taken port is one line."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.tui.polling import wait_for
from tests.tui.served import Served

HUB_TUI = str(Path(sys.executable).with_name("hub-tui"))
EVIL = "evil.example"


def test_the_printed_url_serves_the_page_and_a_live_session(served: Served) -> None:
    origin = f"http://127.0.0.1:{served.port}"
    status, page = served.get(f"/?token={served.token}")
    assert status == 200, page
    assert re.search(r">\s*edgehub\s*<", page), page  # the app's title
    assert f'data-session-websocket-url="ws://127.0.0.1:{served.port}/ws/{served.token}"' in page
    assert served.children() == []

    status, connection = served.upgrade(f"/ws/{served.token}", origin=origin)
    with connection:
        assert status == 101
        assert wait_for(lambda: len(served.children()) == 1, 60), served.stderr
        connection.settimeout(60)
        assert connection.recv(65536)  # the TUI's first frames
    # closing the WebSocket ends its TUI process
    assert wait_for(lambda: served.children() == [], 60), served.stderr

    # bound to loopback only: another address of this machine refuses
    address = socket.gethostbyname(socket.gethostname())
    if not address.startswith("127."):
        with socket.socket() as other:
            assert other.connect_ex((address, served.port)) != 0
    assert "whoever opens the url below acts as" in "".join(served.stderr).lower()

    # the page by another loopback name works too, and hands that name on
    status, page = served.get(f"/?token={served.token}", Host=f"localhost:{served.port}")
    assert status == 200 and f"ws://localhost:{served.port}/ws/{served.token}" in page


def test_the_page_needs_the_token_and_a_loopback_host_and_origin(served: Served) -> None:
    token = served.token
    refused = {
        "no token": served.get("/"),
        "wrong token": served.get(f"/?token={token[:-1]}x"),
        "empty token": served.get("/?token="),
        "token not ascii": served.get("/?token=%C3%A9" + token[2:]),
        "rebound host": served.get(f"/?token={token}", Host=f"{EVIL}:{served.port}"),
        "other port": served.get(f"/?token={token}", Host="127.0.0.1:1"),
        "evil origin": served.get(f"/?token={token}", Origin=f"http://{EVIL}"),
        "null origin": served.get(f"/?token={token}", Origin="null"),
        "origin suffix": served.get(
            f"/?token={token}", Origin=f"http://127.0.0.1:{served.port}.{EVIL}"
        ),
        "host userinfo": served.get(f"/?token={token}", Host=f"127.0.0.1:{served.port}@{EVIL}"),
        "unknown path": served.get("/anything"),
    }
    assert {case: status for case, (status, _) in refused.items()} == dict.fromkeys(refused, 403)
    assert token not in "".join(body for _, body in refused.values())
    # textual-serve's own script needs no token, but a loopback Host all the same
    assert served.get("/static/js/textual.js")[0] == 200
    assert served.get("/static/js/textual.js", Host=f"{EVIL}:{served.port}")[0] == 403


@pytest.mark.parametrize(
    ("case", "path", "host", "origin"),
    [
        ("evil origin", "/ws/{token}", None, f"http://{EVIL}"),
        ("null origin", "/ws/{token}", None, "null"),
        ("no origin", "/ws/{token}", None, None),
        ("origin of another local port", "/ws/{token}", None, "http://127.0.0.1:1"),
        ("rebound host", "/ws/{token}", f"{EVIL}:{{port}}", f"http://{EVIL}:{{port}}"),
        ("no token", "/ws", None, "http://127.0.0.1:{port}"),
        ("wrong token", "/ws/x{token}", None, "http://127.0.0.1:{port}"),
    ],
    ids=lambda value: value if isinstance(value, str) and " " in value else "",
)
def test_a_websocket_that_is_not_ours_gets_403_and_no_tui(
    served: Served, case: str, path: str, host: str | None, origin: str | None
) -> None:
    def fill(text: str) -> str:
        return text.format(token=served.token, port=served.port)

    status, connection = served.upgrade(
        fill(path), fill(host) if host else None, fill(origin) if origin else None
    )
    with connection:
        assert status == 403, case
    time.sleep(1)  # a session, had one been started, would show as a child by now
    assert served.children() == [], case
    assert any("refused" in line for line in served.stderr), served.stderr


@pytest.mark.parametrize("port", ["99999", "abc", "-1", "\uff18\uff10", "1e3"])
def test_a_bad_port_is_a_one_line_usage_error(port: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [HUB_TUI, "--serve", "--port", port],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hub-tui: error:"), result.stderr
    assert "port" in lines[0]


def test_a_taken_port_is_one_line_exit_3(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [HUB_TUI, "--serve", "--port", str(port)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"port {port}" in lines[0] and "in use" in lines[0] and "--port" in lines[0]


def test_a_broken_hub_toml_is_one_line_before_serving(tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text("[project\n")
    result = subprocess.run(
        [HUB_TUI, "--serve", "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "invalid TOML" in lines[0], result.stderr
