"""Replacing a file atomically: the one implementation, for the agent and the host alike
(`edgehub.fsutil` re-exports it; this module stays stdlib-only for Python 3.8 devices).

The new content goes to a temporary file in the target's directory, renamed over the target:
a reader sees the old file or the new one. ``durable`` also flushes the file before the rename
and the directory after it, so a crash cannot leave a partial file either (for files that
outlive the job, not a job's scratch results). The replaced file's mode is kept (a new file gets
``new_mode``), a symlink is followed, and a target that is not a regular file (/dev/null, a
pipe, a folder) is an `OSError` (EINVAL): renaming over it would replace the node itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Iterator, Union

PathLike = Union[str, "os.PathLike[str]"]


@contextlib.contextmanager
def replacing(path: PathLike, *, new_mode: int = 0o644, durable: bool = True) -> Iterator[str]:
    """The name of a temporary file to write instead of ``path``; when the block ends without
    an error it replaces ``path`` (see the module docstring), else it is removed."""
    target = os.path.realpath(os.fspath(path))
    directory = os.path.dirname(target) or "."
    try:
        found = os.stat(target).st_mode
    except FileNotFoundError:
        mode = new_mode
    else:
        if not stat.S_ISREG(found):  # a device, pipe or folder is written to, never replaced
            raise OSError(errno.EINVAL, "not a regular file", target)
        mode = stat.S_IMODE(found)
    temp = _new_file(directory, "." + os.path.basename(target) + ".")
    try:
        yield temp
        if durable:
            _fsync(temp, os.O_RDONLY)
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if durable and hasattr(os, "O_DIRECTORY"):
        with contextlib.suppress(OSError):
            _fsync(directory, os.O_RDONLY | os.O_DIRECTORY)


def atomic_write(
    path: PathLike, data: bytes, *, new_mode: int = 0o644, durable: bool = True
) -> None:
    """Replace ``path`` with ``data`` (see the module docstring)."""
    with replacing(path, new_mode=new_mode, durable=durable) as temp, open(temp, "wb") as out:
        out.write(data)


def _new_file(directory: str, prefix: str) -> str:
    """Create an empty file of this user only (0600) named ``prefix`` + random letters in
    ``directory``, never one that exists (``O_EXCL``) nor through a link; its path. What
    ``tempfile.mkstemp`` does, without importing ``tempfile`` (and ``shutil``, ``random``):
    milliseconds of every cold job's start."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        path = os.path.join(directory, prefix + os.urandom(6).hex())
        try:
            os.close(os.open(path, flags, 0o600))
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, "no free temporary file name", directory)


def _fsync(path: str, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
