"""`hub exec VERB`: each verb's parser takes only its own flags (argparse ``parents``), its help
lists only those, a flag of another verb is argparse's one-line "unrecognized argument" saying
which verbs take it, and every `hub exec` command the README shows still parses."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.cli.main import OneLineErrors, build_parser

HUB = str(Path(sys.executable).with_name("hub"))
README = Path(__file__).resolve().parents[2] / "README.md"

COMMON = {"--device", "--set", "--json", "--config", "--debug", "--quiet"}
LIMITS = {"--lease-timeout", "--timeout"}
STABLE = {"--until-stable", "--stable-tolerance", "--stable-max-s"}
# what each verb takes, written out here (not read from the code it checks)
TAKES = {
    "compile": COMMON | LIMITS | {"--tag", "--name", "--from-job", "--transform", "--no-cache",
                                  "--pin-cpus"},
    "profile": COMMON | LIMITS | STABLE | {"--tag", "--name", "--input", "--from-run",
                                           "--from-job", "--pin-cpus"},
    "invoke": COMMON | LIMITS | {"--tag", "--name", "--input", "--from-run", "--from-job",
                                 "--pin-cpus"},
    "pipeline": COMMON | LIMITS | STABLE | {"--tag", "--input", "--transform", "--no-cache",
                                            "--dataset", "--labels", "--metric", "--pin-cpus"},
    "eval": COMMON | {"--tag", "--name", "--from-run", "--dataset", "--labels", "--metric",
                      "--goal", "--reference", "--layers", "--fix", "--cluster"},
    "ab": COMMON | LIMITS | {"--tag", "--name", "--input", "--rounds", "--max-regression"},
    "sweep": COMMON | LIMITS | {"--input", "--models", "--devices", "--runtimes", "--vary",
                                "--sweep-step", "--resume", "--cluster"},
}  # fmt: skip


def _verb_parsers() -> dict[str, OneLineErrors]:
    top = build_parser()
    assert isinstance(top, OneLineErrors)
    exec_parser = top.command_groups[0].choices["exec"]
    return dict(exec_parser.command_groups[0].choices)


def _help(*argv: str) -> str:
    done = subprocess.run([HUB, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("verb", sorted(TAKES))
def test_each_verb_help_lists_exactly_the_flags_it_takes(verb: str) -> None:
    usage = _help("exec", verb, "--help").split("\n\n")[0]
    listed = set(re.findall(r"\[(--[a-z-]+)", usage))
    assert "[-q]" in usage
    assert listed | {"--quiet"} == TAKES[verb]


def test_ab_help_has_its_three_positionals_and_sweep_its_grid() -> None:
    ab = _help("exec", "ab", "--help")
    assert re.search(r"\[RUNTIME\] \[A\] \[B\]", ab)
    for other in ("--dataset", "--models", "--from-run", "--until-stable", "--transform"):
        assert other not in ab
    sweep = _help("exec", "sweep", "--help")
    assert "GRID.toml" in sweep.split("\n\n")[0] and "RUNTIME" not in sweep


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["profile", "onnxruntime", "m.onnx", "--dataset", "ds.npz"],
         "hub exec profile: unrecognized arguments: --dataset ds.npz; --dataset is for hub exec "
         "pipeline, eval; see 'hub exec profile --help'"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--from-run", "latest"],
         "--from-run is for hub exec profile, invoke, eval"),
        (["profile", "onnxruntime", "a.onnx", "--rounds", "9"], "--rounds is for hub exec ab;"),
        (["eval", "onnxruntime", "m.onnx", "--timeout=5"],
         "unrecognized argument: --timeout=5; --timeout is for hub exec compile, profile, "
         "invoke, pipeline, ab, sweep"),
        (["sweep", "--tag", "k=v", "--name", "n"], "--tag is for hub exec compile, profile"),
        (["profile", "onnxruntime", "a.onnx", "b.onnx"], "unrecognized argument: b.onnx;"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "c.onnx"], "unrecognized argument: c.onnx"),
    ],
)  # fmt: skip
def test_a_flag_of_another_verb_is_one_unrecognized_line(
    argv: list[str], needle: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [HUB, "exec", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hub: error: hub exec "), done.stderr
    assert needle in lines[0]
    assert not (tmp_path / ".hub").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--rounds", "10"],
         {"runtime": "onnxruntime", "model": Path("a.onnx"), "model_b": Path("b.onnx"),
          "rounds": 10}),
        (["sweep", "grid.toml", "--vary", "runs=1,2", "--resume"],
         {"grid": Path("grid.toml"), "vary": ["runs=1,2"], "resume": True}),
        (["eval", "tflite", "m.onnx", "--dataset", "d", "--fix", "--goal", "cosine>=0.9"],
         {"runtime": "tflite", "model": Path("m.onnx"), "dataset": Path("d"), "fix": 5,
          "goal": ["cosine>=0.9"]}),
        (["profile", "--json", "onnxruntime", "--from-run", "latest", "--until-stable"],
         {"runtime": "onnxruntime", "model": None, "from_run": "latest", "json": True,
          "until_stable": True, "lease_timeout": None, "step": "profile"}),
        (["pipeline", "onnxruntime", "m.onnx", "--transform", "--no-cache", "-q"],
         {"transform": "auto", "no_cache": True, "quiet": True, "tag": [], "metric": []}),
    ],
)  # fmt: skip
def test_invocations_parse_as_they_did(argv: list[str], expected: dict[str, object]) -> None:
    args = build_parser().parse_args(["exec", *argv])
    assert {key: getattr(args, key) for key in expected} == expected


def _readme_commands() -> list[str]:
    """The `hub exec` lines of the README's bash code blocks, without their comments."""
    commands, fence = [], None
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
        elif fence == "bash" and line.startswith("hub exec "):
            commands.append(line.split(" # ")[0].strip())
    return commands


def _readme_synopsis() -> list[tuple[list[str], set[str]]]:
    """The README's CLI synopsis for `hub exec`: (the verbs a line names, the flags it and its
    indented continuation lines show)."""
    found: list[tuple[list[str], set[str]]] = []
    fence: str | None = None
    current: tuple[list[str], set[str]] | None = None
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence, current = (None if fence is not None else line[3:].strip()), None
        elif fence != "text":
            continue
        elif line.startswith("hub exec "):
            word = line.split()[2]
            current = (word.strip("{}").split(",") if word.startswith("{") else [word], set())
            found.append(current)
        elif not line.startswith(" "):
            current = None  # another command's synopsis
        if current is not None:
            current[1].update(re.findall(r"--[a-z-]+", line))
    return found


def test_the_readme_shows_hub_exec_commands() -> None:
    assert len(_readme_commands()) >= 8
    assert {verb for verbs, _ in _readme_synopsis() for verb in verbs} == set(TAKES)


@pytest.mark.parametrize("command", _readme_commands())
def test_every_readme_command_parses(command: str) -> None:
    words = shlex.split(command)[1:]
    args, extra = build_parser().parse_known_args(words)
    assert extra == [] and args.step == words[1]


@pytest.mark.parametrize(
    ("verbs", "flags"), _readme_synopsis(), ids=[",".join(v) for v, _ in _readme_synopsis()]
)
def test_every_flag_of_the_readme_synopsis_is_taken(verbs: list[str], flags: set[str]) -> None:
    parsers = _verb_parsers()
    taken = set()
    for verb in verbs:
        taken |= set(re.findall(r"\[(--[a-z-]+)", parsers[verb].format_usage()))
    assert flags <= taken
