"""Building and naming the pinned toolchain images.

Each runtime has ``images/<runtime>/Dockerfile`` and ``requirements.lock`` (exact versions, one
sha256 per wheel). Its tag is derived from those two files, so a changed pin is a new image. The
wheels are downloaded on the host into a persistent cache, verified against the lock and copied
into the build context; the build itself never talks to a Python package index, and a filled
cache is enough to build offline.

Importing this module is cheap: ``docker`` is imported inside `docker_client` only.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgehub.errors import ImageNotBuiltError, UsageError

__all__ = [
    "RUNTIMES",
    "ImageSpec",
    "ImageStatus",
    "LockEntry",
    "available_runtimes",
    "build_image",
    "docker_client",
    "image_status",
    "image_tag",
    "images_dir",
    "list_images",
    "needs_external_base",
    "read_lock",
    "require_image",
    "runtime_dir",
    "wheel_cache_dir",
]

Progress = Callable[[str], None]

_MANYLINUX_X86_64 = (
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "any",
)


@dataclass(frozen=True)
class ImageSpec:
    """What is needed to build one runtime's image: where it lives and what its wheels target."""

    runtime: str
    description: str
    python_version: str = "3.11"
    platforms: tuple[str, ...] = _MANYLINUX_X86_64

    @property
    def repository(self) -> str:
        return f"edgehub-{self.runtime}"


RUNTIMES: Mapping[str, ImageSpec] = {
    "onnxruntime": ImageSpec("onnxruntime", "ONNX Runtime (CPU) with onnx and numpy"),
    # TensorFlow and LiteRT wheels carry only the manylinux_2_27 tag, which pip does not
    # infer from manylinux_2_28 when platforms are given explicitly.
    "tflite": ImageSpec(
        "tflite",
        "LiteRT interpreter with the onnx2tf converter",
        platforms=("manylinux_2_27_x86_64", *_MANYLINUX_X86_64),
    ),
    "tensorrt-rtx": ImageSpec("tensorrt-rtx", "TensorRT for RTX engine builder (no GPU needed)"),
    "tensorrt": ImageSpec(
        "tensorrt", "full TensorRT with trtexec (NVIDIA's container; needs a GPU)", "3.10"
    ),
}

# A file in a runtime's image directory whose image starts FROM a base that our machines cannot
# pull (e.g. NVIDIA's registry); its first line says why and what a user with access does.
EXTERNAL_BASE_MARKER = "EXTERNAL_BASE"


@dataclass(frozen=True)
class LockEntry:
    """One pinned wheel of a requirements.lock: ``name==version`` and its accepted hashes."""

    name: str
    version: str
    hashes: frozenset[str]

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"


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


# -- where the images live ------------------------------------------------------------------


def images_dir() -> Path:
    """The directory holding ``<runtime>/Dockerfile``: env, installed package, or the repo."""
    override = os.environ.get("EDGEHUB_IMAGES_DIR")
    if override:
        return Path(override).expanduser()
    packaged = Path(__file__).with_name("_images")
    if packaged.is_dir():
        return packaged
    for parent in Path(__file__).resolve().parents:
        if (parent / "images").is_dir() and (parent / "pyproject.toml").is_file():
            return parent / "images"
    raise UsageError(
        "cannot find edgehub's images/ directory; "
        "set EDGEHUB_IMAGES_DIR to the images/ directory of an edgehub checkout"
    )


def _spec(runtime: str) -> ImageSpec:
    try:
        return RUNTIMES[runtime]
    except KeyError:
        known = ", ".join(RUNTIMES)
        raise UsageError(f"unknown runtime {runtime!r}; known: {known}") from None


def runtime_dir(runtime: str) -> Path:
    """``images/<runtime>``, checked to hold a Dockerfile and a requirements.lock."""
    _spec(runtime)
    directory = images_dir() / runtime
    for name in ("Dockerfile", "requirements.lock"):
        if not (directory / name).is_file():
            available = ", ".join(available_runtimes()) or "none"
            raise UsageError(
                f"no {name} for runtime {runtime!r} in {directory}; images available: {available}"
            )
    return directory


def available_runtimes() -> list[str]:
    """The runtimes of `RUNTIMES` whose image directory exists."""
    try:
        root = images_dir()
    except UsageError:
        return []
    return [name for name in RUNTIMES if (root / name / "Dockerfile").is_file()]


def image_tag(runtime: str) -> str:
    """``edgehub-<runtime>:<12 hex>``, the hex a sha256 over the Dockerfile and the lock bytes."""
    directory = runtime_dir(runtime)
    digest = hashlib.sha256()
    digest.update((directory / "Dockerfile").read_bytes())
    digest.update((directory / "requirements.lock").read_bytes())
    return f"{_spec(runtime).repository}:{digest.hexdigest()[:12]}"


def default_base(runtime: str) -> str | None:
    """The ``BASE_IMAGE`` default written in the runtime's Dockerfile."""
    text = (runtime_dir(runtime) / "Dockerfile").read_text(encoding="utf-8")
    match = re.search(r"^ARG\s+BASE_IMAGE=(\S+)", text, re.MULTILINE)
    return match.group(1) if match else None


# -- the lock and the wheel cache -----------------------------------------------------------


def read_lock(path: Path) -> list[LockEntry]:
    """Parse a hashed requirements file: ``name==version --hash=sha256:...`` per entry."""
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    entries: list[LockEntry] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split() if not raw.lstrip().startswith("#") else []
        if not words:
            continue
        requirement, options = words[0], words[1:]
        name, sep, version = requirement.partition("==")
        hashes = frozenset(
            word.removeprefix("--hash=sha256:") for word in options if word.startswith("--hash=")
        )
        if not sep or not name or not version or not hashes:
            raise UsageError(
                f"{path}: entry {number} ({requirement!r}) must be 'name==version' with "
                "--hash=sha256:...; regenerate the lock as its header describes"
            )
        entries.append(LockEntry(name, version, hashes))
    return entries


def wheel_cache_dir() -> Path:
    """``$EDGEHUB_CACHE_DIR/wheels``, by default ``~/.cache/edgehub/wheels``."""
    root = os.environ.get("EDGEHUB_CACHE_DIR")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "edgehub"
    return base / "wheels"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _find_cached(
    entries: Iterable[LockEntry], cache: Path
) -> tuple[dict[str, Path], list[LockEntry]]:
    """Split the entries into those with a verified wheel in ``cache`` and those without."""
    found: dict[str, Path] = {}
    missing: list[LockEntry] = []
    wheels = sorted(cache.glob("*.whl")) if cache.is_dir() else []
    for entry in entries:
        prefix = f"{_normalize(entry.name)}-{entry.version}-"
        match = next(
            (
                wheel
                for wheel in wheels
                if wheel.name.lower().startswith(prefix) and _sha256(wheel) in entry.hashes
            ),
            None,
        )
        if match is None:
            missing.append(entry)
        else:
            found[entry.pin] = match
    return found, missing


def _download(entries: list[LockEntry], spec: ImageSpec, cache: Path, progress: Progress) -> str:
    """Download the wheels of ``entries`` into ``cache`` with the host's pip; returns its last line.

    Files land in a scratch directory first and move into the cache once pip is done, so an
    interrupted download leaves no partial wheel behind.
    """
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache) as scratch:
        lock = Path(scratch) / "requirements.lock"
        lock.write_text(
            "".join(
                f"{entry.pin}" + "".join(f" --hash=sha256:{h}" for h in sorted(entry.hashes)) + "\n"
                for entry in entries
            ),
            encoding="utf-8",
        )
        target = Path(scratch) / "wheels"
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        argv += ["--require-hashes", "--disable-pip-version-check", "--progress-bar", "off"]
        argv += ["--python-version", spec.python_version]
        for platform in spec.platforms:
            argv += ["--platform", platform]
        argv += ["-r", str(lock), "-d", str(target)]
        progress(f"downloading {len(entries)} wheel(s) into {cache}")
        last = ""
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
            )
        except OSError as error:
            return f"cannot run pip: {error}"
        assert proc.stdout is not None
        with proc:
            for line in proc.stdout:
                line = line.rstrip()
                if line:
                    last = line
                    progress(line)
        for wheel in target.glob("*.whl") if target.is_dir() else []:
            os.replace(wheel, cache / wheel.name)
        return "" if proc.returncode == 0 else last or f"pip exited with code {proc.returncode}"


def _stage_wheels(wheels: Iterable[Path], destination: Path) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        target = destination / wheel.name
        try:
            os.link(wheel, target)
        except OSError:
            shutil.copy2(wheel, target)


# -- Docker ---------------------------------------------------------------------------------


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


def needs_external_base(runtime: str) -> bool:
    """Whether ``runtime``'s image builds only from a base that must come from a registry we
    cannot reach (its directory holds an ``EXTERNAL_BASE`` marker)."""
    return (runtime_dir(runtime) / EXTERNAL_BASE_MARKER).is_file()


def _require_external_base(client: Any, directory: Path, base: str | None, tag: str) -> None:
    """Refuse, in one line, to build an image whose base must come from a registry we cannot
    reach, unless that base is already present in the daemon."""
    marker = directory / EXTERNAL_BASE_MARKER
    if not marker.is_file() or (base and _inspect(client, base) is not None):
        return
    lines = [line.strip() for line in marker.read_text(encoding="utf-8").splitlines()]
    why = next((line for line in lines if line and not line.startswith("#")), "")
    raise ImageNotBuiltError(f"cannot build {tag}: base image {base} is not present locally; {why}")


def _run_build(
    client: Any,
    context: Path,
    tag: str,
    runtime: str,
    effective_base: str | None,
    base: str | None,
    say: Progress,
) -> None:
    import docker.errors

    labels = {
        "org.edgehub.runtime": runtime,
        "org.edgehub.lock-sha256": _sha256(context / "requirements.lock"),
    }
    if effective_base:
        labels["org.edgehub.base"] = effective_base
    say(f"building {tag} from {effective_base or 'the Dockerfile default base'}")
    error = ""
    last_output = ""
    try:
        stream = client.api.build(
            path=str(context),
            tag=tag,
            buildargs={"BASE_IMAGE": base} if base else None,
            decode=True,
            rm=True,
            forcerm=True,
            pull=False,
            labels=labels,
        )
        for chunk in stream:
            if "error" in chunk:
                error = " ".join(str(chunk["error"]).split())
                continue
            text = str(chunk.get("stream") or chunk.get("status") or "")
            for line in text.splitlines():
                line = line.rstrip()
                if line:
                    last_output = line
                    say(line)
    except docker.errors.APIError as failure:
        error = " ".join(str(failure.explanation or failure).split())
    if not error and _inspect(client, tag) is None:
        error = "the daemon reported no error but the image does not exist"
    if error:
        hint = ""
        if effective_base and _inspect(client, effective_base) is None:
            hint = (
                f"; base image {effective_base} is not present locally: make one with "
                "scripts/make-base-image.sh and pass --base edgehub-base:bookworm"
            )
        elif last_output and last_output not in error:
            hint = f" (last output: {last_output})"
        raise ImageNotBuiltError(f"building {tag} failed: {error}{hint}")
    say(f"built {tag}")


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
