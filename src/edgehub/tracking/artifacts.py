"""Content-addressed artifact files: ``<root>/<sha256>/<file name>``.

The file keeps its own name inside a directory named by its hash, so a model that refers to
side files (ONNX external data) still finds them. Directories hash over their sorted contents.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from edgehub.fsutil import link_or_copy

__all__ = ["ArtifactStore", "hash_path"]

_CHUNK = 1 << 20


def _hash_file(path: Path, digest: hashlib._Hash) -> None:
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)


def hash_path(path: Path) -> str:
    """sha256 of a file, or of a directory's relative names and file contents, in order."""
    digest = hashlib.sha256()
    if path.is_dir():
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(child.relative_to(path).as_posix().encode() + b"\0")
            _hash_file(child, digest)
            digest.update(b"\0")
    else:
        _hash_file(path, digest)
    return digest.hexdigest()


def path_size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


class ArtifactStore:
    """Stores each distinct file or directory once; returns its stored path."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def add(self, source: Path, file_name: str | None = None) -> tuple[Path, str, int]:
        """Store ``source`` (hard link when possible); returns (stored path, sha256, size)."""
        source = Path(source)
        if not source.exists():
            raise FileNotFoundError(f"cannot log artifact {source}: no such file or directory")
        sha = hash_path(source)
        name = file_name or source.name
        final = self.root / sha / name
        if final.exists():
            return final, sha, path_size(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=self.root))
        try:
            staged = staging / name
            if source.is_dir():
                shutil.copytree(source, staged, copy_function=link_or_copy)
            else:
                link_or_copy(str(source), str(staged))
            try:
                os.replace(staged, final)
            except OSError:
                if not final.exists():  # lost a race with nobody: a real error
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return final, sha, path_size(final)
