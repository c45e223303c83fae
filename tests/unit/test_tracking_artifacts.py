"""Stored artifacts are copies named by the hash of their bytes; outside files are stored only
once the run finished; `verify_artifacts` finds and repairs what went wrong."""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

import pytest

from edgehub.core import HubContext, hub_run
from edgehub.errors import ModelError
from edgehub.tracking.artifacts import (
    ArtifactStore,
    clone_or_copy,
    copy_hashed,
    hash_path,
)
from edgehub.tracking.verify import verify_artifacts


def _all_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


@hub_run("CUSTOM", name="uses-model")
def use_model(ctx: HubContext, model: Path, fail: bool = False) -> None:
    ctx.client.log_artifact(model, name="input")
    if fail:
        raise ModelError(f"{model} is not a model")


def test_an_outside_file_is_copied_never_linked(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights v1" * 1000)
    with HubContext(project_name="p", artifact_base_dir=tmp_path / "store") as ctx:
        use_model(ctx, model)
        record = ctx.store.list_runs()[0]
    stored = record.artifacts["input"].local()
    assert record.artifacts["input"].is_stored
    assert stored.read_bytes() == model.read_bytes()
    assert stored.stat().st_ino != model.stat().st_ino
    assert stored.stat().st_nlink == 1 and model.stat().st_nlink == 1
    assert stored.parent.name == hash_path(stored) == record.model_sha256
    # editing the user's file in place afterwards leaves the stored copy intact
    with model.open("r+b") as handle:
        handle.write(b"EDITED")
    assert stored.read_bytes() == b"weights v1" * 1000
    assert hash_path(stored) == stored.parent.name


def test_a_file_the_run_rejected_is_never_stored(tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    secret.chmod(0o600)
    store_dir = tmp_path / "store"
    with HubContext(project_name="p", artifact_base_dir=store_dir) as ctx:
        with pytest.raises(ModelError):
            use_model(ctx, secret, fail=True)
        record = ctx.store.list_runs()[0]
    assert record.status == "FAILED"
    given = record.artifacts["input"]
    assert not given.is_stored and given.local() == secret  # only the path is recorded
    for path in _all_files(store_dir):
        assert path.stat().st_ino != secret.stat().st_ino
        assert b"secret-hash" not in path.read_bytes(), path
    assert secret.stat().st_nlink == 1


def test_the_store_copies_directories_and_reuses_identical_content(tmp_path: Path) -> None:
    folder = tmp_path / "model_dir"
    (folder / "sub").mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"graph")
    (folder / "sub" / "weights.bin").write_bytes(b"\0" * 4096)
    store = ArtifactStore(tmp_path / "artifacts")
    first, sha, size = store.add(folder)
    again, sha_again, _ = store.add(folder)
    assert (first, sha) == (again, sha_again) and size == 4096 + 5
    assert sha == hash_path(folder) == first.parent.name
    for original, copy in ((folder / "sub" / "weights.bin", first / "sub" / "weights.bin"),):
        assert original.stat().st_ino != copy.stat().st_ino


def test_a_hard_link_left_by_an_older_release_is_replaced_on_the_next_store(
    tmp_path: Path,
) -> None:
    user_file = tmp_path / "model.onnx"
    user_file.write_bytes(b"abc")
    store = ArtifactStore(tmp_path / "artifacts")
    legacy = store.path_for(hash_path(user_file), user_file.name)
    legacy.parent.mkdir(parents=True)
    os.link(user_file, legacy)  # what the release before this change did
    stored, _, _ = store.add(user_file)
    assert stored == legacy and stored.stat().st_nlink == 1
    assert stored.stat().st_ino != user_file.stat().st_ino


def test_clone_or_copy_makes_a_new_inode_with_the_same_bytes(tmp_path: Path) -> None:
    source = tmp_path / "a.bin"
    source.write_bytes(os.urandom(3 * 1024 * 1024 + 7))
    target = tmp_path / "b.bin"
    clone_or_copy(str(source), str(target))
    assert target.read_bytes() == source.read_bytes()
    assert target.stat().st_ino != source.stat().st_ino
    with pytest.raises(FileExistsError):
        clone_or_copy(str(source), str(target))


def test_copy_hashed_gives_the_hash_of_the_bytes_copied(tmp_path: Path) -> None:
    source = tmp_path / "a.bin"
    source.write_bytes(os.urandom(3 * 1024 * 1024 + 7))  # more than one chunk
    target = tmp_path / "b.bin"
    sha = copy_hashed(str(source), str(target))
    assert sha == hashlib.sha256(source.read_bytes()).hexdigest() == hash_path(target)
    assert target.read_bytes() == source.read_bytes()
    assert target.stat().st_ino != source.stat().st_ino
    with pytest.raises(FileExistsError):  # never writes over a file, as clone_or_copy
        copy_hashed(str(source), str(target))
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert copy_hashed(str(empty), str(tmp_path / "e2")) == hashlib.sha256(b"").hexdigest()


def test_copy_hashed_follows_a_link_to_a_file_and_never_writes_through_one(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real.onnx"
    real.write_bytes(b"model through a link")
    link = tmp_path / "link.onnx"
    link.symlink_to(real)
    copy = tmp_path / "copy.onnx"
    assert copy_hashed(str(link), str(copy)) == hash_path(real)
    assert not copy.is_symlink() and copy.read_bytes() == real.read_bytes()
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    planted = tmp_path / "planted"
    planted.symlink_to(victim)
    with pytest.raises(FileExistsError):
        copy_hashed(str(real), str(planted))
    assert victim.read_bytes() == b"keep"
    store = ArtifactStore(tmp_path / "artifacts")
    stored, sha, _ = store.add(link)  # the store keeps the linked file's bytes, as before
    assert sha == hash_path(real) == stored.parent.name and not stored.is_symlink()


def test_verify_finds_and_repairs_edited_linked_missing_and_stale(tmp_path: Path) -> None:
    models = [tmp_path / f"m{i}.onnx" for i in range(3)]
    for i, model in enumerate(models):
        model.write_bytes(f"model {i}".encode())
    with HubContext(project_name="p", artifact_base_dir=tmp_path / "store") as ctx:
        for model in models:
            use_model(ctx, model)
        store = ctx.store
        records = {r.artifacts["input"].file_name: r for r in store.list_runs(limit=None)}
        edited = records["m0.onnx"].artifacts["input"].local()
        linked = records["m1.onnx"].artifacts["input"].local()
        missing = records["m2.onnx"].artifacts["input"].local()
        assert verify_artifacts(store).ok
        edited.write_bytes(b"changed in place")
        os.link(linked, tmp_path / "outside-link")
        missing.unlink()
        # a reused pid: this process's pid with another start time is a process that ended
        stale = store.artifacts.root / f".incoming-{socket.gethostname()}:{os.getpid()}:1-x1"
        stale.mkdir()
        report = verify_artifacts(store)
        kinds = sorted((p.kind, p.path) for p in report.problems)
        assert kinds == sorted(
            [
                ("mismatch", edited),
                ("linked", linked),
                ("missing", missing),
                ("stale", stale),
            ]
        )
        assert all(p.repaired is None for p in report.problems)
        repaired = verify_artifacts(store, repair=True)
        assert {p.kind for p in repaired.problems if p.repaired} == {"mismatch", "linked", "stale"}
        assert not edited.exists()
        (quarantined,) = (store.root / "quarantine").rglob("m0.onnx")
        assert quarantined.read_bytes() == b"changed in place"
        assert linked.stat().st_nlink == 1 and linked.read_bytes() == b"model 1"
        after = verify_artifacts(store)
        assert sorted(p.kind for p in after.problems) == ["missing", "missing"]
        assert after.to_dict()["ok"] is False
