"""Small file-system helpers shared by the store and the toolchains."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

__all__ = ["atomic_write", "link_or_copy", "link_tree"]


def link_or_copy(src: str, dst: str) -> str:
    """Hard-link ``src`` to ``dst``, copying when a link is impossible (other file system)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def link_tree(source: Path, target: Path) -> None:
    """Hard-link (or copy) a file or a whole directory to ``target``."""
    if source.is_dir():
        shutil.copytree(source, target, copy_function=link_or_copy)
    else:
        link_or_copy(str(source), str(target))


def atomic_write(path: Path, data: bytes, *, new_mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    The bytes go to a temporary file in the same directory, which is flushed to disk and
    renamed over ``path``; then the directory is flushed too, so that a crash leaves the old
    file or the new one, never a part. The replaced file's mode is kept (a new file gets
    ``new_mode``); a symlink is followed, so the file it points to is replaced, not the link.
    """
    import tempfile  # only when a file is written, not at start-up

    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = new_mode
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(target.parent)


def _fsync_directory(directory: Path) -> None:
    """Flush a directory's entries (a rename in it) to disk, where the platform can."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
