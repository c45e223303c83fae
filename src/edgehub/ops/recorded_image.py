"""The image a recorded run ran on, and whether it is still on this host (for `hub runs rerun`).

A run in a local container recorded its image's tag, digest and runtime. `recorded_image` says
which image a rerun uses: the tag where it still names the recorded digest, else the digest
itself where Docker still holds it; an image that is gone is refused in one line
(`ImageNotBuiltError`, exit 3) naming the recorded image and today's. ``choice="current"`` runs
on today's image instead, and says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edgehub.errors import ImageNotBuiltError, UsageError

if TYPE_CHECKING:
    from edgehub.tracking.records import RunRecord


IMAGE_CHOICES = ("recorded", "current")


def recorded_image(original: RunRecord, choice: str) -> tuple[dict[str, str], str]:
    """The image override for a rerun of ``original`` (runtime -> tag or digest; empty for
    today's image or a run without one) and where it runs, in words."""
    env = original.environment
    tag, digest, runtime = env.get("image"), env.get("image_digest"), env.get("runtime")
    if not tag or not runtime:
        return {}, "on the device's own toolchain (the run used no image)"
    recorded = f"{tag} ({short_digest(digest)})"
    if choice == "current":
        return {}, f"on today's image (asked with --image current); the original ran on {recorded}"
    from edgehub import images

    client = images.docker_client()
    try:
        tagged = images.image_attrs(tag, client=client)
        if tagged is not None and (digest is None or names_digest(tagged, digest)):
            return {runtime: tag}, f"on the recorded image {recorded}"
        by_digest = images.image_attrs(digest, client=client) if digest else None
        if by_digest is not None and digest is not None:
            where = f"on the recorded image {short_digest(digest)} (no longer {tag})"
            return {runtime: digest}, where
        today = _today(client, runtime)
    finally:
        client.close()
    now = "it is not on this host"
    if tagged is not None:
        now = f"the tag now names {short_digest(str(tagged['Id']))}"
    raise ImageNotBuiltError(
        f"run {original.run_id[:8]} ran on image {recorded}; {now}{today}: rebuild it (hub "
        f"images build {runtime}, where this checkout's Dockerfile and lock still make {tag}) "
        "or rerun on today's image with --image current"
    )


def names_digest(attrs: dict[str, Any], digest: str) -> bool:
    """Whether Docker's ``attrs`` of an image are those of ``digest`` (its id or a repo digest)."""
    return digest == attrs.get("Id") or digest in (attrs.get("RepoDigests") or [])


def short_digest(digest: str | None) -> str:
    """``sha256:`` and 12 hex digits, for a message."""
    if not digest:
        return "no digest recorded"
    head, _, tail = digest.rpartition(":")
    return f"{head}:{tail[:12]}" if head else digest[:12]


def _today(client: Any, runtime: str) -> str:
    from edgehub import images

    try:
        status = images.image_status(runtime, client=client)
    except UsageError:
        return ""
    if not status.built:
        return f" (today's image {status.tag} is not built either)"
    return f" (today's image is {status.tag}, {short_digest(status.image_id)})"
