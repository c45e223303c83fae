"""Tar streams for moving directories, extracted without path traversal."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path, PurePosixPath

from edgehub.errors import UnsafeArchiveError

__all__ = ["pack", "safe_extract"]


def pack(source: Path, arcname: str | None = None) -> bytes:
    """A tar archive (uncompressed) of a file or directory, rooted at ``arcname``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(source), arcname=arcname if arcname is not None else source.name)
    return buffer.getvalue()


def _check_member(member: tarfile.TarInfo, target: Path) -> None:
    name = member.name
    parts = PurePosixPath(name).parts
    if name.startswith("/") or os.path.isabs(name) or ".." in parts:
        raise UnsafeArchiveError(
            f"refusing archive entry {name!r}: absolute paths and '..' are not allowed"
        )
    if member.issym() or member.islnk():
        link = PurePosixPath(member.linkname)
        if member.linkname.startswith("/") or (
            ".." in link.parts and not _inside(target, target / PurePosixPath(name).parent / link)
        ):
            raise UnsafeArchiveError(
                f"refusing archive link {name!r} -> {member.linkname!r}: it leaves the target"
            )
    if member.isdev():
        raise UnsafeArchiveError(f"refusing device file {name!r} in archive")


def _inside(root: Path, candidate: Path) -> bool:
    root_real = os.path.realpath(root)
    cand_real = os.path.realpath(candidate)
    return cand_real == root_real or cand_real.startswith(root_real + os.sep)


def safe_extract(data: bytes | io.IOBase, target: Path) -> list[str]:
    """Extract a tar archive into ``target``; refuse absolute paths, ``..`` and escaping links.

    Returns the member names. Nothing is written if any member is unsafe.
    """
    target.mkdir(parents=True, exist_ok=True)
    fileobj = io.BytesIO(data) if isinstance(data, bytes) else data
    with tarfile.open(fileobj=fileobj, mode="r:*") as tar:
        members = tar.getmembers()
        for member in members:
            _check_member(member, target)
        for member in members:
            if not _inside(target, target / member.name):
                raise UnsafeArchiveError(f"refusing archive entry {member.name!r}: leaves target")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(str(target), members=members, filter="data")
        else:  # pragma: no cover - Python < 3.10.12
            tar.extractall(str(target), members=members)
    return [m.name for m in members]
