"""What the Docker daemon knows of each runtime's image: built or not, id, digest, size.
Asked through `~edgehub.runners.docker.connect` (the daemon of ``DOCKER_HOST``, local or not)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edgehub.errors import ImageNotBuiltError
from edgehub.images.catalog import available_runtimes, image_tag

if TYPE_CHECKING:
    from edgehub.runners.docker.client import DockerClient


@dataclass(frozen=True)
class ImageStatus:
    """Whether a runtime's image is built, and what Docker knows about it."""

    runtime: str
    tag: str
    built: bool
    image_id: str | None = None
    digest: str | None = None
    size_bytes: int | None = None
    created: str | None = None


def docker_client(timeout: int = 120) -> DockerClient:
    """A client of the configured daemon; `DockerUnavailableError` if there is none."""
    from edgehub.runners.docker.client import connect

    return connect(timeout)


def image_attrs(name: str, *, client: DockerClient | None = None) -> dict[str, Any] | None:
    """What the daemon knows of image ``name`` (``docker image inspect``), or None without it."""
    from edgehub.runners.docker.client import DockerNotFound

    own = client is None
    client = docker_client() if client is None else client
    try:
        return client.inspect_image(name)
    except DockerNotFound:
        return None
    finally:
        if own:
            client.close()


def image_status(runtime: str, *, client: DockerClient | None = None) -> ImageStatus:
    """Whether ``runtime``'s current tag exists in the daemon, with its id, digest and size."""
    tag = image_tag(runtime)
    attrs = image_attrs(tag, client=client)
    if attrs is None:
        return ImageStatus(runtime=runtime, tag=tag, built=False)
    repo_digests = attrs.get("RepoDigests") or []
    return ImageStatus(
        runtime=runtime,
        tag=tag,
        built=True,
        image_id=str(attrs["Id"]),
        digest=str(repo_digests[0]) if repo_digests else str(attrs["Id"]),
        size_bytes=int(attrs.get("Size") or 0),
        created=str(attrs.get("Created") or "") or None,
    )


def list_images() -> list[ImageStatus]:
    """The status of every runtime whose image directory exists."""
    client = docker_client()
    try:
        return [image_status(runtime, client=client) for runtime in available_runtimes()]
    finally:
        client.close()


def require_image(runtime: str) -> ImageStatus:
    """The status of ``runtime``'s image; `ImageNotBuiltError` if it has not been built."""
    status = image_status(runtime)
    if not status.built:
        raise ImageNotBuiltError(
            f"image {status.tag!r} is not built; run: hub images build {runtime}"
        )
    return status
