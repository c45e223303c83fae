"""A board of a labgrid pool reached over SSH: a real coordinator and exporter on loopback
export the SSH test device (tests/ssh_device: a real sshd in a container) as place ``b1``'s
``NetworkService``. A profile through the ``ssh`` provider runs on the address the place gives
(hub.toml's own ssh port is wrong on purpose), and the place is released after."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgehub.acquire.labgrid_pool import open_pool
from edgehub.core.device.configs import LabgridConfig
from edgehub.ops.execute import ExecRequest, execute
from edgehub.ops.project import open_project
from labgrid_lab import labgrid_commands_present, labgrid_lab
from ssh_device.device import SSHDevice, write_known_hosts

pytest.importorskip("labgrid", reason="needs labgrid: pip install 'edgehub[labgrid]'")
pytestmark = [pytest.mark.docker, pytest.mark.ssh]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory, device: SSHDevice) -> Iterator[str]:
    if not labgrid_commands_present():
        pytest.skip("needs the labgrid-coordinator command (pip install 'edgehub[labgrid]')")
    exports = (
        f"board1:\n  NetworkService:\n    address: {device.host}\n"
        f"    username: {device.username}\n    port: {device.port}\n"
    )
    with labgrid_lab(tmp_path_factory.mktemp("lab"), exports, {"b1": "board1"}) as address:
        yield address


def test_a_profile_runs_on_the_board_the_place_names(
    tmp_path: Path, device: SSHDevice, coordinator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    known_hosts = write_known_hosts(
        tmp_path / "known_hosts", device.known_hosts_name, device.host_keys
    )
    monkeypatch.setenv("EDGEHUB_KNOWN_HOSTS", str(known_hosts))  # the user allows the project's
    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "lab"\n\n[devices.board]\nprovider = "ssh"\n\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = 1\nkey = "{device.private_key}"\nknown_hosts = "{known_hosts}"\n\n'
        f'[devices.board.labgrid]\ncoordinator = "{coordinator}"\nplace = "b*"\n\n'
        '[devices.board.agent]\npython = "/opt/device/bin/python3"\n'  # the board's runtime
    )
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", tmp_path / "model.onnx")
    monkeypatch.setenv("EDGEHUB_LEASE_DIR", str(tmp_path / "leases"))
    lines: list[str] = []
    report = execute(
        open_project(tmp_path / "hub.toml"),
        ExecRequest("profile", "onnxruntime", tmp_path / "model.onnx", device="board"),
        subscriber=lambda event: lines.append(event.message),
    )
    assert report.status == "FINISHED"  # type: ignore[union-attr]
    assert report.device == "board"  # type: ignore[union-attr]
    assert any(f"holding labgrid place b1 ({device.username}@" in line for line in lines), lines
    pool = open_pool(LabgridConfig(coordinator=coordinator))
    try:
        assert [p.acquired_by for p in pool.places()] == [None]  # released
    finally:
        pool.close()
