"""`SSHCommandRunner` against a real sshd in a container (tests/ssh_device).

Skipped only when Docker or the base image is missing (the reason says which). Every test runs
with an empty HOME and no ssh-agent, so nothing from the user's own ~/.ssh takes part.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgehub.errors import (
    CommandCancelled,
    CommandError,
    CommandTimeout,
    ConfigError,
    HostKeyError,
    RunnerError,
    SSHConnectionError,
    UnsafeArchiveError,
)
from edgehub.events import EventSink, LogEvent, use_sink
from edgehub.runners.ssh import SSHCommandRunner, SSHConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ssh_device.device import (
    SSHDevice,
    make_key_pair,
    write_known_hosts,
)

pytestmark = pytest.mark.ssh

NASTY_WORDS = [
    "a b; touch /tmp/pwned",
    "$(touch /tmp/pwned-subst)",
    "`touch /tmp/pwned-backtick`",
    "*",
    "~",
    "'single'",
    '"double"',
    "back\\slash",
    "two\nlines",
    "-n",
    "",
    "ünïcødé",
    "a && touch /tmp/pwned-and || true",
]


@pytest.fixture(autouse=True)
def _no_user_ssh_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


@pytest.fixture
def runner(device: SSHDevice) -> Iterator[SSHCommandRunner]:
    with SSHCommandRunner(device.config()) as connected:
        yield connected


def _accepted_logins(device: SSHDevice) -> int:
    return device.logs().count("Accepted publickey")


def _no_process_left(device: SSHDevice, name: str, within: float = 30.0) -> bool:
    """Whether no process ``name`` of the device user is left, polled up to ``within`` seconds
    (generous: a busy machine ends them late, and each look is a `docker exec`)."""
    deadline = time.monotonic() + within
    while device.exec("pgrep", "-u", "edge", "-x", name, check=False).returncode != 1:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- connecting --------------------------------------------------------------------------------


def test_importing_the_module_does_not_import_paramiko() -> None:
    code = "import sys, edgehub.runners.ssh; sys.exit('paramiko' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_password_never_in_repr(device: SSHDevice) -> None:
    config = device.config(password="hunter2-secret")
    assert "hunter2" not in repr(config)
    assert "hunter2" not in str(config)
    assert "hunter2" not in repr(SSHCommandRunner(config))


def test_config_checks_and_normalises_its_fields() -> None:
    config = SSHConfig(host="rpi", username="pi", private_key_path="~/.ssh/id_ed25519")  # type: ignore[arg-type]
    assert config.private_key_path == Path.home() / ".ssh" / "id_ed25519"
    assert config.known_hosts_name == "rpi"
    assert SSHConfig(host="rpi", username="pi", port=2222).known_hosts_name == "[rpi]:2222"
    with pytest.raises(ConfigError, match="port"):
        SSHConfig(host="rpi", username="pi", port=0)


def test_constructing_does_not_connect_and_first_use_does(device: SSHDevice) -> None:
    runner = SSHCommandRunner(device.config())
    assert not runner.is_active
    assert runner.run(["true"]).returncode == 0
    assert runner.is_active
    runner.close()
    assert not runner.is_active
    assert runner.run(["echo", "again"]).stdout == "again\n"
    with runner as same:
        assert same is runner and runner.connect() is runner
    assert not runner.is_active


def test_unknown_host_key_is_refused_before_authenticating(
    device: SSHDevice, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    before = _accepted_logins(device)
    runner = SSHCommandRunner(device.config(known_hosts=empty))
    with pytest.raises(HostKeyError) as caught:
        runner.connect()
    message = str(caught.value)
    assert "\n" not in message
    assert "unknown SSH host key" in message
    assert device.known_hosts_name in message
    assert device.fingerprints()["ssh-ed25519"] in message
    assert f"ssh-keyscan -p {device.port} {device.host}" in message
    assert not runner.is_active
    assert _accepted_logins(device) == before


def test_entry_without_port_does_not_vouch_for_another_port(
    device: SSHDevice, tmp_path: Path
) -> None:
    plain = write_known_hosts(tmp_path / "known_hosts", device.host, device.host_keys)
    with pytest.raises(HostKeyError, match="unknown SSH host key"):
        SSHCommandRunner(device.config(known_hosts=plain)).connect()


def test_user_known_hosts_is_used(device: SSHDevice) -> None:
    ssh_dir = Path.home() / ".ssh"
    ssh_dir.mkdir()
    write_known_hosts(ssh_dir / "known_hosts", device.known_hosts_name, device.host_keys)
    with SSHCommandRunner(device.config(known_hosts=None)) as runner:
        assert runner.run(["true"]).ok


def test_changed_host_key_is_refused(device: SSHDevice, tmp_path: Path) -> None:
    _, public = make_key_pair(tmp_path, "impostor")
    forged = " ".join(public.split()[:2])
    known = write_known_hosts(tmp_path / "known_hosts", device.known_hosts_name, [forged])
    before = _accepted_logins(device)
    with pytest.raises(HostKeyError, match="does not match known_hosts") as caught:
        SSHCommandRunner(device.config(known_hosts=known)).connect()
    assert "man-in-the-middle" in str(caught.value)
    assert device.fingerprints()["ssh-ed25519"] in str(caught.value)
    assert _accepted_logins(device) == before


def test_wrong_client_key_fails_with_a_hint(device: SSHDevice, tmp_path: Path) -> None:
    stranger, _ = make_key_pair(tmp_path, "stranger")
    with pytest.raises(SSHConnectionError) as caught:
        SSHCommandRunner(device.config(private_key_path=stranger)).connect()
    assert not isinstance(caught.value, HostKeyError)
    assert str(stranger) in str(caught.value)
    assert "authorized_keys" in str(caught.value)


def test_password_refused_and_not_echoed(device: SSHDevice) -> None:
    config = device.config(private_key_path=None, password="hunter2-secret")
    with pytest.raises(SSHConnectionError) as caught:
        SSHCommandRunner(config).connect()
    assert "hunter2" not in str(caught.value)
    assert "publickey" in str(caught.value)


def test_missing_key_file_is_named(device: SSHDevice, tmp_path: Path) -> None:
    missing = tmp_path / "no_such_key"
    with pytest.raises(SSHConnectionError, match=r"no_such_key.*does not exist"):
        SSHCommandRunner(device.config(private_key_path=missing)).connect()


def test_refused_port_says_what_to_check(device: SSHDevice) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    with pytest.raises(SSHConnectionError, match="refused; check that sshd runs"):
        SSHCommandRunner(device.config(port=free_port)).connect()


def test_silent_server_times_out_with_a_hint(device: SSHDevice) -> None:
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        config = device.config(port=silent.getsockname()[1], connect_timeout=0.5)
        started = time.monotonic()
        with pytest.raises(
            SSHConnectionError,
            match=r"timed out after 0.5 s; check that the device is not frozen and that an SSH",
        ):
            SSHCommandRunner(config).connect()
        assert time.monotonic() - started < 10  # the 0.5 s limit, not SSH's own (minutes)


@pytest.mark.parametrize("key_type", ["ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"])
def test_any_one_known_key_type_is_enough(device: SSHDevice, tmp_path: Path, key_type: str) -> None:
    only = [key for key in device.host_keys if key.startswith(key_type + " ")]
    known = write_known_hosts(tmp_path / "known_hosts", device.known_hosts_name, only)
    with SSHCommandRunner(device.config(known_hosts=known)) as runner:
        assert runner.run(["true"]).ok


def test_hashed_known_hosts_entries_work(device: SSHDevice, tmp_path: Path) -> None:
    import paramiko

    hashed = paramiko.HostKeys.hash_host(device.known_hosts_name)
    known = write_known_hosts(tmp_path / "known_hosts", hashed, device.host_keys)
    with SSHCommandRunner(device.config(known_hosts=known)) as runner:
        assert runner.run(["true"]).ok


def test_odd_lines_in_known_hosts_are_skipped_not_fatal(device: SSHDevice, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    junk = [
        "# a comment",
        "@cert-authority *.example.com " + device.host_keys[0],
        "broken-line-with-one-field",
        f"{device.known_hosts_name} ssh-ed25519 not-base64!!",
        f"{device.known_hosts_name} sk-ssh-ed25519@openssh.com "
        "AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t",
        "*.example.com,![127.0.0.1]:1 " + device.host_keys[0],
    ]
    known.write_text("\n".join(junk) + "\n")
    with open(known, "a") as handle:
        handle.writelines(f"[127.0.0.?]:{device.port},other {key}\n" for key in device.host_keys)
    with SSHCommandRunner(device.config(known_hosts=known)) as runner:
        assert runner.run(["true"]).ok
    negated = write_known_hosts(
        tmp_path / "negated", f"[127.0.0.*]:*,!{device.known_hosts_name}", device.host_keys
    )
    with pytest.raises(HostKeyError, match="unknown SSH host key"):
        SSHCommandRunner(device.config(known_hosts=negated)).connect()


def test_revoked_host_key_is_refused(device: SSHDevice, tmp_path: Path) -> None:
    known = write_known_hosts(tmp_path / "known_hosts", device.known_hosts_name, device.host_keys)
    with known.open("a") as handle:
        handle.writelines(f"@revoked * {key}\n" for key in device.host_keys)
    with pytest.raises(HostKeyError, match="@revoked"):
        SSHCommandRunner(device.config(known_hosts=known)).connect()


# -- commands ----------------------------------------------------------------------------------


def test_output_streams_live_to_the_sink(runner: SSHCommandRunner) -> None:
    sink = EventSink()
    events: list[tuple[float, LogEvent]] = []
    sink.subscribe(lambda event: events.append((time.monotonic(), event)))
    with use_sink(sink):
        result = runner.run(["sh", "-c", "echo first; echo warn >&2; sleep 1; echo last"])
    finished = time.monotonic()
    seen = {(event.kind, event.message): at for at, event in events}
    assert ("stdout", "first") in seen and ("stderr", "warn") in seen
    assert seen[("stdout", "first")] < finished - 0.5
    assert result.stdout == "first\nlast\n"
    assert result.stderr == "warn\n"
    assert not any("edgehub-pid" in event.message for _, event in events)


def test_hide_keeps_output_out_of_the_sink(runner: SSHCommandRunner) -> None:
    sink = EventSink()
    events: list[LogEvent] = []
    sink.subscribe(events.append)
    with use_sink(sink):
        result = runner.run(["echo", "quiet"], hide=True)
    assert result.stdout == "quiet\n"
    assert events == []


def test_exit_codes(runner: SSHCommandRunner) -> None:
    result = runner.run(["sh", "-c", "exit 3"], check=False)
    assert result.returncode == 3 and not result.ok
    with pytest.raises(CommandError) as caught:
        runner.run(["sh", "-c", "echo details >&2; echo 'it broke' >&2; exit 7"])
    assert caught.value.returncode == 7
    assert "it broke" in str(caught.value)
    assert caught.value.stderr == "details\nit broke\n"
    with pytest.raises(CommandError) as missing:
        runner.run(["no-such-tool-here"])
    assert missing.value.returncode == 127


def test_large_interleaved_output_is_complete(runner: SSHCommandRunner) -> None:
    script = (
        "import sys\n"
        "for i in range(50000):\n"
        "    print(f'out {i:06d} ' + 'x' * 100)\n"
        "    print(f'err {i:06d}', file=sys.stderr)\n"
    )
    result = runner.run(["python3", "-c", script], hide=True)
    out, err = result.stdout.splitlines(), result.stderr.splitlines()
    assert len(out) == 50000 and len(err) == 50000
    assert out[-1].startswith("out 049999 ") and err[-1] == "err 049999"


def test_commands_run_concurrently_on_one_connection(runner: SSHCommandRunner) -> None:
    """Four commands that each wait (20 s at most) until all four have started: run one after
    the other, none would see the others (and the test would take 80 s)."""
    meeting = runner.run(["mktemp", "-d"], hide=True).stdout.strip()
    met = f"[ $(ls {meeting} | wc -l) -ge 4 ]"
    wait = f"i=0; until {met} || [ $i -ge 400 ]; do sleep 0.05; i=$((i+1)); done"
    results: dict[int, str] = {}

    def one(i: int) -> None:
        script = f"touch {meeting}/{i}; {wait}; echo {i} met $(ls {meeting} | wc -l)"
        results[i] = runner.run(["sh", "-c", script]).stdout

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    runner.run(["rm", "-rf", meeting])
    assert results == {i: f"{i} met 4\n" for i in range(4)}


def test_each_argument_arrives_as_one_word(device: SSHDevice, runner: SSHCommandRunner) -> None:
    script = "import json, sys; print(json.dumps(sys.argv[1:]))"
    result = runner.run(["python3", "-c", script, *NASTY_WORDS])
    assert json.loads(result.stdout) == NASTY_WORDS
    leftovers = device.exec("sh", "-c", "ls -d /tmp/pwned* ~/pwned* 2>/dev/null", check=False)
    assert leftovers.stdout == ""


def test_cwd_and_env_are_quoted(device: SSHDevice, runner: SSHCommandRunner) -> None:
    odd = "dir with space;$(touch pwned)&'q'"
    runner.run(["mkdir", "-p", odd])
    here = runner.run(["pwd"], cwd=odd).stdout.strip()
    assert here == f"/home/edge/{odd}"
    assert runner.run(["pwd"], cwd=f"~/{odd}").stdout.strip() == here
    value = "a b'c\"$HOME`id`;|x"
    shown = runner.run(
        ["python3", "-c", "import os; print(os.environ['EDGE_VAR'])"],
        cwd=odd,
        env={"EDGE_VAR": value},
    )
    assert shown.stdout == value + "\n"
    assert device.exec("sh", "-c", "ls ~/pwned 2>/dev/null", check=False).stdout == ""
    with pytest.raises(ValueError, match="environment variable name"):
        runner.run(["true"], env={"BAD NAME": "x"})


def test_timeout_stops_the_remote_process_group(
    device: SSHDevice, runner: SSHCommandRunner
) -> None:
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        runner.run(["sh", "-c", "sleep 30 & sleep 30"], timeout=1)
    assert time.monotonic() - started < 20  # far below the 30 s it would take unstopped
    assert _no_process_left(device, "sleep")
    assert runner.run(["echo", "still usable"]).stdout == "still usable\n"


def test_timeout_escalates_to_kill_when_term_is_ignored(
    device: SSHDevice, runner: SSHCommandRunner
) -> None:
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        runner.run(["sh", "-c", "trap '' TERM; sleep 30"], timeout=0.5)
    assert time.monotonic() - started < 20  # far below the 30 s it would take unkilled
    assert _no_process_left(device, "sleep")


def test_cancel_from_another_thread_stops_the_command(
    device: SSHDevice, runner: SSHCommandRunner
) -> None:
    timer = threading.Timer(0.5, runner.cancel)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(CommandCancelled):
            runner.run(["sleep", "30"])
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20  # far below the 30 s it would take uncancelled
    assert _no_process_left(device, "sleep")
    assert runner.run(["true"]).ok


# -- files -------------------------------------------------------------------------------------


def test_put_and_get_a_file(runner: SSHCommandRunner, tmp_path: Path) -> None:
    local = tmp_path / "model.bin"
    local.write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    runner.put(local, "deep/nested dir/model.bin")
    remote = runner.run(["sha256sum", "deep/nested dir/model.bin"]).stdout.split()[0]
    assert remote == _sha256(local)
    back = tmp_path / "back" / "again" / "copy.bin"
    runner.get("~/deep/nested dir/model.bin", back)
    assert back.read_bytes() == local.read_bytes()
    with pytest.raises(RunnerError, match="no such file"):
        runner.get("deep/absent.bin", tmp_path / "absent.bin")


def test_put_and_get_a_directory(runner: SSHCommandRunner, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "empty").mkdir()
    (tree / "a" / "b" / "weights.bin").write_bytes(os.urandom(200_000))
    (tree / "with space.txt").write_text("spaces\n")
    (tree / "ünï.txt").write_text("unicode\n")
    tool = tree / "run.sh"
    tool.write_text("#!/bin/sh\necho ran\n")
    tool.chmod(0o755)
    runner.put(tree, "/tmp/tree dst")
    assert runner.run(["/tmp/tree dst/run.sh"]).stdout == "ran\n"
    listing = runner.run(["find", ".", "-mindepth", "1"], cwd="/tmp/tree dst").stdout.split("\n")
    assert "./empty" in listing and "./a/b/weights.bin" in listing
    back = tmp_path / "back"
    runner.get("/tmp/tree dst", back)
    for path in tree.rglob("*"):
        copy = back / path.relative_to(tree)
        assert copy.is_dir() if path.is_dir() else copy.read_bytes() == path.read_bytes()
    assert os.access(back / "run.sh", os.X_OK)


def test_unchanged_file_is_not_uploaded_twice(
    device: SSHDevice, runner: SSHCommandRunner, tmp_path: Path
) -> None:
    local = tmp_path / "model.onnx"
    local.write_bytes(os.urandom(512 * 1024))
    stats = runner.transfer_stats
    runner.put(local, "cache/model.onnx")
    runner.put(local, "cache/model.onnx")
    assert (stats.uploads, stats.cache_hits) == (1, 1)
    local.write_bytes(os.urandom(512 * 1024))
    runner.put(local, "cache/model.onnx")
    assert (stats.uploads, stats.cache_hits) == (2, 1)
    runner.run(["truncate", "-s", "10", "cache/model.onnx"])
    runner.put(local, "cache/model.onnx")
    assert (stats.uploads, stats.cache_hits) == (3, 1)
    with SSHCommandRunner(device.config()) as fresh:
        fresh.put(local, "cache/model.onnx")
        assert (fresh.transfer_stats.uploads, fresh.transfer_stats.cache_hits) == (0, 1)
    remote = runner.run(["sha256sum", "cache/model.onnx"]).stdout.split()[0]
    assert remote == _sha256(local)


EVIL_TAR = """#!/usr/bin/python3
import io, sys, tarfile
with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as tar:
    data = b"pwned\\n"
    for name in ("./fine.txt", "../escaped.txt"):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
"""


def test_malicious_archive_from_the_device_is_refused(
    device: SSHDevice, runner: SSHCommandRunner, tmp_path: Path
) -> None:
    runner.run(["mkdir", "-p", "outputs"])
    device.exec(
        "sh",
        "-c",
        "cat > /usr/local/bin/tar && chmod 755 /usr/local/bin/tar",
        user="root",
        stdin=EVIL_TAR,
    )
    target = tmp_path / "inside" / "target"
    try:
        with pytest.raises(UnsafeArchiveError):
            runner.get("outputs", target)
    finally:
        device.exec("rm", "-f", "/usr/local/bin/tar", user="root")
    assert not (tmp_path / "inside" / "escaped.txt").exists()
    assert not (target / "fine.txt").exists()


def test_link_out_of_the_target_is_refused(runner: SSHCommandRunner, tmp_path: Path) -> None:
    runner.run(["mkdir", "-p", "linky"])
    runner.run(["ln", "-sf", "/etc/passwd", "linky/passwd"])
    with pytest.raises(UnsafeArchiveError):
        runner.get("linky", tmp_path / "linky")
    assert not (tmp_path / "linky" / "passwd").exists()
