"""`ops.device_identity`: what a device is (resolved address, provider, settings), not its
name; and how `--resume` reads sweep cells recorded before identities were kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgehub.acquire.boards import docker_endpoint
from edgehub.config.load import parse_config
from edgehub.ops.device_identity import DeviceIdentity, device_identity


def identity(devices: str, name: str = "edge") -> DeviceIdentity:
    return device_identity(parse_config('[project]\nname = "p"\n' + devices), name)


def ssh_device(name: str = "edge", host: str = "10.0.0.4", extra: str = "") -> str:
    return (
        f'[devices.{name}]\nprovider = "embedl_onnxruntime"\n'
        f'[devices.{name}.ssh]\nhost = "{host}"\nuser = "pi"\n{extra}'
    )


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_a_renamed_device_keeps_its_identity_and_a_new_host_changes_it() -> None:
    edge = identity(ssh_device())
    assert identity(ssh_device("board"), "board") == edge
    assert identity(ssh_device(extra='key = "~/.ssh/other"\n')) == edge  # how we log in
    assert identity(ssh_device().replace('user = "pi"', 'user = "root"')) == edge
    assert identity(ssh_device(host="10.0.0.5")).key != edge.key
    assert identity(ssh_device(extra="port = 2222\n")).key != edge.key
    assert identity(ssh_device(host="10.0.0.4".upper())) == edge
    assert edge.address == "ssh 10.0.0.4:22" and edge.provider == "embedl_onnxruntime"


def test_the_jump_host_settings_and_provider_are_part_of_it() -> None:
    edge = identity(ssh_device())
    jumped = identity(ssh_device(extra='jump_host = "me@bastion:2200"\n'))
    assert jumped.address == "ssh 10.0.0.4:22 via bastion:2200"
    assert jumped.key != edge.key
    tuned = identity(ssh_device() + '[devices.edge.embedl_onnxruntime]\ncli_args = ["-t", "4"]\n')
    assert tuned.address == edge.address and tuned.key != edge.key
    overridden = identity(
        ssh_device() + "[devices.edge.overrides.ONNXRuntimeProfiler.embedl_onnxruntime]\n"
        'cli_args = ["-t", "1"]\n'
    )
    assert overridden.key not in (edge.key, tuned.key)
    trtexec = identity(ssh_device().replace("embedl_onnxruntime", "trtexec"))
    assert trtexec.address == edge.address and trtexec.key != edge.key


def test_an_ssh_config_alias_resolves_to_the_board_it_names(_home: Path) -> None:
    (_home / ".ssh" / "config").write_text(
        "Host rpi\n  HostName 10.0.0.4\n  Port 2222\n  ProxyJump gw\n"
    )
    alias = identity(ssh_device(host="rpi"))
    assert alias.address == "ssh 10.0.0.4:2222 via gw:22"
    assert alias == identity(ssh_device(extra='port = 2222\njump_host = "gw"\n'))


def test_local_cloud_and_other_devices() -> None:
    one = identity('[devices.cpu1]\nprovider = "local"\n[devices.cpu1.docker]\ncpus = 1\n', "cpu1")
    two = identity('[devices.cpu2]\nprovider = "local"\n[devices.cpu2.docker]\ncpus = 1\n', "cpu2")
    four = identity('[devices.cpu4]\nprovider = "local"\n[devices.cpu4.docker]\ncpus = 4\n', "cpu4")
    assert one == two and one.key != four.key and one.address == f"docker {docker_endpoint()}"
    s24 = identity('[devices.s24]\nprovider = "qai_hub"\nspec = "Samsung Galaxy S24"\n', "s24")
    s23 = identity('[devices.s24]\nprovider = "qai_hub"\nspec = "Samsung Galaxy S23"\n', "s24")
    assert s24.address == "qai_hub Samsung Galaxy S24" and s24.key != s23.key
    assert identity('[devices.npu]\nprovider = "trtexec"\n', "npu").address == "this host"


def test_resume_reads_cells_recorded_before_identities_by_name_only(tmp_path: Path) -> None:
    """An old record (no ``device_identity``) is found by its name key, never reused as is;
    a record naming fields this version does not know is still read."""
    from edgehub.core import HubContext
    from edgehub.ops.project import open_project
    from edgehub.ops.sweep import CELL_RUN, _finished_cells

    (tmp_path / "hub.toml").write_text('[project]\nname = "p"\n' + ssh_device())
    project = open_project(tmp_path / "hub.toml")
    old = {"label": "m edge onnxruntime", "model": "m.onnx", "device": "edge",
           "runtime": "onnxruntime", "settings": {}, "key": "namekey0", "status": "FINISHED",
           "median_ms": 1.5}  # fmt: skip
    new = {**old, "key": "idkey", "device_identity": "ssh 10.0.0.4:22, embedl_onnxruntime",
           "name_key": "namekey1", "from_a_later_version": 1}  # fmt: skip
    with HubContext("p", artifact_base_dir=project.store_dir) as ctx:
        for cell in (old, new, "not json", [1]):
            with ctx.open_run(CELL_RUN, "cell"):
                ctx.client.log_param("cell", json.dumps(cell) if isinstance(cell, dict) else cell)
    by_key, by_name = _finished_cells(project)
    assert set(by_key) == {"idkey"} and by_key["idkey"].median_ms == 1.5
    assert set(by_name) == {"namekey0", "namekey1"}
    assert by_name["namekey0"].device_identity is None


def test_a_port_in_ssh_config_that_is_not_a_number_is_one_config_error(_home: Path) -> None:
    """Connecting reads ~/.ssh/config through the same resolver: a bad Port there is one
    ConfigError naming the file (it was a raw ValueError); the sweep identity falls back to
    hub.toml as written."""
    from edgehub.errors import ConfigError
    from edgehub.runners.ssh import SSHConfig
    from edgehub.runners.ssh.user_config import resolve

    (_home / ".ssh" / "config").write_text("Host rpi\n  HostName 10.0.0.4\n  Port notanumber\n")
    with pytest.raises(ConfigError, match=r"Port 'notanumber' is not a port number") as caught:
        resolve(SSHConfig(host="rpi", username="pi"))
    assert str(_home / ".ssh" / "config") in str(caught.value)
    assert identity(ssh_device(host="rpi")).address == "ssh rpi:22"
