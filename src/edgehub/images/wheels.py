"""The locked wheels of an image: reading ``requirements.lock``, the persistent host-side cache
(downloaded with the host's pip, verified against the lock's sha256), staging into a build
context. The build itself never talks to a Python package index."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from edgehub.errors import UsageError
from edgehub.fsutil import link_or_copy, sha256_file
from edgehub.images.catalog import ImageSpec

Progress = Callable[[str], None]


@dataclass(frozen=True)
class LockEntry:
    """One pinned wheel of a requirements.lock: ``name==version`` and its accepted hashes."""

    name: str
    version: str
    hashes: frozenset[str]

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"


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
    """``wheels`` in the cache folder (`edgehub.paths.cache_subdir`), made private."""
    from edgehub.paths import cache_subdir

    return cache_subdir("wheels")


def _find_cached(
    entries: Iterable[LockEntry], cache: Path
) -> tuple[dict[str, Path], list[LockEntry]]:
    """Split the entries into those with a verified wheel in ``cache`` and those without."""
    found: dict[str, Path] = {}
    missing: list[LockEntry] = []
    wheels = sorted(cache.glob("*.whl")) if cache.is_dir() else []
    for entry in entries:
        prefix = f"{re.sub(r'[-_.]+', '_', entry.name).lower()}-{entry.version}-"
        for wheel in wheels:
            if wheel.name.lower().startswith(prefix) and sha256_file(wheel) in entry.hashes:
                found[entry.pin] = wheel
                break
        else:
            missing.append(entry)
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
        link_or_copy(str(wheel), str(destination / wheel.name))
