"""Board pools that heal, on a real labgrid coordinator and exporter (tests/labgrid_lab.py) whose
places are two real SSH test devices (tests/ssh_device: sshd in containers): place ``b1`` is the
module's device, ``b2`` a second one started here.

- A `hub` measurement SIGKILLed while holding a place: the next one takes the place over and
  names the previous holder; a live holder is never taken over; a holder of another host that
  stopped renewing is taken over once its TTL passed (that host is only a name in the record:
  no second host can be reached from here).
- A pool whose board ``b1`` lost the agent's Python: a sweep of 8 cells finishes every cell
  on ``b2``, ``b1`` is quarantined after 3 failed health checks and `hub devices` shows it
  with the error; `hub devices unquarantine` lets it back.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgehub.acquire.labgrid_pool import PlaceInfo, hold_place, open_pool
from edgehub.acquire.place_holders import holder_of, with_holder
from edgehub.core.device.configs import LabgridConfig
from edgehub.errors import DeviceBusyError
from edgehub.events import LogEvent
from edgehub.ops.execute import ExecRequest, execute
from edgehub.ops.project import open_project
from edgehub.ops.sweep import run_sweep
from edgehub.ops.sweep_grid import SweepGrid
from edgehub.procid import ProcessId
from labgrid_lab import labgrid_commands_present, labgrid_lab
from ssh_device.device import DeviceUnavailable, SSHDevice, ssh_device

pytest.importorskip("labgrid", reason="needs labgrid: pip install 'edgehub[labgrid]'")
pytestmark = [pytest.mark.docker, pytest.mark.ssh]

REPO = Path(__file__).resolve().parents[2]
HUB = str(Path(sys.executable).with_name("hub"))
PYTHON = "/opt/device/bin/python3"


@pytest.fixture(scope="module")
def second() -> Iterator[SSHDevice]:
    try:
        with ssh_device() as found:
            yield found
    except DeviceUnavailable as missing:
        pytest.skip(f"SSH test device unavailable: {missing}")


@pytest.fixture(scope="module")
def coordinator(
    tmp_path_factory: pytest.TempPathFactory, device: SSHDevice, second: SSHDevice
) -> Iterator[str]:
    if not labgrid_commands_present():
        pytest.skip("needs the labgrid-coordinator command (pip install 'edgehub[labgrid]')")
    # one key for the pool: the second board accepts the first one's too
    keys = "/home/edge/.ssh/authorized_keys"
    second.exec("sh", "-c", 'printf "%s\n" "$1" >> "$2"', "-", device.public_key, keys)
    exports = "".join(
        f"board{i}:\n  NetworkService:\n    address: {d.host}\n"
        f"    username: {d.username}\n    port: {d.port}\n"
        for i, d in ((1, device), (2, second))
    )
    places = {"b1": "board1", "b2": "board2"}
    with labgrid_lab(tmp_path_factory.mktemp("lab"), exports, places) as address:
        yield address


@pytest.fixture
def project(
    tmp_path: Path,
    device: SSHDevice,
    second: SSHDevice,
    coordinator: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """hub.toml: ``board1`` is place b1 alone (TTL 3 s), ``pool`` is b1 and b2."""
    known = tmp_path / "known_hosts"
    known.write_text(
        "".join(f"{d.known_hosts_name} {key}\n" for d in (device, second) for key in d.host_keys)
    )
    monkeypatch.setenv("EDGEHUB_KNOWN_HOSTS", str(known))  # the user allows the project's file
    text = '[project]\nname = "healing"\nquarantine_after = 3\n'
    for name, place in (("board1", "b1"), ("pool", "b*")):
        text += (
            f'\n[devices.{name}]\nprovider = "ssh"\n[devices.{name}.ssh]\n'
            f'host = "{device.host}"\nuser = "{device.username}"\nport = 1\n'
            f'key = "{device.private_key}"\nknown_hosts = "{known}"\n'
            f'[devices.{name}.labgrid]\ncoordinator = "{coordinator}"\nplace = "{place}"\n'
            f"holder_ttl = 3\nacquire_timeout = 120\n"
            f'[devices.{name}.agent]\npython = "{PYTHON}"\n'
        )
    (tmp_path / "hub.toml").write_text(text)
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", tmp_path / "model.onnx")
    monkeypatch.setenv("EDGEHUB_LEASE_DIR", str(tmp_path / "leases"))
    return tmp_path


def _places(coordinator: str) -> dict[str, PlaceInfo]:
    pool = open_pool(LabgridConfig(coordinator=coordinator))
    try:
        return {p.name: p for p in pool.places()}
    finally:
        pool.close()


def test_a_killed_holders_place_is_taken_over_naming_it(project: Path, coordinator: str) -> None:
    profile = ["exec", "profile", "onnxruntime", "model.onnx", "--device", "board1"]
    env = {**os.environ, "HOME": str(project)}
    first = subprocess.Popen(
        [HUB, *profile, "--set", "runs=1000000"], cwd=project, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            holder = holder_of(_places(coordinator)["b1"].comment)
            if holder is not None and holder.process.pid == first.pid:
                break
            assert first.poll() is None, first.communicate()[1]
            assert time.monotonic() < deadline, "the first hub never recorded itself on b1"
            time.sleep(0.2)
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
    assert _places(coordinator)["b1"].acquired_by, "labgrid keeps a dead holder's place"

    started = time.monotonic()
    second = subprocess.run(
        [HUB, *profile, "--set", "runs=10"], cwd=project, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    said = [line for line in second.stderr.splitlines() if "took labgrid place b1 over" in line]
    assert said, second.stderr
    assert f"{socket.gethostname()} pid {first.pid}" in said[0]
    assert "its process is gone" in said[0]
    assert time.monotonic() - started < 120
    place = _places(coordinator)["b1"]
    assert place.acquired_by is None and holder_of(place.comment) is None


def test_a_live_holder_is_never_taken_over(coordinator: str) -> None:
    config = LabgridConfig(coordinator=coordinator, place="b1", holder_ttl=2.0)
    first, second = open_pool(config), open_pool(config)
    try:
        with hold_place(first, config):  # this process: alive, renewing every 2/3 s
            took: list[str] = []
            with (
                pytest.raises(DeviceBusyError, match="still held"),
                hold_place(second, config, timeout=6.0, on_take_over=took.append),
            ):
                pass
            assert not took
    finally:
        first.close()
        second.close()


def test_another_hosts_holder_is_taken_over_after_its_ttl(coordinator: str) -> None:
    """The holder record names a host that is not this one (no other host is reachable from
    the tests): it cannot be checked for life, so only its lease's end frees the place."""
    config = LabgridConfig(coordinator=coordinator, place="b1")
    pool = open_pool(config)
    try:
        assert pool.acquire("b1")
        gone = ProcessId("elsewhere.example", 4242, "99")
        now = time.time()
        pool.set_comment("b1", with_holder("lab board", gone, now, now + 3))
        took: list[str] = []
        with hold_place(pool, config, timeout=60, on_take_over=took.append) as place:
            granted = time.time()  # the clock the holder record's lease end is on
            assert place.name == "b1"
            assert "lab board" in place.comment and f"pid {os.getpid()}" not in place.comment
        assert granted > now + 3, "taken over before its TTL ran out"
        assert took and "elsewhere.example pid 4242" in took[0] and "ran out" in took[0]
        assert _places(coordinator)["b1"].comment == "lab board", "the comment was not restored"
    finally:
        pool.close()


def test_a_failing_board_is_quarantined_and_the_sweep_ends_on_the_other(
    project: Path, coordinator: str, device: SSHDevice
) -> None:
    device.exec("mv", "/opt/device", "/opt/device.off", user="root")
    try:
        lines: list[str] = []

        def listen(event: LogEvent) -> None:
            lines.append(event.message)

        grid = SweepGrid(
            models=[project / "model.onnx"], devices=["pool"], step="profile",
            vary={"runs": [str(10 + i) for i in range(8)]},
        )  # fmt: skip
        report = run_sweep(open_project(project / "hub.toml"), grid, subscriber=listen)
        assert [c.status for c in report.cells] == ["FINISHED"] * 8, [c.error for c in report.cells]
        held = [line.split("place ")[1].split()[0] for line in lines if "holding labgrid" in line]
        assert held == ["b2"] * 8, lines
        assert sum("labgrid place b1: " in line and "failed its health check" in line
                   for line in lines) == 3, lines  # fmt: skip

        shown = subprocess.run(
            [HUB, "devices"], cwd=project, capture_output=True, text=True, timeout=120
        )
        assert shown.returncode == 0, shown.stderr
        (row,) = [line for line in shown.stdout.splitlines() if line.startswith("pool")]
        assert "b1: quarantined until" in row and "after 3 failed health checks" in row, row
        assert f"the agent's Python {PYTHON} is missing" in row
    finally:
        device.exec("mv", "/opt/device.off", "/opt/device", user="root")

    cleared = subprocess.run(
        [HUB, "devices", "unquarantine", "pool"], cwd=project, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert cleared.returncode == 0 and "cleared b1" in cleared.stdout, cleared.stderr
    shown = subprocess.run([HUB, "devices"], cwd=project, capture_output=True, text=True)
    assert "quarantined" not in shown.stdout
    config = LabgridConfig(coordinator=coordinator, place="b2")
    pool = open_pool(config)
    try:
        with hold_place(pool, config):  # b2 busy: the pool must use b1 again
            lines = []
            single = execute(
                open_project(project / "hub.toml"),
                ExecRequest("profile", "onnxruntime", project / "model.onnx", device="pool"),
                subscriber=lambda event: lines.append(event.message),
            )
        assert single.status == "FINISHED"  # type: ignore[union-attr]
        assert any("holding labgrid place b1" in line for line in lines), lines
    finally:
        pool.close()


def test_a_cell_whose_board_dies_is_retried_on_the_other(
    project: Path, coordinator: str, device: SSHDevice
) -> None:
    """Once b1's cell holds it, b1's SSH sessions keep being killed (the board is dead to SSH):
    the cell runs again on b2."""
    import threading

    dead = threading.Event()
    done = threading.Event()

    def listen(event: LogEvent) -> None:
        if "holding labgrid place b1" in event.message:
            dead.set()

    def kill() -> None:
        while not done.wait(0.2):
            if dead.is_set():
                device.exec("pkill", "-KILL", "-u", "edge", user="root", check=False)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    grid = SweepGrid(
        models=[project / "model.onnx"], devices=["pool"], step="profile",
        vary={"runs": ["30000"]},
    )  # fmt: skip
    try:
        report = run_sweep(open_project(project / "hub.toml"), grid, subscriber=listen)
    finally:
        done.set()
        killer.join(10)
    (cell,) = report.cells
    assert cell.status == "FINISHED", cell.error
    assert cell.retried is not None and "retried on another board after b1" in cell.retried
