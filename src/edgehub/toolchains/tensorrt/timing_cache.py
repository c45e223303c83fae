"""TensorRT timing caches kept in the run store at ``<store>/timing_cache/<version>/<target>.cache``
(target ``current``: this host's GPU).

A build learns its image's TensorRT version only from the build itself, so ``images.json``
beside the caches names the version each image digest reported: the next build on that image
sends the cache of its version and target in, and the cache it returns replaces it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from edgehub.fsutil import atomic_write

_DIR = "timing_cache"
_INDEX = "images.json"


def _safe(word: str) -> str:
    """A version or target as one harmless path component."""
    return re.sub(r"[^A-Za-z0-9._,-]", "_", word).strip(".") or "_"


def _index(root: Path) -> dict[str, str]:
    try:
        data = json.loads((root / _DIR / _INDEX).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def _path(root: Path, version: str, target: str) -> Path:
    return root / _DIR / _safe(version) / f"{_safe(target)}.cache"


def stored(root: Path, image_digest: str | None, target: str | None) -> Path | None:
    """The stored cache for the TensorRT version ``image_digest`` reported and ``target``; None
    where the version is not known yet or there is no cache."""
    version = _index(root).get(image_digest or "")
    if version is None:
        return None
    path = _path(root, version, target or "current")
    return path if path.is_file() else None


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, durable=False)


def keep(
    root: Path, image_digest: str | None, version: str, target: str | None, cache: Path
) -> Path:
    """Store ``cache`` (what a build returned) as the cache of (``version``, ``target``) and note
    that ``image_digest`` has that version; the stored path."""
    path = _path(root, version, target or "current")
    _write(path, cache.read_bytes())
    if image_digest:
        index = _index(root)
        if index.get(image_digest) != version:
            index[image_digest] = version
            _write(root / _DIR / _INDEX, json.dumps(index, indent=1, sort_keys=True).encode())
    return path
