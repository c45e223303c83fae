"""`hub init` through its real entry point: a hostile project name (quotes, newlines, TOML
syntax, control characters, bytes that are not UTF-8) gives a hub.toml that loads back with the
name exactly as given and nothing else in it, or a one-line refusal that writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.config.load import parse_toml

HUB = str(Path(sys.executable).with_name("hub"))
INJECTION = 'x"\n[devices.injected]\nprovider = "local"\nname = "'


def _hub(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HUB, *argv], cwd=cwd, capture_output=True, text=True, timeout=60)


def _written(directory: Path, name: str) -> None:
    """hub.toml in ``directory`` is valid TOML naming project ``name``, with only ``local``."""
    data = parse_toml((directory / "hub.toml").read_text(encoding="utf-8"))
    assert data["project"] == {"name": name, "store": ".hub"}  # the template's other key
    assert list(data["devices"]) == ["local"]
    listed = _hub("devices", "--json", cwd=directory)  # later commands load it too
    assert listed.returncode == 0, listed.stderr
    assert [row["name"] for row in json.loads(listed.stdout)] == ["local"]


@pytest.mark.parametrize(
    "name",
    ['a"b', INJECTION, "back\\slash 'single' '''triple'''", "tab\tbell\x07del\x7f", "#[x]=1"],
    ids=["quote", "newline-injection", "backslash-and-single-quotes", "control", "toml-syntax"],
)
def test_init_name_is_written_through_the_toml_library(name: str, tmp_path: Path) -> None:
    result = _hub("init", "--name", name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    _written(tmp_path, name)


def test_init_takes_a_quoted_directory_name_as_it_is(tmp_path: Path) -> None:
    project = tmp_path / 'team "A" proj'
    project.mkdir()
    result = _hub("init", cwd=project)
    assert result.returncode == 0, result.stderr
    _written(project, 'team "A" proj')


def test_init_refuses_a_directory_name_that_is_not_utf8_in_one_line(tmp_path: Path) -> None:
    try:
        os.mkdir(os.path.join(os.fsencode(tmp_path), b"bad\xff"))
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    project = tmp_path / os.fsdecode(b"bad\xff")
    result = subprocess.run(
        [HUB, "init"], cwd=project, capture_output=True, timeout=60, env=os.environ
    )
    stderr = result.stderr.decode(errors="replace")
    assert result.returncode == 2, stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert "--name" in stderr
    assert not (project / "hub.toml").exists()


def test_init_leaves_an_existing_hub_toml_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text("# mine\n")
    result = _hub("init", "--name", "x", cwd=tmp_path)
    assert result.returncode == 2 and "already exists" in result.stderr
    assert (tmp_path / "hub.toml").read_text() == "# mine\n"


def test_init_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "victim"
    target.parent.mkdir()
    (tmp_path / "hub.toml").symlink_to(target)  # dangling: the target does not exist yet
    result = _hub("init", cwd=tmp_path)
    assert result.returncode == 2 and "already exists" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not target.exists()
