"""`board_key`: what a device is, so that two names for one board share a lease."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgehub.acquire.boards import SSHBoard, board_key, place_board_key, ssh_board
from edgehub.acquire.labgrid_pool import PlaceInfo
from edgehub.core.device.configs import LabgridConfig
from edgehub.core.device.spec import Device, DeviceSpec
from edgehub.runners.local import LocalCommandRunner
from edgehub.runners.ssh import SSHCommandRunner, SSHConfig


@pytest.fixture
def ssh_config_file(tmp_path: Path) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text("Host board-alias\n  HostName 127.0.0.1\n  Port 2222\n")
    return path


def _ssh(name: str, host: str, port: int, config: Path, **more: str) -> Device:
    settings = SSHConfig(host=host, username="edge", port=port, ssh_config=config, **more)  # type: ignore[arg-type]
    return Device(name=name, runner=SSHCommandRunner(settings), provider_type="embedl_onnxruntime")


def test_names_of_one_host_and_port_are_one_board(ssh_config_file: Path) -> None:
    keys = {
        board_key(_ssh("a", "127.0.0.1", 2222, ssh_config_file)),
        board_key(_ssh("b", "localhost", 2222, ssh_config_file)),
        board_key(_ssh("c", "LOCALHOST.", 2222, ssh_config_file)),
        board_key(_ssh("d", "board-alias", 22, ssh_config_file)),
    }
    assert keys == {"ssh:127.0.0.1:2222"}
    other_port = board_key(_ssh("e", "127.0.0.1", 2223, ssh_config_file))
    assert other_port == "ssh:127.0.0.1:2223"


def test_a_jump_host_is_part_of_the_board(ssh_config_file: Path) -> None:
    direct = board_key(_ssh("a", "10.0.0.7", 22, ssh_config_file))
    jumped = board_key(_ssh("b", "10.0.0.7", 22, ssh_config_file, jump_host="ops@127.0.0.1:2200"))
    assert direct == "ssh:10.0.0.7:22"
    assert jumped == "ssh:10.0.0.7:22 via ssh:127.0.0.1:2200"


def test_local_devices_are_their_docker_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "tcp://build-box:2375")
    cpu1 = Device(name="cpu1", runner=LocalCommandRunner(), provider_type="local")
    cpu2 = Device(name="cpu2", runner=LocalCommandRunner(), provider_type="local")
    assert board_key(cpu1) == board_key(cpu2) == "docker:tcp://build-box:2375"
    monkeypatch.delenv("DOCKER_HOST")
    assert board_key(cpu1).startswith("docker:unix:///")


def test_cloud_and_labgrid_devices(ssh_config_file: Path) -> None:
    cloud = Device(name="s24", runner=None, spec=DeviceSpec("Samsung Galaxy S24"),
                   provider_type="qai_hub")  # fmt: skip
    assert board_key(cloud) == "cloud:qai_hub:Samsung Galaxy S24"
    pool = LabgridConfig(coordinator="lab:20408", place="rpi-*", tags=("board=rpi4",))
    place = PlaceInfo(name="rpi-1", address="localhost", port=2222)
    same = board_key(_ssh("a", "127.0.0.1", 2222, ssh_config_file))
    assert place_board_key(place, pool) == same
    assert place_board_key(PlaceInfo(name="rpi-2"), pool) == "labgrid:lab:20408/rpi-2"


def test_the_shared_resolver_looks_up_names_only_when_asked(ssh_config_file: Path) -> None:
    """Leases look the name up (`board_key`); the sweep identity does not (``look_up=False``)."""
    settings = SSHConfig(host="LocalHost.", username="edge", port=22, ssh_config=ssh_config_file)
    assert ssh_board(settings, look_up=False) == SSHBoard("localhost", 22)
    assert ssh_board(settings, look_up=True) == SSHBoard("127.0.0.1", 22)
    alias = SSHConfig(host="board-alias", username="edge", jump_host="ops@LOCALHOST:2200",
                      ssh_config=ssh_config_file)  # fmt: skip
    assert ssh_board(alias, look_up=False) == SSHBoard("127.0.0.1", 2222, "localhost", 2200)
    assert ssh_board(alias, look_up=True) == SSHBoard("127.0.0.1", 2222, "127.0.0.1", 2200)
