"""Content hashes remembered across commands: kept only for settled files, dropped on change,
read only from a memo file that checks out, and stored copies re-recorded without a read."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from edgehub.tracking import artifacts as artifacts_module
from edgehub.tracking import hash_memo
from edgehub.tracking.artifacts import ArtifactStore, content_hash, hash_path
from edgehub.tracking.hash_memo import HashMemo


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[object]:
    """The files `content_hash` reads; its memo is a fresh one saved in ``tmp_path``."""
    seen: list[object] = []
    hash_handle = artifacts_module._hash_handle

    def counted(handle, digest) -> None:  # type: ignore[no-untyped-def]
        seen.append(handle)
        hash_handle(handle, digest)

    monkeypatch.setattr(artifacts_module, "_hash_handle", counted)
    monkeypatch.setattr(hash_memo, "_memo", HashMemo(tmp_path / "cache" / "hashes.json"))
    # an hour: a file just written stays unsettled however long a busy machine takes here
    monkeypatch.setattr(hash_memo, "SETTLED_NS", 3600 * 10**9)
    monkeypatch.setattr(hash_memo, "SMALL_BYTES", 0)  # these files of a few bytes remembered too
    return seen


def _age(path: Path, seconds: float = 7200.0) -> None:
    """Give ``path`` a modification time ``seconds`` ago (as a user's older file has), and
    let this test's memo take files whose change time (now: nobody can set it back) is past."""
    found = path.stat()
    os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns - int(seconds * 1e9)))
    hash_memo.SETTLED_NS = -(10**9)  # restored by the fixture's monkeypatch


def test_a_settled_file_is_read_once_across_commands_until_it_changes(
    reads: list[object], tmp_path: Path
) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    assert content_hash(model) == content_hash(model) == hashlib.sha256(b"weights").hexdigest()
    assert len(reads) == 2  # just written: not remembered
    _age(model)
    content_hash(model)
    hash_memo.memo().save()  # what the command does at exit
    reads.clear()
    hash_memo._memo = HashMemo(tmp_path / "cache" / "hashes.json")  # the next command
    assert content_hash(model) == hashlib.sha256(b"weights").hexdigest()
    assert reads == []
    model.write_bytes(b"changed")  # same size, written now
    assert content_hash(model) == hashlib.sha256(b"changed").hexdigest()
    assert len(reads) == 1


def test_a_shared_file_is_remembered_with_its_change_time_too(
    reads: list[object], tmp_path: Path
) -> None:
    model = tmp_path / "shared.onnx"
    model.write_bytes(b"weights")
    model.chmod(0o666)  # anyone may write it: setting the modification time back is not enough
    _age(model)
    content_hash(model)
    found = model.stat()
    model.write_bytes(b"forged!")  # same size, then its modification time put back
    os.utime(model, ns=(found.st_atime_ns, found.st_mtime_ns))
    reads.clear()
    assert content_hash(model) == hashlib.sha256(b"forged!").hexdigest()
    assert len(reads) == 1


def test_a_folder_is_remembered_by_its_files(reads: list[object], tmp_path: Path) -> None:
    folder = tmp_path / "calibration"
    folder.mkdir()
    for index in range(3):
        (folder / f"s{index}.npz").write_bytes(b"sample %d" % index)
        _age(folder / f"s{index}.npz")
    expected = hash_path(folder)
    assert content_hash(folder) == expected
    reads.clear()
    assert content_hash(folder) == expected and reads == []
    (folder / "s3.npz").write_bytes(b"one more")
    assert content_hash(folder) == hash_path(folder) != expected


@pytest.mark.parametrize("problem", ["link", "group-writable", "garbage", "bad-entry"])
def test_a_memo_file_that_does_not_check_out_is_ignored(tmp_path: Path, problem: str) -> None:
    path = tmp_path / "hashes.json"
    good = {"version": 1, "hashes": {"k": "a" * 64}}
    if problem == "link":
        real = tmp_path / "elsewhere.json"
        real.write_text(json.dumps(good))
        path.symlink_to(real)
    elif problem == "group-writable":
        path.write_text(json.dumps(good))
        path.chmod(0o664)
    elif problem == "garbage":
        path.write_text("{not json")
    else:
        path.write_text(json.dumps({"version": 1, "hashes": {"k": "not a sha256"}}))
    assert HashMemo(path).get("k") is None
    path.unlink()
    path.write_text(json.dumps(good))
    path.chmod(0o600)
    assert HashMemo(path).get("k") == "a" * 64


def test_saving_replaces_a_planted_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = tmp_path / "cache" / "hashes.json"
    path.parent.mkdir(mode=0o700)
    path.symlink_to(victim)
    memo = HashMemo(path)
    memo.put("key", "b" * 64)
    memo.save()
    assert victim.read_text() == "precious"
    assert not path.is_symlink() and HashMemo(path).get("key") == "b" * 64
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_memo_keeps_the_newest_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hash_memo, "MAX_ENTRIES", 3)
    memo = HashMemo(tmp_path / "hashes.json")
    for index in range(5):
        memo.put(f"k{index}", f"{index:064x}")
    memo.save()
    again = HashMemo(tmp_path / "hashes.json")
    assert [again.get(f"k{i}") is not None for i in range(5)] == [False, False, True, True, True]


def test_the_store_holds_its_copies_as_recorded(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "artifacts")
    source = tmp_path / "engine.trt"
    source.write_bytes(b"engine")
    stored, sha, size = store.add(source, fresh=True)
    assert store.holds(stored, sha, size)
    assert not store.holds(stored, sha, size + 1)
    assert not store.holds(source, sha, size)  # not in the store
    os.link(stored, tmp_path / "another-name")
    assert not store.holds(stored, sha, size)  # shared with a name outside the store
    folder = tmp_path / "calibration"
    folder.mkdir()
    (folder / "a.npz").write_bytes(b"aaaa")
    stored_dir, dir_sha, dir_size = store.add(folder)
    assert store.holds(stored_dir, dir_sha, dir_size)
    (stored_dir / "planted").symlink_to(source)
    assert not store.holds(stored_dir, dir_sha, dir_size)
