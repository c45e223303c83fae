"""Building and listing the pinned toolchain images, with one progress line per step.

The tools' own output (pip downloads, ``docker build``) goes to a log file, not the screen;
when a build fails, the error names that file and `BuildFailed.log_tail` holds its last lines.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from edgehub.errors import ImageNotBuiltError, UsageError

if TYPE_CHECKING:
    from edgehub.images import ImageStatus
    from edgehub.ops.project import Project


StepProgress = Callable[[str, str, int, int], None]  # runtime, label, step, steps
_STEP = re.compile(r"^Step (\d+)/(\d+)\s*:\s*(.*)")


class BuildFailed(ImageNotBuiltError):
    """An image build failed; ``log_path`` holds the tools' output, ``log_tail`` its end."""

    def __init__(self, message: str, log_path: Path, log_tail: list[str]) -> None:
        super().__init__(message)
        self.log_path = log_path
        self.log_tail = log_tail


@dataclass(frozen=True)
class BuiltImage:
    runtime: str
    tag: str
    seconds: float
    log_path: Path


def _tail(path: Path, lines: int = 25) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def build_images(
    project: Project,
    runtimes: list[str],
    *,
    base: str | None = None,
    offline: bool = False,
    progress: StepProgress | None = None,
) -> list[BuiltImage]:
    """Build ``runtimes`` one after another (default: every runtime whose image builds from
    our own base; one from a registry we cannot reach, such as NVIDIA's, only when named).

    ``base`` (else hub.toml's ``[images] base``) replaces the Debian base; an image with an
    external base takes only an explicit ``base``."""
    from edgehub import images

    buildable = images.available_runtimes()
    chosen = runtimes or [r for r in buildable if not images.needs_external_base(r)]
    unknown = [r for r in chosen if r not in buildable]
    if unknown:
        raise UsageError(f"no image for {', '.join(unknown)}; buildable: {', '.join(buildable)}")
    built = []
    for runtime in chosen:
        external = images.needs_external_base(runtime)
        own_base = base if external else base or project.config.images.base
        built.append(_build_one(runtime, own_base, offline, progress))
    return built


def _build_one(
    runtime: str, base: str | None, offline: bool, progress: StepProgress | None
) -> BuiltImage:
    from edgehub import images
    from edgehub.paths import cache_subdir

    log_path = cache_subdir("logs") / f"build-{runtime}.log"
    started = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:

        def line(text: str) -> None:
            log.write(text.rstrip() + "\n")
            if progress is None:
                return
            if match := _STEP.match(text):
                progress(runtime, match[3][:60], int(match[1]), int(match[2]))
            elif text.startswith(("downloading", "all ", "building ", "built ")):
                progress(runtime, text[:60], 0, 0)

        try:
            tag = images.build_image(runtime, base=base, progress=line, offline=offline)
        except ImageNotBuiltError as error:
            log.write(f"error: {error}\n")
            log.flush()
            raise BuildFailed(
                f"{error} (full log: {log_path})", log_path, _tail(log_path)
            ) from None
    return BuiltImage(runtime, tag, time.monotonic() - started, log_path)


def list_images() -> list[ImageStatus]:
    from edgehub import images

    return images.list_images()
