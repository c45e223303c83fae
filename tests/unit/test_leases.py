"""Device leases between real processes: flock files in a lease directory of the test's own;
lock files planted by someone else (links, hard links, FIFOs, other users' files, hostile
records) are refused or left untouched."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from edgehub.acquire.leases import check_lease_timeout, device_lease, lease_holder, lease_path
from edgehub.errors import DeviceBusyError, EnvironmentProblem, OperationCancelled, UsageError

HOLD = """
import sys, time
from pathlib import Path
from edgehub.acquire.leases import device_lease
with device_lease(sys.argv[1], lease_dir=Path(sys.argv[2]), command="holder-test"):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
    print(f"releasing at {time.monotonic()}", flush=True)  # the clock all processes share
"""


def _holder(device: str, lease_dir: Path, seconds: float) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, device, str(lease_dir), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def test_second_waits_for_the_holder_and_names_it(tmp_path: Path) -> None:
    holder = _holder("board", tmp_path, 1.5)
    messages: list[str] = []
    with device_lease("board", lease_dir=tmp_path, on_wait=messages.append, timeout=60):
        granted = time.monotonic()
    holder.wait(30)
    assert holder.stdout is not None
    released = float(holder.stdout.readline().split()[-1])
    assert granted > released, "the lease was granted while another process held it"
    (message,) = messages
    assert f"pid {holder.pid}" in message and "holder-test" in message and "waiting" in message


def test_other_devices_are_not_blocked(tmp_path: Path) -> None:
    holder = _holder("board1", tmp_path, 60)
    try:
        with device_lease("board2", lease_dir=tmp_path, timeout=30):  # blocked, this raises
            assert holder.poll() is None  # granted while board1 is still held
    finally:
        holder.kill()
        holder.wait()


def test_timeout_names_the_holder(tmp_path: Path) -> None:
    holder = _holder("board", tmp_path, 10)
    try:
        with (
            pytest.raises(DeviceBusyError, match=rf"still held by .*pid {holder.pid}"),
            device_lease("board", lease_dir=tmp_path, timeout=0.6),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holder_frees_the_device(tmp_path: Path) -> None:
    holder = _holder("board", tmp_path, 60)
    holder.kill()
    holder.wait()
    stale = lease_holder("board", tmp_path)
    assert stale is not None and stale.pid == holder.pid
    assert not stale.alive and "stale" in stale.describe()
    with device_lease("board", lease_dir=tmp_path, timeout=1):
        record = json.loads(lease_path("board", tmp_path).read_text())
        assert record["pid"] == os.getpid()
    assert lease_holder("board", tmp_path) is None, "a released lease still names a holder"


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    inside: list[int] = []
    overlap: list[bool] = []

    def measure() -> None:
        with device_lease("board", lease_dir=tmp_path, timeout=10):
            inside.append(1)
            overlap.append(len(inside) > 1)
            time.sleep(0.3)
            inside.pop()

    threads = [threading.Thread(target=measure) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlap == [False, False, False]


def test_cancel_while_waiting(tmp_path: Path) -> None:
    holder = _holder("board", tmp_path, 10)
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    try:
        with (
            pytest.raises(OperationCancelled),
            device_lease("board", lease_dir=tmp_path, timeout=30, cancelled=stop.wait),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_a_link_planted_at_the_lock_path_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("private data")
    secret.chmod(0o600)
    leases = tmp_path / "leases"
    leases.mkdir(mode=0o700)
    lease_path("board", leases).symlink_to(secret)
    with (
        pytest.raises(EnvironmentProblem, match="is a symbolic link"),
        device_lease("board", lease_dir=leases, timeout=1),
    ):
        pass
    assert secret.read_text() == "private data"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_a_dangling_link_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    lease_path("board", tmp_path).symlink_to(tmp_path / "made-by-the-link")
    with (
        pytest.raises(EnvironmentProblem, match="symbolic link"),
        device_lease("board", lease_dir=tmp_path, timeout=1),
    ):
        pass
    assert not (tmp_path / "made-by-the-link").exists()


def test_a_hard_link_or_a_fifo_at_the_lock_path_is_refused_without_hanging(
    tmp_path: Path,
) -> None:
    other = tmp_path / "other"
    other.write_text("keep me")
    os.link(other, lease_path("linked", tmp_path))
    os.mkfifo(lease_path("fifo", tmp_path))
    for board, why in (("linked", "has other names"), ("fifo", "not a plain file")):
        started = time.monotonic()
        with (
            pytest.raises(EnvironmentProblem, match=why),
            device_lease(board, lease_dir=tmp_path, timeout=1),
        ):
            pass
        assert time.monotonic() - started < 5
    assert other.read_text() == "keep me"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a lock file to another user")
def test_another_users_lock_file_is_locked_but_never_written_or_re_moded(tmp_path: Path) -> None:
    path = lease_path("board", tmp_path)
    path.write_text('{"theirs": true}')
    os.chown(path, 65534, 65534)
    path.chmod(0o640)
    with device_lease("board", lease_dir=tmp_path, timeout=1):
        assert path.read_text() == '{"theirs": true}'
    assert path.read_text() == '{"theirs": true}'
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and path.stat().st_uid == 65534


def test_own_lock_files_are_not_world_writable(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with device_lease("board", lease_dir=private, timeout=1):
        pass
    assert stat.S_IMODE(lease_path("board", private).stat().st_mode) == 0o600
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    umask = os.umask(0o077)  # others must still be able to open it to wait for the lease
    try:
        with device_lease("board", lease_dir=shared, timeout=1):
            pass
    finally:
        os.umask(umask)
    assert stat.S_IMODE(lease_path("board", shared).stat().st_mode) == 0o644


def test_a_hostile_record_is_capped_and_printable(tmp_path: Path) -> None:
    path = lease_path("board", tmp_path)
    record = {
        "pid": 1, "user": "mallory\x1b]0;pwned\x07", "host": "h\nhub: error: fake",
        "command": "x" * 1000, "since": 1e308, "device": "\x1b[2J",
    }  # fmt: skip
    path.write_text(json.dumps(record))
    holder = lease_holder("board", tmp_path)
    assert holder is not None
    text = holder.describe()  # a time far out of range is "since ?", not an error
    assert text.isprintable() and len(holder.command) <= 200 and "since ?" in text
    for bad in (
        json.dumps({**record, "command": "y" * 5000}),  # over the size cap
        "[" * 4000,  # nested deeper than the parser recurses
        json.dumps({**record, "pid": -1}),  # os.kill(-1, 0) would ask about every process
        b"\xff\xfe{".decode("latin-1"),
    ):
        path.write_text(bad, encoding="latin-1")
        assert lease_holder("board", tmp_path) is None


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), float("inf")])
def test_bad_lease_timeouts_are_usage_errors(seconds: float, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="finite number of seconds"):
        check_lease_timeout(seconds)
    with pytest.raises(UsageError), device_lease("board", lease_dir=tmp_path, timeout=seconds):
        pass
    assert check_lease_timeout(0) == 0 and check_lease_timeout(None) == 3600
