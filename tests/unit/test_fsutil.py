"""`atomic_write` and `replacing`: the one way edgehub (host and agent) replaces a file; and
`copy_range`, the in-kernel copy of a file's first bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edgehub.fsutil import atomic_write, copy_range, replacing


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "folder"  # its own directory: nothing else is written there
    path.mkdir()
    return path


def test_replaces_the_bytes_and_keeps_the_mode(folder: Path) -> None:
    target = folder / "f"
    target.write_bytes(b"old")
    target.chmod(0o640)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o640
    assert os.listdir(folder) == ["f"]


def test_a_new_file_gets_new_mode(folder: Path) -> None:
    atomic_write(folder / "private", b"x", new_mode=0o600)
    assert (folder / "private").stat().st_mode & 0o777 == 0o600


def test_a_symlink_is_followed_not_replaced(folder: Path) -> None:
    real = folder / "real"
    real.write_bytes(b"old")
    link = folder / "link"
    link.symlink_to(real)
    atomic_write(link, b"new")
    assert link.is_symlink()
    assert real.read_bytes() == b"new"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(folder: Path) -> None:
    target = folder / "f"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        atomic_write(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert os.listdir(folder) == ["f"]


def test_replacing_a_file_written_in_a_block(folder: Path) -> None:
    target = folder / "result.json"
    with replacing(target, durable=False) as temp:
        Path(temp).write_text("{}", encoding="utf-8")
        assert not target.exists()  # nothing is seen before the block ends
    assert target.read_text(encoding="utf-8") == "{}"
    with pytest.raises(RuntimeError), replacing(target) as temp:
        Path(temp).write_text("half", encoding="utf-8")
        raise RuntimeError("stopped")
    assert target.read_text(encoding="utf-8") == "{}"
    assert os.listdir(folder) == ["result.json"]


def test_a_target_that_is_not_a_regular_file_is_refused_and_left_alone(folder: Path) -> None:
    pipe = folder / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(OSError, match="not a regular file"):
        atomic_write(pipe, b"x")
    assert pipe.is_fifo()  # renaming over it would have replaced the node itself
    assert os.listdir(folder) == ["pipe"]


def test_copy_range_copies_only_the_bytes_asked_for(folder: Path) -> None:
    source, target = folder / "source", folder / "target"
    source.write_bytes(os.urandom(3 << 20) + b"written later")  # grew after its size was taken
    with source.open("rb") as origin, target.open("wb") as copy:
        if not copy_range(origin.fileno(), copy.fileno(), 3 << 20):
            pytest.skip("copy_file_range is not offered by this kernel or file system")
    assert target.read_bytes() == source.read_bytes()[: 3 << 20]


def test_copy_range_reports_a_source_shorter_than_asked(folder: Path) -> None:
    source, target = folder / "source", folder / "target"
    source.write_bytes(b"short")
    with source.open("rb") as origin, target.open("wb") as copy:
        assert copy_range(origin.fileno(), copy.fileno(), 100) is False
