"""The contract of `DockerClient`, held by both implementations against the real daemon: the
light client (``docker/lite.py``) and the docker SDK's (``docker/sdk.py``) answer every call
alike, errors included. The docker SDK's own ``docker.DockerClient`` is the witness."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgehub.runners.docker.client import DockerAPIError, DockerClient, DockerNotFound, ExecSpec
from edgehub.runners.docker.container import ContainerSettings
from edgehub.runners.docker.exec import exec_quiet, exit_code
from edgehub.runners.docker.frames import frames

pytestmark = pytest.mark.docker

BASE = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
LABEL = "org.edgehub.test-contract"


@pytest.fixture(scope="module")
def base(docker_daemon: Any) -> str:
    from edgehub.images import image_attrs

    if image_attrs(BASE) is None:
        pytest.skip(f"needs the base image {BASE}; make it with scripts/make-base-image.sh")
    return BASE


@pytest.fixture(params=["lite", "sdk"])
def client(request: pytest.FixtureRequest, base: str) -> Iterator[DockerClient]:
    from edgehub.runners.docker.lite import LiteClient, local_socket
    from edgehub.runners.docker.sdk import SDKClient

    if request.param == "lite":
        path = local_socket()
        if path is None:
            pytest.skip("the light client needs the daemon on a local unix socket")
        made: DockerClient = LiteClient(path)
    else:
        made = SDKClient()
    yield made
    made.close()


@pytest.fixture
def container(client: DockerClient, base: str) -> Iterator[str]:
    tag = uuid.uuid4().hex[:8]
    settings = ContainerSettings(base, labels={LABEL: tag})
    config = settings.config(["sleep", "infinity"], {}, {})
    container_id = client.create_container(config, f"edgehub-contract-{tag}")
    try:
        client.start_container(container_id)
        yield container_id
    finally:
        with contextlib.suppress(DockerNotFound):  # the test may have removed it
            client.remove_container(container_id)


def test_ping_and_images(client: DockerClient, base: str) -> None:
    assert client.ping() is True
    assert client.inspect_image(base)["Id"].startswith("sha256:")
    with pytest.raises(DockerNotFound) as missing:
        client.inspect_image("edgehub-no-such-image:0")
    assert missing.value.status == 404 and "edgehub-no-such-image" in str(missing.value)


def test_containers_are_created_listed_inspected_and_removed(
    client: DockerClient, container: str, docker_daemon: Any
) -> None:
    info = client.inspect_container(container)
    assert info["State"]["Running"] and info["HostConfig"]["ReadonlyRootfs"]
    tag = info["Config"]["Labels"][LABEL]
    listed = client.containers([f"{LABEL}={tag}"])
    assert [c["Id"] for c in listed] == [container]
    assert client.containers([f"{LABEL}=none-{tag}"]) == []
    assert docker_daemon.containers.get(container).status == "running"
    client.remove_container(container)
    with pytest.raises(DockerNotFound):
        client.inspect_container(container)
    with pytest.raises(DockerNotFound):
        client.remove_container(container)
    with pytest.raises(DockerAPIError) as conflict:
        client.create_container({"Image": "edgehub-no-such-image:0"}, "edgehub-contract-x")
    assert conflict.value.status == 404


def test_exec_streams_stdout_stderr_stdin_and_exit_code(
    client: DockerClient, container: str
) -> None:
    script = 'cat; echo "err:$X" >&2; exit 3'
    spec = ExecSpec(["sh", "-c", script], stdin=True, environment=["X=1"], workdir="/tmp")
    exec_id = client.exec_create(container, spec)
    sock = client.exec_start(exec_id)
    sock.sendall(b"in\n")
    sock.close_write()
    got: dict[int, bytes] = {1: b"", 2: b""}
    for kind, payload in frames(sock):
        got[kind] += payload
    sock.close()
    assert got == {1: b"in\n", 2: b"err:1\n"}
    assert exit_code(client, exec_id) == 3
    assert exec_quiet(client, container, ["pwd"])[1] == "/work\n"
    with pytest.raises(DockerNotFound):
        client.exec_inspect("0" * 64)


def _job(client: DockerClient, base: str, command: list[str]) -> str:
    """A created (not started) container running ``command``, with a stdin to attach."""
    tag = uuid.uuid4().hex[:8]
    config = ContainerSettings(base, labels={LABEL: tag}).config(command, {}, {})
    config.update(OpenStdin=True, StdinOnce=True, AttachStdin=True)
    return client.create_container(config, f"edgehub-contract-job-{tag}")


def test_a_container_is_attached_before_it_starts_fed_and_waited_for(
    client: DockerClient, base: str
) -> None:
    job = _job(client, base, ["sh", "-c", 'cat; echo "err" >&2; exit 7'])
    try:
        sock = client.attach_container(job)
        client.start_container(job)
        sock.sendall(b"in\n")
        sock.close_write()  # the container's stdin ends (StdinOnce)
        got: dict[int, bytes] = {1: b"", 2: b""}
        for kind, payload in frames(sock):
            got[kind] += payload
        sock.close()
        assert got == {1: b"in\n", 2: b"err\n"}  # nothing missed: attached before the start
        assert client.wait_container(job) == 7
        assert client.wait_container(job) == 7  # a stopped container answers at once
    finally:
        client.remove_container(job)
    with pytest.raises(DockerNotFound):
        client.wait_container(job)


def test_a_killed_container_ends_its_stream_with_status_137(
    client: DockerClient, base: str
) -> None:
    job = _job(client, base, ["sh", "-c", "echo up; sleep 60"])
    try:
        sock = client.attach_container(job)
        client.start_container(job)
        sock.close_write()
        stream = frames(sock)
        assert next(stream) == (1, b"up\n")
        client.kill_container(job)
        assert list(stream) == []  # the stream ends with the container
        sock.close()
        assert client.wait_container(job) == 137
        with pytest.raises(DockerAPIError) as stopped:
            client.kill_container(job)  # not running any more
        assert stopped.value.status == 409
    finally:
        client.remove_container(job)


def test_archives_go_in_and_out(client: DockerClient, container: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = os.urandom(70_000)
        entry = tarfile.TarInfo("blob.bin")
        entry.size = len(data)
        tar.addfile(entry, io.BytesIO(data))
    client.put_archive(container, "/work", buffer.getvalue())  # the rootfs is read-only
    chunks, stat = client.get_archive(container, "/work/blob.bin")
    back = b"".join(chunks)
    assert stat["name"] == "blob.bin" and stat["size"] == len(data)
    with tarfile.open(fileobj=io.BytesIO(back)) as tar:
        member = tar.extractfile("blob.bin")
        assert member is not None and member.read() == data
    with pytest.raises(DockerNotFound):
        client.put_archive(container, "/work/no/such/dir", buffer.getvalue())
    with pytest.raises(DockerNotFound):
        client.get_archive(container, "/no/such/file")


def test_builds_stream_messages_and_errors(
    client: DockerClient, base: str, tmp_path: Path, docker_daemon: Any
) -> None:
    tag = f"edgehub-test-contract:{uuid.uuid4().hex[:8]}"
    (tmp_path / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM $BASE_IMAGE\nCOPY hi.txt /hi\n")
    (tmp_path / "hi.txt").write_text("hi")
    try:
        messages = list(
            client.build(tmp_path, tag, buildargs={"BASE_IMAGE": base}, labels={LABEL: "b"})
        )
        assert not [m for m in messages if "error" in m], messages
        assert any("stream" in m for m in messages)
        labels = client.inspect_image(tag)["Config"]["Labels"]
        assert labels[LABEL] == "b"
    finally:
        docker_daemon.images.remove(tag, force=True)
    (tmp_path / "Dockerfile").write_text(f"FROM {base}\nCOPY missing.txt /x\n")
    failed = list(client.build(tmp_path, tag))
    assert any("missing.txt" in str(m.get("error", "")) for m in failed), failed
