"""Where leases live: a private directory by default, a shared one only when it is safe.

Directories owned by another user are made with ``chown`` (root only: skipped otherwise, naming
that); read-only ones with ``chattr +i`` as root (root writes through modes) or ``chmod`` else."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgehub.acquire.lease_dir import lease_directory, shared_directory
from edgehub.errors import EnvironmentProblem

ROOT = os.geteuid() == 0


@pytest.fixture
def private_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No EDGEHUB_LEASE_DIR, no XDG_RUNTIME_DIR, and a temp dir of the test's own."""
    monkeypatch.delenv("EDGEHUB_LEASE_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield tmp


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_default_is_private_under_the_runtime_dir(
    private_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run-user"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    folder = lease_directory()
    assert folder == runtime / "edgehub" / "leases"
    assert _mode(folder) == 0o700 and _mode(folder.parent) == 0o700
    assert folder.stat().st_uid == os.getuid()


def test_default_falls_back_to_a_private_temp_dir(
    private_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared_runtime = tmp_path / "not-private"
    shared_runtime.mkdir()
    shared_runtime.chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared_runtime))  # not usable: others may write
    folder = lease_directory()
    assert folder == private_env / f"edgehub-leases-{os.getuid()}"
    assert _mode(folder) == 0o700 and not (shared_runtime / "edgehub").exists()
    assert lease_directory() == folder  # a second use accepts what the first made


def test_a_planted_default_dir_is_refused(private_env: Path, tmp_path: Path) -> None:
    target = tmp_path / "mallory"
    target.mkdir(mode=0o700)
    planted = private_env / f"edgehub-leases-{os.getuid()}"
    planted.symlink_to(target)
    with pytest.raises(EnvironmentProblem, match="is a symbolic link"):
        lease_directory()
    planted.unlink()
    planted.mkdir()
    planted.chmod(0o777)
    with pytest.raises(EnvironmentProblem, match="writable by others"):
        lease_directory()
    planted.rmdir()
    planted.write_text("")
    with pytest.raises(EnvironmentProblem, match="not a directory"):
        lease_directory()


@pytest.mark.skipif(not ROOT, reason="needs root to give a directory to another user (chown)")
def test_a_default_dir_of_another_user_is_refused(private_env: Path) -> None:
    planted = private_env / f"edgehub-leases-{os.getuid()}"
    planted.mkdir(mode=0o700)
    os.chown(planted, 65534, 65534)
    with pytest.raises(EnvironmentProblem, match=r"owned by .*uid 65534"):
        lease_directory()


def test_a_missing_shared_dir_is_made_sticky(tmp_path: Path) -> None:
    folder = shared_directory(tmp_path / "a" / "leases")
    assert _mode(folder) == 0o1777


def test_shared_dirs_writable_by_others_without_the_sticky_bit_are_refused(
    tmp_path: Path,
) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    with pytest.raises(EnvironmentProblem, match="without the sticky bit"):
        shared_directory(loose)
    loose.chmod(0o1777)
    assert shared_directory(loose) == loose
    parent = tmp_path / "parent"
    (parent / "leases").mkdir(parents=True)
    parent.chmod(0o777)
    with pytest.raises(EnvironmentProblem, match=f"sticky bit \\(at {parent}\\)"):
        shared_directory(parent / "leases")


@pytest.mark.skipif(not ROOT, reason="needs root to give a directory to another user (chown)")
def test_a_shared_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    theirs.chmod(0o1777)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(EnvironmentProblem, match=r"owned by .*uid 65534.*not by you or root"):
        shared_directory(theirs)


def test_a_shared_dir_under_a_file_or_a_file_is_refused(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(EnvironmentProblem, match="under a file"):
        shared_directory(afile / "leases")
    with pytest.raises(EnvironmentProblem, match="not a directory"):
        shared_directory(afile)


def test_a_read_only_shared_dir_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    if ROOT:
        if shutil.which("chattr") is None:
            pytest.skip("as root a read-only directory needs chattr (e2fsprogs), not installed")
        made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"chattr +i is not supported here: {made.stderr.strip()}")
    else:
        folder.chmod(0o555)
    try:
        with pytest.raises(EnvironmentProblem, match="is not writable"):
            shared_directory(folder)
    finally:
        if ROOT:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)
