"""Content-addressed artifact files: ``<root>/<sha256>/<file name>``.

The file keeps its own name inside a directory named by the hash of its bytes, so a model that
refers to side files (ONNX external data) still finds them. Directories hash over their sorted
relative names and contents. The store always holds its own copy (a reflink where the file
system can share blocks copy-on-write, else a copy that keeps a sparse file's holes), never a
hard link to the caller's file: editing the original afterwards cannot change what was stored.
The hash is taken of the copy (of the bytes as they are written, where the copy goes through
this process), so a stored artifact's name is the hash of the bytes it holds.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import time
from pathlib import Path
from typing import BinaryIO, Protocol

from edgehub.errors import UsageError
from edgehub.fsutil import copy_range, sha256_file
from edgehub.tracking.db import translate_storage_errors
from edgehub.tracking.hash_memo import SMALL_BYTES, memo, settled, stamp_key, worth_remembering
from edgehub.tracking.modes import make_private_dir, restrict
from edgehub.tracking.staging import make_staging
from edgehub.user_files import ensure_room, regular_file, tree_size

_CHUNK = 1 << 20
_FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)


class _Digest(Protocol):
    """What hashing needs of a `hashlib` object (whose type has no public name)."""

    def update(self, data: bytes | memoryview, /) -> None: ...


def _hash_handle(handle: BinaryIO, digest: _Digest) -> None:
    while chunk := handle.read(_CHUNK):
        digest.update(chunk)


def hash_path(path: Path) -> str:
    """sha256 of a file, or of a directory's relative names and file contents, in order."""
    if not path.is_dir():
        return sha256_file(path)
    digest = hashlib.sha256()
    for child in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(child.relative_to(path).as_posix().encode() + b"\0")
        with child.open("rb") as handle:
            _hash_handle(handle, digest)
        digest.update(b"\0")
    return digest.hexdigest()


def content_hash(path: Path, *, verify: bool = False) -> str:
    """`hash_path`, remembered (`hash_memo`): a file or folder hashed before, by this process
    or an earlier command, is not read again while its files' stamps are unchanged.
    ``verify``: read the bytes whatever the memo holds (the hash that decides whether a cache
    hit is served), and remember what they hash to."""
    if path.is_dir():
        return _folder_hash(path, verify)
    with path.open("rb") as handle:
        before = os.fstat(handle.fileno())
        key = stamp_key(before)
        regular = worth_remembering(before)  # a small file is hashed, not looked up
        known = memo().get(key) if regular and not verify else None
        if known is not None:
            return known
        began = time.time_ns()
        digest = hashlib.sha256()
        _hash_handle(handle, digest)
        after = os.fstat(handle.fileno())
    sha = digest.hexdigest()
    if regular and settled(before, began) and stamp_key(after) == key:
        memo().put(key, sha)
    return sha


def _folder_hash(path: Path, verify: bool = False) -> str:
    """A folder's `hash_path`, remembered by the names and stamps of all its files (``verify``:
    read whatever the memo holds)."""

    def listing() -> tuple[str, bool]:
        began = time.time_ns()
        entries, all_settled = [], True
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            found = child.stat()
            all_settled = all_settled and settled(found, began)
            entries.append([child.relative_to(path).as_posix(), stamp_key(found)])
        text = json.dumps(entries, separators=(",", ":")).encode()
        return "folder:" + hashlib.sha256(text).hexdigest(), all_settled

    key, remember = listing()
    known = None if verify else memo().get(key)
    if known is not None:
        return known
    sha = hash_path(path)
    if remember and listing()[0] == key:
        memo().put(key, sha)
    return sha


def path_size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _reflink(source: int, target: int) -> bool:
    try:
        import fcntl

        fcntl.ioctl(target, _FICLONE, source)
    except (ImportError, OSError):
        return False
    return True


def _copy_sparse(source: int, target: int, size: int) -> bool:
    """Copy a file with holes by its data segments (``SEEK_DATA``/``SEEK_HOLE``), so the holes
    stay holes; False where the file has none or the file system cannot tell."""
    info = os.fstat(source)
    if info.st_blocks * 512 >= size or not hasattr(os, "SEEK_DATA"):
        return False
    offset = 0
    while offset < size:
        try:
            start = os.lseek(source, offset, os.SEEK_DATA)
        except OSError as error:
            if error.errno == errno.ENXIO:
                break  # only a hole is left
            if offset == 0 and error.errno in (errno.EINVAL, errno.EOPNOTSUPP):
                return False
            raise
        end = min(os.lseek(source, start, os.SEEK_HOLE), size)
        while start < end:
            chunk = os.pread(source, min(_CHUNK, end - start), start)
            if not chunk:
                raise OSError(errno.EIO, "the file shrank while it was copied")
            start += os.pwrite(target, chunk, start)
        offset = end
    os.ftruncate(target, size)
    return True


def _copy_file(src: str, dst: str, digest: _Digest | None) -> bool:
    """`clone_or_copy` (``copy_file_range`` only without ``digest``); True where ``digest``
    took the bytes as this process wrote them."""
    with open(src, "rb") as source, open(dst, "xb") as target:
        size = os.fstat(source.fileno()).st_size
        fds = source.fileno(), target.fileno()
        done = _reflink(*fds) or _copy_sparse(*fds, size)
        if not (done or (digest is None and copy_range(*fds, size))):
            source.seek(0)
            target.seek(0)
            target.truncate()
            buffer = bytearray(_CHUNK)
            view = memoryview(buffer)
            while count := source.readinto(buffer):
                if digest is not None:
                    digest.update(view[:count])
                target.write(view[:count])
    shutil.copystat(src, dst)
    return not done and digest is not None


def clone_or_copy(src: str, dst: str) -> str:
    """Copy file ``src`` to a new file ``dst``: reflink, else by data segments for a file with
    holes (they stay holes), else ``copy_file_range``, else a plain copy. ``dst`` never shares
    an inode with ``src``. Returns ``dst``."""
    _copy_file(src, dst, None)
    return dst


def copy_hashed(src: str, dst: str) -> str:
    """`clone_or_copy`, returning the sha256 of the copy: of the bytes as they are written
    where this process copies them (one read of ``src``), else (a reflink, a file with holes
    copied by its data segments) of the copy as read back."""
    digest = hashlib.sha256()
    return digest.hexdigest() if _copy_file(src, dst, digest) else hash_path(Path(dst))


class ArtifactStore:
    """Stores each distinct file or directory once; returns its stored path.

    Copies are made in an unfinished-copy folder named by this process (`staging`), so that
    `hub doctor --repair` can tell them from those of processes that died. Content already
    stored is reused only once it verifies (size, then hash): a damaged copy is moved to
    ``quarantine/`` beside the artifacts and stored afresh."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.quarantine = root.parent / "quarantine"

    def path_for(self, sha256: str, file_name: str) -> Path:
        return self.root / sha256 / file_name

    def add(
        self,
        source: Path,
        file_name: str | None = None,
        *,
        fresh: bool = False,
        checked: bool = False,
    ) -> tuple[Path, str, int]:
        """Store a copy of ``source``; returns (stored path, sha256 of the copy, size).
        ``fresh``: a file just made (a run's output), whose content is most likely new: it is
        copied first, hashed as it is copied, and the copy dropped where that content was
        stored already, so it is read once instead of hashed and then copied (a
        second read of an engine). Content that may well be stored (a user's model), and a
        fresh file under `SMALL_BYTES` (a warm invoke's inputs and outputs, often the same as
        the last run's: reading it twice costs less than a copy made and dropped), is hashed
        first. ``checked``: the caller found ``source`` a regular file or a folder just now
        (`~edgehub.user_files.regular_file`), not to be looked at again."""
        source = Path(source)
        if not checked:
            if not source.exists():
                raise FileNotFoundError(f"cannot log artifact {source}: no such file or directory")
            regular_file(source, "artifact", UsageError, directory_ok=True)
        name = file_name or source.name
        copy_first = fresh and _large_file(source)
        try:
            known = None if copy_first else content_hash(source)
            size = path_size(source)
        except OSError as error:
            raise UsageError(f"cannot read {source}: {error.strerror or error}") from error
        with translate_storage_errors(self.root, f"store artifact {name!r}"):
            if known is None:  # hashed as it is copied
                return self._copy_in(source, name, size, reuse=True)
            final = self.path_for(known, name)
            _unlink_planted(final.parent)
            if _is_stored_copy(source, final) or _intact(final, known, size, source):
                return final, known, size
            return self._copy_in(source, name, tree_size(source), reuse=False)

    def holds(self, path: Path, sha: str, size: int) -> bool:
        """Whether ``path`` is the store's copy of content ``sha`` as recorded: a regular file
        of its own (one link), or a folder (no link in it), in ``sha``'s folder here, of
        ``size`` bytes in all. Not read: the bytes are checked where they are used (a compiled
        model before it is reused) and by `hub doctor`."""
        try:
            found = os.lstat(path)
            folder = os.lstat(path.parent)
        except OSError:
            return False
        if path.parent != self.root / sha or not stat.S_ISDIR(folder.st_mode):
            return False
        if stat.S_ISREG(found.st_mode):
            return found.st_nlink == 1 and found.st_size == size
        if not stat.S_ISDIR(found.st_mode):
            return False
        total = 0
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                entry = os.lstat(os.path.join(root, name))
                if stat.S_ISREG(entry.st_mode) and entry.st_nlink == 1:
                    total += entry.st_size
                elif not stat.S_ISDIR(entry.st_mode):
                    return False  # a link, or a file shared with another name
        return total == size

    def _copy_in(self, source: Path, name: str, room: int, *, reuse: bool) -> tuple[Path, str, int]:
        """Copy ``source`` (``room`` bytes) through a staging folder into its content's
        folder, hashed as it is copied. ``reuse``: a verified copy stored already stays, the
        new one is dropped."""
        ensure_room(room, self.root, f"a copy of {source}")
        make_private_dir(self.root)
        staging = make_staging(self.root)
        try:
            staged = staging / name
            if source.is_dir():
                shutil.copytree(source, staged, copy_function=clone_or_copy)
                sha = hash_path(staged)  # of the copy: the source may change meanwhile
            else:
                sha = copy_hashed(str(source), str(staged))
            final = self.path_for(sha, name)
            _unlink_planted(final.parent)
            if not (reuse and _intact(final, sha, path_size(staged), staged)):
                make_private_dir(final.parent)
                restrict(staged)  # the copy keeps its source's times, not its modes
                self._install(staged, final, sha)
        finally:
            _drop_staging(staging)
        return final, sha, path_size(final)

    def _install(self, staged: Path, final: Path, sha: str) -> None:
        """Move ``staged`` to ``final``. A file there is replaced (a damaged copy, or a hard
        link an older release made); a directory there is kept when it verifies (stored
        meanwhile by another process), else moved to quarantine first."""
        try:
            os.replace(staged, final)
            return
        except OSError:
            if not final.is_dir() or final.is_symlink():
                raise
        if _intact(final, sha, path_size(staged)):
            return
        target = self.quarantine / f"{sha}-{int(time.time())}"
        make_private_dir(target)
        os.replace(final, target / final.name)
        os.replace(staged, final)


def _drop_staging(staging: Path) -> None:
    """Remove an unfinished-copy folder: empty once its copy was installed (one call), else
    with what is left in it."""
    try:
        os.rmdir(staging)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def _unlink_planted(folder: Path) -> None:
    """The store makes its content folders itself: a symbolic link there is removed, never
    written through."""
    if folder.is_symlink():
        folder.unlink(missing_ok=True)


def _intact(path: Path, sha: str, size: int, source: Path | None = None) -> bool:
    """A stored copy that can be reused: its own inode(s), the size and hash it should have.
    With ``source`` (a file whose hash ``sha`` was just taken) the copy is checked against its
    bytes instead of hashed: equal bytes have that hash, and comparing costs less. A file is
    looked at once (one ``lstat`` says link, kind, links and size)."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISDIR(found.st_mode):
        return path_size(path) == size and content_hash(path) == sha
    if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1 or found.st_size != size:
        return False  # a link, a special file, a file shared with another name, or cut short
    remember = worth_remembering(found)
    known = memo().get(stamp_key(found)) if remember else None
    if known is not None:  # checked before, and unchanged since
        return known == sha
    if source is not None and source.is_file():
        began = time.time_ns()
        same = _same_bytes(source, path)
        if (
            same
            and remember
            and settled(found, began)
            and stamp_key(os.lstat(path)) == stamp_key(found)
        ):
            memo().put(stamp_key(found), sha)  # equal to bytes of that hash, and settled
        return same
    return content_hash(path) == sha


def _same_bytes(first: Path, second: Path) -> bool:
    with first.open("rb") as one, second.open("rb") as other:
        while True:
            chunk = one.read(_CHUNK)
            if chunk != other.read(_CHUNK):
                return False
            if not chunk:
                return True


def _is_stored_copy(source: Path, final: Path) -> bool:
    """``source`` is the stored file ``final`` itself (its own inode): the hash just taken of
    ``source`` is that of ``final``, not to be taken again."""
    try:
        found, stored = source.stat(), final.lstat()
    except OSError:
        return False
    return (
        stat.S_ISREG(stored.st_mode)
        and stored.st_nlink == 1
        and (found.st_dev, found.st_ino) == (stored.st_dev, stored.st_ino)
    )


def _large_file(path: Path) -> bool:
    """A regular file (through links) of at least `SMALL_BYTES`."""
    try:
        found = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_size >= SMALL_BYTES
