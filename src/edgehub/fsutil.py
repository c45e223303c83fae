"""Small file-system helpers shared by the store, the config and the toolchains."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from edgehub.agent.atomic import atomic_write, replacing  # the one implementation

__all__ = ["atomic_write", "copy_range", "link_or_copy", "link_tree", "replacing", "sha256_file"]


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's content, in hex, read in blocks of 1 MiB."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def link_or_copy(src: str, dst: str) -> str:
    """Hard-link ``src`` to ``dst``, copying when a link is impossible (other file system)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def link_tree(
    source: Path, target: Path, copy_function: Callable[[str, str], str] = link_or_copy
) -> None:
    """Hard-link (or copy) a file or a whole directory to ``target``, each file through
    ``copy_function``."""
    if source.is_dir():
        shutil.copytree(source, target, copy_function=copy_function)
    else:
        copy_function(str(source), str(target))


def copy_range(source: int, target: int, size: int) -> bool:
    """Copy the first ``size`` bytes of the open file ``source`` to ``target`` in the kernel
    (``copy_file_range``: no pass through this process, shared blocks where the file system
    offers them). False where it is not offered here, before anything was copied, or when the
    source had fewer bytes: the caller copies another way then."""
    if not hasattr(os, "copy_file_range"):
        return False
    done = 0
    try:
        while done < size:
            sent = os.copy_file_range(source, target, size - done)
            if sent == 0:
                break
            done += sent
    except OSError as error:
        if done == 0 and error.errno in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            return False
        raise
    return done == size
