"""Every `hub` command refuses a flag it cannot use with one `hub: error:` line and exit 2,
through the real entry point (no usage dump, no traceback, nothing run)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.cli.main import OneLineErrors, build_parser

HUB = str(Path(sys.executable).with_name("hub"))
MODEL = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


def _leaf_commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    # the groups each parser remembers; subcommand parsers are OneLineErrors too, by argparse's
    # default parser_class (`test_every_command_is_covered` fails if that changes)
    subcommands = parser.command_groups if isinstance(parser, OneLineErrors) else []
    if not subcommands:
        return [words]
    leaves = []
    for action in subcommands:
        for name, child in action.choices.items():
            leaves += _leaf_commands(child, (*words, name))
    return leaves


LEAVES = _leaf_commands(build_parser())
# the positionals each command needs, so that the flag is the only thing wrong
POSITIONALS = {("exec",): ["compile", "onnxruntime"], ("runs", "show"): ["latest"]}
POSITIONALS[("runs", "compare")] = ["a", "b"]
POSITIONALS[("runs", "export")] = ["latest", "-o", "runs.tar"]
POSITIONALS[("runs", "import")] = ["runs.tar"]
POSITIONALS[("runs", "rerun")] = POSITIONALS[("runs", "delete")] = ["latest"]
POSITIONALS[("devices", "check")] = POSITIONALS[("devices", "trust")] = ["board"]
POSITIONALS[("devices", "release")] = POSITIONALS[("devices", "unquarantine")] = ["board"]


def _one_line_usage_error(argv: list[str], cwd: Path, *needles: str) -> None:
    result = subprocess.run([HUB, *argv], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, (argv, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hub: error:"), result.stderr
    for needle in needles:
        assert needle in lines[0]
    assert result.stdout == ""
    assert not (cwd / ".hub").exists() or not any((cwd / ".hub").glob("runs/*"))


def test_every_command_is_covered() -> None:
    assert {"exec", "runs", "images", "devices", "init", "doctor"} <= {leaf[0] for leaf in LEAVES}
    assert ("runs", "compare") in LEAVES and ("images", "build") in LEAVES


@pytest.mark.parametrize("command", LEAVES, ids=" ".join)
def test_unknown_flag_is_a_one_line_usage_error(command: tuple[str, ...], tmp_path: Path) -> None:
    argv = [*command, *POSITIONALS.get(command, []), "--no-such-flag"]
    _one_line_usage_error(argv, tmp_path, "--no-such-flag", " ".join(command))


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["exec", "compile", "onnxruntime", "MODEL", "--input", "x.npz"], "--input does not apply"),
        (["exec", "compile", "onnxruntime", "--from-run", "latest"], "--from-run does not apply"),
        (["exec", "pipeline", "onnxruntime", "--from-run", "latest"], "--from-run does not apply"),
        (["exec", "pipeline", "onnxruntime", "MODEL", "--name", "x"], "--name does not apply"),
        (["exec", "profile", "onnxruntime", "MODEL", "--from-run", "abc"], "not both"),
    ],
)
def test_flags_a_step_cannot_use(argv: list[str], needle: str, tmp_path: Path) -> None:
    argv = [str(MODEL) if word == "MODEL" else word for word in argv]
    _one_line_usage_error(argv, tmp_path, needle)
