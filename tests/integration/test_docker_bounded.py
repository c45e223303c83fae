"""What a container sends back is bounded too (real Docker daemon, the local base image): a
1 GiB sparse file comes back sparse through an exec of tar and through the archive API (an
image without tar, where the daemon sends 1 GiB of zeros), and a folder over a limit is
refused with nothing written."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgehub.errors import DeviceOutputError, DockerUnavailableError
from edgehub.runners.docker import DockerCommandRunner

pytestmark = pytest.mark.docker

MiB = 1 << 20
GiB = 1 << 30
BASE = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
NO_TAR = f"""\
FROM {BASE}
RUN useradd --uid 1000 --user-group --create-home edgehub \\
    && mkdir -p /work && chown edgehub:edgehub /work && rm -f /usr/bin/tar /bin/tar
WORKDIR /work
USER edgehub
"""


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from edgehub.runners.docker.sdk import docker_client

    try:
        found = docker_client()
    except DockerUnavailableError:
        pytest.skip("needs a running Docker daemon")
    try:
        found.api.inspect_image(BASE)
    except Exception:
        pytest.skip(f"needs the base image {BASE}; make it with scripts/make-base-image.sh")
    yield found
    found.close()


def _no_tar_image(client: Any) -> str:
    tag = f"edgehub-test-bounded-notar:{hashlib.sha256(NO_TAR.encode()).hexdigest()[:12]}"
    if not client.api.images(name=tag):
        with tempfile.TemporaryDirectory() as context:
            Path(context, "Dockerfile").write_text(NO_TAR)
            chunks = client.api.build(path=context, tag=tag, decode=True, rm=True)
            errors = [chunk["error"] for chunk in chunks if "error" in chunk]
        assert not errors, errors
    return tag


@pytest.mark.parametrize("tar", ["exec of tar", "archive API"])
def test_a_sparse_file_comes_back_sparse(client: Any, tmp_path: Path, tar: str) -> None:
    image = BASE if tar == "exec of tar" else _no_tar_image(client)
    with DockerCommandRunner(image) as runner:
        runner.run(["sh", "-c", "mkdir -p /work/o && truncate -s 1G /work/o/big.bin"], hide=True)
        runner.get("/work/o", tmp_path / "back")
    big = tmp_path / "back" / "big.bin"
    assert big.stat().st_size == GiB
    assert big.stat().st_blocks * 512 < 4 * MiB


def test_a_folder_over_a_limit_is_refused(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGEHUB_FETCH_MAX_MEMBER_BYTES", "1M")
    with DockerCommandRunner(BASE) as runner:
        runner.run(["sh", "-c", "mkdir -p /work/o && head -c 2000000 /dev/urandom > /work/o/f"])
        with pytest.raises(DeviceOutputError, match="EDGEHUB_FETCH_MAX_MEMBER_BYTES"):
            runner.get("/work/o", tmp_path / "back")
    assert not (tmp_path / "back").exists()
