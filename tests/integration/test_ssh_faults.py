"""SSH configuration as users have it (~/.ssh/config, a jump host), the retry before a command
starts, faults (the session's sshd killed, the device paused, the network cut, a cancel during a
long remote run) and secrets, against real device containers (tests/ssh_device).

The destructive cases get a device container of their own.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from edgehub.core.context import HubContext
from edgehub.core.device import Device
from edgehub.core.device.configs import EmbedlONNXRuntimeConfig
from edgehub.errors import CommandCancelled, CommandTimeout, EdgehubError, SSHConnectionError
from edgehub.runners.ssh import SSHCommandRunner
from edgehub.toolchains.onnxruntime import ONNXRuntimeCompiledModel, ONNXRuntimeProfiler
from edgehub.tracking.store import RunStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import DeviceUnavailable, SSHDevice, ssh_device, write_known_hosts

pytestmark = pytest.mark.ssh
MODEL = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


def _start(stack: ExitStack) -> SSHDevice:
    try:
        return stack.enter_context(ssh_device())
    except DeviceUnavailable as missing:
        pytest.skip(f"SSH test device unavailable: {missing}")


@pytest.fixture(scope="module")
def device() -> Iterator[SSHDevice]:
    with ExitStack() as stack:
        yield _start(stack)


@pytest.fixture
def own_device() -> Iterator[SSHDevice]:
    with ExitStack() as stack:
        yield _start(stack)


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


def test_ssh_config_alias_gives_hostname_port_and_key(device: SSHDevice, _home: Path) -> None:
    (_home / ".ssh" / "config").write_text(
        f"Host board\n  HostName {device.host}\n  Port {device.port}\n"
        f"  IdentityFile {device.private_key}\n"
    )
    config = device.config(host="board", port=22, private_key_path=None)
    with SSHCommandRunner(config) as runner:
        assert runner.run(["whoami"], hide=True).stdout.strip() == "edge"


def test_jump_host(device: SSHDevice, tmp_path: Path) -> None:
    """The device is its own jump host: in to its published port, on to its sshd on :22."""
    known = write_known_hosts(tmp_path / "kh", device.known_hosts_name, device.host_keys)
    with known.open("a") as extra:
        extra.writelines(f"127.0.0.1 {key}\n" for key in device.host_keys)
    config = device.config(
        host="127.0.0.1",
        port=22,
        known_hosts=known,
        jump_host=f"{device.username}@{device.host}:{device.port}",
    )
    with SSHCommandRunner(config) as runner:
        result = runner.run(["sh", "-c", "echo $SSH_CONNECTION"], hide=True)
    assert result.stdout.split()[0] == "127.0.0.1"  # the hop came from inside the device


def test_retry_once_when_the_link_dropped_before_a_command(device: SSHDevice) -> None:
    with SSHCommandRunner(device.config()) as runner:
        runner.run(["true"], hide=True)
        runner._session._transport.sock.close()  # the link drops while idle
        assert runner.run(["echo", "again"], hide=True).stdout.strip() == "again"


def test_cancel_during_a_long_remote_run_kills_it_and_the_run(
    device: SSHDevice, tmp_path: Path
) -> None:
    board = Device(
        name="board",
        runner=SSHCommandRunner(device.config()),
        provider_type="embedl_onnxruntime",
        provider_config=EmbedlONNXRuntimeConfig(),
    )
    with HubContext(artifact_base_dir=tmp_path / "store", devices=[board]) as ctx:
        timer = threading.Timer(2.0, ctx.cancel)
        timer.start()
        started = time.monotonic()
        with pytest.raises(CommandCancelled) as caught:
            ONNXRuntimeProfiler(runs=1_000_000).run(ctx, ONNXRuntimeCompiledModel.from_path(MODEL))
        timer.join()
    assert time.monotonic() - started < 15
    assert "\n" not in str(caught.value)
    assert device.processes_left("embedl-onnxruntime") == ""
    records = RunStore(tmp_path / "store").list_runs(limit=None)
    assert records[0].status == "KILLED"


def test_sshd_session_killed_mid_run(own_device: SSHDevice) -> None:
    with SSHCommandRunner(own_device.config()) as runner:
        killer = threading.Timer(
            1.5, lambda: own_device.exec("pkill", "-KILL", "-f", "sshd: edge", user="root")
        )
        killer.start()
        with pytest.raises(SSHConnectionError) as caught:
            runner.run(["sleep", "37"], hide=True, timeout=30)
        killer.join()
    assert "\n" not in str(caught.value)
    assert own_device.processes_left("sleep 37") == ""


def test_paused_device_times_out_and_leaves_nothing(own_device: SSHDevice) -> None:
    with SSHCommandRunner(own_device.config()) as runner:
        runner.run(["true"], hide=True)
        pauser = threading.Timer(
            1.0, lambda: subprocess.run(["docker", "pause", own_device.container], check=True)
        )
        pauser.start()
        try:
            with pytest.raises((CommandTimeout, SSHConnectionError)) as caught:
                runner.run(["sleep", "38"], hide=True, timeout=4)
        finally:
            pauser.join()
            subprocess.run(["docker", "unpause", own_device.container], check=False)
    assert "\n" not in str(caught.value)
    assert own_device.processes_left("sleep 38", within=15) == ""


def test_network_cut_is_a_one_line_error_and_nothing_is_left(own_device: SSHDevice) -> None:
    config = own_device.config(keepalive_s=1.0)
    networks = subprocess.run(
        ["docker", "inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}",
         own_device.container],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    with SSHCommandRunner(config) as runner:
        runner.run(["true"], hide=True)

        def cut() -> None:
            for network in networks:
                subprocess.run(
                    ["docker", "network", "disconnect", "-f", network, own_device.container],
                    check=False,
                )

        cutter = threading.Timer(1.0, cut)
        cutter.start()
        started = time.monotonic()
        with pytest.raises(EdgehubError) as caught:
            runner.run(["sleep", "39"], hide=True, timeout=60)
        cutter.join()
    assert time.monotonic() - started < 30
    assert "\n" not in str(caught.value)
    # the device's sshd drops the silent client (ClientAliveInterval), the session ends, and the
    # command's lifeline stops its process group (checked through docker exec, not the network)
    assert own_device.processes_left("sleep 39", within=20) == ""


def test_no_secret_in_repr_log_or_record(device: SSHDevice, tmp_path: Path) -> None:
    secret = "hunter2-not-a-real-password"
    config = device.config(password=secret)
    runner = SSHCommandRunner(config)
    assert secret not in repr(config) and secret not in repr(runner)
    key_text = device.private_key.read_text()
    board = Device(
        name="board",
        runner=runner,
        provider_type="embedl_onnxruntime",
        provider_config=EmbedlONNXRuntimeConfig(),
    )
    with HubContext(artifact_base_dir=tmp_path / "store", devices=[board]) as ctx:
        ONNXRuntimeProfiler(runs=5).run(ctx, ONNXRuntimeCompiledModel.from_path(MODEL))
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret.encode() not in data, path
            assert key_text.split("\n")[1].encode() not in data, path
