"""`safe_extract` against hostile archives, with and without tarfile's data filter."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from edgehub.errors import UnsafeArchiveError
from edgehub.runners import archive
from edgehub.runners.archive import pack, safe_extract


@pytest.fixture(params=["data-filter", "no-filter"], autouse=True)
def _filter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs both ways: as on a Python with the data filter, and as on one without."""
    if request.param == "data-filter" and not archive._HAS_DATA_FILTER:
        pytest.skip("this Python's tarfile has no data filter")
    monkeypatch.setattr(archive, "_HAS_DATA_FILTER", request.param == "data-filter")


def _tar(*members: tuple[str, str, str]) -> bytes:
    """(kind, name, link-or-content) with kind file | dir | sym | hard | chr | fifo."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for kind, name, extra in members:
            info = tarfile.TarInfo(name)
            data = None
            if kind == "file":
                info.size = len(extra)
                data = io.BytesIO(extra.encode())
            elif kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind in ("sym", "hard"):
                info.type = tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE
                info.linkname = extra
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
            tar.addfile(info, data)
    return buffer.getvalue()


def _written(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


HOSTILE = {
    "symlink chain": _tar(
        ("dir", "a", ""), ("sym", "a/l", ".."), ("sym", "a/l/m", ".."), ("file", "a/l/m/x", "!")
    ),
    "chain through a file path": _tar(
        ("dir", "a", ""), ("sym", "a/up", ".."), ("file", "a/up/../escaped", "!")
    ),
    "symlink then write through it": _tar(("sym", "out", "../.."), ("file", "out/evil", "!")),
    "absolute symlink": _tar(("sym", "etc", "/etc")),
    "absolute name": _tar(("file", "/tmp/evil", "!")),
    "dot-dot name": _tar(("file", "ok", "fine"), ("file", "sub/../../evil", "!")),
    "hard link outside": _tar(("hard", "passwd", "../../etc/passwd")),
    "absolute hard link": _tar(("hard", "passwd", "/etc/passwd")),
    "hard link through a symlink": _tar(("sym", "up", ".."), ("hard", "h", "up/secret")),
    "device": _tar(("file", "ok", "fine"), ("chr", "null", "")),
    "fifo": _tar(("fifo", "pipe", "")),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_archives_write_nothing(tmp_path: Path, name: str) -> None:
    target = tmp_path / "sandbox" / "target"
    target.mkdir(parents=True)
    with pytest.raises(UnsafeArchiveError, match="refusing"):
        safe_extract(HOSTILE[name], target)
    assert _written(target) == []  # not even the harmless members before the bad one
    assert _written(tmp_path / "sandbox") == ["target"]


def test_a_link_already_on_disk_counts(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "door").symlink_to(tmp_path)
    with pytest.raises(UnsafeArchiveError):
        safe_extract(_tar(("file", "door/evil", "!")), target)
    assert not (tmp_path / "evil").exists()


def test_links_that_stay_inside_are_extracted(tmp_path: Path) -> None:
    data = _tar(
        ("dir", "a", ""),
        ("dir", "a/b", ""),
        ("file", "a/b/model.onnx", "weights"),
        ("sym", "a/b/up", ".."),
        ("sym", "a/current", "b/model.onnx"),
        ("sym", "a/b/up/also", "b"),  # a/also -> a/b, through the link above
        ("hard", "a/copy", "a/b/model.onnx"),
    )
    names = safe_extract(data, tmp_path / "t")
    root = tmp_path / "t"
    assert (root / "a" / "current").read_text() == "weights"
    assert (root / "a" / "also" / "model.onnx").read_text() == "weights"
    assert (root / "a" / "copy").read_text() == "weights"
    assert names[0] == "a"


def test_setuid_bits_are_dropped(tmp_path: Path) -> None:
    source = tmp_path / "tool"
    source.write_text("#!/bin/sh\n")
    source.chmod(0o4777)
    safe_extract(pack(source), tmp_path / "out")
    mode = (tmp_path / "out" / "tool").stat().st_mode
    assert mode & 0o7000 == 0 and mode & 0o022 == 0 and mode & 0o100


def test_round_trip_of_a_directory(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "x.bin").write_bytes(bytes(range(256)))
    safe_extract(pack(tree, arcname="."), tmp_path / "back")
    assert (tmp_path / "back" / "sub" / "x.bin").read_bytes() == bytes(range(256))


def test_a_damaged_archive_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafeArchiveError, match="cannot extract"):
        safe_extract(b"not a tar archive at all" * 40, tmp_path / "t")
