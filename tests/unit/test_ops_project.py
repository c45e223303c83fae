"""`ops.project`: where a project's run store is, and the hub.toml it reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgehub.ops.project import open_project


def test_the_store_is_beside_hub_toml_unless_edgehub_store_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "p"\nstore = "runs-here"\n')
    project = open_project(tmp_path / "hub.toml")
    assert project.store_dir == tmp_path / "runs-here"
    monkeypatch.setenv("EDGEHUB_STORE", str(tmp_path / "elsewhere"))
    assert project.store_dir == tmp_path / "elsewhere"
