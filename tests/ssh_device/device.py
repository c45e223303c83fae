"""A real SSH "edge device" in a container, for integration tests and benchmarks.

    with ssh_device() as device:           # builds the image if needed, starts a container
        runner = SSHCommandRunner(device.config())

The container publishes sshd on a random loopback port only, accepts a key pair made for this
session, and its host keys are read out of the container (the "out of band" check) into a
known_hosts file of its own. `DeviceUnavailable` means the real thing is missing (no Docker
daemon, no base image and no way to make one): callers skip on it. Anything else is a failure.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgehub.runners.ssh import SSHConfig

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_BASE_IMAGE = "edgehub-base:bookworm"
IMAGE_REPOSITORY = "edgehub-ssh-device"
USERNAME = "edge"
LABEL = "edgehub.test=ssh-device"
BUILD_FILES = ("Dockerfile", "sshd_config", "entrypoint.sh", "trtexec-standin.py", "wheels.txt")
OWNER_LABEL = "edgehub.test.owner"  # "<hostname>:<pid>" of the process that started it

__all__ = ["DeviceUnavailable", "SSHDevice", "ensure_image", "ssh_device"]


class DeviceUnavailable(RuntimeError):
    """Docker or the base image is missing; the message names what (use it as a skip reason)."""


@dataclass(frozen=True)
class SSHDevice:
    """A running device container and everything needed to reach it."""

    container: str
    host: str
    port: int
    username: str
    private_key: Path
    public_key: str
    known_hosts: Path
    host_keys: tuple[str, ...]  # "keytype base64" as the container has them

    @property
    def known_hosts_name(self) -> str:
        return f"[{self.host}]:{self.port}"

    def config(self, **overrides: Any) -> SSHConfig:
        """An `SSHConfig` for this device (key auth, its own known_hosts); override any field."""
        values: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "username": self.username,
            "private_key_path": self.private_key,
            "known_hosts": self.known_hosts,
            "connect_timeout": 10.0,
        }
        values.update(overrides)
        return SSHConfig(**values)

    def exec(
        self, *argv: str, user: str = USERNAME, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run argv in the container with `docker exec` (not over SSH), for checks and setup."""
        return _docker(
            "exec",
            *(["-i"] if stdin is not None else []),
            "-u",
            user,
            self.container,
            *argv,
            check=check,
            stdin=stdin,
        )

    def processes_left(self, pattern: str, within: float = 30.0) -> str:
        """The device user's processes matching ``pattern`` (``pgrep -af``), waiting up to
        ``within`` seconds for them to end (generous: a busy machine ends them late; the wait
        stops as soon as none is left); empty when none is left."""
        deadline = time.monotonic() + within
        while True:
            found = self.exec("pgrep", "-u", USERNAME, "-af", pattern, check=False).stdout.strip()
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.2)

    def logs(self) -> str:
        """sshd's log so far (it logs to stderr in the foreground)."""
        done = _docker("logs", self.container, check=True)
        return done.stdout + done.stderr

    def fingerprints(self) -> dict[str, str]:
        """Host key type -> OpenSSH ``SHA256:...`` fingerprint."""
        return {
            kind: fingerprint_of(blob) for kind, blob in (k.split()[:2] for k in self.host_keys)
        }


def fingerprint_of(blob_b64: str) -> str:
    digest = hashlib.sha256(base64.b64decode(blob_b64)).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def make_key_pair(directory: Path, name: str = "id_ed25519") -> tuple[Path, str]:
    """A fresh unencrypted ed25519 key pair in OpenSSH format: (private key path, public line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    path = directory / name
    path.write_bytes(private)
    path.chmod(0o600)
    line = public.decode("ascii") + " edgehub-test"
    (directory / f"{name}.pub").write_text(line + "\n")
    return path, line


def _docker(
    *args: str, check: bool = True, stdin: str | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["docker", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-5:]
        raise RuntimeError(f"docker {args[0]} failed ({done.returncode}): " + " | ".join(tail))
    return done


def _check_docker() -> None:
    if shutil.which("docker") is None:
        raise DeviceUnavailable("no docker CLI on PATH: the SSH test device runs in Docker")
    if _docker("info", check=False, timeout=60).returncode != 0:
        raise DeviceUnavailable("no Docker daemon reachable: the SSH test device runs in Docker")


def _image_id(name: str) -> str | None:
    done = _docker("image", "inspect", "-f", "{{.Id}}", name, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _ensure_base(base_image: str) -> str:
    image_id = _image_id(base_image)
    if image_id is not None:
        return image_id
    script = REPO / "scripts" / "make-base-image.sh"
    if not script.is_file():
        raise DeviceUnavailable(f"base image {base_image} is missing and {script} does not exist")
    done = subprocess.run(
        ["bash", str(script), base_image], capture_output=True, text=True, check=False
    )
    image_id = _image_id(base_image)
    if done.returncode != 0 or image_id is None:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise DeviceUnavailable(
            f"base image {base_image} is missing and scripts/make-base-image.sh could not make "
            f"it: {tail[0]}"
        )
    return image_id


def ensure_image(base_image: str | None = None) -> str:
    """Build the device image unless an identical one exists; returns its tag.

    The tag is derived from the build files and the base image id, so edits rebuild it.
    """
    _check_docker()
    base = base_image or os.environ.get("EDGEHUB_BASE_IMAGE") or DEFAULT_BASE_IMAGE
    digest = hashlib.sha256(_ensure_base(base).encode())
    for name in BUILD_FILES:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    tag = f"{IMAGE_REPOSITORY}:{digest.hexdigest()[:12]}"
    if _image_id(tag) is None:
        with tempfile.TemporaryDirectory(prefix="edgehub-ssh-device-build-") as context:
            for name in BUILD_FILES:
                shutil.copy2(HERE / name, Path(context) / name)
            _stage_wheels(Path(context) / "wheels")
            _docker("build", "-q", "--build-arg", f"BASE_IMAGE={base}", "-t", tag, context)
    return tag


def _wheel_list() -> dict[str, str]:
    """wheels.txt: wheel file name -> sha256."""
    lines = (HERE / "wheels.txt").read_text().splitlines()
    return dict(line.split()[:2] for line in lines if line.strip() and not line.startswith("#"))


def _stage_wheels(destination: Path) -> None:
    """Copy the listed wheels from edgehub's wheel cache (downloading missing ones with the
    host's pip first) into ``destination``, each checked against its sha256. LiteRT's wheel
    carries only the manylinux_2_27 tag, which pip does not infer from manylinux_2_28 when
    platforms are given: both are named."""
    from edgehub.images import wheel_cache_dir

    cache = wheel_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    wanted = _wheel_list()
    missing = [name for name in wanted if not (cache / name).is_file()]
    if missing:
        specs = ["==".join(name.split("-")[:2]) for name in missing]
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
             "--platform", "manylinux_2_27_x86_64", "--platform", "any",
             "--disable-pip-version-check", "-d", str(cache), *specs],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise DeviceUnavailable(
                f"cannot download the test device's wheels ({', '.join(specs)}): "
                + (done.stderr.strip().splitlines() or ["pip failed"])[-1]
            )
    destination.mkdir()
    for name, sha in wanted.items():
        data = (cache / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != sha:
            raise RuntimeError(f"wheel {name} in {cache} does not match wheels.txt's sha256")
        (destination / name).write_bytes(data)


def _wait_for_sshd(host: str, port: int, container: str, timeout: float = 30.0) -> None:
    """Until sshd itself answers with its banner (docker's proxy accepts connections earlier)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=2) as sock:
                if sock.recv(64).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    logs = _docker("logs", container, check=False)
    raise RuntimeError(f"sshd in {container} did not answer on {host}:{port}: {logs.stderr[-500:]}")


def _published_port(container: str) -> tuple[str, int]:
    lines = _docker("port", container, "22/tcp").stdout.split()
    host, _, port = lines[0].rpartition(":")
    return host, int(port)


def write_known_hosts(path: Path, name: str, host_keys: Sequence[str]) -> Path:
    path.write_text("".join(f"{name} {key}\n" for key in host_keys))
    return path


def _remove_orphans() -> None:
    """Remove device containers left by test processes of this host that no longer exist."""
    listed = _docker(
        "ps", "-a", "--filter", f"label={LABEL}",
        "--format", f'{{{{.ID}}}} {{{{.Label "{OWNER_LABEL}"}}}}',
        check=False,
    )  # fmt: skip
    for line in listed.stdout.splitlines():
        container, _, owner = line.partition(" ")
        host, _, pid = owner.rpartition(":")
        if host != socket.gethostname() or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            _docker("rm", "-f", container, check=False)
        except PermissionError:
            continue


@contextmanager
def ssh_device(*, base_image: str | None = None) -> Iterator[SSHDevice]:
    """Start a fresh device container; it and its key material are removed on exit."""
    image = ensure_image(base_image)
    _remove_orphans()
    workdir = Path(tempfile.mkdtemp(prefix="edgehub-ssh-device-"))
    container = ""
    try:
        private_key, public_line = make_key_pair(workdir)
        name = f"edgehub-ssh-device-{secrets.token_hex(4)}"
        container = _docker(
            "run",
            "-d",
            "--rm",
            "--name",
            name,
            "--label",
            LABEL,
            "--label",
            f"{OWNER_LABEL}={socket.gethostname()}:{os.getpid()}",
            "-e",
            f"AUTHORIZED_KEY={public_line}",
            "-p",
            "127.0.0.1::22",
            image,
        ).stdout.strip()
        host, port = _published_port(container)
        _wait_for_sshd(host, port, container)
        pubs = _docker("exec", container, "sh", "-c", "cat /etc/ssh/ssh_host_*_key.pub").stdout
        host_keys = tuple(" ".join(line.split()[:2]) for line in pubs.splitlines() if line.strip())
        known_hosts = write_known_hosts(workdir / "known_hosts", f"[{host}]:{port}", host_keys)
        yield SSHDevice(
            container=container,
            host=host,
            port=port,
            username=USERNAME,
            private_key=private_key,
            public_key=public_line,
            known_hosts=known_hosts,
            host_keys=host_keys,
        )
    finally:
        if container:
            _docker("rm", "-f", container, check=False)
        shutil.rmtree(workdir, ignore_errors=True)
