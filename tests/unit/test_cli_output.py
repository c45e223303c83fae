"""The CLI's tables and progress bar, drawn by Rich: through the real `hub` for tables (a pipe:
no colours, one line per row however wide, cells shown as text), and the bar on a terminal."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from edgehub.cli.output import ProgressBar, table

HUB = str(Path(sys.executable).with_name("hub"))


def _hub(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *argv], cwd=cwd, capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )


def test_a_table_through_the_real_hub(tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "t"\n')
    listed = _hub(tmp_path, "devices", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["device", "provider", "spec", "ssh"]
    assert set(lines[1]) == {"─"} and lines[2].split() == ["local", "local", "-", "-"]
    assert "\x1b" not in listed.stdout and all(line == line.rstrip() for line in lines)
    ascii_only = _hub(tmp_path, "devices", "list", PYTHONIOENCODING="ascii")
    assert ascii_only.returncode == 0 and ascii_only.stdout.isascii(), ascii_only.stderr


def test_cells_are_text_and_wide_rows_stay_one_line() -> None:
    out = io.StringIO()
    hostile = "[bold red]x[/] \x1b[2J" + "w" * 500
    table(["name", "value"], [[hostile, 1.5], [None, 2]], stream=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 4  # header, rule, two rows: nothing wrapped at 80 columns
    assert lines[2].startswith("[bold red]x[/] \\x1b[2J") and "1.5" in lines[2]
    assert "\x1b" not in out.getvalue() and lines[3].split() == ["-", "2"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_on_a_terminal_and_plain_lines_elsewhere() -> None:
    terminal = _Terminal()
    bar = ProgressBar(terminal)
    bar.update("pulling", 5, 10)
    drawn = terminal.getvalue()
    assert drawn.startswith("\r") and "━" in drawn and "5/10" in drawn and "pulling" in drawn
    bar.clear()
    assert terminal.getvalue().endswith("\r")
    pipe = io.StringIO()
    plain = ProgressBar(pipe)
    for done in range(11):
        plain.update("pulling", done, 10)
    assert pipe.getvalue().splitlines() == [f"pulling: {p}%" for p in (0, 30, 60, 90, 100)]
