"""The agent's command line is read by one module (`edgehub.agent.argv`) for commands, ``serve``,
``--server`` and the entry point; through the real ``python -m edgehub.agent`` too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.agent.argv import ArgvProblem, option_value, read_options, take_option
from edgehub.agent.cli import parse_args
from edgehub.agent.entry import runs_a_command, wants_server
from edgehub.agent.protocol import UsageError
from edgehub.agent.server.serve import ServeUsageError, parse_serve_args


def test_options_in_both_spellings_and_the_last_one_wins() -> None:
    words, values = read_options(["a", "--x=1", "--x", "2", "b"], ("--x",))
    assert words == ["a", "b"] and values == {"--x": "2"}
    with pytest.raises(ArgvProblem, match=r"^unknown option --y$"):
        read_options(["--y"], ("--x",))
    with pytest.raises(ArgvProblem, match=r"^--x needs a path$"):
        read_options(["--x"], ("--x",), value="a path")


def test_the_server_option_taken_out_and_the_result_found_on_a_bad_line() -> None:
    assert take_option(["--server", "s", "env"], "--server") == ("s", ["env"])
    assert take_option(["env", "--server="], "--server") == (None, ["env"])
    assert take_option(["env", "--server"], "--server") == (None, ["env", "--server"])
    assert option_value(["--bogus", "--result", "r.json"], "--result") == "r.json"


def test_every_reader_agrees() -> None:
    assert parse_args(["ort.profile", "--request=q.json", "--result", "r"]) == (
        "ort.profile",
        "q.json",
        "r",
    )
    with pytest.raises(UsageError, match=r"^unexpected argument 'x'\. usage:"):
        parse_args(["env", "x"])
    with pytest.raises(UsageError, match=r"^--server needs a path\. usage:"):
        parse_args(["env", "--server"])
    assert parse_serve_args(["--socket=/s", "--idle", "5", "--preload", "ort"]) == (
        "/s",
        5.0,
        ["ort"],
    )
    for bad, words in ((["--socket"], "--socket needs a value"), (["x"], "unexpected argument")):
        with pytest.raises(ServeUsageError, match=words):
            parse_serve_args(bad)
    assert wants_server(["--server", "s", "env"]) and not wants_server(["env"])
    assert not wants_server(["--server", "s", "--help"])
    assert runs_a_command(["--server", "s", "env"]) and not runs_a_command(
        ["--server", "s", "serve"]
    )


def test_a_bad_line_is_reported_in_the_result_file(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "edgehub.agent", "env", "--bogus", "--result", "r.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = json.loads((tmp_path / "r.json").read_text())["error"]
    assert error["message"].startswith("unknown option --bogus. usage: edgehub-agent")
