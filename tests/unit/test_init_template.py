"""`hub init` through its real entry point writes the commented template the repository's
hub.toml shows: the same file, with the project's name and without the example spec of the
local device (this machine is whatever it is); the commented-out device blocks stay, and the
written file loads with the config loader and with every device block uncommented too."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from edgehub.config.load import parse_toml

HUB = str(Path(sys.executable).with_name("hub"))
REPO_HUB_TOML = Path(__file__).resolve().parents[2] / "hub.toml"
LOCAL_SPEC = 'spec = "x86-64 build server"\n'


def _init(directory: Path, *argv: str) -> str:
    result = subprocess.run(
        [HUB, "init", *argv], cwd=directory, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return (directory / "hub.toml").read_text(encoding="utf-8")


def test_init_writes_the_repository_hub_toml_as_a_template(tmp_path: Path) -> None:
    written = _init(tmp_path, "--name", "edgehub-example")
    expected = REPO_HUB_TOML.read_text(encoding="utf-8").replace(LOCAL_SPEC, "# " + LOCAL_SPEC)
    assert written == expected
    assert written.count("\n# [devices.") >= 5  # the examples are there, commented out
    listed = subprocess.run(
        [HUB, "devices", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert [row["name"] for row in json.loads(listed.stdout)] == ["local"]


def test_the_commented_examples_are_valid_once_uncommented(tmp_path: Path) -> None:
    """Removing the leading "# " of every example block (as the file says to) gives TOML
    with every example device in it."""
    written = _init(tmp_path, "--name", "p")
    uncommented = re.sub(r"^# ((?:\[|[a-z_]+ = ).*)$", r"\1", written, flags=re.MULTILINE)
    data = parse_toml(uncommented)
    assert {"rpi", "jetson", "s24", "pixel", "npu-board"} <= set(data["devices"])
    assert data["devices"]["local"]["docker"]["cpus"] == 2
    assert data["project"]["name"] == "p"
