"""Configuration from a repository is data: a hub.toml never chooses on its own which environment
variable is sent to a device as a password, nor which file inside the project vouches for the
device's host key (issue 36).

The host the repository names is a real SSH server run here (paramiko, on 127.0.0.1) that counts
the connections it gets and records every password offered: a refusal must come before any
connection, and once the user allows the variable and the file, the password does reach it.
The last test logs in to the SSH test device (``tests/ssh_device``) with an allowed variable and
an allowed project file.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest

from ssh_device.device import SSHDevice

HUB = str(Path(sys.executable).with_name("hub"))
MODEL = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
SECRET = "not-for-your-eyes-1234"


class _Listener(paramiko.ServerInterface):
    def __init__(self, host: _Host) -> None:
        self.host = host

    def get_allowed_auths(self, username: str) -> str:
        return "password"

    def check_auth_password(self, username: str, password: str) -> int:
        self.host.passwords.append(password)
        return int(paramiko.AUTH_FAILED)


class _Host:
    """An SSH server a repository could name: it takes no login, it only records."""

    def __init__(self) -> None:
        self.key = paramiko.ECDSAKey.generate()
        self.connections = 0
        self.passwords: list[str] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.key.get_name()} {self.key.get_base64()}\n"

    def _serve(self) -> None:
        transports: list[Any] = []
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            self.connections += 1
            transport = paramiko.Transport(conn)
            transport.add_server_key(self.key)
            try:
                transport.start_server(server=_Listener(self))
            except (paramiko.SSHException, EOFError, OSError):
                pass
            transports.append(transport)
        for transport in transports:
            transport.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()


@pytest.fixture
def host() -> Iterator[_Host]:
    server = _Host()
    try:
        yield server
    finally:
        server.close()


def _project(
    folder: Path, host: _Host, password_env: str, known_hosts: str, *, provider: str = "ssh"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hub.toml").write_text(
        f'[project]\nname = "cloned"\n\n[devices.board]\nprovider = "{provider}"\n'
        f'[devices.board.ssh]\nhost = "127.0.0.1"\nport = {host.port}\nuser = "pi"\n'
        f'password_env = "{password_env}"\nknown_hosts = "{known_hosts}"\n'
        "connect_timeout = 5\n"
    )
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


def _hub(cwd: Path, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith("EDGEHUB_")},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "AWS_SECRET_ACCESS_KEY": SECRET,
        **env,
    }
    for name in ("SSH_AUTH_SOCK", "EDGEHUB_PASSWORD_ENVS", "EDGEHUB_KNOWN_HOSTS"):
        if name not in env:
            environ.pop(name, None)
    return subprocess.run(
        [HUB, *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120
    )


def _refused(done: subprocess.CompletedProcess[str], setting: str) -> str:
    """The one line of a refusal that names ``setting``."""
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert setting in lines[0], lines[0]
    assert SECRET not in done.stdout + done.stderr
    return lines[0]


def _git_repo(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)


def test_a_cloned_repos_variable_and_known_hosts_are_refused_before_connecting(
    host: _Host, tmp_path: Path
) -> None:
    repo = tmp_path / "clone"
    _git_repo(repo)
    (repo / "ssh").mkdir()
    (repo / "ssh" / "known_hosts").write_text(host.known_hosts_line())
    project = _project(repo / "bench", host, "AWS_SECRET_ACCESS_KEY", "../ssh/known_hosts")
    home = tmp_path / "home"
    home.mkdir()

    for verb in (
        ("devices", "check", "board"),
        ("exec", "invoke", "onnxruntime", "model.onnx", "--device", "board"),
        ("exec", "profile", "onnxruntime", "model.onnx", "--device", "board"),
    ):
        line = _refused(_hub(project, home, *verb), "devices.board.ssh.password_env")
        assert "AWS_SECRET_ACCESS_KEY" in line and "EDGEHUB_PASSWORD_ENVS" in line, line
    assert (host.connections, host.passwords) == (0, [])

    # the variable allowed by the user; the repository's known_hosts still vouches for nothing
    allowed = {"EDGEHUB_PASSWORD_ENVS": "AWS_SECRET_ACCESS_KEY"}
    for verb in (("devices", "check", "board"), ("devices", "trust", "board")):
        line = _refused(_hub(project, home, *verb, **allowed), "devices.board.ssh.known_hosts")
        assert str((repo / "ssh" / "known_hosts").resolve()) in line, line
        assert "EDGEHUB_KNOWN_HOSTS" in line, line
    assert (host.connections, host.passwords) == (0, [])
    assert (repo / "ssh" / "known_hosts").read_text() == host.known_hosts_line()

    # a link outside the project to the repository's file is the repository's file
    link = tmp_path / "elsewhere" / "known_hosts"
    link.parent.mkdir()
    link.symlink_to(repo / "ssh" / "known_hosts")
    _project(project, host, "AWS_SECRET_ACCESS_KEY", str(link))
    _refused(_hub(project, home, "devices", "check", "board", **allowed), "known_hosts")
    assert (host.connections, host.passwords) == (0, [])


def test_what_the_user_allowed_reaches_the_device(host: _Host, tmp_path: Path) -> None:
    repo = tmp_path / "clone"
    _git_repo(repo)
    (repo / "known_hosts").write_text(host.known_hosts_line())
    project = _project(repo, host, "AWS_SECRET_ACCESS_KEY", "known_hosts")
    home = tmp_path / "home"
    (home / ".config" / "edgehub").mkdir(parents=True)
    (home / ".config" / "edgehub" / "trust.toml").write_text(
        f'password_envs = ["AWS_SECRET_ACCESS_KEY"]\nknown_hosts = ["{repo / "known_hosts"}"]\n'
    )
    done = _hub(project, home, "devices", "check", "board")
    assert done.returncode != 0 and "authentication" in done.stdout + done.stderr, done
    assert host.connections >= 1 and host.passwords[-1] == SECRET

    # the same allowed through the environment (a CI job's own settings)
    (home / ".config" / "edgehub" / "trust.toml").unlink()
    seen = len(host.passwords)
    _hub(
        project, home, "devices", "check", "board",
        EDGEHUB_PASSWORD_ENVS="OTHER, AWS_SECRET_ACCESS_KEY",
        EDGEHUB_KNOWN_HOSTS=str(repo / "known_hosts"),
    )  # fmt: skip
    assert host.passwords[seen:] == [SECRET]


def test_edgehub_password_variables_and_files_outside_the_project_need_no_allowing(
    host: _Host, tmp_path: Path
) -> None:
    outside = tmp_path / "lab" / "known_hosts"  # the user's own file, beside the project
    outside.parent.mkdir()
    outside.write_text(host.known_hosts_line())
    project = _project(tmp_path / "proj", host, "EDGEHUB_SSH_PASSWORD_BOARD", str(outside))
    home = tmp_path / "home"
    home.mkdir()
    done = _hub(project, home, "devices", "check", "board", EDGEHUB_SSH_PASSWORD_BOARD="pw-1")
    assert "authentication" in done.stdout + done.stderr, done
    assert host.passwords == ["pw-1"]

    # not a git work tree: hub.toml's folder is the project, so ../lab is outside it too
    _project(tmp_path / "proj", host, "EDGEHUB_SSH_PASSWORD_BOARD", "../lab/known_hosts")
    _hub(project, home, "devices", "check", "board", EDGEHUB_SSH_PASSWORD_BOARD="pw-2")
    assert host.passwords == ["pw-1", "pw-2"]


def test_a_malformed_trust_file_is_named_in_one_line(host: _Host, tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", host, "AWS_SECRET_ACCESS_KEY", "known_hosts")
    home = tmp_path / "home"
    (home / ".config" / "edgehub").mkdir(parents=True)
    trust = home / ".config" / "edgehub" / "trust.toml"
    trust.write_text('password_envs = "AWS_SECRET_ACCESS_KEY"\n')
    line = _refused(_hub(project, home, "devices", "check", "board"), str(trust))
    assert "password_envs must be an array of strings" in line
    trust.write_text('password_env = ["AWS_SECRET_ACCESS_KEY"]\n')
    assert "unknown key 'password_env'" in _refused(
        _hub(project, home, "devices", "check", "board"), str(trust)
    )
    assert host.connections == 0


@pytest.mark.ssh
def test_an_allowed_variable_and_project_file_log_in_to_the_device(
    device: SSHDevice, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy(device.known_hosts, project / "known_hosts")
    (project / "hub.toml").write_text(
        '[project]\nname = "allowed"\n\n[devices.board]\nprovider = "ssh"\n'
        '[devices.board.agent]\npython = "/opt/device/bin/python3"\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nport = {device.port}\n'
        f'user = "{device.username}"\nkey = "{device.private_key}"\n'
        'known_hosts = "known_hosts"\npassword_env = "AWS_SECRET_ACCESS_KEY"\n'
    )
    home = tmp_path / "home"
    home.mkdir()
    _refused(_hub(project, home, "devices", "check", "board"), "devices.board.ssh.password_env")
    allowed = {
        "EDGEHUB_PASSWORD_ENVS": "AWS_SECRET_ACCESS_KEY",
        "EDGEHUB_KNOWN_HOSTS": str(project / "known_hosts"),
    }
    done = _hub(project, home, "devices", "check", "board", **allowed)
    assert done.returncode == 0, done.stderr
    assert "Linux" in done.stdout, done.stdout
