"""Caches key on content, never on stamps alone: a file rewritten with its size and
modification time kept is hashed again (the change time is in every stamp); the device's hash of
a cached dataset is `hash_path`'s; a shared or cached copy changed in place is made again."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.runners.docker.channel import SHARED, share_file
from edgehub.runners.ssh import files as ssh_files
from edgehub.toolchains.remote.ssh_agent import DEVICE_HASH
from edgehub.tracking import hash_memo
from edgehub.tracking.artifacts import content_hash, hash_path
from edgehub.tracking.hash_memo import HashMemo


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _rewrite_keeping_stamp(path: Path, data: bytes) -> None:
    """What ``cp -p`` over ``path`` does: the same inode written, its times put back."""
    found = path.stat()
    assert len(data) == found.st_size
    with path.open("r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        found.st_ino, found.st_size, found.st_mtime_ns
    )  # fmt: skip


@pytest.fixture
def memo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A fresh memo that takes every file as settled (no waiting here), small ones too."""
    monkeypatch.setattr(hash_memo, "_memo", HashMemo(tmp_path / "cache" / "hashes.json"))
    monkeypatch.setattr(hash_memo, "SETTLED_NS", -(10**9))
    monkeypatch.setattr(hash_memo, "SMALL_BYTES", 0)


@pytest.mark.usefixtures("memo")
def test_a_private_file_swapped_with_its_stamp_kept_is_hashed_again(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"version 1")
    model.chmod(0o600)  # this user's own file: the change time is in its stamp all the same
    assert content_hash(model) == _sha(b"version 1")
    _rewrite_keeping_stamp(model, b"version 2")
    assert content_hash(model) == _sha(b"version 2")
    assert content_hash(model, verify=True) == _sha(b"version 2")


@pytest.mark.usefixtures("memo")
def test_a_file_deleted_and_made_again_is_hashed_again(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"version 1")
    found = model.stat()
    assert content_hash(model) == _sha(b"version 1")
    model.unlink()
    model.write_bytes(b"version 2")  # the inode may well be the same one
    os.utime(model, ns=(found.st_atime_ns, found.st_mtime_ns))
    assert content_hash(model) == _sha(b"version 2")


def test_the_ssh_upload_memo_keys_on_the_change_time_too(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"version 1")
    assert ssh_files._local_sha256(model) == _sha(b"version 1")
    _rewrite_keeping_stamp(model, b"version 2")
    assert ssh_files._remembered_sha256(model, model.stat()) is None


def test_the_device_hash_is_hash_path(tmp_path: Path) -> None:
    folder = tmp_path / "samples"
    (folder / "a").mkdir(parents=True)
    for name, data in {
        "a/b.npz": b"1", "a-c.npz": b"22", ".hidden.npz": b"333", "A.npz": b"", "z/y/x.npz": b"4"
    }.items():  # fmt: skip
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    single = tmp_path / "samples.npz"
    single.write_bytes(b"stacked")
    for path in (folder, single):
        done = subprocess.run(
            [sys.executable, "-c", DEVICE_HASH, str(path)], capture_output=True, text=True
        )
        assert done.stdout.strip() == hash_path(path), done.stderr


def test_a_shared_file_the_container_changed_is_copied_again(tmp_path: Path) -> None:
    channel = tmp_path / "channel"
    channel.mkdir()
    data = tmp_path / "data.npz"
    data.write_bytes(b"the host's samples")
    digest = _sha(data.read_bytes())
    where, sent = share_file(channel, data, digest)
    assert sent and share_file(channel, data, digest) == (where, False)
    copy = channel / SHARED / f"{digest[:32]}.npz"
    _rewrite_keeping_stamp(copy, b"the box's samples!")
    assert share_file(channel, data, digest) == (where, True)
    assert copy.read_bytes() == data.read_bytes()


def test_a_cached_static_model_changed_in_place_is_made_again(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_static_model import _fix, conv_model

    model = conv_model(tmp_path / "c.onnx")
    first, _ = _fix(tmp_path, model, (1, 3, 48, 192))
    good = first.read_bytes()
    _rewrite_keeping_stamp(first, bytes(len(good)))
    again, _ = _fix(tmp_path, model, (1, 3, 48, 192))
    assert again == first and again.read_bytes() == good
