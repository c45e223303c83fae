"""What the Docker daemon knows of each runtime's image: built or not, id, digest, size.
``docker`` is imported inside `docker_client` only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgehub.errors import ImageNotBuiltError
from edgehub.images.catalog import available_runtimes, image_tag


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


def docker_client(timeout: int = 120) -> Any:
    """A connected ``docker.DockerClient``; `DockerUnavailableError` if there is no daemon."""
    from edgehub.runners.docker.sdk import docker_client as connected

    return connected(timeout)


def _inspect(client: Any, name: str) -> dict[str, Any] | None:
    import docker.errors

    try:
        attrs: dict[str, Any] = client.api.inspect_image(name)
    except docker.errors.ImageNotFound:
        return None
    return attrs


def image_status(runtime: str, *, client: Any | None = None) -> ImageStatus:
    """Whether ``runtime``'s current tag exists in the daemon, with its id, digest and size."""
    tag = image_tag(runtime)
    own = client is None
    client = docker_client() if client is None else client
    try:
        attrs = _inspect(client, tag)
    finally:
        if own:
            client.close()
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
