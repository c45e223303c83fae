"""Device leases between real processes: flock files in a lease directory of the test's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from edgehub.errors import DeviceBusyError, OperationCancelled
from edgehub.ops.leases import device_lease, lease_holder

HOLD = """
import sys, time
from pathlib import Path
from edgehub.ops.leases import device_lease
with device_lease(sys.argv[1], lease_dir=Path(sys.argv[2]), command="holder-test"):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
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
    started = time.monotonic()
    with device_lease("board", lease_dir=tmp_path, on_wait=messages.append, timeout=30):
        waited = time.monotonic() - started
    holder.wait(10)
    assert waited > 0.8, "the lease was granted while another process held it"
    (message,) = messages
    assert f"pid {holder.pid}" in message and "holder-test" in message and "waiting" in message


def test_other_devices_are_not_blocked(tmp_path: Path) -> None:
    holder = _holder("board1", tmp_path, 5)
    try:
        started = time.monotonic()
        with device_lease("board2", lease_dir=tmp_path, timeout=2):
            assert time.monotonic() - started < 1
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
        record = json.loads((tmp_path / "board.lock").read_text())
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
