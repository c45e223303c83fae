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
POSITIONALS: dict[tuple[str, ...], list[str]] = {("runs", "show"): ["latest"]}
for verb in ("compile", "profile", "invoke", "pipeline", "eval"):
    POSITIONALS[("exec", verb)] = ["onnxruntime", str(MODEL)]
POSITIONALS[("exec", "ab")] = ["onnxruntime", str(MODEL), str(MODEL)]
POSITIONALS[("exec", "sweep")] = []  # GRID.toml is optional: the flags can give the grid
POSITIONALS[("runs", "compare")] = ["a", "b"]
POSITIONALS[("runs", "export")] = ["latest", "-o", "runs.tar"]
POSITIONALS[("runs", "report")] = ["latest", "-o", "report.html"]
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
    verbs = {leaf[1] for leaf in LEAVES if leaf[0] == "exec"}
    assert verbs == {"compile", "profile", "invoke", "pipeline", "eval", "ab", "sweep"}


@pytest.mark.parametrize("command", LEAVES, ids=" ".join)
def test_unknown_flag_is_a_one_line_usage_error(command: tuple[str, ...], tmp_path: Path) -> None:
    argv = [*command, *POSITIONALS.get(command, []), "--no-such-flag"]
    _one_line_usage_error(argv, tmp_path, "--no-such-flag", " ".join(command))


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["exec", "compile", "onnxruntime", "MODEL", "--input", "x.npz"],
         "hub exec compile: unrecognized arguments: --input x.npz; --input is for hub exec "
         "profile, invoke, pipeline, ab, sweep;"),
        (["exec", "compile", "onnxruntime", "--from-run", "latest"],
         "--from-run is for hub exec profile, invoke, eval"),
        (["exec", "pipeline", "onnxruntime", "--from-run", "latest"],
         "hub exec pipeline: unrecognized arguments: --from-run latest"),
        (["exec", "pipeline", "onnxruntime", "MODEL", "--name", "x"],
         "--name is for hub exec compile, profile, invoke, eval, ab"),
        (["exec", "profile", "onnxruntime", "MODEL", "--from-run", "abc"], "not both"),
        (["exec", "sweep", "grid.toml", "MODEL"], "hub exec sweep: unrecognized argument: "),
        (["exec", "--json", "compile", "onnxruntime", "MODEL"],
         "--json goes after the verb: hub exec compile ... --json"),
    ],
)  # fmt: skip
def test_flags_a_step_cannot_use(argv: list[str], needle: str, tmp_path: Path) -> None:
    argv = [str(MODEL) if word == "MODEL" else word for word in argv]
    _one_line_usage_error(argv, tmp_path, needle)
