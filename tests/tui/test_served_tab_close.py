"""A served session whose browser tab closes mid-run ends its run: textual-serve tells the
session to quit, and the app cancels what it launched on the way out, so the run is recorded
KILLED (or FAILED), the device lease is free and no session process is left. The page asked
nothing of any host but the server's own 127.0.0.1 port. Real browser (Debian's Chromium), real
Docker run."""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.tui.browser_page import SECONDS, loopback_page, until
from tests.tui.polling import run_statuses, wait_for
from tests.tui.served import Served

pytestmark = [pytest.mark.browser, pytest.mark.docker]


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No warm containers for the served session (asked for before `served` starts it)."""
    monkeypatch.delenv("EDGEHUB_KEEP_WARM", raising=False)
    yield


def _leases_held() -> list[str]:
    """The lease files (``$EDGEHUB_LEASE_DIR``, this test's own) some process holds."""
    held = []
    for path in Path(os.environ["EDGEHUB_LEASE_DIR"]).glob("*"):
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.append(path.name)
        finally:
            os.close(fd)
    return held


def _field_value(session: Any, label: str) -> str | None:
    """The value the screen shows in the form field labelled ``label`` (an empty field shows
    its placeholder; None: no value at all)."""
    for line in session.screen().splitlines():
        found = re.search(rf"(?:^|│)\s*{label}\s+([^\s│]+)", line)
        if found:
            return found[1]
    return None


def _settled(page: Any, session: Any, label: str) -> str | None:
    """The field's value once it has stayed the same for 2 s (keys sent may still land)."""
    shown = _field_value(session, label)
    for _ in range(15):
        page.wait_for_timeout(2000)
        if (now := _field_value(session, label)) == shown:
            break
        shown = now
    return shown


def _type_into(page: Any, session: Any, label: str, text: str) -> None:
    """Type ``text`` into the focused field ``label`` until the screen shows it there. On a
    busy machine a key can land before the field has focus (the form is still being built):
    then what did land is cleared and the text typed again."""
    for _ in range(3):
        page.keyboard.type(text, delay=50)
        if until(page, lambda: _field_value(session, label) == text, 20):
            return
        if _settled(page, session, label) == text:
            return
        page.keyboard.press("End")
        page.keyboard.press("Control+u")
        _settled(page, session, label)  # empty: the field shows its placeholder
    raise AssertionError(f"{label} shows {_field_value(session, label)!r}, not {text!r}")


def test_closing_the_tab_mid_run_cancels_the_run_and_frees_the_lease(
    ort_image: str, cold: None, served: Served, browser: Any, project: Path
) -> None:
    page, session, elsewhere = loopback_page(browser, served)
    closed = False
    try:
        page.goto(f"http://127.0.0.1:{served.port}/?token={served.token}")
        assert until(page, lambda: "Devices of hub.toml" in session.screen()), session.screen()
        page.click("#terminal")
        page.keyboard.press("2")
        assert until(page, lambda: "profile options" in session.screen()), session.screen()
        page.wait_for_timeout(1000)  # the options form is built once the screen has settled
        page.keyboard.press("Shift+Tab")  # from the Pick button back to the model field
        _type_into(page, session, "model", "model.onnx")
        page.wait_for_timeout(1000)  # the options follow the model: let them settle
        for _ in range(5):  # pick, runtime, step, device: on to the runs option
            page.keyboard.press("Tab")
        page.keyboard.press("End")
        page.keyboard.press("Control+u")
        _type_into(page, session, "runs", "900000")
        page.keyboard.press("Control+r")
        assert until(page, lambda: "timing: 900000 runs" in session.screen(), 120), session.screen()
        assert run_statuses(project) == ["RUNNING"]
        assert _leases_held(), "the run holds its device's lease"
        assert len(served.children()) == 1

        page.close()  # the tab goes, mid-run
        closed = True
        assert wait_for(lambda: run_statuses(project) in (["KILLED"], ["FAILED"]), SECONDS), (
            run_statuses(project),
            served.stderr,
        )
        assert wait_for(lambda: not _leases_held(), SECONDS), _leases_held()
        assert wait_for(lambda: served.children() == [], SECONDS), served.stderr
        assert elsewhere == []  # nothing asked of any other host (fonts included)
    finally:
        if not closed:
            page.close()
