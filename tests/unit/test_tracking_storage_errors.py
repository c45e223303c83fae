"""Storage failures are `StorageError`s (exit 3) naming the path and what to do; the history
stays readable whenever the database file can be read."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from edgehub.core import HubContext, hub_run
from edgehub.errors import StorageError
from edgehub.tracking import RunStore
from edgehub.tracking import artifacts as artifacts_module

IS_ROOT = os.geteuid() == 0


@hub_run("CUSTOM", name="writes")
def write_something(ctx: HubContext, payload: Path | None = None) -> None:
    ctx.client.log_param("p", 1)
    if payload is not None:
        ctx.client.log_artifact(payload, name="payload")


def _store_with_one_run(root: Path) -> str:
    with HubContext(project_name="p", artifact_base_dir=root) as ctx:
        write_something(ctx)
        return ctx.store.list_runs()[0].run_id


def _assert_disk_full_message(error: StorageError, path: Path) -> None:
    text = str(error)
    assert error.exit_code == 3
    assert str(path) in text and "full" in text and "free space" in text
    for advice in ("move it aside", "start afresh", "delete", "discard"):
        assert advice not in text


def test_disk_full_while_storing_an_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_space(src: str, dst: str) -> str:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), dst)

    monkeypatch.setattr(artifacts_module, "clone_or_copy", no_space)
    monkeypatch.setattr(artifacts_module, "copy_hashed", no_space)
    (tmp_path / "run-output.bin").write_bytes(b"x" * 100)
    store_dir = tmp_path / "store"
    with HubContext(project_name="p", artifact_base_dir=store_dir) as ctx:
        with pytest.raises(StorageError) as caught:
            write_something(ctx, tmp_path / "run-output.bin")
        _assert_disk_full_message(caught.value, store_dir / "artifacts")
        (run,) = ctx.store.list_runs()
    assert run.status == "FAILED" and "full" in (run.error or "")


@pytest.fixture
def tiny_fs(tmpfs: Callable[[str], Path]) -> Path:
    """A 512 KiB tmpfs, so the disk really fills up (needs root and mount)."""
    return tmpfs("512k")


def test_a_really_full_disk_fails_writes_clearly_and_reads_still_work(tiny_fs: Path) -> None:
    store_dir = tiny_fs / ".hub"
    run_id = _store_with_one_run(store_dir)
    filler = tiny_fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 1024)
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)
    with (
        pytest.raises(StorageError) as caught,
        HubContext(project_name="p", artifact_base_dir=store_dir) as ctx,
    ):
        for i in range(2000):  # until SQLite or the run directory hits the full disk
            write_something(ctx)
            if i > 1000:
                pytest.fail("the disk never filled up")
    _assert_disk_full_message(caught.value, store_dir)
    reader = RunStore(store_dir)
    assert reader.get_run(run_id).params == {"p": 1}
    filler.unlink()


_HOLD_LOCK = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("INSERT INTO tags VALUES ('x', 'held', 'yes')")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("ROLLBACK")
    """
)


def test_a_lock_held_too_long_is_a_storage_error_and_reading_goes_on(tmp_path: Path) -> None:
    run_id = _store_with_one_run(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(tmp_path / "runs.db"), "20"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        store = RunStore(tmp_path, patience_s=0.3)
        assert store.get_run(run_id).params == {"p": 1}  # WAL: readers are not blocked
        with pytest.raises(StorageError) as caught:
            store.log_tag(run_id, "k", "v")
        text = str(caught.value)
        assert caught.value.exit_code == 3
        assert "locked by another process" in text and str(tmp_path / "runs.db") in text
    finally:
        holder.kill()
        holder.wait()


def test_a_read_only_file_system_opens_read_only(tmp_path: Path) -> None:
    if not IS_ROOT:
        pytest.skip("needs root for a read-only bind mount")
    store_dir = tmp_path / ".hub"
    run_id = _store_with_one_run(store_dir)
    bound = subprocess.run(["mount", "--bind", str(store_dir), str(store_dir)], check=False)
    if bound.returncode != 0:
        pytest.skip("cannot bind-mount here")
    try:
        subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(store_dir)], check=True, capture_output=True
        )
        store = RunStore(store_dir)
        assert not store.writable and "read-only file system" in (store.read_only_reason or "")
        assert store.get_run(run_id[:8]).params == {"p": 1}
        assert store.list_runs(status="FINISHED")[0].run_id == run_id
        with (
            pytest.raises(StorageError, match="read-only file system") as caught,
            HubContext(project_name="p", artifact_base_dir=store_dir) as ctx,
        ):
            write_something(ctx)
        assert str(store_dir) in str(caught.value) and caught.value.exit_code == 3
        store.close()
    finally:
        subprocess.run(["umount", "--lazy", str(store_dir)], check=False)


_AS_OTHER_USER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from edgehub.core import HubContext, hub_run
    from edgehub.errors import StorageError
    from edgehub.tracking import RunStore

    root = Path(sys.argv[1])
    store = RunStore(root)
    print("writable", store.writable, store.read_only_reason)
    print("runs", [r.params for r in store.list_runs()])

    @hub_run("CUSTOM")
    def again(ctx):
        pass

    try:
        with HubContext(project_name="p", artifact_base_dir=root) as ctx:
            again(ctx)
    except StorageError as error:
        print("error", error.exit_code, error)
    """
)


def test_a_store_the_user_may_not_write_opens_read_only() -> None:
    """chmod: as root in a subprocess dropped to user nobody (root ignores file modes)."""
    base = Path(tempfile.mkdtemp(prefix="edgehub-ro-", dir="/tmp"))
    try:
        base.chmod(0o755)
        store_dir = base / ".hub"
        _store_with_one_run(store_dir)
        for path in [store_dir, *store_dir.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        argv = [sys.executable, "-c", _AS_OTHER_USER, str(store_dir)]
        if IS_ROOT:
            if shutil.which("setpriv") is None:
                pytest.skip("running as root, and setpriv is missing to drop to another user")
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].startswith("writable False") and "read-only" in lines[0]
        assert lines[1] == "runs [{'p': 1}]"
        assert lines[2].startswith("error 3 cannot ") and str(store_dir) in lines[2]
        assert "writable place" in lines[2]
    finally:
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755)
        shutil.rmtree(base)


def test_a_read_only_database_file_reads_and_refuses_writes(tmp_path: Path) -> None:
    run_id = _store_with_one_run(tmp_path)
    store = RunStore(tmp_path, read_only=True)
    assert store.get_run(run_id).params == {"p": 1}
    with pytest.raises(StorageError, match=r"cannot record param 'q': the store was opened read"):
        store.log_param(run_id, "q", 2, 0.0)


def test_a_damaged_database_says_so(tmp_path: Path) -> None:
    (tmp_path / "runs.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="not a readable run store") as caught:
        RunStore(tmp_path)
    assert caught.value.exit_code == 3
    assert sqlite3.sqlite_version  # the message names SQLite's own words too


@hub_run("CUSTOM", name="fills")
def fill_the_disk(ctx: HubContext) -> None:
    (ctx.artifact_dir / "part").mkdir()
    with (ctx.artifact_dir / "part" / "big.bin").open("wb") as out:
        while True:  # a device's results being unpacked, bigger than the disk
            out.write(b"\1" * 65536)


def test_a_run_that_fills_the_disk_fails_in_one_line_and_keeps_only_its_log(
    tiny_fs: Path,
) -> None:
    store_dir = tiny_fs / ".hub"
    with (
        pytest.raises(StorageError) as caught,
        HubContext(project_name="p", artifact_base_dir=store_dir) as ctx,
    ):
        ctx.events.info("starting")
        fill_the_disk(ctx)
    text = str(caught.value)
    assert text.startswith(f"no space left on {tiny_fs} while storing the results of run ")
    assert "move the store" in text and "\n" not in text and caught.value.exit_code == 3
    (run,) = RunStore(store_dir).list_runs()
    assert run.status == "FAILED" and "no space left" in (run.error or "")
    assert run.artifact_dir is not None
    assert [p.name for p in run.artifact_dir.iterdir()] == ["run.log"]
