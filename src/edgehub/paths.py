"""Path aliases of the public API."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

__all__ = ["LocalPath", "RemotePath", "is_remote"]

LocalPath = Path
RemotePath = PurePosixPath


def is_remote(path: object) -> bool:
    """A path is remote when it is a `PurePosixPath` but not a concrete local `Path`."""
    return isinstance(path, PurePosixPath) and not isinstance(path, Path)
