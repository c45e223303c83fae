"""Building a runtime's image from its Dockerfile and locked wheels, with progress lines, and
refusing in one line an image whose base must come from a registry we cannot reach."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from edgehub.errors import ImageNotBuiltError
from edgehub.fsutil import sha256_file
from edgehub.images.catalog import (
    EXTERNAL_BASE_MARKER,
    _spec,
    default_base,
    image_tag,
    runtime_dir,
)
from edgehub.images.status import docker_client, image_attrs
from edgehub.images.wheels import (
    Progress,
    _download,
    _find_cached,
    _stage_wheels,
    read_lock,
    wheel_cache_dir,
)

if TYPE_CHECKING:
    from edgehub.runners.docker.client import DockerClient


def build_image(
    runtime: str,
    *,
    base: str | None = None,
    wheel_cache: Path | None = None,
    progress: Progress | None = None,
    offline: bool = False,
) -> str:
    """Build ``runtime``'s image from its Dockerfile and locked wheels; returns its tag.

    Wheels missing from the cache are downloaded with the host's pip (its configured index)
    unless ``offline``; a cache that already holds every locked wheel is used as it is.
    """
    say: Progress = progress or (lambda _line: None)
    directory = runtime_dir(runtime)
    spec = _spec(runtime)
    tag = image_tag(runtime)
    entries = read_lock(directory / "requirements.lock")
    cache = wheel_cache if wheel_cache is not None else wheel_cache_dir()

    found, missing = _find_cached(entries, cache)
    failure = "offline build requested" if offline else ""
    if missing and not offline:
        failure = _download(missing, spec, cache, say)
        found, missing = _find_cached(entries, cache)
    if missing:
        names = ", ".join(entry.pin for entry in missing)
        why = f" ({failure})" if failure else ""
        raise ImageNotBuiltError(
            f"cannot build {tag}: wheels missing from {cache}{why}: {names}; run the build where "
            "pip can reach its index, or copy those wheels into that directory"
        )
    say(f"all {len(entries)} locked wheels verified in {cache}")

    client = docker_client(timeout=3600)
    try:
        _require_external_base(client, directory, base or default_base(runtime), tag)
        with tempfile.TemporaryDirectory(prefix="edgehub-build-") as context:
            root = Path(context)
            shutil.copy2(directory / "Dockerfile", root / "Dockerfile")
            shutil.copy2(directory / "requirements.lock", root / "requirements.lock")
            _stage_wheels(found.values(), root / "wheels")
            _run_build(client, root, tag, runtime, base or default_base(runtime), base, say)
    finally:
        client.close()
    return tag


def _require_external_base(
    client: DockerClient, directory: Path, base: str | None, tag: str
) -> None:
    """Refuse, in one line, to build an image whose base must come from a registry we cannot
    reach, unless that base is already present in the daemon."""
    marker = directory / EXTERNAL_BASE_MARKER
    if not marker.is_file() or (base and image_attrs(base, client=client) is not None):
        return
    lines = [line.strip() for line in marker.read_text(encoding="utf-8").splitlines()]
    why = next((line for line in lines if line and not line.startswith("#")), "")
    raise ImageNotBuiltError(f"cannot build {tag}: base image {base} is not present locally; {why}")


def _run_build(
    client: DockerClient,
    context: Path,
    tag: str,
    runtime: str,
    effective_base: str | None,
    base: str | None,
    say: Progress,
) -> None:
    from edgehub.runners.docker.client import DockerAPIError

    labels = {
        "org.edgehub.runtime": runtime,
        "org.edgehub.lock-sha256": sha256_file(context / "requirements.lock"),
    }
    if effective_base:
        labels["org.edgehub.base"] = effective_base
    say(f"building {tag} from {effective_base or 'the Dockerfile default base'}")
    error = ""
    last_output = ""
    try:
        buildargs = {"BASE_IMAGE": base} if base else None
        for chunk in client.build(context, tag, buildargs=buildargs, labels=labels):
            if "error" in chunk:
                error = " ".join(str(chunk["error"]).split())
                continue
            text = str(chunk.get("stream") or chunk.get("status") or "")
            for line in text.splitlines():
                line = line.rstrip()
                if line:
                    last_output = line
                    say(line)
    except DockerAPIError as failure:
        error = failure.explanation
    if not error and image_attrs(tag, client=client) is None:
        error = "the daemon reported no error but the image does not exist"
    if error:
        hint = ""
        if effective_base and image_attrs(effective_base, client=client) is None:
            hint = (
                f"; base image {effective_base} is not present locally: make one with "
                "scripts/make-base-image.sh and pass --base edgehub-base:bookworm"
            )
        elif last_output and last_output not in error:
            hint = f" (last output: {last_output})"
        raise ImageNotBuiltError(f"building {tag} failed: {error}{hint}")
    say(f"built {tag}")
