"""Terminal escapes in text from outside (a run's name and error, a device's words) are shown as
visible escapes by the real `hub`: `runs show`, `runs list`, `runs rerun` and the top-level
error line; and `edgehub.text.visible`, the one function they all go through.

The hostile run is written into the store through the store's own API (as an imported bundle's
rows end up there), with: an OSC title (ESC ] 0; ... BEL), a screen clear (ESC [2J), an OSC 52
clipboard write, a C1 CSI (U+009B), DEL and a bidi override (U+202E).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgehub.ops.project import open_project
from edgehub.text import visible

HUB = str(Path(sys.executable).with_name("hub"))

TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"
C1_CSI = "\x9b31m"
HOSTILE = f"resnet{TITLE}{CLEAR}{CLIPBOARD}{C1_CSI}\x7f\u202etxt.exe"
RAW = ("\x1b", "\x07", "\x9b", "\x7f", "\u202e")
SHOWN = ("\\x1b]0;pwned\\x07", "\\x1b[2J", "\\x1b]52;c;cm0gLXJmIH4K\\x07", "\\x9b31m", "\\u202e")


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )


def assert_escaped(text: str, *, shown: tuple[str, ...] = SHOWN) -> None:
    leaked = [char for char in RAW if char in text]
    assert not leaked, f"raw control characters {leaked!r} reached the output: {text!r}"
    for escape in shown:
        assert escape in text, f"{escape!r} not shown in {text!r}"


@pytest.fixture
def hostile_run(tmp_path: Path) -> tuple[Path, str]:
    """A project whose store holds one failed compile run with a hostile name and error."""
    (tmp_path / "hub.toml").write_text('[project]\nname = "escapes"\n')
    store = open_project(tmp_path / "hub.toml").store()
    run_id = "e5c" + "0" * 29
    try:
        run_dir = store.root / "runs" / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        now = time.time()
        store.create_run(
            run_id=run_id,
            project="escapes",
            name=HOSTILE,
            run_type="COMPILE",
            component=None,
            parent_run_id=None,
            artifact_dir=run_dir,
            started_at=now,
            device="local",
        )
        store.log_param(run_id, "option.note", HOSTILE, now)
        store.end_run(run_id, "FAILED", ended_at=now + 1, error=f"device said: {HOSTILE}\nok")
    finally:
        store.close()
    return tmp_path, run_id


def test_visible_escapes_control_characters_and_keeps_text() -> None:
    kept = "plain text, ünïcode, 日本語 👨\u200d👩"
    assert visible(kept) == kept
    assert visible(HOSTILE) == (
        "resnet\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;cm0gLXJmIH4K\\x07\\x9b31m\\x7f\\u202etxt.exe"
    )
    assert visible("a\tb\r\nc") == "a\\tb\\r\\nc"
    assert visible("a\tb\r\nc", lines=True) == "a\tb\\r\nc"
    assert visible("\x00\x85\u2028\u2066\ufeff\udc80") == "\\x00\\x85\\u2028\\u2066\\ufeff\\udc80"
    shown = visible(HOSTILE)
    assert visible(shown) == shown and shown.isprintable()


def test_visible_drops_colour_and_still_escapes_what_it_leaves() -> None:
    """onnxruntime colours its error lines: the colour goes, the words stay; any other CSI,
    and an ESC left behind once a colour sequence is cut out, are escaped as before."""
    logged = "\x1b[1;31m2026 [E:onnxruntime:, sequential_executor.cc] Concat failed\x1b[m"
    assert visible(logged) == "2026 [E:onnxruntime:, sequential_executor.cc] Concat failed"
    assert visible("a\x1b[2Jb\x1b[31;1Hc") == "a\\x1b[2Jb\\x1b[31;1Hc"
    assert visible("\x1b\x1b[31m[2J") == "\\x1b[2J"  # the cut does not make a live sequence
    assert visible("\x9b31m") == "\\x9b31m"  # the C1 CSI form stays escaped


def test_runs_show_and_list_show_escapes(hostile_run: tuple[Path, str]) -> None:
    project, run_id = hostile_run
    shown = hub("runs", "show", run_id[:8], cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert_escaped(shown.stdout)
    header, error = shown.stdout.splitlines()[0], shown.stdout.splitlines()[2]
    assert header.startswith(f"run {run_id}  resnet\\x1b]0;pwned") and "(COMPILE)  FAILED" in header
    assert error.startswith("  error   device said: resnet") and error.endswith("txt.exe\\nok")

    listed = hub("runs", "list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert_escaped(listed.stdout)


def test_runs_rerun_error_line_shows_escapes(hostile_run: tuple[Path, str]) -> None:
    project, run_id = hostile_run
    again = hub("runs", "rerun", run_id[:8], cwd=project)
    assert again.returncode == 2, again.stderr
    assert again.stderr.startswith("hub: error: run e5c00000 (COMPILE resnet\\x1b]0;pwned")
    assert again.stderr.count("\n") == 1 and "Traceback" not in again.stderr
    assert_escaped(again.stderr)


def test_any_print_of_a_command_is_guarded(hostile_run: tuple[Path, str]) -> None:
    """`hub runs export` prints the file name it was given with a plain print: the CLI's
    guarded stdout shows it escaped all the same."""
    project, run_id = hostile_run
    exported = hub("runs", "export", run_id[:8], "-o", f"out{TITLE}{C1_CSI}.tar", cwd=project)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith("wrote ")
    assert "out\\x1b]0;pwned\\x07\\x9b31m.tar" in exported.stdout
    assert_escaped(exported.stdout, shown=SHOWN[:1] + SHOWN[3:4])
