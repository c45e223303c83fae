"""Unfinished copies in the artifact store are named by the process writing them: repair
removes only those of processes that ended (a reused pid included), never follows a link, and
stored content is reused only once it verifies. Real processes, no mocks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from edgehub.core import HubContext, hub_run
from edgehub.tracking import RunStore
from edgehub.tracking.artifacts import ArtifactStore, hash_path
from edgehub.tracking.staging import LEGACY_AGE_S, inspect_staging, make_staging
from edgehub.tracking.verify import verify_artifacts

_COPY_AND_WAIT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from edgehub.tracking.staging import make_staging
    staging = make_staging(Path(sys.argv[1]))
    (staging / "model.onnx").write_bytes(b"half a model")
    print(staging, flush=True)
    time.sleep(120)
    """
)


@hub_run("CUSTOM", name="stores")
def store_file(ctx: HubContext, path: Path) -> None:
    ctx.client.log_artifact(path, name="payload")


def test_repair_leaves_a_running_copy_alone_and_removes_it_once_its_process_died(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "store")
    writer = subprocess.Popen(
        [sys.executable, "-c", _COPY_AND_WAIT, str(store.artifacts.root)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        staging = Path(writer.stdout.readline().strip())
        assert staging.name.startswith(f".incoming-{socket.gethostname()}:{writer.pid}:")
        report = verify_artifacts(store, repair=True)
        assert report.ok and [s.path for s in report.left_alone] == [staging]
        assert (staging / "model.onnx").read_bytes() == b"half a model"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    report = verify_artifacts(store, repair=True)
    assert [(p.kind, p.path, p.repaired) for p in report.problems] == [
        ("stale", staging, "removed")
    ]
    assert f"pid {writer.pid}" in report.problems[0].detail and not staging.exists()


def test_a_reused_pid_is_not_the_owner(tmp_path: Path) -> None:
    """Our own (live) pid with another start time names a process that has ended."""
    host = socket.gethostname()
    reused = tmp_path / f".incoming-{host}:{os.getpid()}:1-abc"
    reused.mkdir()
    assert inspect_staging(reused).removable
    ours = make_staging(tmp_path)
    assert not inspect_staging(ours).removable
    assert "running process" in inspect_staging(ours).reason


def test_other_hosts_and_fresh_older_copies_are_left_alone(tmp_path: Path) -> None:
    other = tmp_path / ".incoming-another-host.example:123:456-abc"
    other.mkdir()
    staging = inspect_staging(other)
    assert not staging.removable and "another-host.example" in staging.reason
    legacy = tmp_path / ".incoming-k2j4h5g6"
    (legacy / "sub").mkdir(parents=True)
    (legacy / "sub" / "part").write_bytes(b"x")
    assert not inspect_staging(legacy).removable
    old = time.time() - LEGACY_AGE_S - 60
    for path in (legacy, legacy / "sub"):
        os.utime(path, (old, old))
    assert not inspect_staging(legacy).removable  # the file inside changed recently
    os.utime(legacy / "sub" / "part", (old, old))
    assert inspect_staging(legacy).removable


def test_planted_links_are_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("precious")
    payload = tmp_path / "run-output.bin"
    payload.write_bytes(b"payload")
    with HubContext(project_name="p", artifact_base_dir=tmp_path / "store") as ctx:
        store_file(ctx, payload)
        store = ctx.store
        root = store.artifacts.root
        (stored,) = [p for p in root.glob("*/run-output.bin")]
        dead = f"{socket.gethostname()}:{os.getpid()}:1"
        planted = [
            root / f".incoming-{dead}-evil",  # a dead owner's "copy"
            root / f".incoming-{socket.gethostname()}:{os.getpid()}:x-live",
            root / ("f" * 64),  # where a content directory would be
            stored.parent / "extra",  # inside a content directory
        ]
        for link in planted:
            link.symlink_to(victim, target_is_directory=True)
        report = verify_artifacts(store)
        assert sorted(p.path for p in report.problems if p.kind == "link") == sorted(planted)
        repaired = verify_artifacts(store, repair=True)
        assert all(p.repaired for p in repaired.problems)
        assert not any(link.is_symlink() for link in planted)
        assert (victim / "keep").read_text() == "precious" and stored.read_bytes() == b"payload"
        assert verify_artifacts(store).ok


def test_stored_content_is_reused_only_once_it_verifies(tmp_path: Path) -> None:
    artifacts = ArtifactStore(tmp_path / "store" / "artifacts")
    source = tmp_path / "model.onnx"
    source.write_bytes(b"the real model bytes")
    stored, sha, size = artifacts.add(source)
    assert (sha, size) == (hash_path(source), 20)
    stored.write_bytes(b"the fake model bytes")  # edited in place, same size
    again, sha_again, _ = artifacts.add(source)
    assert again == stored and sha_again == sha
    assert stored.read_bytes() == b"the real model bytes"
    folder = tmp_path / "weights"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"aaaa")
    stored_dir, dir_sha, _ = artifacts.add(folder)
    (stored_dir / "a.bin").write_bytes(b"bbbb")
    artifacts.add(folder)
    assert (stored_dir / "a.bin").read_bytes() == b"aaaa" and hash_path(stored_dir) == dir_sha
    (quarantined,) = artifacts.quarantine.rglob("a.bin")
    assert quarantined.read_bytes() == b"bbbb"
    assert not [p for p in artifacts.root.iterdir() if p.name.startswith(".incoming-")]


def test_a_sparse_file_is_stored_with_its_holes(tmp_path: Path) -> None:
    source = tmp_path / "sparse.onnx"
    with source.open("wb") as out:
        out.write(b"head")
        out.seek(64 << 20)
        out.write(b"middle")
        out.seek(128 << 20)
        out.write(b"tail")
    if source.stat().st_blocks * 512 >= source.stat().st_size:
        pytest.skip(f"the file system of {tmp_path} does not keep holes")
    stored, sha, size = ArtifactStore(tmp_path / "store" / "artifacts").add(source)
    assert size == source.stat().st_size and sha == hash_path(source) == hash_path(stored)
    assert stored.stat().st_blocks * 512 < 1 << 20  # not 128 MiB of zeros


@pytest.mark.parametrize("fresh", [False, True], ids=["hashed-first", "copied-first"])
def test_a_file_is_stored_once_and_reused_only_once_it_verifies(
    tmp_path: Path, fresh: bool
) -> None:
    artifacts = ArtifactStore(tmp_path / "store" / "artifacts")
    source = tmp_path / "engine.trt"
    source.write_bytes(b"engine bytes" * 1000)
    stored, sha, size = artifacts.add(source, fresh=fresh)
    assert (sha, size) == (hash_path(source), 12000) and hash_path(stored) == sha
    assert stored.stat().st_ino != source.stat().st_ino  # a copy of its own
    again, sha_again, _ = artifacts.add(source, fresh=fresh)
    assert (again, sha_again) == (stored, sha)
    stored.write_bytes(b"damaged byte" * 1000)  # edited in place, same size
    third, _, _ = artifacts.add(source, fresh=fresh)
    assert third == stored and stored.read_bytes() == source.read_bytes()
    assert [p.name for p in artifacts.root.iterdir()] == [sha]  # no unfinished copy left


@pytest.mark.parametrize("fresh", [False, True], ids=["hashed-first", "copied-first"])
def test_the_store_never_writes_through_a_planted_content_folder(
    tmp_path: Path, fresh: bool
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    source = tmp_path / "model.onnx"
    source.write_bytes(b"my private model")
    artifacts = ArtifactStore(tmp_path / "store" / "artifacts")
    artifacts.root.mkdir(parents=True)
    (artifacts.root / hash_path(source)).symlink_to(victim, target_is_directory=True)
    (victim / "model.onnx").write_bytes(b"my private model")  # "already stored" there
    stored, _, _ = artifacts.add(source, fresh=fresh)
    assert not stored.parent.is_symlink() and stored.read_bytes() == b"my private model"
    assert [p.name for p in victim.iterdir()] == ["model.onnx"]
    (victim / "model.onnx").unlink()
    stored.unlink()
    stored.parent.rmdir()
    (artifacts.root / hash_path(source)).symlink_to(victim, target_is_directory=True)
    again, _, _ = artifacts.add(source, fresh=fresh)  # nothing stored: a real folder gets it
    assert list(victim.iterdir()) == [] and not again.parent.is_symlink()
