"""Tar archives for moving files: `pack`, and `safe_extract`, which cannot write outside its target.

`safe_extract` reads the whole member list first and checks every member against the target as
it would be after the members before it were written (and the links already on disk there):
each path is resolved through the symlinks met on the way, so chains such as ``a/l -> ..``
then ``a/l/m -> ..`` are caught. Absolute names, ``..``, links (symbolic or hard) that resolve
outside the target, devices and FIFOs are refused, and when any member is refused nothing at
all is written. The same checks run whether or not this Python's tarfile has the ``data``
extraction filter (3.10.12+, 3.11.4+); where it has it, the filter runs as a second guard.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path, PurePosixPath

from edgehub.errors import UnsafeArchiveError

__all__ = ["pack", "safe_extract"]

_HAS_DATA_FILTER = hasattr(tarfile, "data_filter")
_MAX_LINK_HOPS = 40  # as the kernel's ELOOP limit


def pack(source: Path, arcname: str | None = None) -> bytes:
    """A tar archive (uncompressed) of a file or directory, rooted at ``arcname``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(source), arcname=arcname if arcname is not None else source.name)
    return buffer.getvalue()


class _Tree:
    """The target as the archive would leave it, so far: which paths are symlinks, and where to."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.links: dict[str, str | None] = {}  # path -> link text (None: not a symlink)

    def _link(self, parts: list[str]) -> str | None:
        key = "/".join(parts)
        if key in self.links:
            return self.links[key]
        on_disk = self.root.joinpath(*parts)
        return os.readlink(on_disk) if on_disk.is_symlink() else None

    def resolve(self, parts: list[str]) -> list[str] | None:
        """``parts`` with every symlink followed, relative to the root; ``None`` if the path
        leaves the root (or loops)."""
        resolved: list[str] = []
        pending = list(parts)
        hops = 0
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not resolved:
                    return None
                resolved.pop()
                continue
            link = self._link([*resolved, part])
            if link is None:
                resolved.append(part)
                continue
            hops += 1
            if hops > _MAX_LINK_HOPS or link.startswith("/"):
                return None
            pending = link.split("/") + pending  # relative to the link's own directory
        return resolved

    def check(self, member: tarfile.TarInfo) -> None:
        """Refuse a member that would write outside the root; else record what it makes."""
        name = member.name
        parts = [part for part in PurePosixPath(name).parts if part != "."]
        if not parts and member.isdir():
            return  # "." itself: the target
        if name.startswith("/") or os.path.isabs(name) or ".." in parts or not parts:
            raise UnsafeArchiveError(
                f"refusing archive entry {name!r}: absolute paths and '..' are not allowed"
            )
        if member.ischr() or member.isblk() or member.isfifo():
            raise UnsafeArchiveError(f"refusing device or FIFO {name!r} in archive")
        if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
            raise UnsafeArchiveError(f"refusing archive entry {name!r} of unsupported type")
        parent = self.resolve(parts[:-1])
        if parent is None:
            raise UnsafeArchiveError(f"refusing archive entry {name!r}: its path leaves the target")
        escape = UnsafeArchiveError(
            f"refusing archive link {name!r} -> {member.linkname!r}: it leaves the target"
        )
        if member.issym() or member.islnk():
            base = parent if member.issym() else []  # hard links name a path from the root
            link = member.linkname
            if link.startswith("/") or self.resolve([*base, *link.split("/")]) is None:
                raise escape
        elif self.resolve([*parent, parts[-1]]) is None:  # a file written through a symlink
            raise UnsafeArchiveError(f"refusing archive entry {name!r}: its path leaves the target")
        self.links["/".join([*parent, parts[-1]])] = member.linkname if member.issym() else None


def safe_extract(data: bytes | io.IOBase, target: Path) -> list[str]:
    """Extract a tar archive (bytes or a seekable file) into ``target``; returns member names.

    Raises `UnsafeArchiveError`, having written nothing, if any member is unsafe.
    """
    fileobj = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        with tarfile.open(fileobj=fileobj, mode="r:*") as tar:
            members = tar.getmembers()
            target.mkdir(parents=True, exist_ok=True)
            tree = _Tree(target)
            for member in members:
                tree.check(member)
            if _HAS_DATA_FILTER:
                tar.extractall(str(target), members=members, filter="data")
            else:
                for member in members:
                    member.mode &= 0o755  # as the data filter: no setuid/setgid, no g/o write
                tar.extractall(str(target), members=members)
    except tarfile.TarError as error:  # a damaged archive, or the data filter's own refusal
        raise UnsafeArchiveError(f"cannot extract archive: {error}") from error
    return [member.name for member in members]
