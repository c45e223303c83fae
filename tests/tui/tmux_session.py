"""`hub-tui` through its real entry point in a private tmux server: keys sent as typed, the
pane captured as text, the exit status recorded in a file the test reads."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.tui.polling import wait_for

HUB_TUI = str(Path(sys.executable).with_name("hub-tui"))
# Runs hub-tui and writes its exit status, so the test can read it. COLUMNS and LINES are
# dropped: set (as under pytest), they would win over the window's own size.
RECORD_STATUS = """\
import os, pathlib, subprocess, sys
env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
pathlib.Path(sys.argv[1]).write_text(str(subprocess.call(sys.argv[2:], env=env)))
"""


class Tmux:
    """``tmux(*args)`` on a private server; `start` runs hub-tui in its session ``hub``."""

    def __init__(self) -> None:
        self.socket = f"edgehub-test-{os.getpid()}-{time.monotonic_ns()}"
        self.status_file: Path | None = None

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def start(
        self, project: Path, width: int = 80, height: int = 24, env: dict[str, str] | None = None
    ) -> None:
        """``hub-tui --config project/hub.toml`` in a ``width`` x ``height`` window."""
        self.status_file = project / "exit-status"
        settings = [f"{name}={value}" for name, value in (env or {}).items()]
        settings = [word for setting in settings for word in ("-e", setting)]
        self(
            "new-session", "-d", "-s", "hub", "-x", str(width), "-y", str(height),
            "-c", str(project), "-e", "TERM=tmux-256color", *settings,
            sys.executable, "-c", RECORD_STATUS, str(self.status_file),
            HUB_TUI, "--config", str(project / "hub.toml"),
        )  # fmt: skip

    def screen(self) -> str:
        """The pane's text; once hub-tui has ended (its session gone), that and its status."""
        try:
            return self("capture-pane", "-p", "-t", "hub")
        except subprocess.CalledProcessError:
            done = self.status_file is not None and self.status_file.exists()
            status = self.status_file.read_text() if done and self.status_file else "unknown"
            return f"<hub-tui ended with status {status}>"

    def keys(self, *names: str) -> None:
        """Send ``names`` (tmux key names; ``-l`` then text for literal text), as typed."""
        self("send-keys", "-t", "hub", *names)
        time.sleep(0.3)

    def shows(self, *texts: str, seconds: float = 20) -> bool:
        """Whether every one of ``texts`` appears whole on one line within ``seconds``."""
        return wait_for(lambda: all(text in self.screen() for text in texts), seconds)

    def exit_status(self, seconds: float = 15) -> str | None:
        assert self.status_file is not None
        if not wait_for(self.status_file.exists, seconds):
            return None
        return self.status_file.read_text()
