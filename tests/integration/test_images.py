"""Naming and building the pinned images: tags, the wheel cache, offline builds, status.

The ONNX Runtime image is built once per session FROM the local base image
(``EDGEHUB_BASE_IMAGE``, default ``edgehub-base:bookworm``, made by scripts/make-base-image.sh)
with the persistent wheel cache, and reused by every test that needs it. Tests that need no
daemon (tags, the lock, a missing cache) run everywhere.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgehub import images
from edgehub.errors import DockerUnavailableError, ImageNotBuiltError, UsageError
from edgehub.runners.docker import DockerCommandRunner

REPO_IMAGES = Path(__file__).resolve().parents[2] / "images"


@pytest.fixture
def temp_images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of images/onnxruntime in a temp images dir, made current with EDGEHUB_IMAGES_DIR."""
    root = tmp_path / "images"
    shutil.copytree(REPO_IMAGES / "onnxruntime", root / "onnxruntime")
    monkeypatch.setenv("EDGEHUB_IMAGES_DIR", str(root))
    return root


@pytest.fixture
def unreachable_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the host's pip fail fast: no config files, no find-links, a dead index."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "3")
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    from edgehub.runners.docker.sdk import docker_client

    try:
        found = docker_client()
    except DockerUnavailableError:
        pytest.skip("needs a running Docker daemon")
    yield found
    found.close()


@pytest.fixture(scope="session")
def base_image(client: Any) -> str:
    import docker.errors

    base = os.environ.get("EDGEHUB_BASE_IMAGE", "edgehub-base:bookworm")
    try:
        client.api.inspect_image(base)
    except docker.errors.ImageNotFound:
        pytest.skip(f"needs the base image {base}; make it with scripts/make-base-image.sh")
    return base


@pytest.fixture(scope="session")
def ort_build(base_image: str) -> tuple[str, list[str], float]:
    """Build (or refresh from the layer cache) the ONNX Runtime image once: tag, log, seconds."""
    lines: list[str] = []
    started = time.monotonic()
    tag = images.build_image("onnxruntime", base=base_image, progress=lines.append)
    return tag, lines, time.monotonic() - started


# -- no daemon needed ----------------------------------------------------------------------


def test_repo_images_are_found() -> None:
    assert (images.images_dir() / "onnxruntime" / "Dockerfile").is_file()
    assert "onnxruntime" in images.available_runtimes()
    assert set(images.RUNTIMES) >= {"onnxruntime", "tflite", "tensorrt"}


def test_lock_pins_every_wheel_with_a_hash() -> None:
    entries = images.read_lock(REPO_IMAGES / "onnxruntime" / "requirements.lock")
    pins = {entry.name: entry.version for entry in entries}
    assert pins["onnxruntime"] == "1.31.1"
    assert pins["onnx"] == "1.22.0"
    assert pins["numpy"].startswith("2.")
    assert {"protobuf", "ml-dtypes", "flatbuffers", "packaging", "typing-extensions"} <= set(pins)
    assert "psutil" not in pins
    assert all(len(h) == 64 for entry in entries for h in entry.hashes)


def test_tag_follows_the_dockerfile_and_lock(temp_images: Path) -> None:
    tag = images.image_tag("onnxruntime")
    repository, _, digest = tag.partition(":")
    assert repository == "edgehub-onnxruntime"
    assert len(digest) == 12 and int(digest, 16) >= 0
    assert images.image_tag("onnxruntime") == tag
    lock = temp_images / "onnxruntime" / "requirements.lock"
    lock.write_text(lock.read_text().replace("numpy==2.4.6", "numpy==2.4.5"))
    assert images.image_tag("onnxruntime") != tag
    lock.write_text(lock.read_text().replace("numpy==2.4.5", "numpy==2.4.6"))
    assert images.image_tag("onnxruntime") == tag
    dockerfile = temp_images / "onnxruntime" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "\n# changed\n")
    assert images.image_tag("onnxruntime") != tag


def test_available_runtimes_follow_the_directories(temp_images: Path) -> None:
    assert images.available_runtimes() == ["onnxruntime"]
    with pytest.raises(UsageError, match="tflite"):
        images.image_tag("tflite")
    with pytest.raises(UsageError, match="unknown runtime 'caffe'"):
        images.image_tag("caffe")


def test_offline_build_with_an_empty_cache_names_the_missing_wheels(tmp_path: Path) -> None:
    with pytest.raises(ImageNotBuiltError) as raised:
        images.build_image("onnxruntime", wheel_cache=tmp_path / "empty", offline=True)
    message = str(raised.value)
    assert "onnxruntime==1.31.1" in message and "onnx==1.22.0" in message
    assert "offline" in message and "\n" not in message


def test_failing_download_with_an_incomplete_cache_names_the_missing_wheels(
    tmp_path: Path, unreachable_index: None
) -> None:
    started = time.monotonic()
    with pytest.raises(ImageNotBuiltError, match=r"numpy==2\.4\.6") as raised:
        images.build_image("onnxruntime", wheel_cache=tmp_path / "cache")
    assert "protobuf==" in str(raised.value)
    assert time.monotonic() - started < 60
    assert not list((tmp_path / "cache").glob("*.whl"))


def test_docker_client_explains_an_unreachable_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(DockerUnavailableError) as raised:
        images.docker_client()
    message = str(raised.value)
    assert "unix:///nonexistent/docker.sock" in message
    assert "dockerd" in message and "\n" not in message


# -- with a daemon ---------------------------------------------------------------------------


@pytest.mark.docker
def test_build_onnxruntime_image(ort_build: tuple[str, list[str], float]) -> None:
    tag, lines, _ = ort_build
    assert tag == images.image_tag("onnxruntime")
    assert any(f"built {tag}" in line for line in lines)
    cache = images.wheel_cache_dir()
    entries = images.read_lock(REPO_IMAGES / "onnxruntime" / "requirements.lock")
    assert len(list(cache.glob("*.whl"))) >= len(entries)


@pytest.mark.docker
def test_the_image_runs_the_toolchain_offline(
    client: Any, ort_build: tuple[str, list[str], float]
) -> None:
    tag, _, _ = ort_build
    check = (
        "import onnxruntime, onnx, numpy, pathlib;"
        "print(onnxruntime.__version__, onnx.__version__, numpy.__version__);"
        "data = pathlib.Path(onnx.__file__).parent / 'backend/test/data/node';"
        "print(sum(1 for _ in data.glob('*/model.onnx')))"
    )
    with DockerCommandRunner(tag) as runner:
        versions, node_tests = runner.run(["python", "-c", check]).stdout.split("\n")[:2]
        assert versions == "1.31.1 1.22.0 2.4.6"
        assert int(node_tests) > 1000
        assert runner.run(["id", "-un"]).stdout.strip() == "edgehub"
        assert runner.run(["sh", "-c", "touch /work/x && echo ok"]).stdout == "ok\n"
        assert runner.container_id is not None
        started_from = client.api.inspect_container(runner.container_id)["Image"]
        assert runner.image_digest == runner.image_id == started_from


@pytest.mark.docker
def test_image_status_of_the_built_image(ort_build: tuple[str, list[str], float]) -> None:
    tag, _, _ = ort_build
    status = images.require_image("onnxruntime")
    assert status.built and status.tag == tag
    assert status.image_id and status.image_id.startswith("sha256:")
    assert status.digest == status.image_id  # built locally: no repo digest
    assert status.size_bytes and status.size_bytes > 100_000_000
    assert status.created
    listed = {entry.runtime: entry for entry in images.list_images()}
    assert listed["onnxruntime"] == status


@pytest.mark.docker
def test_offline_rebuild_from_the_filled_cache(
    ort_build: tuple[str, list[str], float], base_image: str
) -> None:
    tag, _, _ = ort_build
    lines: list[str] = []
    rebuilt = images.build_image(
        "onnxruntime", base=base_image, offline=True, progress=lines.append
    )
    assert rebuilt == tag
    assert not any("downloading" in line for line in lines)


@pytest.mark.docker
def test_failing_download_with_a_full_cache_still_builds(
    ort_build: tuple[str, list[str], float],
    base_image: str,
    tmp_path: Path,
    unreachable_index: None,
) -> None:
    tag, _, _ = ort_build
    cache = tmp_path / "cache"
    shutil.copytree(images.wheel_cache_dir(), cache, ignore=shutil.ignore_patterns(".download-*"))
    (cache / "stray-0.1-py3-none-any.whl").write_bytes(b"not in the lock")
    assert images.build_image("onnxruntime", base=base_image, wheel_cache=cache) == tag


@pytest.mark.docker
def test_a_corrupt_cached_wheel_is_not_used(
    ort_build: tuple[str, list[str], float], tmp_path: Path, unreachable_index: None
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(images.wheel_cache_dir(), cache, ignore=shutil.ignore_patterns(".download-*"))
    packaging = next(cache.glob("packaging-26.3-*.whl"))
    packaging.write_bytes(packaging.read_bytes()[:-10])
    with pytest.raises(ImageNotBuiltError, match=r"packaging==26\.3"):
        images.build_image("onnxruntime", wheel_cache=cache, offline=True)


@pytest.mark.docker
def test_unbuilt_image_status_and_require_image(client: Any, temp_images: Path) -> None:
    lock = temp_images / "onnxruntime" / "requirements.lock"
    lock.write_text(lock.read_text() + "\n# a change nobody built\n")
    status = images.image_status("onnxruntime")
    assert not status.built and status.image_id is None
    with pytest.raises(ImageNotBuiltError) as raised:
        images.require_image("onnxruntime")
    assert str(raised.value) == (
        f"image {status.tag!r} is not built; run: hub images build onnxruntime"
    )


@pytest.mark.docker
def test_a_failing_build_reports_its_error(
    ort_build: tuple[str, list[str], float], base_image: str, temp_images: Path
) -> None:
    dockerfile = temp_images / "onnxruntime" / "Dockerfile"
    dockerfile.write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo about to fail && false\n")
    with pytest.raises(ImageNotBuiltError) as raised:
        images.build_image("onnxruntime", base=base_image, offline=True)
    message = str(raised.value)
    assert message.startswith(f"building {images.image_tag('onnxruntime')} failed:")
    assert "non-zero code" in message and "\n" not in message
