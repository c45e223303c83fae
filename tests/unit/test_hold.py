"""`edgehub.acquire.hold`: what operations ask for instead of leases. Real ``flock`` leases in a
lease directory of the test's own and a real health book; no board is connected to (the
devices' boards are only keyed, and the probe is not run on a quarantined board)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from edgehub.acquire import HeldDevice, hold, needs_hold
from edgehub.acquire.board_health import health_book
from edgehub.acquire.boards import board_key
from edgehub.acquire.leases import device_lease, lease_holder
from edgehub.config.devices import to_device
from edgehub.config.load import parse_config
from edgehub.config.schema import HubConfig
from edgehub.errors import DeviceBusyError, DeviceUnhealthyError
from edgehub.events import EventSink

HUB_TOML = """[project]
name = "p"
quarantine_after = 2

[devices.edge]
provider = "embedl_onnxruntime"

[devices.edge.ssh]
host = "127.0.0.1"
port = 2299
user = "pi"

[devices.cpu]
provider = "local"

[devices.phone]
provider = "qai_hub"
spec = "Samsung Galaxy S24"
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HubConfig:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("EDGEHUB_LEASE_DIR", str(tmp_path / "leases"))
    return parse_config(HUB_TOML, root=tmp_path)


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def test_which_work_holds_a_device(config: HubConfig) -> None:
    edge, cpu, phone = (to_device(config, name) for name in ("edge", "cpu", "phone"))
    assert needs_hold(edge, measuring=False) and needs_hold(edge, measuring=True)
    assert needs_hold(cpu, measuring=True) and not needs_hold(cpu, measuring=False)
    assert not needs_hold(phone, measuring=True)


def test_the_board_is_held_for_the_block_and_freed_however_it_ends(config: HubConfig) -> None:
    device = to_device(config, "edge")
    board = board_key(device)
    assert board == "ssh:127.0.0.1:2299"
    events = EventSink()
    with hold(
        config, device, timeout=5, command="held-by-the-test", events=events, cancelled=_sleep
    ) as held:
        assert held == HeldDevice(device, None)  # its own board: the device as configured
        holder = lease_holder(board)
        assert holder is not None and holder.pid == os.getpid()
        assert holder.command == "held-by-the-test" and holder.device == "edge"
        with pytest.raises(DeviceBusyError, match="still held"), device_lease(board, timeout=0):
            pass
    with device_lease(board, timeout=0):  # free again
        pass

    with (
        pytest.raises(KeyboardInterrupt),
        hold(config, device, timeout=5, command="t", events=events, cancelled=_sleep),
    ):
        raise KeyboardInterrupt
    with device_lease(board, timeout=0):  # Ctrl-C in the block freed it too
        pass


def test_a_quarantined_board_is_refused_before_it_is_probed(config: HubConfig) -> None:
    device = to_device(config, "edge")
    book = health_book(config)
    for _ in range(2):
        book.failed(board_key(device), "no route to host")
    with (
        pytest.raises(DeviceUnhealthyError, match="quarantined"),
        hold(
            config, device, timeout=5, command="t", events=EventSink(), cancelled=_sleep, probe=True
        ),
    ):
        pytest.fail("a quarantined board was held")
    with device_lease(board_key(device), timeout=0):  # nothing left held
        pass
