"""A remote Docker host for tests and benchmarks: the SSH test device with this machine's
Docker socket inside it, so ``DOCKER_HOST=ssh://edge@127.0.0.1:PORT`` reaches the same daemon
through sshd and ``docker system dial-stdio``.

    with docker_over_ssh(home) as host:     # home: a fresh HOME with .ssh/{id,known_hosts}
        env = {"HOME": str(home), "DOCKER_HOST": host.url}

The device image is reused (no new image): the host's ``docker`` CLI is copied in at start
and ``edge`` joins a group of the socket's gid inside the container only. The socket is root
on this machine, so the container listens on loopback only and is removed on exit.
`DeviceUnavailable` names the missing real thing (callers skip on it).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ssh_device.device import (
    LABEL,
    OWNER_LABEL,
    USERNAME,
    DeviceUnavailable,
    _docker,
    _published_port,
    _wait_for_sshd,
    ensure_image,
    make_key_pair,
)

__all__ = ["DockerHost", "docker_over_ssh", "local_docker_socket"]


@dataclass(frozen=True)
class DockerHost:
    """A running SSH server in front of this machine's daemon."""

    container: str
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"ssh://{USERNAME}@{self.host}:{self.port}"

    def logins(self) -> int:
        """SSH logins accepted so far (sshd logs each one)."""
        done = _docker("logs", self.container, check=True)
        return (done.stdout + done.stderr).count("Accepted publickey for")


def local_docker_socket() -> Path:
    """This machine's daemon socket; `DeviceUnavailable` where it is not a unix socket."""
    host = os.environ.get("DOCKER_HOST", "")
    if host and not host.startswith("unix://"):
        raise DeviceUnavailable(f"DOCKER_HOST={host} is not a local unix socket to pass through")
    path = Path(host[len("unix://") :] if host else "/var/run/docker.sock")
    if not path.is_socket():
        raise DeviceUnavailable(f"no Docker socket at {path}")
    return path


@contextmanager
def docker_over_ssh(home: Path) -> Iterator[DockerHost]:
    """Start the server; ``home`` gets ``.ssh`` with the client key and the server's host keys
    (so the SDK's paramiko client, which reads ``~/.ssh``, verifies the host)."""
    image = ensure_image()
    sock = local_docker_socket()
    cli = shutil.which("docker")
    if cli is None:
        raise DeviceUnavailable("no docker CLI on PATH to copy into the SSH server")
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(parents=True, mode=0o700, exist_ok=True)
    _, public_line = make_key_pair(ssh_dir)
    container = ""
    try:
        container = _docker(
            "run", "-d", "--rm", "--name", f"edgehub-docker-host-{secrets.token_hex(4)}",
            "--label", LABEL, "--label", f"{OWNER_LABEL}={socket.gethostname()}:{os.getpid()}",
            "-e", f"AUTHORIZED_KEY={public_line}", "-v", f"{sock}:/var/run/docker.sock",
            "-p", "127.0.0.1::22", image,
        ).stdout.strip()  # fmt: skip
        _docker("cp", str(Path(cli).resolve()), f"{container}:/usr/local/bin/docker")
        gid = sock.stat().st_gid
        join = (
            f"getent group {gid} >/dev/null || groupadd -g {gid} dockerhost; "
            f"usermod -aG $(getent group {gid} | cut -d: -f1) {USERNAME}"
        )
        _docker("exec", container, "sh", "-c", join)
        probe = _docker("exec", "-u", USERNAME, container, "docker", "version", check=False)
        if probe.returncode != 0:
            raise DeviceUnavailable(
                "the host's docker CLI does not run in the SSH test device: "
                + (probe.stderr.strip().splitlines() or ["no output"])[-1]
            )
        host, port = _published_port(container)
        _wait_for_sshd(host, port, container)
        keys = _docker("exec", container, "sh", "-c", "cat /etc/ssh/ssh_host_*_key.pub").stdout
        (ssh_dir / "known_hosts").write_text(
            "".join(
                f"[{host}]:{port} {' '.join(line.split()[:2])}\n"
                for line in keys.splitlines()
                if line.strip()
            )
        )
        yield DockerHost(container, host, port)
    finally:
        if container:
            _docker("rm", "-f", container, check=False)
