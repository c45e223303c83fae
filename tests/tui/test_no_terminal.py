"""`hub-tui` through its real entry point without a terminal (``ssh host hub-tui`` without
``-t``, ``hub-tui </dev/null >out &``): one line saying it needs one, exit 2, at once (it
used to spin on its dead input forever). ``--serve`` needs none: the ``served`` fixture starts
it with stdin on /dev/null, and test_serve_guard's sessions start under textual-serve."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

HUB_TUI = str(Path(sys.executable).with_name("hub-tui"))


@pytest.mark.parametrize(
    "stdin", [subprocess.DEVNULL, subprocess.PIPE], ids=["stdin-devnull", "ssh-without-t"]
)
def test_without_a_terminal_hub_tui_says_so_in_one_line(project: Path, stdin: int) -> None:
    started = time.monotonic()
    done = subprocess.run(  # the timeout fails the test if it spins instead
        [HUB_TUI], cwd=project, stdin=stdin, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("hub-tui: needs a terminal, but its input and output are not")
    assert "ssh -t" in lines[0] and "--serve" in lines[0]
    assert done.stdout == ""  # no escape codes written into the pipe
    assert time.monotonic() - started < 20


def test_a_terminal_for_output_only_is_not_enough(project: Path) -> None:
    """``hub-tui </dev/null`` in a terminal: its input is the one that is missing."""
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [HUB_TUI],
            cwd=project,
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=terminal,
            timeout=30,
        )
        os.close(terminal)
        terminal = -1
        said = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            said += chunk
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    text = said.decode("utf-8", "replace").strip()
    assert done.returncode == 2, text
    assert text.splitlines() == [
        "hub-tui: needs a terminal, but its input is not one: run it in one (over SSH: ssh -t "
        "HOST hub-tui), or serve it to a browser with 'hub-tui --serve'"
    ]
