"""The runtimes that have an image: where its Dockerfile and lock live, its tag (derived from
those two files, so a changed pin is a new image) and its default base."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from edgehub.errors import UsageError

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


def images_dir() -> Path:
    """The directory holding ``<runtime>/Dockerfile``: env, installed package, or the repo."""
    override = os.environ.get("EDGEHUB_IMAGES_DIR")
    if override:
        return Path(override).expanduser()
    packaged = Path(__file__).resolve().parents[1] / "_images"  # edgehub/_images in a wheel
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


def needs_external_base(runtime: str) -> bool:
    """Whether ``runtime``'s image builds only from a base that must come from a registry we
    cannot reach (its directory holds an ``EXTERNAL_BASE`` marker)."""
    return (runtime_dir(runtime) / EXTERNAL_BASE_MARKER).is_file()
