"""`adopt_folder`: a folder a container wrote in place is taken in only when it checks out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgehub.errors import DeviceOutputError
from edgehub.limits import FetchLimits
from edgehub.runners.in_place import adopt_folder


def _written(tmp_path: Path) -> Path:
    source = tmp_path / "job" / "out"
    (source / "sub").mkdir(parents=True)
    (source / "a.bin").write_bytes(b"x" * 100)
    (source / "sub" / "b.txt").write_text("b")
    return source


def test_a_good_folder_replaces_the_local_one_by_rename(tmp_path: Path) -> None:
    source = _written(tmp_path)
    local = tmp_path / "run" / "out"
    local.mkdir(parents=True)
    (local / "old").write_text("old")
    inode = (source / "a.bin").stat().st_ino
    adopt_folder(source, local, FetchLimits())
    assert sorted(p.relative_to(local).as_posix() for p in local.rglob("*")) == [
        "a.bin", "sub", "sub/b.txt",
    ]  # fmt: skip
    assert (local / "a.bin").stat().st_ino == inode and not source.exists()  # moved, not copied


def test_set_id_and_sticky_bits_do_not_survive(tmp_path: Path) -> None:
    """A container may leave a set-user-id file (as root here, it would become root's)."""
    source = _written(tmp_path)
    os.chmod(source / "a.bin", 0o4755)
    os.chmod(source / "sub", 0o3775)
    local = tmp_path / "run" / "out"
    adopt_folder(source, local, FetchLimits())
    assert (local / "a.bin").stat().st_mode & 0o7777 == 0o755
    assert (local / "sub").stat().st_mode & 0o7777 == 0o775


def test_nothing_there_is_nothing_back(tmp_path: Path) -> None:
    adopt_folder(tmp_path / "none", tmp_path / "local", FetchLimits())
    (tmp_path / "file").write_text("x")
    adopt_folder(tmp_path / "file", tmp_path / "local", FetchLimits())
    assert not (tmp_path / "local").exists()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dir-symlink"])
def test_links_and_pipes_are_refused_and_nothing_moves(tmp_path: Path, kind: str) -> None:
    source = _written(tmp_path)
    planted = source / "sub" / "planted"
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        planted.symlink_to("/etc" if kind == "dir-symlink" else "/etc/hostname")
    local = tmp_path / "local"
    with pytest.raises(DeviceOutputError, match="out/sub/planted, which is not a file"):
        adopt_folder(source, local, FetchLimits())
    assert not local.exists() and source.is_dir()


@pytest.mark.parametrize(
    ("limits", "variable"),
    [
        (FetchLimits(max_member_bytes=50), "EDGEHUB_FETCH_MAX_MEMBER_BYTES"),
        (FetchLimits(max_bytes=100), "EDGEHUB_FETCH_MAX_BYTES"),
        (FetchLimits(max_files=2), "EDGEHUB_FETCH_MAX_FILES"),
        (FetchLimits(max_depth=1), "EDGEHUB_FETCH_MAX_DEPTH"),
    ],
)
def test_the_fetch_limits_hold(tmp_path: Path, limits: FetchLimits, variable: str) -> None:
    source = _written(tmp_path)
    with pytest.raises(DeviceOutputError, match=variable):
        adopt_folder(source, tmp_path / "local", limits)
    assert not (tmp_path / "local").exists()


def test_a_sparse_file_counts_at_its_full_size(tmp_path: Path) -> None:
    source = _written(tmp_path)
    with (source / "holes").open("wb") as handle:
        handle.truncate(1 << 30)
    with pytest.raises(DeviceOutputError, match="EDGEHUB_FETCH_MAX_MEMBER_BYTES"):
        adopt_folder(source, tmp_path / "local", FetchLimits(max_member_bytes=1 << 20))
