"""Tar archives for moving files: `pack`, and `safe_extract`, which cannot write outside its target
and stays within `~edgehub.limits.FetchLimits`.

`safe_extract` reads the whole member list first and checks every member against the target as
it would be after the members before it were written (and the links already on disk there):
each path is resolved through the symlinks met on the way, so chains such as ``a/l -> ..``
then ``a/l/m -> ..`` are caught. Absolute names, ``..``, links (symbolic or hard) that resolve
outside the target, devices and FIFOs are refused, and when any member is refused nothing at
all is written. The same checks run whether or not this Python's tarfile has the ``data``
extraction filter (3.10.12+, 3.11.4+); where it has it, the filter runs as a second guard.

What a device sends is bounded: the member list (count, path depth, the size of each file and
of all of them, the bytes of headers) is checked before anything is written, no header may
ask for more than a MiB, and files are written with holes where their data is zeros
(`SparseWriter`), so a device's sparse or zero-filled file costs no disk blocks here. An
archive arriving in chunks is spooled to disk the same way (``spool.py``), never held in memory.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from edgehub.errors import DeviceOutputError, UnsafeArchiveError
from edgehub.limits import FetchLimits, human_size
from edgehub.runners.tar_members import BoundedReads, MemberRules, list_members

# A shell line that sets $S to --sparse where the device's tar makes sparse archives (GNU tar:
# holes are not sent); other tars send zeros, which `SparseWriter` turns back into holes.
SPARSE_FLAG = "S=; tar --sparse --version >/dev/null 2>&1 && S=--sparse; "

__all__ = ["SparseWriter", "human_size", "pack", "safe_extract"]

_HAS_DATA_FILTER = hasattr(tarfile, "data_filter")
_MAX_LINK_HOPS = 40  # as the kernel's ELOOP limit
_CHUNK = 1 << 20  # file data is copied in chunks of this size
_MAX_HEADER_BYTES = 32 << 20  # all headers of one archive (names, pax records, sparse maps)
_HOLE_BLOCK = 64 << 10
_ZEROS = bytes(_HOLE_BLOCK)


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
        if not parts:
            return  # "." itself: the target (`list_members` refused anything else unnamed)
        parent = self.resolve(parts[:-1])
        is_link = member.issym() or member.islnk()
        # a file is also refused where it would be written through a symlink
        if parent is None or (not is_link and self.resolve([*parent, parts[-1]]) is None):
            raise UnsafeArchiveError(f"refusing archive entry {name!r}: its path leaves the target")
        if is_link:
            base = parent if member.issym() else []  # hard links name a path from the root
            link = member.linkname
            if link.startswith("/") or self.resolve([*base, *link.split("/")]) is None:
                raise UnsafeArchiveError(
                    f"refusing archive link {name!r} -> {link!r}: it leaves the target"
                )
        self.links["/".join([*parent, parts[-1]])] = member.linkname if member.issym() else None


class SparseWriter:
    """Writes a stream to a new file, seeking over blocks of zeros instead of writing them, so
    they become holes; `finish` sets the file's length (a trailing hole included)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.size = 0

    def write(self, data: bytes) -> int:
        length = len(data)
        position = 0
        while position < length:
            end = min(length, position + _HOLE_BLOCK - self.size % _HOLE_BLOCK)
            piece = data[position:end]
            if piece == _ZEROS or piece.count(0) == len(piece):
                self._handle.seek(len(piece), os.SEEK_CUR)
            else:
                self._handle.write(piece)
            self.size += len(piece)
            position = end
        return length

    def finish(self) -> None:
        self._handle.truncate(self.size)
        self._handle.flush()


def _rules(limits: FetchLimits) -> MemberRules:
    """Archives from a device: links allowed (checked against the tree by `_Tree`)."""
    return MemberRules(
        limits,
        refuse=lambda why: UnsafeArchiveError(f"refusing archive entry: {why}"),
        over=lambda why: DeviceOutputError(f"refusing the archive from the device: {why}"),
    )


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    """Write one checked member under ``target``; regular files keep their holes."""
    if _HAS_DATA_FILTER:
        tarfile.data_filter(member, str(target))  # the second guard: raises, or passes
    parts = [part for part in PurePosixPath(member.name).parts if part != "."]
    if not parts:
        return
    path = target.joinpath(*parts)
    mode = member.mode & 0o755
    if member.isdir():
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(mode | 0o700)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()  # what is there (not a directory) gives way to the member
    if member.issym():
        os.symlink(member.linkname, path)
    elif member.islnk():
        source = target.joinpath(*[p for p in member.linkname.split("/") if p not in ("", ".")])
        if not stat.S_ISREG(os.lstat(source).st_mode):
            raise UnsafeArchiveError(f"refusing hard link {member.name!r}: not to a file")
        os.link(source, path, follow_symlinks=False)
    else:
        data = tar.extractfile(member)
        assert data is not None, "a regular member has data"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with data, os.fdopen(os.open(path, flags, 0o600), "wb") as handle:
            writer = SparseWriter(handle)
            while chunk := data.read(_CHUNK):
                writer.write(chunk)
            writer.finish()
        if writer.size != member.size:
            raise UnsafeArchiveError(f"cannot extract archive: {member.name!r} is truncated")
        path.chmod((mode if mode & 0o100 else mode & ~0o111) | 0o600)
        os.utime(path, (member.mtime, member.mtime))


def safe_extract(
    data: bytes | io.IOBase | BinaryIO, target: Path, limits: FetchLimits | None = None
) -> list[str]:
    """Extract a tar archive (bytes or a seekable file) into ``target``; returns member names.

    Raises `UnsafeArchiveError` if any member is unsafe, `DeviceOutputError` if the archive
    breaks ``limits`` (by default `FetchLimits.from_env`), in both cases having written nothing.
    """
    rules = _rules(limits or FetchLimits.from_env())
    fileobj = io.BytesIO(data) if isinstance(data, bytes) else data
    guarded = BoundedReads(fileobj, rules.over, _MAX_HEADER_BYTES)  # type: ignore[arg-type]
    try:
        target.mkdir(parents=True, exist_ok=True)  # a refused archive leaves it empty
        with tarfile.open(fileobj=guarded, mode="r:") as tar:  # type: ignore[call-overload]
            members = list_members(tar, rules)
            tree = _Tree(target)
            for member in members:
                tree.check(member)
            guarded.listing = False
            for member in members:
                _write(tar, member, target)
    except tarfile.TarError as error:  # a damaged archive, or the data filter's own refusal
        raise UnsafeArchiveError(f"cannot extract archive: {error}") from error
    except OSError as error:
        raise UnsafeArchiveError(
            f"cannot extract archive into {target}: {error.strerror or error}"
        ) from error
    return [member.name for member in members]
