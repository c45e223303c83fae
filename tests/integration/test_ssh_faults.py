"""SSH configuration as users have it (~/.ssh/config, a jump host), the retry before a command
starts, faults (the session's sshd killed, the device paused, the network cut, a cancel during a
long remote run) and secrets, against real device containers (tests/ssh_device).

The lifeline: whatever way `hub` ends (normally, SIGTERM, SIGKILL, a frozen device, a killed
sshd), nothing of its connection is left on the device: no agent server, relay or janitor, no
work folder. Those cases run the real `hub` entry point. The destructive cases get a device
container of their own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
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
HUB = str(Path(sys.executable).with_name("hub"))
DEVICE_PYTHON = "/opt/device/bin/python3"
# what a connection leaves on the device while it lives (the patterns do not match themselves)
OURS = "serve --socke[t]|relay --socke[t]|edgehub-janito[r]"
LONG_PROFILE = ("exec", "profile", "onnxruntime", "model.onnx", "--device", "board",
                "--set", "runs=1000000")  # fmt: skip


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
    # what a transport holds (its jump host, its watchdog) is kept beside paramiko's object,
    # not set on it, and closing the transport closes the jump host's too
    import threading

    import paramiko

    from edgehub.runners.ssh.connect import close_transport, open_transport

    def transports() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if isinstance(t, paramiko.Transport)}

    before = transports()
    transport = open_transport(config)
    opened = transports() - before
    assert len(opened) == 2 and transport in opened  # the device's and the jump host's
    assert not [name for name in vars(transport) if name.startswith("edgehub")]
    close_transport(transport)
    for thread in opened:
        thread.join(timeout=30)
    assert not [t for t in opened if t.is_alive()]


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
    def kill_once_it_runs() -> None:  # not at a fixed time: a busy machine connects late
        deadline = time.monotonic() + 60
        while not own_device.processes_left("sleep 37", within=0):
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)
        own_device.exec("pkill", "-KILL", "-f", "sshd: edge", user="root")

    with SSHCommandRunner(own_device.config()) as runner:
        killer = threading.Thread(target=kill_once_it_runs)
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


# -- the real `hub`: bounded failures and the lifeline -----------------------------------------


def _project(tmp_path: Path, device: SSHDevice, ssh_extra: str = "", extra: str = "") -> Path:
    """A project whose device ``board`` runs edgehub's agent (provider ``ssh``, resident)."""
    folder = tmp_path / "proj"
    (folder / "home").mkdir(parents=True)
    (folder / "hub.toml").write_text(
        '[project]\nname = "faults"\n\n[devices.board]\nprovider = "ssh"\n'
        f'[devices.board.agent]\npython = "{DEVICE_PYTHON}"\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n{ssh_extra}\n{extra}'
    )
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


def _env(project: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(project / "home")}
    env.pop("SSH_AUTH_SOCK", None)
    return env


def _hub(project: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=project, env=_env(project), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def _start_hub(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [HUB, *args], cwd=project, env=_env(project), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _ours(device: SSHDevice) -> str:
    """What a connection of ours has on the device now: processes, then work folders."""
    found = device.exec(
        "sh", "-c", f"pgrep -u edge -af '{OURS}' | cut -c1-160; ls -A ~/.cache/edgehub/work 2>&1",
        check=False,
    )  # fmt: skip
    return "\n".join(
        line for line in found.stdout.splitlines() if line and "No such file" not in line
    )


def _nothing_left(device: SSHDevice, within: float = 20.0) -> str:
    """Poll until nothing of ours is on the device (the machine may be loaded); what is left."""
    deadline = time.monotonic() + within
    while True:
        left = _ours(device)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def _wait_for_job(device: SSHDevice, proc: subprocess.Popen[str], within: float = 120) -> None:
    """Until the agent server of ``proc``'s run is up on the device and ``proc`` still runs."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        found = device.exec("pgrep", "-u", "edge", "-f", "serve --socket", check=False)
        if found.stdout.strip():
            time.sleep(2.0)  # the job itself starts right after
            assert proc.poll() is None, proc.communicate()
            return
        time.sleep(0.3)
    raise AssertionError("the profile did not start on the device")


def _pause(container: str) -> None:
    """`docker pause`, tried again where a loaded machine fails to freeze at once."""
    for _ in range(5):
        if subprocess.run(["docker", "pause", container], check=False).returncode == 0:
            return
        time.sleep(1.0)
    raise AssertionError(f"docker pause {container} failed")


def test_paused_device_fails_the_run_in_bounded_time_and_leaves_nothing(
    own_device: SSHDevice, tmp_path: Path
) -> None:
    project = _project(tmp_path, own_device, "keepalive = 1\nkeepalive_count = 3\n")
    proc = _start_hub(project, *LONG_PROFILE)
    try:
        _wait_for_job(own_device, proc)
        _pause(own_device.container)
        paused = time.monotonic()
        _out, err = proc.communicate(timeout=120)
        took = time.monotonic() - paused
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        subprocess.run(["docker", "unpause", own_device.container], check=False)
    assert proc.returncode == 3, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("hub: error: device 'board' stopped responding (no reply for "), err
    assert "Traceback" not in err
    assert took < 60, took  # about keepalive * keepalive_count (3 s), far below any hang
    assert _nothing_left(own_device) == ""
    runs = _hub(project, "runs", "list", "--json")
    assert '"FAILED"' in runs.stdout, runs.stdout


@pytest.mark.parametrize("how", ["exit", "SIGTERM", "SIGKILL"])
def test_nothing_is_left_on_the_device_however_hub_ends(
    device: SSHDevice, tmp_path: Path, how: str
) -> None:
    project = _project(tmp_path, device)
    assert _ours(device) == ""
    if how == "exit":
        done = _hub(project, "exec", "profile", "onnxruntime", "model.onnx", "--device", "board",
                    "--set", "runs=20")  # fmt: skip
        assert done.returncode == 0, done.stderr
    else:
        proc = _start_hub(project, *LONG_PROFILE)
        try:
            _wait_for_job(device, proc)
            assert _ours(device) != ""  # the server, relay, janitor and folder are there now
            proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == (143 if how == "SIGTERM" else -9)
    assert _nothing_left(device) == ""


def test_sshd_killed_mid_job_is_exit_3_naming_the_device(
    own_device: SSHDevice, tmp_path: Path
) -> None:
    project = _project(tmp_path, own_device)
    proc = _start_hub(project, *LONG_PROFILE)
    try:
        _wait_for_job(own_device, proc)
        own_device.exec("pkill", "-KILL", "-f", "sshd: edge", user="root")
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 3, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("hub: error: lost the connection to device 'board'"), err
    assert "ort.profile" not in last and "Traceback" not in err
    assert _nothing_left(own_device) == ""


def test_key_files_others_may_read_are_refused_and_hints_name_the_real_key(
    device: SSHDevice, tmp_path: Path
) -> None:
    key = tmp_path / "loose_key"
    key.write_bytes(device.private_key.read_bytes())
    key.chmod(0o644)
    project = _project(tmp_path, device)
    toml = project / "hub.toml"
    toml.write_text(toml.read_text().replace(str(device.private_key), str(key)))
    refused = _hub(project, "devices", "check", "board")
    assert refused.returncode == 3, refused.stderr
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.strip().endswith(
        f"key file {key} is readable by others (mode 0644); chmod 600 {key}"
    )
    key.chmod(0o600)
    assert _hub(project, "devices", "check", "board").returncode == 0

    toml.write_text(toml.read_text().replace(str(key), str(tmp_path / "no_such_key")))
    missing = _hub(project, "devices", "check", "board")
    assert missing.returncode == 3
    assert "`key` in [devices.board.ssh] of hub.toml" in missing.stderr
    assert "private_key_path" not in missing.stderr


def test_unset_password_env_fails_only_its_device(device: SSHDevice, tmp_path: Path) -> None:
    other = (
        '[devices.other]\nprovider = "ssh"\n[devices.other.ssh]\nhost = "192.0.2.1"\n'
        'user = "pi"\npassword_env = "EDGEHUB_SSH_PASSWORD_TEST_UNSET"\n'
    )
    project = _project(tmp_path, device, extra=other)
    assert "EDGEHUB_SSH_PASSWORD_TEST_UNSET" not in os.environ
    fine = _hub(project, "devices", "check", "board")
    assert fine.returncode == 0, fine.stderr
    listed = _hub(project, "devices", "list")
    assert listed.returncode == 0 and "other" in listed.stdout, listed.stderr
    checked = _hub(project, "devices", "check", "other")
    assert checked.returncode != 0
    assert "EDGEHUB_SSH_PASSWORD_TEST_UNSET, which is not set" in checked.stderr
    failed = _hub(project, "exec", "invoke", "onnxruntime", "model.onnx", "--device", "other")
    assert failed.returncode == 2, failed.stderr
    assert "EDGEHUB_SSH_PASSWORD_TEST_UNSET, which is not set" in failed.stderr
    assert failed.stderr.count("hub: error:") == 1 and "Traceback" not in failed.stderr


def test_step_timeout_stops_a_command_that_runs_too_long(device: SSHDevice) -> None:
    with SSHCommandRunner(device.config(step_timeout=2.0)) as runner:
        started = time.monotonic()
        with pytest.raises(CommandTimeout) as caught:
            runner.run(["sleep", "41"], hide=True)
        assert time.monotonic() - started < 30
        assert "longer than 2.0 s" in str(caught.value)
        assert "step_timeout is 2 s" in str(caught.value) and "\n" not in str(caught.value)
        assert runner.run(["sleep", "0.1"], hide=True, timeout=10).returncode == 0
    assert device.processes_left("sleep 41", within=15) == ""


def test_a_context_closes_the_connections_it_opened(device: SSHDevice, tmp_path: Path) -> None:
    runner = SSHCommandRunner(device.config())
    board = Device(name="board", runner=runner, provider_type="embedl_onnxruntime",
                   provider_config=EmbedlONNXRuntimeConfig())  # fmt: skip
    with HubContext(
        artifact_base_dir=tmp_path / "store", devices=[board], auto_connect=False
    ) as ctx:
        folder = ctx.device_workspace("board")
        assert runner.is_active
        assert str(folder).startswith("/home/edge/.cache/edgehub/work/")
        mode = device.exec("stat", "-c", "%a", str(folder.parent)).stdout.strip()
        assert mode == "700"
    assert not runner.is_active
    assert device.processes_left("sshd: edge", within=15) == ""
    assert _nothing_left(device) == ""


def test_a_new_connection_removes_what_dead_ones_left_and_never_a_live_ones(
    device: SSHDevice,
) -> None:
    """Folders named after a janitor that is gone are removed (and their servers stopped);
    one whose owner lives (pid and start time match) and names not ours are kept."""
    base = "/home/edge/.cache/edgehub/work"
    live = subprocess.Popen(["docker", "exec", "-u", "edge", device.container, "sleep", "300"])
    try:
        pid = ""
        deadline = time.monotonic() + 30
        while not pid and time.monotonic() < deadline:
            pid = device.exec("pgrep", "-u", "edge", "-x", "sleep", check=False).stdout.strip()
            time.sleep(0.2)
        assert pid.isdigit(), pid
        start = device.exec("sh", "-c", f"cut -d' ' -f22 /proc/{pid}/stat").stdout.strip()
        names = {"dead": "99999-12345-aaaa", "reused": f"{pid}-1-bbbb",
                 "live": f"{pid}-{start}-cccc", "foreign": "notours"}  # fmt: skip
        device.exec("sh", "-c", " ".join(f"mkdir -p {base}/{n}/x;" for n in names.values()))
        gone = {names["dead"], names["reused"]}
        with SSHCommandRunner(device.config()) as runner:
            mine = runner.work_folder()  # the janitor scans the folders after it prints its own
            deadline = time.monotonic() + 60
            kept = set(device.exec("ls", "-A", base).stdout.split())
            while kept & gone and time.monotonic() < deadline:
                time.sleep(0.2)
                kept = set(device.exec("ls", "-A", base).stdout.split())
        assert kept == {names["live"], names["foreign"], mine.name}
    finally:
        live.kill()
        live.wait()
        device.exec("sh", "-c", f"rm -rf {base}/*; pkill -u edge -x sleep", check=False)


def test_a_new_connection_prunes_the_caches_no_run_has_used_for_30_days(
    device: SSHDevice, tmp_path: Path
) -> None:
    """Datasets and agents cached on the device go once no run has used them for 30 days
    (partial uploads after a day); what a run finds there is touched, so it stays."""
    from edgehub.toolchains.remote.ssh_agent import _FOUND_HASHED, DEVICE_HASH

    cache = "/home/edge/.cache/edgehub"
    old, recent = "-d '40 days ago'", "-d '2 days ago'"
    setup = (
        f"mkdir -p {cache}/datasets/old {cache}/datasets/used {cache}/datasets/fresh {cache}/agent"
        f" && touch {cache}/datasets/used/samples.npz {cache}/datasets/fresh/samples.npz"
        f" {cache}/datasets/fresh/.samples.npz.1a2b.edgehub-part"
        f" {cache}/datasets/fresh/.new.edgehub-part"
        f" {cache}/agent/old.pyz {cache}/agent/fresh.pyz {cache}/agent/used.pyz"
        f" && touch {old} {cache}/datasets/old {cache}/datasets/used {cache}/agent/old.pyz"
        f" {cache}/agent/used.pyz"
        f" && touch {recent} {cache}/datasets/fresh/.samples.npz.1a2b.edgehub-part"
    )  # fmt: skip
    device.exec("sh", "-c", setup)
    used_pyz = tmp_path / "used.pyz"
    used_pyz.write_bytes(b"")  # the same size as the cached one: found there, not sent
    try:
        with SSHCommandRunner(device.config()) as runner:
            # what a run finds there is touched first (a dataset's folder; a content-named file)
            found = runner.run(["sh", "-c", _FOUND_HASHED, "edgehub",
                                f"{cache}/datasets/used/samples.npz", "/opt/device/bin/python3",
                                DEVICE_HASH], check=False)  # fmt: skip
            assert found.ok and found.stdout.strip() == hashlib.sha256(b"").hexdigest()
            runner.put_content(used_pyz, f"{cache}/agent/used.pyz")
        with SSHCommandRunner(device.config()) as runner:
            runner.work_folder()  # a new connection: its janitor prunes
            ours = {"datasets": {"old", "used", "fresh"},
                    "agent": {"old.pyz", "fresh.pyz", "used.pyz"},
                    "datasets/fresh": {".samples.npz.1a2b.edgehub-part", ".new.edgehub-part",
                                       "samples.npz"}}  # fmt: skip
            expected = {"datasets": {"fresh", "used"}, "agent": {"fresh.pyz", "used.pyz"},
                        "datasets/fresh": {".new.edgehub-part", "samples.npz"}}  # fmt: skip
            listed: dict[str, set[str]] = {}
            deadline = time.monotonic() + 20
            while listed != expected and time.monotonic() < deadline:
                listed = {  # other tests' entries (the real agent) are not this test's
                    where: set(device.exec("ls", "-A", f"{cache}/{where}").stdout.split()) & names
                    for where, names in ours.items()
                }
                time.sleep(0.3)
            assert listed == expected
    finally:
        device.exec("sh", "-c", f"rm -rf {cache}/datasets/old {cache}/datasets/used "
                    f"{cache}/datasets/fresh {cache}/agent/old.pyz {cache}/agent/fresh.pyz "
                    f"{cache}/agent/used.pyz", check=False)  # fmt: skip


def test_sigterm_while_the_device_is_frozen_exits_soon_and_leaves_nothing(
    own_device: SSHDevice, tmp_path: Path
) -> None:
    """Clean-up does not wait for a device that does not answer (default keepalives: 45 s
    before it counts as gone); its janitor cleans up once it runs again."""
    project = _project(tmp_path, own_device)
    proc = _start_hub(project, *LONG_PROFILE)
    try:
        _wait_for_job(own_device, proc)
        _pause(own_device.container)
        proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        _out, err = proc.communicate(timeout=120)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        subprocess.run(["docker", "unpause", own_device.container], check=False)
    assert proc.returncode == 143, err
    assert took < 25, took
    assert _nothing_left(own_device) == ""
