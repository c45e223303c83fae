"""The cache folder's checks (`edgehub.paths.cache_subdir`): links inside the cache are never
followed, while the user's own link for the whole cache (say, to another disk) is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgehub.errors import EnvironmentProblem
from edgehub.paths import cache_subdir


def test_the_users_own_link_for_the_cache_folder_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir(mode=0o700)
    (tmp_path / "cache").symlink_to(disk)
    monkeypatch.setenv("EDGEHUB_CACHE_DIR", str(tmp_path / "cache"))
    made = cache_subdir("warm")
    assert (disk / "warm").is_dir() and made == tmp_path / "cache" / "warm"
    assert (disk / "warm").stat().st_mode & 0o777 == 0o700


def test_a_link_inside_the_cache_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cache").mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (tmp_path / "cache" / "warm").symlink_to(elsewhere)
    monkeypatch.setenv("EDGEHUB_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(EnvironmentProblem, match="symbolic link"):
        cache_subdir("warm")
    assert os.stat(elsewhere).st_mode & 0o777 == 0o755


def test_a_cache_folder_others_may_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("EDGEHUB_CACHE_DIR", str(shared))
    with pytest.raises(EnvironmentProblem, match="written by other users"):
        cache_subdir("warm")
