"""Path aliases of the public API, and where edgehub keeps its caches."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

__all__ = ["LocalPath", "RemotePath", "cache_dir", "is_remote"]

LocalPath = Path
RemotePath = PurePosixPath


def is_remote(path: object) -> bool:
    """A path is remote when it is a `PurePosixPath` but not a concrete local `Path`."""
    return isinstance(path, PurePosixPath) and not isinstance(path, Path)


def cache_dir() -> Path:
    """edgehub's cache folder: ``$EDGEHUB_CACHE_DIR``, by default ``~/.cache/edgehub``."""
    root = os.environ.get("EDGEHUB_CACHE_DIR")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "edgehub"
