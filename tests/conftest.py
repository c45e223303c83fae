"""Shared fixtures: an isolated store and working directory for every test, the Docker daemon,
the ONNX Runtime image and the SSH test device."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test runs in its own directory with its own `.hub` store and cache dirs, and its
    own device leases (so that test runs of other checkouts on this host do not wait for it)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("EDGEHUB_STORE", raising=False)
    monkeypatch.setenv("EDGEHUB_LEASE_DIR", str(tmp_path / "leases"))
    yield work


_NO_DAEMON: list[str] = []  # why no daemon answered (the first answer of the session)


def _docker_client():  # type: ignore[no-untyped-def]
    """A connected Docker client, or None when no daemon answers (`DockerUnavailableError`:
    the tests that need one skip, saying why). Anything else raised is an error in our client
    code and propagates: the tests fail rather than skip as if there were no Docker."""
    from edgehub.errors import DockerUnavailableError
    from edgehub.runners.docker.sdk import docker_client

    try:
        return docker_client(timeout=10)
    except DockerUnavailableError as missing:
        _NO_DAEMON[:] = _NO_DAEMON or [str(missing)]
        return None


@pytest.fixture(scope="module")
def device() -> Iterator[Any]:
    """The SSH test device (``tests/ssh_device``: sshd in a container playing an edge board),
    one per test module; its tests skip, naming what is missing (Docker, the device image's
    wheels), where it cannot start."""
    import sys
    from contextlib import ExitStack

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ssh_device.device import DeviceUnavailable, ssh_device

    with ExitStack() as stack:
        try:
            found = stack.enter_context(ssh_device())
        except DeviceUnavailable as missing:
            pytest.skip(f"SSH test device unavailable: {missing}")
        yield found


@pytest.fixture(scope="session")
def docker_daemon():  # type: ignore[no-untyped-def]
    """A reachable Docker daemon, or a skip that names what is missing."""
    client = _docker_client()
    if client is None:
        pytest.skip(
            f"needs a running Docker daemon ({_NO_DAEMON[0]}; start one: bash "
            "scripts/ci-docker.sh start)"
        )
    return client


@pytest.fixture(scope="session")
def ort_image(docker_daemon) -> str:  # type: ignore[no-untyped-def]
    """The pinned ONNX Runtime image, built from the base image if it is not built yet."""
    import os

    from edgehub import images

    status = images.image_status("onnxruntime")
    if not status.built:
        base = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
        if images.image_attrs(base) is None:
            pytest.skip(f"needs the base image {base} (make it: bash scripts/make-base-image.sh)")
        images.build_image("onnxruntime", base=base)
    return images.image_tag("onnxruntime")


_BEFORE: set[str] = set()


def _managed(client):  # type: ignore[no-untyped-def]
    from docker.errors import NotFound

    for _ in range(5):
        try:
            return client.containers.list(all=True, filters={"label": "org.edgehub.managed=1"})
        except NotFound:  # one went away between the listing and its inspection (other tests)
            continue
    return []


_CLIENT_ERRORS: list[str] = []


def _session_client():  # type: ignore[no-untyped-def]
    """`_docker_client` for the session hooks: an error of our client is kept, to fail the run
    at its end (a hook that raises would hide the tests' own outcome)."""
    try:
        return _docker_client()
    except Exception as error:
        _CLIENT_ERRORS.append(f"{type(error).__name__}: {error}")
        return None


def pytest_sessionstart(session: pytest.Session) -> None:
    # A suite started in the background of a non-interactive shell (`bash .ci/run &`) inherits
    # SIGINT ignored, and so would every `hub` a test starts (Python keeps an ignored SIGINT):
    # the tests that press Ctrl-C would then test the launcher, not edgehub. A handler set here
    # is reset to the default in the children (exec), as a terminal would start them.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    client = _session_client()
    if client is not None:
        _BEFORE.update(c.id for c in _managed(client))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a test (or a `hub` process it started) left a container behind, or if
    our Docker client failed; say so when the check could not run for want of a daemon."""
    client = _session_client()
    if _CLIENT_ERRORS:
        session.exitstatus = 1
        print(f"\nERROR: the Docker client failed: {_CLIENT_ERRORS[0]}")
    if client is None:
        if _NO_DAEMON and not _CLIENT_ERRORS:
            print(f"\nleft-over container check skipped: no Docker daemon ({_NO_DAEMON[0]})")
        return
    from edgehub.runners.docker import OWNER_PID, OWNER_STARTED, owner_alive

    def leaked(container) -> bool:  # type: ignore[no-untyped-def]
        labels = container.labels
        if container.id in _BEFORE or labels.get("org.edgehub.warm") == "1":
            return False
        pid = int(labels.get(OWNER_PID, "0") or 0)
        return pid == os.getpid() or not owner_alive(pid, labels.get(OWNER_STARTED))

    from docker.errors import NotFound

    left = []
    for container in (c for c in _managed(client) if leaked(c)):
        try:
            container.remove(force=True)
        except NotFound:  # it was on its way out (removed meanwhile): not left behind
            continue
        left.append(container.name)
    if left:
        session.exitstatus = 1
        print(f"\nERROR: tests left containers behind: {', '.join(left)}")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """``tmpfs(size)`` mounts a real tmpfs of ``size`` (``"48m"``) so that a disk really fills
    up, and returns its mount point; unmounted after the test. Skips without root or mount."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("needs root and mount(8) to mount a small tmpfs")
        point = tmp_path / f"tmpfs-{len(mounted)}"
        point.mkdir()
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if made.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
        mounted.append(point)
        return point

    try:
        yield mount
    finally:
        for point in reversed(mounted):
            subprocess.run(["umount", "--lazy", str(point)], check=False)


@pytest.fixture
def small_disk(tmpfs: Callable[[str], Path]) -> Path:
    """A real 100 MB tmpfs (needs root to mount)."""
    return tmpfs("100m")
