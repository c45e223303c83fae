"""Processes of the agent server tests: finding servers and jobs in /proc, waiting, reading."""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PYTHON = os.environ.get("EDGEHUB_AGENT_TEST_PYTHON") or sys.executable


def stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgrp, session) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2]), int(fields[3])


def alive(pid: int) -> bool:
    info = stat(pid)
    return info is not None and info[0] != "Z"


def pids_with(text: str) -> list[int]:
    """Live processes whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def server_pid(sock: Path) -> int:
    """The server on ``sock``: a ``serve`` process leading its own session (jobs share its
    command line, being forks of it, but not its session leadership)."""
    pids = [p for p in pids_with(f"serve --socket {sock}") if (stat(p) or ("", 0, 0, 0))[3] == p]
    assert len(pids) == 1, pids
    return pids[0]


def children(pid: int) -> list[int]:
    return [p for p in pids_with("serve") if (stat(p) or ("", 0, 0, 0))[1] == pid]


def kill_everything_on(sock: Path) -> None:
    for pid in pids_with(str(sock)):
        info = stat(pid)
        try:
            if info is not None and info[2] == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def answers(sock: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(sock))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def start_server(pyz: Path, sock: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PYTHON, str(pyz), "serve", "--socket", str(sock), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def read_until(proc: subprocess.Popen[bytes], text: str, timeout: float) -> str:
    """Read the process's stderr until ``text`` shows up; returns what was read."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while text.encode() not in seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} in {seen.decode(errors='replace')!r}"
            if selector.select(left):
                chunk = os.read(fd, 65536)
                assert chunk, f"stderr closed before {text!r}: {seen.decode(errors='replace')!r}"
                seen += chunk
    return seen.decode(errors="replace")
