"""`hub` builds only the parser of the command (and `hub exec` verb) it is given (issue 39): its
help and errors are those of the parser with every command built, and the other commands'
modules stay unloaded. Through the real `hub`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.cli.main import build_parser

HUB = str(Path(sys.executable).with_name("hub"))
ENV = {**os.environ, "COLUMNS": "100"}


def _hub(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HUB, *argv], capture_output=True, text=True, env=ENV, timeout=60)


def _full(*argv: str) -> subprocess.CompletedProcess[str]:
    """What the parser with every command built makes of ``argv`` (parse only)."""
    code = (
        "import sys; from edgehub.cli.main import build_parser; "
        "build_parser().parse_known_args(sys.argv[1:])"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=ENV, timeout=60
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["-q", "--help"],
        ["exec", "--help"],
        ["exec", "invoke", "--help"],
        ["--config", "x.toml", "exec", "ab", "--help"],
        ["--conf=x.toml", "exec", "sweep", "--help"],
        ["runs", "list", "--help"],
        ["init", "--help"],
        ["devices", "--json", "--help"],
        ["doctor", "--help"],
        ["exec", "bogus"],
        ["bogus"],
        ["exec"],
        ["exec", "--", "invoke"],
    ],
)
def test_help_and_errors_are_those_of_the_full_parser(argv: list[str]) -> None:
    lean, full = _hub(*argv), _full(*argv)
    assert (lean.returncode, lean.stdout) == (full.returncode, full.stdout)
    if full.returncode:  # the full parser's error line, before hub's handling of extra words
        assert lean.stderr.splitlines()[0] == full.stderr.splitlines()[0] or not full.stderr


def test_the_verbs_and_commands_not_given_are_only_listed() -> None:
    top = build_parser(["exec", "invoke", "x"])
    commands = top.command_groups[0].choices  # type: ignore[attr-defined]
    assert [n for n, p in commands.items() if not p.get_default("listed_only")] == ["exec"]
    verbs = commands["exec"].command_groups[0].choices
    assert [n for n, p in verbs.items() if not p.get_default("listed_only")] == ["invoke"]
    code = (
        "import sys; from edgehub.cli.main import main\n"
        "try:\n    main(['exec', 'invoke', '--help'])\n"
        "except SystemExit:\n    print(' '.join(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "usage: hub exec invoke" in done.stdout, done.stderr
    loaded = set(done.stderr.split())
    assert "edgehub.cli.exec_cmd" in loaded
    for module in ("devices_cmd", "images_cmd", "config_cmd"):
        assert f"edgehub.cli.{module}" not in loaded
